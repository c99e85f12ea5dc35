"""The whole `orca replay` run: corpus → signals once → policies, latency, prevalence, sweep,
adversarial; one JSON document with every figure (SPEC §1.1a `replay --json`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from orca_cli.clock import FakeClock
from orca_cli.config.schema import Config, StateConfig
from orca_cli.immutable import immutable
from orca_cli.replay import harness as H
from orca_cli.replay.corpus import generate
from orca_cli.replay.signals import difficulty_by_turn, drift
from orca_cli.routing.features import Scorer
from orca_cli.state.base import Store
from orca_cli.state.factory import open_store
from orca_cli.state.memory import MemoryStore

__all__ = ["ReplayOptions", "replay"]

SWEEP = (0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70, 0.75)
PREVALENCE = (0.01, 0.10, 0.25, 0.50)
PREVALENCE_SESSIONS = 200
REPLAY_SWEEP_S = 3600.0  # the memory store's sweep interval on the replay's fake clock


@immutable
class ReplayOptions:
    sessions: int = 400
    seed: int = 20260814
    agent_loop: bool = False
    state: str = "memory"
    redis_url: str = "redis://127.0.0.1:6379/15"
    sweep: bool = False
    adversarial: bool = False
    prevalence: bool = True
    http: bool = False
    http_concurrency: int = 8
    corpus: str | None = None  # a JSON-lines corpus file (`replay/corpus_file.py`)
    agent_shaped: bool = False  # agent-sized prefixes and loops (`replay/agents.py`)


async def _store(opts: ReplayOptions, clock: FakeClock, tag: str) -> Store:
    if opts.state == "redis":
        prefix = f"orca-replay-{tag}-{opts.seed}"
        return open_store(StateConfig(backend="redis", redis_url=opts.redis_url,
                                      key_prefix=prefix, timeout_ms=2000), clock=clock,
                          audit_max=200_000)
    # The replay's clock runs 30 s a request: the default 60 s sweep would scan every key
    # (traces included) every other commit. Expired keys are dropped when touched either way,
    # so sweeping each fake hour changes no figure, only the run time.
    return MemoryStore(clock=clock, audit_max=200_000, sweep_interval_s=REPLAY_SWEEP_S)


async def _escalation(cfg: Config, prepared: Any, archetypes: Sequence[str], opts: ReplayOptions,
                      tag: str, **kw: Any) -> H.EscalationRun:
    clock = FakeClock()
    store = await _store(opts, clock, tag)
    try:
        return await H.run_escalation(cfg, prepared, archetypes, store=store, clock=clock,
                                      seed=opts.seed, **kw)
    finally:
        await store.close()
        if opts.state == "redis":
            await _wipe(opts.redis_url, f"orca-replay-{tag}-{opts.seed}")


async def _wipe(url: str, prefix: str) -> None:
    """Remove the replay's keys from Redis (its own key prefix only)."""
    import redis.asyncio as aioredis

    client = aioredis.from_url(url)
    try:
        batch = [k async for k in client.scan_iter(match=f"{prefix}:*", count=1000)]
        for i in range(0, len(batch), 500):
            await client.delete(*batch[i:i + 500])
    finally:
        await client.aclose()


async def _replay(cfg: Config, opts: ReplayOptions,
                  progress: Callable[[str, int, int], None]) -> dict[str, Any]:
    scorer = Scorer(cfg.difficulty)
    if opts.corpus is not None:
        from orca_cli.replay.corpus_file import load_corpus

        corpus = load_corpus(opts.corpus)
    else:
        corpus = generate(sessions=opts.sessions, seed=opts.seed, agent_loop=opts.agent_loop,
                          agent_shaped=opts.agent_shaped)
    total = sum(len(s.turns) for s in corpus)
    done = [0]

    def tick(stage: str) -> Callable[[int], None]:
        def f(n: int) -> None:
            done[0] += n
            progress(stage, done[0], total)
        return f

    prepared = H.prepare(corpus, scorer, tick("scoring"))
    archetypes = [s.archetype for s in corpus]
    done[0] = 0
    main = await _escalation(cfg, prepared, archetypes, opts, "main",
                             progress=tick("escalation"))
    policies = H.baseline_costs(cfg, corpus, len(corpus))
    policies["escalation"] = main.summary(len(corpus))
    router = next(r for r in cfg.routers.values() if r.session_aware)
    doc: dict[str, Any] = {
        "config": {"source": cfg.source, "sessions": len(corpus), "seed": opts.seed,
                   "corpus": opts.corpus or "built-in",
                   "turns": total, "agent_loop": opts.agent_loop, "state": opts.state,
                   "agent_shaped": opts.agent_shaped,
                   "t2": router.escalation.t2,
                   "share_caps": "off for the main figures, on for --adversarial"},
        "archetypes": H.archetype_outcomes(main),
        "policies": policies,
        "oracle": H.oracle_costs(cfg, corpus, len(corpus)),
        "latency": H.escalation_latency(main),
        "difficulty_by_turn": difficulty_by_turn(prepared, archetypes),
        "drift": drift(prepared, archetypes),
        "bands": H.band_shares(main, prepared, cfg),
        "prevalence": [],
    }
    if opts.http:
        from orca_cli.replay.http import http_figures, run_http

        done[0] = 0
        result = await run_http(cfg, corpus, concurrency=opts.http_concurrency,
                                progress=tick("http"))
        doc["http"] = http_figures(result, doc["archetypes"], len(corpus))
    if opts.prevalence and opts.corpus is None:  # prevalence re-mixes the built-in corpus
        for share in PREVALENCE:
            sub = generate(sessions=PREVALENCE_SESSIONS, seed=opts.seed,
                           agent_loop=opts.agent_loop, hard_share=share,
                           agent_shaped=opts.agent_shaped)
            prep = H.prepare(sub, scorer)
            run = await _escalation(cfg, prep, [s.archetype for s in sub], opts, f"p{share}")
            base = H.baseline_costs(cfg, sub, len(sub))
            doc["prevalence"].append({
                "hard_share": share, "escalation": run.summary(len(sub))["cost_per_1k"],
                "cheap_only": base["cheap_only_affinity"]["cost_per_1k"],
                "frontier_only": base["frontier_only_affinity"]["cost_per_1k"]})
            progress("prevalence", PREVALENCE.index(share) + 1, len(PREVALENCE))
    if opts.sweep:
        doc["sweep"] = []
        for i, t2 in enumerate(SWEEP):
            run = await _escalation(H.with_t2(cfg, t2), prepared, archetypes, opts, f"t{t2}")
            fp = sum(a["false_positives"] for a in H.archetype_outcomes(run).values())
            doc["sweep"].append({"t2": t2, **run.summary(len(corpus)),
                                 "false_positives": fp})
            progress("sweep", i + 1, len(SWEEP))
    if opts.adversarial:
        run = await _escalation(cfg, prepared, archetypes, opts, "adv", caps_enabled=True,
                                ask="strong")
        summary = run.summary(len(corpus))
        doc["adversarial"] = {"final_share": summary["strong_share"], "denied": run.denied,
                              "audited": run.audited,
                              "cap": router.escalation.share_cap, "series": run.series,
                              "series_every": H.SERIES_EVERY}
    return doc


def replay(cfg: Config, opts: ReplayOptions,
           progress: Callable[[str, int, int], None] = lambda *_: None) -> dict[str, Any]:
    return asyncio.run(_replay(cfg, opts, progress))
