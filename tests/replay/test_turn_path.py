"""The replay walks the sidecar's own Turn path (SPEC §3, §10, §14.1): side-request detection,
aliases to the background router, and scores computed once."""

from __future__ import annotations

import asyncio
import random

import orjson
import pytest

from orca_cli.clock import FakeClock
from orca_cli.config import example_text
from orca_cli.config.load import loads
from orca_cli.config.schema import Config
from orca_cli.replay import harness as H
from orca_cli.replay.corpus import Session, generate
from orca_cli.replay.reference import REFERENCE_TOML
from orca_cli.replay.walk import PATHS
from orca_cli.routing.candidates import all_healthy
from orca_cli.routing.features import Scorer
from orca_cli.routing.tiers import TierState
from orca_cli.state.base import ReadRequest, SlotRef
from orca_cli.state.memory import MemoryStore
from orca_cli.state.plan import FIGURES_KEY
from orca_cli.turn import Arrival, RequestHead, Turn, decide, prepare

CFG = loads(REFERENCE_TOML, source="reference")
CORPUS = generate(sessions=20, agent_shaped=True)


def _session(pred: object) -> tuple[int, Session]:
    return next((i, s) for i, s in enumerate(CORPUS) if pred(s))  # type: ignore[operator]


async def _replay(session: Session) -> tuple[H.EscalationRun, MemoryStore]:
    clock = FakeClock()
    store = MemoryStore(clock=clock)
    prepared = H.prepare([session], Scorer(CFG.difficulty))
    run = await H.run_escalation(CFG, prepared, [session.archetype], store=store, clock=clock)
    return run, store


def test_a_title_request_is_a_side_request_and_not_a_turn() -> None:
    _, s = _session(lambda s: s.archetype == "short_trivial")

    async def go() -> None:
        run, store = await _replay(s)
        results = run.turns[0]
        k = next(i for i, t in enumerate(s.turns) if t.conversation == "title")
        assert results[k].reason == "side" and not results[k].strong
        trace = await store.get_trace(f"replay-0-{k}")
        assert trace is not None
        assert trace["side"] == {"rule": "claude-code-title"}
        assert trace["router"] == "background"  # the side router, as in orca.toml.example
        snap = await store.read(ReadRequest(router="coding", session=s.id))
        # every other request of the session ran strike evaluation; the title did not
        assert TierState.from_doc(snap.tier).turn == len(s.turns) - 1
        figures = await store.get(SlotRef.of_session("coding", s.id), FIGURES_KEY)
        assert figures is not None
        assert figures.value["side_requests"] == 1
        assert figures.value["requests"] == len(s.turns) - 1
        assert figures.value["cached_tokens"] > 0  # the replay's warm turns, reported as usage

    asyncio.run(go())


def test_claude_codes_sub_agents_name_the_main_model_and_stay_off_the_strong_tier() -> None:
    """Claude Code 2.1.332's Explore names the main model (`replay.agents`): its requests
    reach the session's router under the session id, and once the session is strong they are
    served from its base tier (`reason=sub_agent`), never strong."""
    _, s = _session(lambda s: s.api == "anthropic" and any(
        t.conversation == "sub-agent" for t in s.turns))

    async def go() -> None:
        run, store = await _replay(s)
        results = run.turns[0]
        subs = [i for i, t in enumerate(s.turns) if t.conversation == "sub-agent"]
        assert subs and all(s.turns[i].body["model"] == "orca/coding" for i in subs)
        for i in subs:
            assert not results[i].strong and results[i].router == "coding"
            trace = await store.get_trace(f"replay-0-{i}")
            assert trace is not None and trace["session_id"] is not None
        assert any(results[i].reason == "sub_agent" for i in subs)
        # the session itself escalated and served its main hard turns strong meanwhile
        assert any(r.strong for r in results)

    asyncio.run(go())


