"""The value types the request path builds by position (a class called with keywords builds a
dict of them first, on every request): their fields in the order those calls pass them.

A field added, removed or moved in one of these classes fails here, before a positional call
can put a value in the wrong field without a type error. Fix the calls (`grep -rn "By
position" orca_cli`, and the classes' constructions on the request path), then this table.
"""

from __future__ import annotations

import dataclasses

import pytest

from orca_cli.proxy.forward import Inbound
from orca_cli.proxy.guard import GuardFacts
from orca_cli.proxy.transport import Timeouts
from orca_cli.routing.caps import CapsView
from orca_cli.routing.escalation import TierDecision, TurnSignals
from orca_cli.routing.features import Delta
from orca_cli.routing.intents import RecordTurn
from orca_cli.routing.route_types import RouteInput, RoutePlan
from orca_cli.routing.tiers import TierState
from orca_cli.state.base import ReadRequest, SlotWrite
from orca_cli.state.plan import PlanContext, TurnOutcome
from orca_cli.trace.build import TraceHead, TraceResult
from orca_cli.turn.model import RequestHead, Turn
from orca_cli.wire.usage import Usage

LAYOUTS: dict[type, tuple[str, ...]] = {
    TierState: (
        "tier", "escalation_count", "trigger", "reason", "escalated_at", "window_s",
        "last_success", "clean_turns", "streak", "turn", "strikes", "signatures", "dedupe",
        "pending", "conversations", "history", "episode_started", "shadow", "version",
        "once_open",
    ),
    CapsView: (
        "share", "workspace_share", "share_cap", "workspace_cap", "warmup_requests",
        "state_lost_at", "enabled", "budget_denied", "strong_available", "in_flight",
    ),
    TierDecision: (
        "tier", "reason", "trigger", "intents", "denied", "evaluations", "shadow", "t2",
        "state_tier", "evaluated",
    ),
    TurnSignals: (
        "dedupe_key", "delta_score", "user_turn", "signatures", "signature_texts", "ask",
        "actor", "fresh", "conversation",
    ),
    RecordTurn: (
        "dedupe_key", "user_turn", "hard", "signatures", "request_strike", "response_strikes",
        "scope", "history", "repeated",
    ),
    RoutePlan: (
        "router", "decision", "candidates", "attempts", "pins", "ranking", "full",
        "full_skipped", "caps", "refusal", "counts_strong_in_workspace", "evidence",
        "tier_state",
    ),
    RouteInput: (
        "target", "api", "body", "delta", "est_tokens", "session", "ask", "dedupe_key",
        "degraded", "full", "side", "previous_response", "classification", "latency_ms",
        "budget_denied", "route_fallbacks", "prefs", "measured", "in_flight", "images",
    ),
    Delta: (
        "difficulty", "is_user_turn", "is_tool_continuation", "user_texts",
        "tool_result_texts", "message_count", "has_tools", "strike_results", "compacted",
    ),
    SlotWrite: (
        "slot", "ops", "mutate", "expected_version", "tier_ttl_s", "base_doc",
    ),
    ReadRequest: (
        "router", "session", "share_hours", "workspace", "affinity_key", "linucb_arms",
        "percentile_samples", "budget_counters", "budget_limits",
    ),
    TurnOutcome: (
        "billed_success", "model", "channel", "key_index", "key_fp", "window_s",
        "response_strikes", "prompt_tokens", "cached_tokens", "cache_write_tokens",
        "output_tokens", "cost_usd", "client_error",
    ),
    PlanContext: (
        "request_id", "router", "session", "explicit_session", "durable_store", "esc", "now",
        "counts_strong_in_workspace", "percentile_sample", "linucb", "affinity", "actor",
        "base_state", "direct",
    ),
    TraceHead: (
        "request_id", "client_request_id", "ts", "inbound_api", "requested_model",
        "session_id", "session_source", "router", "stream",
    ),
    TraceResult: (
        "status", "selected", "attempts", "usage", "cost_usd", "committed", "degraded",
        "error", "cache", "latency_ms",
    ),
    Turn: (
        "request_id", "api", "path", "raw", "body", "headers", "target", "now", "started",
    ),
    RequestHead: (
        "method", "path", "api", "headers", "refusal", "client_request_id", "tier_ask", "client",
    ),
    Inbound: (
        "api", "path", "body", "headers", "stream", "add_include_usage", "max_tokens",
        "orca_headers", "healthy", "raw", "model_value", "rename",
    ),
    GuardFacts: (
        "host", "hosts_seen", "origin", "content_type", "content_length", "bearer", "tokens",
    ),
    Timeouts: ("connect_s", "first_byte_s", "idle_s", "deadline_monotonic"),
    Usage: ("prompt_tokens", "cached_tokens", "cache_write_tokens", "output_tokens", "fast"),
}


@pytest.mark.parametrize("cls", list(LAYOUTS), ids=lambda c: c.__name__)
def test_positional_calls_match_the_fields(cls: type) -> None:
    names = tuple(f.name for f in dataclasses.fields(cls))
    expected = LAYOUTS[cls]
    # Turn: only its required fields go by position (`turn.prepare`), the rest are set after
    assert names[:len(expected)] == expected
    if cls is Turn:
        assert all(f.default is not dataclasses.MISSING
                   or f.default_factory is not dataclasses.MISSING
                   for f in dataclasses.fields(cls)[len(expected):])
    else:
        assert len(names) == len(expected)
