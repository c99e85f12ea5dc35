"""`orca replay --http`: the same corpus through a real `orca serve` stack on a loopback port
(SPEC §10) — the guard, the handler, the store gate, `sim` upstreams over the transport
protocol, uvicorn and real sockets — one request per turn over httpx.

The figures come from what a client sees: the `x-orca-session-tier` header (`strong;
reason=difficulty`) and `x-orca-model`, not from the decision objects, so the run checks the
whole serving path against the in-process replay. Share caps are off (a copy of the config
with both share caps at 1.0) to match the main figures; the session cap stays as configured.

The clock is the real one here: cache windows, pins and tier TTLs run on wall time, and the
sessions follow each other in well under a cache window. Sessions run concurrently (each one
turn after turn, in order); with the share caps off no session's tier depends on another's.
Bodies are shared and read-only: each request sends a shallow copy with `stream: false`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx
import orjson

from orca_cli.clock import SystemClock
from orca_cli.config.schema import Config
from orca_cli.immutable import immutable
from orca_cli.replay.corpus import Session
from orca_cli.replay.harness import EscalationRun, TurnResult, caps_off
from orca_cli.replay.walk import PATHS

__all__ = ["HttpRun", "caps_off", "http_figures", "parse_tier", "run_http"]

DEFAULT_CONCURRENCY = 8


@immutable
class HttpRun:
    """The header-derived run plus how fast the stack served it."""

    run: EscalationRun
    requests: int
    elapsed_s: float
    concurrency: int
    models: dict[str, int]  # x-orca-model -> requests

    @property
    def requests_per_s(self) -> float:
        return self.requests / self.elapsed_s if self.elapsed_s > 0 else 0.0


def parse_tier(header: str) -> tuple[str, str]:
    """`"strong; reason=difficulty"` -> `("strong", "difficulty")`."""
    tier, _, rest = header.partition(";")
    reason = rest.strip().removeprefix("reason=") if rest else ""
    return tier.strip(), reason


async def _session(client: httpx.AsyncClient, session: Session, models: dict[str, int]
                   ) -> list[TurnResult]:
    out = []
    for t in session.turns:
        body = {**t.body, "stream": False}
        resp = await client.post(PATHS[session.api], content=orjson.dumps(body),
                                 headers={"content-type": "application/json"})
        if resp.status_code != 200:
            raise RuntimeError(f"the sidecar answered {resp.status_code} to turn {t.index} of "
                               f"session {session.id}: {resp.text[:200]}")
        tier, reason = parse_tier(resp.headers.get("x-orca-session-tier", ""))
        model = resp.headers.get("x-orca-model", "")
        models[model] = models.get(model, 0) + 1
        out.append(TurnResult(strong=tier == "strong", needs_strong=t.needs_strong,
                              reason=reason, trigger="", cost=0.0, index=t.index, kind=t.kind))
    return out


async def run_http(cfg: Config, corpus: Sequence[Session], *,
                   concurrency: int = DEFAULT_CONCURRENCY,
                   progress: Callable[[int], None] | None = None) -> HttpRun:
    """Serve `caps_off(cfg)` on a free loopback port with a memory store and replay `corpus`."""
    from orca_cli.compose import running
    from orca_cli.state.memory import MemoryStore

    served_cfg = caps_off(cfg)
    total = sum(len(s.turns) for s in corpus)
    clock = SystemClock()
    store = MemoryStore(clock=clock, trace_max=max(served_cfg.server.trace_max, total))
    results: list[list[TurnResult]] = [[] for _ in corpus]
    models: dict[str, int] = {}
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(len(corpus)):
        queue.put_nowait(i)

    async def worker(client: httpx.AsyncClient) -> None:
        while not queue.empty():
            i = queue.get_nowait()
            results[i] = await _session(client, corpus[i], models)
            if progress is not None:
                progress(len(corpus[i].turns))

    workers = max(1, min(concurrency, len(corpus)))
    limits = httpx.Limits(max_connections=workers, max_keepalive_connections=workers)
    timeout = httpx.Timeout(60.0)
    async with (running(served_cfg, store=store, clock=clock) as served,
                httpx.AsyncClient(base_url=served.url, timeout=timeout, limits=limits) as client):
        start = time.perf_counter()
        async with asyncio.TaskGroup() as group:  # one failure cancels the rest
            for _ in range(workers):
                group.create_task(worker(client))
        elapsed = time.perf_counter() - start
    run = EscalationRun(turns=results, archetypes=[s.archetype for s in corpus])
    return HttpRun(run=run, requests=total, elapsed_s=elapsed, concurrency=workers,
                   models=dict(sorted(models.items())))


def http_figures(result: HttpRun, in_process: dict[str, Any], sessions_norm: int
                 ) -> dict[str, Any]:
    """The `http` section of the replay document."""
    from orca_cli.replay.harness import archetype_outcomes, escalation_latency

    outcomes = archetype_outcomes(result.run)
    summary = result.run.summary(sessions_norm)
    return {
        "requests": result.requests,
        "elapsed_s": round(result.elapsed_s, 3),
        "requests_per_s": round(result.requests_per_s, 1),
        "concurrency": result.concurrency,
        "clock": "wall time: cache windows, pins and tier TTLs run on the real clock",
        "store": "memory",
        "share_caps": "off",
        "archetypes": outcomes,
        "escalation": {"strong_share": summary["strong_share"],
                       "coverage": summary["coverage"]},
        "latency": escalation_latency(result.run),
        "models": result.models,
        "matches_in_process": outcomes == in_process,
    }