def test_codex_sub_agents_inherit_the_session_router() -> None:
    _, s = _session(lambda s: s.api == "responses" and any(
        t.conversation == "sub-agent" for t in s.turns))
    subs = [t for t in s.turns if t.conversation == "sub-agent"]
    assert all(t.body["model"] == "orca/coding" for t in subs)

    async def go() -> None:
        run, _ = await _replay(s)
        reasons = {run.turns[0][i].reason for i, t in enumerate(s.turns)
                   if t.conversation == "sub-agent"}
        assert "no_session" not in reasons and "side" not in reasons

    asyncio.run(go())


def test_codex_sub_agents_of_a_strong_session_are_served_from_the_base_tier() -> None:
    """A search sub-agent opening under an escalated session (an easy ask) starts on base,
    and its continuation follows it there (warm); the main conversation stays strong."""
    corpus = generate(sessions=60, agent_shaped=True)
    checked = 0
    for s in corpus:
        if s.api != "responses" or s.archetype not in ("latent_hard", "hard_start"):
            continue
        run, store = asyncio.run(_replay(s))
        results = run.turns[0]
        escalated = next(i for i, r in enumerate(results) if r.strong)
        subs = [i for i, t in enumerate(s.turns)
                if t.conversation == "sub-agent" and i > escalated]
        if not subs:
            continue
        for i in subs:
            assert (results[i].strong, results[i].reason) == (False, "sub_agent")
            trace = asyncio.run(store.get_trace(f"replay-0-{i}"))
            assert trace is not None
            if s.turns[i].kind == "tool":  # the continuation: remembered, on the same model
                assert trace["tier"]["evaluations"]["sub_agent"]["known"] is True
                assert trace["usage"]["cached_tokens"] > 0  # and key: warm
        later_main = [results[i] for i in range(escalated, len(results))
                      if s.turns[i].conversation == "main"]
        assert all(r.strong for r in later_main)
        checked += 1
    assert checked >= 3


def _turn(cfg: Config, scorer: Scorer, session: Session, k: int, *,
          precomputed: bool) -> Turn:
    t = session.turns[k]
    head = RequestHead(method="POST", path=PATHS[session.api], api=session.api,
                       headers=[("content-type", "application/json")], refusal=None)
    delta = scorer.delta(t.body, session.api) if precomputed else None
    turn = prepare(cfg, scorer, head, Arrival(f"r{k}", orjson.dumps(t.body), t.body, 1000.0, 0.0),
                   delta=delta)
    assert isinstance(turn, Turn)
    if precomputed:
        turn.full = scorer.full(t.body, session.api)
    return turn


@pytest.mark.parametrize("config", ["reference", "example"])
def test_prepare_with_a_precomputed_delta_plans_what_scoring_in_place_plans(
        config: str) -> None:
    """One optional parameter, not a second path: the same turn and the same plan, with the
    full-transcript score (which the example's gated_adaptive router bands on) too."""
    cfg = CFG if config == "reference" else loads(example_text(), source="example",
                                                  environ={})
    scorer = Scorer(cfg.difficulty)
    checked = banded = 0
    for s in CORPUS[:6]:
        for k in range(len(s.turns)):
            a = _turn(cfg, scorer, s, k, precomputed=False)
            b = _turn(cfg, scorer, s, k, precomputed=True)
            assert (a.delta, a.dedupe_key, a.side, a.read) == (b.delta, b.dedupe_key, b.side,
                                                               b.read)
            pa = decide(cfg, a, scorer=scorer, healthy=all_healthy, rng=random.Random(k))
            pb = decide(cfg, b, scorer=scorer, healthy=all_healthy, rng=random.Random(k))
            assert pa.decision == pb.decision and pa.attempts == pb.attempts
            assert pa.full == pb.full and pa.ranking == pb.ranking
            if pb.full is not None:  # the turn's precomputed score is the one the plan used
                assert pb.full is b.full
                banded += 1
            checked += 1
    assert checked > 50
    assert banded > 0 if config == "example" else banded == 0
