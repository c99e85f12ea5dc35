"""One replayed request on the sidecar's own Turn path (SPEC §3, §10), without sockets.

`proxy.handler` serves a request as intake → `prepare` → store read → `decide` → forward →
`settle` → commit. The replay walks the same steps with the same functions: a `RequestHead`
as intake would have parsed it (POST to the session's API path; the body carries
`metadata.session_id`, and an ask rides in `X-OrcaRouter-Tier`), `turn.prepare` (aliases,
side-request detection, the session, the dedupe key, what to read), `StoreGate.read_turn`
(the handler's store read), `turn.decide`, then, in place of forwarding, the first planned
attempt answers: a provider-shaped JSON answer in the format of the channel that served it,
rendered by the `sim` provider's renderer and fed to a `ResponseTap` exactly as a relayed
answer is (its usage, finish and strike signals reach `settle` as they do live), and
`turn.settle`'s batch is committed through the gate with its follow-up (the audit of a tier
change). A side request therefore settles as one: its figures only, no pin, no tier state.

The replay's cost model (`routing.cost`, warm or cold by model, channel and key) decides the
usage the answer reports; the scores come precomputed (`prepare(delta=…)`, `Turn.full`), so
each request is scored once for every policy and sweep point.
"""

from __future__ import annotations

import hashlib
import random

import orjson

from orca_cli.clock import Clock
from orca_cli.config.schema import Config
from orca_cli.errors import OrcaError, Refusal
from orca_cli.immutable import immutable
from orca_cli.proxy.runtime import StoreGate
from orca_cli.proxy.sim.answer import Answer
from orca_cli.proxy.sim.render import render_body
from orca_cli.replay.corpus import Turn as CorpusTurn
from orca_cli.routing.candidates import all_healthy
from orca_cli.routing.features import Delta, Difficulty, Scorer
from orca_cli.routing.route import Attempt
from orca_cli.state.base import Store
from orca_cli.turn import (
    Arrival,
    AttemptRecord,
    Outcome,
    RequestHead,
    Turn,
    decide,
    prepare,
    settle,
)
from orca_cli.types import Api, Headers
from orca_cli.wire.usage import ResponseTap, Usage

__all__ = ["ANSWER_TEXT", "PATHS", "Prepared", "ReplayFailed", "Walker"]

PATHS: dict[str, str] = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages",
                         "responses": "/v1/responses"}
ANSWER_TEXT = "[replay] Done: the change is in place."


class ReplayFailed(OrcaError):
    """A replayed request the sidecar would not have served, or a store fault mid-run."""


@immutable
class Prepared:
    """A request of the corpus with its signals, computed once (`replay.harness.prepare`)."""

    turn: CorpusTurn
    delta: Delta
    full: Difficulty
    banding: float = 0.0  # `Scorer.banding`: what gated_adaptive bands the base tier on
    api: Api = "openai"  # its session's wire format


class Walker:
    """Walks requests through prepare → read → decide → answer → settle → commit."""

    def __init__(self, cfg: Config, store: Store, clock: Clock, scorer: Scorer,
                 rng: random.Random, *, ask: str | None = None) -> None:
        self.cfg, self.clock, self.scorer, self.rng, self.ask = cfg, clock, scorer, rng, ask
        self.gate = StoreGate(store, clock)
        self.durable = store.backend == "redis"

    def _head(self, p: Prepared) -> RequestHead:
        ask = self.ask if p.turn.kind == "user" else None
        # The corpus's session is the session: a `--corpus` file names it beside bodies that
        # may carry no id of their own (the built-in corpus's bodies carry the same one).
        headers: Headers = [("content-type", "application/json"),
                            ("x-session-id", p.turn.session_id)]
        if ask is not None:
            headers.append(("x-orcarouter-tier", ask))
        return RequestHead(method="POST", path=PATHS[p.api], api=p.api, headers=headers,
                           refusal=None, tier_ask=ask)

    async def decide(self, p: Prepared, request_id: str) -> Turn:
        """The turn with its plan, as the handler holds it before forwarding."""
        body = p.turn.body
        arrival = Arrival(request_id, orjson.dumps(body), dict(body), self.clock.now(),
                          self.clock.monotonic())
        turn = prepare(self.cfg, self.scorer, self._head(p), arrival, delta=p.delta)
        if isinstance(turn, Refusal):
            raise ReplayFailed(f"request {request_id} was refused ({turn.status}): "
                               f"{turn.message}")
        turn.full = p.full
        await self.gate.read_turn(turn)
        plan = decide(self.cfg, turn, scorer=self.scorer, healthy=all_healthy, rng=self.rng)
        if plan.refusal is not None or not plan.attempts:
            raise ReplayFailed(f"request {request_id} was refused: {plan.refusal}")
        return turn

    async def settle(self, turn: Turn, usage: Usage) -> None:
        """The first attempt answers with `usage`; settle and commit as the handler does."""
        assert turn.plan is not None
        att = turn.plan.attempts[0]
        turn.outcome = Outcome(attempts=[AttemptRecord(att.model, att.channel, att.key_index,
                                                       status=200)],
                               served=att, tap=self._tap(turn, att, usage), status=200)
        done = settle(self.cfg, turn, durable=self.durable, latency_ms=0.0)
        await self.gate.commit(done.batch, follow_up=done.follow_up)
        if not self.gate.healthy:
            raise ReplayFailed("the state store failed during the replay; its figures would "
                               "describe degraded serving")

    def _tap(self, turn: Turn, att: Attempt, usage: Usage) -> ResponseTap:
        """What the relay's tap sees: the answer in the serving channel's format."""
        ch = self.cfg.channel(att.channel)
        api: Api = turn.api if ch is None or ch.accepts(turn.api) else ch.api
        max_tokens = turn.body.get("max_tokens")
        tap = ResponseTap(api, False, max_tokens if isinstance(max_tokens, int) else None)
        tap.feed_body(render_body(api, Answer(
            id_hex=hashlib.sha256(turn.request_id.encode()).hexdigest()[:24], model=att.model,
            created=int(turn.now), text=ANSWER_TEXT, tool=None, finish="stop",
            prompt_tokens=usage.prompt_tokens, cached_tokens=usage.cached_tokens,
            cache_write_tokens=usage.cache_write_tokens, output_tokens=usage.output_tokens)))
        return tap
