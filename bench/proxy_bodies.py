"""Coding-agent request bodies for the proxy benchmark, built on `tests.routing.bodies`.

Every body is what an agent sends mid-session: the ~2 KB system prompt, the two tool
definitions, the trivial-edit history that pads it to a chosen size, and one latest turn
that is the same at every size — the agent's own tool call and the `go test` log it
returned (about 1.5 KB), the commonest request of an agent loop. The transcript-growth
figures therefore vary only the history, which is what SPEC §12 asks of the decision cost.
"""

from __future__ import annotations

from typing import Any

import orjson

from bench.scoring_bodies import go_test_log
from orca_cli.wire.transcript import Api
from tests.routing import bodies as B

__all__ = ["SIZES", "agent_body", "encode"]

SIZES = {"10KB": 10_240, "200KB": 204_800, "1MB": 1_048_576}
_LATEST_LOG = 1_500


def _latest(api: Api) -> list[dict[str, Any]]:
    return [B.tool_call(api, "call_42", "go test ./internal/cache/..."),
            *B.tool_results(api, "call_42", go_test_log(_LATEST_LOG))]


def agent_body(api: Api, total_bytes: int, *, model: str, stream: bool) -> dict[str, Any]:
    """A body of about `total_bytes` JSON bytes (within a few hundred) ending in the same turn."""
    latest = _latest(api)
    frame = len(orjson.dumps(B.body(api, latest)))
    history = max(0, total_bytes - frame)
    body = B.padded_transcript(api, history, latest) if history else B.body(api, latest)
    body["model"] = model
    if stream:
        body["stream"] = True
        if api == "openai":
            # Agents on the OpenAI SDKs ask for usage themselves; orca then forwards the
            # client's bytes unchanged (with only the model swapped).
            body["stream_options"] = {"include_usage": True}
    return body


def encode(body: dict[str, Any]) -> bytes:
    return orjson.dumps(body)
