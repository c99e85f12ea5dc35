"""The seeded replay corpus (SPEC §10, seed §5.1): mix, determinism, wire shapes, cumulative
histories, ground-truth labels, and the scores the real scorer gives its turns."""

from __future__ import annotations

import hashlib
import random
from collections import Counter, defaultdict
from itertools import pairwise
from statistics import mean

import orjson
import pytest

from orca_cli.replay import pastes
from orca_cli.replay.corpus import (
    ARCHETYPES,
    DEFAULT_MIX,
    Session,
    Turn,
    generate,
    mix,
)
from orca_cli.replay.scenarios import SCENARIOS
from orca_cli.routing.features import Scorer
from orca_cli.routing.strikes import error_signatures
from orca_cli.wire.transcript import detect_api

SCORER = Scorer()
# The stratified turn counts do not depend on the seed (see the corpus docstring).
USER_TURNS = {"short_trivial": 770, "long_trivial": 1500, "latent_hard": 1002,
              "failure_loop": 420, "hard_start": 280}
TURN_RANGES = {"short_trivial": (3, 8), "long_trivial": (25, 25), "latent_hard": (4, 16),
               "failure_loop": (5, 9), "hard_start": (5, 9)}


@pytest.fixture(scope="module")
def corpus() -> list[Session]:
    return generate()


@pytest.fixture(scope="module")
def looped() -> list[Session]:
    return generate(agent_loop=True)


def digest(sessions: list[Session]) -> str:
    h = hashlib.sha256()
    for s in sessions:
        h.update(s.id.encode())
        for t in s.turns:
            h.update(orjson.dumps(t.body))
    return h.hexdigest()


def user_turns(sessions: list[Session]) -> list[tuple[Session, Turn]]:
    return [(s, t) for s in sessions for t in s.turns if t.kind == "user"]


def delta(s: Session, t: Turn) -> float:
    return SCORER.delta(t.body, s.api).score


# ---------------------------------------------------------------------------------- mix


def test_default_mix_has_the_seed_archetypes_and_about_3968_user_turns(
        corpus: list[Session]) -> None:
    assert len(corpus) == 400
    assert Counter(s.archetype for s in corpus) == DEFAULT_MIX
    per_archetype = Counter(s.archetype for s, _ in user_turns(corpus))
    assert per_archetype == USER_TURNS
    total = sum(per_archetype.values())
    assert abs(total - 3968) <= 0.02 * 3968
    for s in corpus:
        lo, hi = TURN_RANGES[s.archetype]
        assert lo <= len(s.turns) <= hi
        assert [t.index for t in s.turns] == list(range(1, len(s.turns) + 1))
        assert all(t.kind == "user" for t in s.turns)


def test_other_sizes_scale_the_mix_proportionally() -> None:
    assert mix(40) == {"short_trivial": 14, "long_trivial": 6, "latent_hard": 10,
                       "failure_loop": 6, "hard_start": 4}
    assert mix(1000) == {a: n * 5 // 2 for a, n in DEFAULT_MIX.items()}
    assert sum(mix(7).values()) == 7
    small = generate(sessions=40)
    assert Counter(s.archetype for s in small) == mix(40)


def test_sessions_are_interleaved_and_wire_formats_split_evenly(corpus: list[Session]) -> None:
    first_50 = {s.archetype for s in corpus[:50]}
    assert first_50 == set(ARCHETYPES)  # shuffled, not grouped by archetype
    for archetype in ARCHETYPES:
        apis = Counter(s.api for s in corpus if s.archetype == archetype)
        assert abs(apis["openai"] - apis["anthropic"]) <= 1


# -------------------------------------------------------------------------- determinism


def test_the_same_seed_gives_byte_identical_bodies(corpus: list[Session]) -> None:
    assert digest(generate()) == digest(corpus)
    assert digest(generate(seed=7)) != digest(corpus)


def test_agent_loop_corpus_is_deterministic_too(looped: list[Session]) -> None:
    assert digest(generate(agent_loop=True)) == digest(looped)


# ---------------------------------------------------------------------------- wire shapes


def test_every_body_is_a_coding_agent_request_with_its_session_id(
        looped: list[Session]) -> None:
    ids = [s.id for s in looped]
    assert len(set(ids)) == len(ids)
    for s in looped:
        for t in s.turns:
            body = t.body
            assert t.session_id == s.id and t.archetype == s.archetype
            assert body["metadata"] == {"session_id": s.id}
            assert detect_api(body) == s.api
            assert body["stream"] is True and body["model"] == "orca/coding"
            if s.api == "openai":
                names = [tool["function"]["name"] for tool in body["tools"]]
                system = body["messages"][0]
                assert system["role"] == "system" and len(system["content"]) > 2000
            else:
                names = [tool["name"] for tool in body["tools"]]
                assert len(body["system"][0]["text"]) > 2000
                assert body["max_tokens"] >= 1024
            assert names == ["read_file", "run_command"]


def test_tool_calls_and_results_use_each_format_own_shapes(looped: list[Session]) -> None:
    for s in looped:
        last = s.turns[-1].body["messages"]
        if s.api == "openai":
            calls = {c["id"] for m in last for c in m.get("tool_calls") or ()}
            results = {m["tool_call_id"] for m in last if m["role"] == "tool"}
            assert calls and results <= calls
            assert all(m["role"] in {"system", "user", "assistant", "tool"} for m in last)
        else:
            blocks = [b for m in last for b in m["content"]]
            uses = {b["id"] for b in blocks if b["type"] == "tool_use"}
            results = {b["tool_use_id"] for b in blocks if b["type"] == "tool_result"}
            assert uses and results <= uses
            roles = [m["role"] for m in last]
            assert roles[0] == "user"
            assert all(a != b for a, b in pairwise(roles))  # alternating


# ---------------------------------------------------------------------- cumulative history


@pytest.mark.parametrize("agent_loop", [False, True])
def test_histories_are_cumulative_and_share_their_messages(agent_loop: bool,
                                                           corpus: list[Session],
                                                           looped: list[Session]) -> None:
    for s in looped if agent_loop else corpus:
        prev: Turn | None = None
        for t in s.turns:
            msgs = t.body["messages"]
            if prev is None:
                assert t.prefix_tokens == 0 and t.delta_tokens == t.tokens_in
            else:
                before = prev.body["messages"]
                assert len(msgs) > len(before)
                assert all(a is b for a, b in zip(msgs, before, strict=False))  # no copies
                assert t.prefix_tokens == prev.tokens_in
                assert t.delta_tokens == t.tokens_in - t.prefix_tokens > 0
            prev = t


def test_tokens_in_is_the_full_scorer_token_estimate(looped: list[Session]) -> None:
    rng = random.Random(1)
    for s in rng.sample(looped, 60):
        for t in s.turns:
            assert t.tokens_in == SCORER.full(t.body, s.api).tokens


# ---------------------------------------------------------------------- labels and scores


def test_hard_turns_score_about_0_72_on_the_delta_and_trivial_turns_below_0_45(
        corpus: list[Session]) -> None:
    hard = [delta(s, t) for s, t in user_turns(corpus)
            if t.needs_strong and s.archetype != "failure_loop"]
    easy = [delta(s, t) for s, t in user_turns(corpus) if not t.needs_strong]
    assert len(hard) == 450 + 280
    assert mean(hard) == pytest.approx(0.72, abs=0.05)
    assert min(hard) > 0.6
    assert max(easy) < 0.45
    assert mean(easy) == pytest.approx(0.22, abs=0.03)  # the seed's easy mode near 0.23


def test_hard_turns_carry_a_pasted_trace_or_source_of_3_to_8_kb(corpus: list[Session]) -> None:
    for s, t in user_turns(corpus):
        text = SCORER.delta(t.body, s.api).user_texts[-1]
        if t.needs_strong and s.archetype != "failure_loop":
            assert pastes.PASTE_MIN + 500 < len(text) < pastes.PASTE_MAX + 2500
        else:
            assert len(text) < 200


@pytest.mark.parametrize("sc", SCENARIOS, ids=lambda sc: sc.key)
def test_pastes_stay_within_3_to_8_kb(sc: object) -> None:
    rng = random.Random(5)
    for size in (pastes.PASTE_MIN, 5000, pastes.PASTE_MAX):
        for make in (pastes.trace, pastes.source):
            text = make(rng, sc, size)  # type: ignore[arg-type]
            assert pastes.PASTE_MIN <= len(text) <= pastes.PASTE_MAX


def test_latent_hard_sessions_open_like_trivial_ones_and_turn_hard_later(
        corpus: list[Session]) -> None:
    openers = defaultdict(list)
    for s in corpus:
        openers[s.archetype].append(delta(s, s.turns[0]))
        labels = [t.needs_strong for t in s.turns]
        if s.archetype == "latent_hard":
            first = labels.index(True)
            last = len(labels) - 1 - labels[::-1].index(True)
            assert 1 <= first <= 8 and 3 <= last - first + 1 <= 6
            assert all(labels[first:last + 1])  # one contiguous hard stretch
        elif s.archetype == "hard_start":
            assert all(labels)
        elif s.archetype in ("short_trivial", "long_trivial"):
            assert not any(labels)
    assert mean(openers["latent_hard"]) == pytest.approx(mean(openers["short_trivial"]),
                                                         abs=0.02)
    assert mean(openers["hard_start"]) > 0.65


def test_failure_loops_repeat_one_prompt_and_one_error_signature(corpus: list[Session]) -> None:
    loops = [s for s in corpus if s.archetype == "failure_loop"]
    assert len(loops) == 60
    for s in loops:
        deltas = [SCORER.delta(t.body, s.api) for t in s.turns]
        assert len({d.user_texts for d in deltas}) == 1  # the same short prompt every turn
        assert deltas[0].tool_result_texts == ()
        sigs = {error_signatures(d.tool_result_texts) for d in deltas[1:]}
        assert len(sigs) == 1 and next(iter(sigs))  # the same signature from turn 2 on
        raw = [d.tool_result_texts for d in deltas[1:]]
        assert len(set(raw)) == len(raw)  # ... though every run prints new positions and ids
        assert [t.needs_strong for t in s.turns] == [t.index >= 3 for t in s.turns]
        assert max(d.score for d in deltas) < 0.45  # the difficulty gate never sees them


def test_long_trivial_sessions_drift_on_the_full_score_while_the_delta_stays_flat(
        corpus: list[Session]) -> None:
    longs = [s for s in corpus if s.archetype == "long_trivial"]
    first = mean(SCORER.full(s.turns[0].body, s.api).score for s in longs)
    last = mean(SCORER.full(s.turns[-1].body, s.api).score for s in longs)
    assert 0.10 < last / first - 1 < 0.25  # the seed measured ≈ +16 %
    d_first = mean(delta(s, s.turns[0]) for s in longs)
    d_last = mean(delta(s, s.turns[-1]) for s in longs)
    assert d_last == pytest.approx(d_first, abs=0.02)


# ---------------------------------------------------------------------------- agent loop


def test_agent_loop_adds_one_to_three_tool_continuations_per_user_turn(
        corpus: list[Session], looped: list[Session]) -> None:
    assert [len([t for t in s.turns if t.kind == "user"]) for s in looped] == [
        len(s.turns) for s in corpus]
    assert [(s.id, s.archetype) for s in looped] == [(s.id, s.archetype) for s in corpus]
    counts: Counter[int] = Counter()
    for s in looped:
        user: Turn | None = None
        run = 0
        for t in [*s.turns, None]:
            if t is None or t.kind == "user":
                if user is not None:
                    assert 1 <= run <= 3
                    counts[run] += 1
                user, run = t, 0
                if t is not None:
                    d = SCORER.delta(t.body, s.api)
                    assert d.is_user_turn and not d.is_tool_continuation
                continue
            run += 1
            assert user is not None and t.index == user.index
            assert t.needs_strong == user.needs_strong
            d = SCORER.delta(t.body, s.api)
            assert d.is_tool_continuation and not d.is_user_turn
            assert d.score < 0.45
    assert set(counts) == {1, 2, 3}


def test_agent_loop_failure_loops_rebuild_into_the_same_error(looped: list[Session]) -> None:
    for s in (s for s in looped if s.archetype == "failure_loop"):
        sigs = {error_signatures(SCORER.delta(t.body, s.api).tool_result_texts)
                for t in s.turns if t.index >= 2}
        assert len(sigs - {()}) == 1  # reads carry no error; every build the same one


def test_only_failure_loops_carry_error_signatures(looped: list[Session]) -> None:
    for s in looped:
        if s.archetype == "failure_loop":
            continue
        for t in s.turns:
            assert error_signatures(SCORER.delta(t.body, s.api).tool_result_texts) == ()


# ---------------------------------------------------------------------------- prevalence


@pytest.mark.parametrize("share", [0.01, 0.05, 0.2, 0.5])
def test_hard_share_remixes_the_sessions_to_that_share_of_needs_strong_turns(
        share: float) -> None:
    sessions = generate(hard_share=share)
    assert len(sessions) == 400
    turns = [t for _, t in user_turns(sessions)]
    labelled = sum(t.needs_strong for t in turns) / len(turns)
    assert labelled == pytest.approx(share, abs=max(0.2 * share, 0.005))


def test_hard_share_outside_the_sensitivity_range_is_refused() -> None:
    for bad in (0.0, 0.6, -0.1):
        with pytest.raises(ValueError, match="hard_share"):
            mix(400, bad)
    with pytest.raises(ValueError, match="sessions"):
        mix(-1)
