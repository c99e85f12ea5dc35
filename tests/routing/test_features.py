"""The difficulty scorer and delta extractor (SPEC §4, seed §3.1, §3.2, §6.1, §6.2).

The seed's measured properties are fixed cases on the realistic bodies of bodies.py, for both
wire formats; the rest pins the formula, the feature definitions, hygiene, the walk-back and
junk tolerance.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator
from statistics import mean
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orca_cli.config.schema import DifficultyConfig, FeatureConfig
from orca_cli.errors import ConfigError
from orca_cli.routing import linucb
from orca_cli.routing.features import (
    DENSITY_MIN_CHARS,
    FEATURES,
    SAMPLE_CHARS,
    Delta,
    Difficulty,
    FeatureValue,
    Scorer,
    _sample,
)
from tests.routing import bodies as B

APIS = ("openai", "anthropic")
SCORER = Scorer()


def feat(d: Difficulty, name: str) -> FeatureValue:
    return d.features[name]


# ------------------------------------------------------------------ seed properties (§4)


@pytest.mark.parametrize("api", APIS)
def test_short_opener_with_tools_scores_about_0_21_on_the_delta(api: str) -> None:
    body = B.opener(api)
    delta = SCORER.delta(body, api)  # type: ignore[arg-type]
    assert 0.18 <= delta.score <= 0.24
    assert delta.is_user_turn and not delta.is_tool_continuation


@pytest.mark.parametrize("api", APIS)
def test_opener_full_score_is_higher_by_the_system_prompt_and_length_terms(api: str) -> None:
    body = B.opener(api)
    full = SCORER.full(body, api)  # type: ignore[arg-type]
    delta = SCORER.delta(body, api).difficulty  # type: ignore[arg-type]
    sys_term = feat(full, "system_prompt_log_len").contribution
    len_gain = (feat(full, "log_prompt_tokens").contribution
                - feat(delta, "log_prompt_tokens").contribution)
    assert sys_term == pytest.approx(0.10, abs=0.005)  # a ~2 KB prompt saturates ln(2001)
    assert len_gain > 0.05
    assert full.score == pytest.approx(delta.score + sys_term + len_gain, abs=0.01)


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("paste", ["goroutine", "traceback", "source"])
def test_hard_debugging_turn_with_a_pasted_trace_scores_about_0_72(api: str, paste: str) -> None:
    body = B.hard_turn(api, paste)
    pasted = len(body["messages"][-1]["content"] if api == "openai"
                 else body["messages"][-1]["content"][0]["text"]) - len(B.HARD_PROSE)
    assert 2_500 <= pasted <= 8_000
    assert 0.68 <= SCORER.delta(body, api).score <= 0.76  # type: ignore[arg-type]


@pytest.mark.parametrize("api", APIS)
def test_hard_turns_average_0_72_and_the_paste_is_what_crosses_0_70(api: str) -> None:
    with_paste = [SCORER.delta(B.hard_turn(api, p), api).score  # type: ignore[arg-type]
                  for p in ("goroutine", "traceback", "source")]
    prose_only = SCORER.delta(B.hard_turn(api, None), api).score  # type: ignore[arg-type]
    assert mean(with_paste) == pytest.approx(0.72, abs=0.02)
    assert 0.62 <= prose_only <= 0.68  # the seed's first corpus peaked at 0.658
    assert all(s > prose_only + 0.04 for s in with_paste)


@pytest.mark.parametrize("api", APIS)
def test_trivial_edit_session_drifts_up_on_full_while_the_delta_stays_flat(api: str) -> None:
    bodies = B.trivial_session(api, turns=25)
    full = [SCORER.full(b, api).score for b in bodies]  # type: ignore[arg-type]
    delta = [SCORER.delta(b, api).score for b in bodies]  # type: ignore[arg-type]
    drift = full[-1] / full[0] - 1
    assert 0.10 < drift < 0.25  # the seed measured ≈ +16 %
    period = len(B.TRIVIAL_EDITS)
    assert min(full[-period:]) > max(full[:period])  # a trend, not one lucky turn
    for k, d in enumerate(delta):  # the same ask scores the same at turn 1 and turn 25
        assert d == pytest.approx(delta[k % period], rel=0.03)
    assert mean(delta[-period:]) == pytest.approx(mean(delta[:period]), rel=0.03)
    assert max(delta) < 0.30  # easy turns cluster near 0.23


@pytest.mark.parametrize("api", APIS)
def test_failure_loop_turn_stays_well_below_the_gate(api: str) -> None:
    for turn in (2, 3, 6):
        delta = SCORER.delta(B.failure_loop_turn(api, turn), api)  # type: ignore[arg-type]
        assert delta.score == pytest.approx(0.26, abs=0.04)
        assert delta.score < 0.55
        assert delta.is_user_turn
        assert delta.tool_result_texts == (B.compile_error(140 + turn - 1),)


def _maximal(api: str) -> dict[str, Any]:
    text = ("Why? Prove the invariant; find the race condition, the deadlock and the root "
            "cause. Theorem, lemma, O(n log n), x^2 mod p, ∑ ∫ probability. "
            + "func def return nil struct goroutine panic import class const " * 800)
    return B.body(api, [B.user(api, text)], system="s" * 5000)


@pytest.mark.parametrize("api", APIS)
def test_the_delta_maximum_is_0_90_and_the_full_maximum_is_1(api: str) -> None:
    body = _maximal(api)
    delta = SCORER.delta(body, api)  # type: ignore[arg-type]
    full = SCORER.full(body, api)  # type: ignore[arg-type]
    assert delta.score == pytest.approx(0.90)
    assert SCORER.max_delta == pytest.approx(0.90)
    assert full.score == pytest.approx(1.0)
    assert feat(delta.difficulty, "system_prompt_log_len").value == 0.0


@pytest.mark.parametrize("api", APIS)
def test_has_tools_contributes_exactly_its_weight(api: str) -> None:
    with_tools = B.body(api, [B.user(api, "hello there")])
    without = B.body(api, [B.user(api, "hello there")], tools=False)
    empty = {**without, "tools": []}
    for scorer in (SCORER.delta, SCORER.full):
        a = scorer(with_tools, api)  # type: ignore[arg-type]
        d = a.difficulty if isinstance(a, Delta) else a
        assert feat(d, "has_tools").contribution == 0.15
        for other in (without, empty):
            b = scorer(other, api)  # type: ignore[arg-type]
            e = b.difficulty if isinstance(b, Delta) else b
            assert feat(e, "has_tools").contribution == 0.0
    assert (SCORER.delta(with_tools, api).score  # type: ignore[arg-type]
            - SCORER.delta(without, api).score) == pytest.approx(0.15)  # type: ignore[arg-type]


# ------------------------------------------------------------------ delta semantics


@pytest.mark.parametrize("api", APIS)
def test_tool_continuation_is_scored_on_its_tool_results_never_the_old_ask(api: str) -> None:
    cont = B.tool_continuation(api)
    delta = SCORER.delta(cont, api)  # type: ignore[arg-type]
    assert delta.is_tool_continuation and not delta.is_user_turn
    assert delta.tool_result_texts == ("ok  \tgithub.com/acme/orders/internal/cache\t0.412s",)
    # The old ask was the hard prose (≈0.65 on its own turn); the continuation is not.
    assert delta.score < 0.25
    # Only the tool output moves it: the same output after a trivial ask scores the same.
    trivial = copy.deepcopy(cont)
    trivial["messages"][-3] = B.user(api, "rename x to y")  # the ask before the tool call
    assert SCORER.delta(trivial, api).score == delta.score  # type: ignore[arg-type]
    loud = B.tool_continuation(api, output=B.python_traceback())
    assert SCORER.delta(loud, api).score > delta.score + 0.1  # type: ignore[arg-type]


@pytest.mark.parametrize("api", APIS)
def test_delta_tokens_are_the_turn_own_text(api: str) -> None:
    body = B.hard_turn(api, None)
    delta = SCORER.delta(body, api)  # type: ignore[arg-type]
    assert delta.difficulty.tokens == math.ceil(len(B.HARD_PROSE) / 4)
    assert delta.difficulty.tokens_estimated is True
    assert feat(delta.difficulty, "log_prompt_tokens").value == pytest.approx(
        math.log1p(math.ceil(len(B.HARD_PROSE) / 4)))


@pytest.mark.parametrize("api", APIS)
def test_message_count_and_has_tools_ride_on_the_delta(api: str) -> None:
    body = B.failure_loop_turn(api, 3)
    delta = SCORER.delta(body, api)  # type: ignore[arg-type]
    assert delta.message_count == len(body["messages"])
    assert delta.has_tools is True


class _Poison(dict[str, Any]):
    """A message that fails on any read: the delta must never look at it."""

    def _boom(self, *a: Any, **k: Any) -> Any:
        raise AssertionError("delta() read a message before the last assistant message")

    get = __getitem__ = __iter__ = __contains__ = keys = items = values = __len__ = _boom


class _CountingList(list[Any]):
    def __init__(self, items: list[Any]) -> None:
        super().__init__(items)
        self.seen: set[int] = set()

    def __getitem__(self, i: Any) -> Any:
        self.seen.add(i if i >= 0 else len(self) + i)
        return super().__getitem__(i)

    def __iter__(self) -> Iterator[Any]:
        raise AssertionError("delta() iterated the whole transcript")


@pytest.mark.parametrize("api", APIS)
def test_delta_never_touches_messages_before_the_last_assistant(api: str) -> None:
    latest = [m for m in B.failure_loop_turn(api, 3)["messages"] if m["role"] != "system"]
    body = B.padded_transcript(api, 200_000, latest)
    msgs = body["messages"]
    last_assistant = max(i for i, m in enumerate(msgs) if m.get("role") == "assistant")
    expected = SCORER.delta(copy.deepcopy(body), api)  # type: ignore[arg-type]
    poisoned = [_Poison() if i < last_assistant else m for i, m in enumerate(msgs)]
    counted = _CountingList(poisoned)
    body["messages"] = counted
    got = SCORER.delta(body, api)  # type: ignore[arg-type]
    assert got == expected
    assert min(counted.seen) == last_assistant
    assert len(counted.seen) == len(msgs) - last_assistant


@pytest.mark.parametrize("api", APIS)
def test_delta_is_the_same_however_long_the_history(api: str) -> None:
    latest = B.hard_turn(api, "traceback")["messages"][-1:]
    short = B.padded_transcript(api, 10_000, latest)
    long = B.padded_transcript(api, 1_000_000, latest)
    a = SCORER.delta(short, api)  # type: ignore[arg-type]
    b = SCORER.delta(long, api)  # type: ignore[arg-type]
    assert a.difficulty == b.difficulty
    assert a.delta_digest == b.delta_digest
    assert a.message_count < b.message_count


def test_dedupe_key_follows_router_session_message_count_and_delta_text() -> None:
    a = SCORER.delta(B.failure_loop_turn("openai", 3), "openai")
    again = SCORER.delta(B.failure_loop_turn("openai", 3), "openai")
    other_error = SCORER.delta(B.failure_loop_turn("openai", 4), "openai")
    assert a.delta_digest == again.delta_digest and len(a.delta_digest) == 64
    assert a.dedupe_key("coding", "s1") == again.dedupe_key("coding", "s1")
    assert a.dedupe_key("coding", "s1") != a.dedupe_key("coding", "s2")
    assert a.dedupe_key("coding", "s1") != a.dedupe_key("other", "s1")
    assert a.delta_digest != other_error.delta_digest
    grown = B.failure_loop_turn("openai", 3)
    grown["messages"].insert(1, {"role": "user", "content": "earlier"})
    b = SCORER.delta(grown, "openai")
    assert b.delta_digest == a.delta_digest  # same turn text ...
    assert b.dedupe_key("coding", "s1") != a.dedupe_key("coding", "s1")  # ... other count


# ------------------------------------------------------------------ hygiene


REMINDER = ("<system-reminder>\nWhy prove the invariant? race condition deadlock root cause "
            "theorem lemma O(n log n) func def return nil\n</system-reminder>")
ENV = "<environment_context>\n  <cwd>/src/orders</cwd>\n  <shell>zsh</shell>\n</environment_context>"


@pytest.mark.parametrize("api", APIS)
def test_injected_blocks_are_removed_before_scoring_and_the_body_is_untouched(api: str) -> None:
    plain = B.body(api, [B.user(api, B.OPENER)])
    injected = B.body(api, [B.user(api, f"{REMINDER}\n{B.OPENER}\n{ENV}")])
    before = copy.deepcopy(injected)
    assert SCORER.delta(injected, api).difficulty == SCORER.delta(plain, api).difficulty  # type: ignore[arg-type]
    assert SCORER.full(injected, api) == SCORER.full(plain, api)  # type: ignore[arg-type]
    assert injected == before


def test_a_turn_of_only_injected_text_is_not_a_user_turn() -> None:
    msgs = [B.user("anthropic", "hi"), B.tool_call("anthropic", "c1", "ls")]
    msgs.append({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "c1", "content": f"README.md\n{REMINDER}"},
        {"type": "text", "text": REMINDER},
    ]})
    delta = SCORER.delta(B.anthropic_body(msgs), "anthropic")
    assert not delta.is_user_turn and delta.is_tool_continuation
    assert delta.tool_result_texts == ("README.md",)


# ------------------------------------------------------------------ features


def _delta_of(text: str, api: str = "openai", **kw: Any) -> Difficulty:
    return SCORER.delta(B.body(api, [B.user(api, text)], **kw), api).difficulty  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "cues"),
    [
        ("Why does this fail?", 1),
        ("WHY? why. Why!", 3),
        ("improve and approve this", 0),  # `prove` is a whole word
        ("prove it, proving it, the proof", 3),
        ("the trade-off, the tradeoff, trade off", 3),
        ("a Race-Condition and race conditions", 2),
        ("root cause; invariants; deadlocked; complexity", 4),
        ("embrace conditions", 0),
    ],
)
def test_reasoning_cues_are_case_insensitive_whole_tokens(text: str, cues: int) -> None:
    assert feat(_delta_of(text), "reasoning_cue_count").value == cues


@pytest.mark.parametrize(
    ("text", "markers"),
    [
        ("sorting is O(n log n), lookups O(1)", 2),
        ("call foo(x) and do(y)", 0),
        ("x^2 + 2^32", 2),
        ("a ^ b is xor", 0),
        ("compute it mod p, i.e. (mod 7)", 2),
        ("∑ over i ≤ n of ∫ f, n²", 4),
        ("a theorem, two lemmas, the probability", 3),
        ("“quotes” — dashes…", 0),
    ],
)
def test_math_markers(text: str, markers: int) -> None:
    assert feat(_delta_of(text), "math_marker_count").value == markers


def test_code_keyword_density_is_matches_per_100_chars_with_a_short_text_floor() -> None:
    long_text = ("func main() { return nil } " + "plain words here " * 20)
    d = _delta_of(long_text)
    assert feat(d, "code_keyword_density").value == pytest.approx(300 / len(long_text))
    short = _delta_of("add a nil check")  # one hit, but a one-liner is not dense code
    assert feat(short, "code_keyword_density").value == pytest.approx(100 / DENSITY_MIN_CHARS)


@pytest.mark.parametrize("api", APIS)
def test_text_features_ignore_the_system_prompt_and_tool_schemas(api: str) -> None:
    loud = "Why prove the invariant race condition theorem lemma func def return nil " * 20
    body = B.body(api, [B.user(api, "hello there")], system=loud)
    if api == "anthropic":
        body["tools"][0]["description"] = loud
    else:
        body["tools"][0]["function"]["description"] = loud
    full = SCORER.full(body, api)  # type: ignore[arg-type]
    for name in ("reasoning_cue_count", "code_keyword_density", "math_marker_count"):
        assert feat(full, name).value == 0
    assert feat(full, "system_prompt_log_len").value == pytest.approx(math.log1p(len(loud)))


@pytest.mark.parametrize("api", APIS)
def test_full_tokens_cover_system_tools_and_every_message(api: str) -> None:
    import orjson

    body = B.trivial_session(api, 3)[-1]
    full = SCORER.full(body, api)  # type: ignore[arg-type]
    tools = len(orjson.dumps(body["tools"]))
    texts = sum(len(a) + len(r) for a, r in B.TRIVIAL_EDITS[:2]) + len(B.TRIVIAL_EDITS[2][0])
    assert full.tokens == math.ceil((len(B.SYSTEM_PROMPT) + tools + texts) / 4)


def test_full_counts_tool_call_arguments_as_tokens() -> None:
    body = B.failure_loop_turn("openai", 2)
    without = copy.deepcopy(body)
    without["messages"][2]["tool_calls"][0]["function"]["arguments"] = ""
    args = body["messages"][2]["tool_calls"][0]["function"]["arguments"]
    gap = SCORER.full(body, "openai").tokens - SCORER.full(without, "openai").tokens
    assert abs(gap - len(args) / 4) <= 1


def test_score_is_the_weighted_capped_sum_with_configured_weights_and_caps() -> None:
    cfg = DifficultyConfig(
        log_prompt_tokens=FeatureConfig(0.5, 4.0),
        reasoning_cue_count=FeatureConfig(0.1, 2.0),
        code_keyword_density=FeatureConfig(0.1, 10.0),
        has_tools=FeatureConfig(0.05, 1.0),
        math_marker_count=FeatureConfig(0.0, 5.0),
    )
    scorer = Scorer(cfg)
    d = scorer.delta(B.hard_turn("openai", "source"), "openai").difficulty
    expected = 0.0
    for name in FEATURES:
        spec = getattr(cfg, name)
        fv = d.features[name]
        assert fv.contribution == pytest.approx(spec.weight * min(fv.value, spec.cap) / spec.cap)
        expected += fv.contribution
    assert d.score == pytest.approx(expected)
    assert feat(d, "log_prompt_tokens").contribution == pytest.approx(0.5)  # capped
    assert scorer.spec("has_tools") == FeatureConfig(0.05, 1.0)


@pytest.mark.parametrize(("field", "value"), [("cap", 0.0), ("cap", -1.0), ("weight", -0.1),
                                              ("cap", math.nan)])
def test_a_bad_weight_or_cap_is_a_config_error_naming_the_key(field: str, value: float) -> None:
    spec = FeatureConfig(value, 5.0) if field == "weight" else FeatureConfig(0.2, value)
    with pytest.raises(ConfigError, match=f"difficulty.math_marker_count.{field}"):
        Scorer(DifficultyConfig(math_marker_count=spec))


def test_to_json_has_exactly_score_and_every_feature_value_and_contribution() -> None:
    doc = SCORER.full(B.opener(), "openai").to_json()
    assert set(doc) == {"score", "features"}
    assert tuple(doc["features"]) == FEATURES
    assert all(set(v) == {"value", "contribution"} for v in doc["features"].values())


@given(st.lists(st.one_of(st.floats(allow_nan=False), st.just(0.0), st.just(-0.0),
                         st.integers(-3, 3)), min_size=12, max_size=12))
def test_to_json_rounds_every_figure_to_six_digits(figures: list[float]) -> None:
    d = Difficulty(0.5, tuple(figures[:6]), tuple(figures[6:]), 10)
    doc = d.to_json()["features"]
    for name, value, contribution in zip(FEATURES, figures[:6], figures[6:]):
        got = (doc[name]["value"], doc[name]["contribution"])
        want = (round(value, 6), round(contribution, 6))
        assert repr(got) == repr(want)  # the same numbers, -0.0 and int kept as they are


def test_values_follow_the_linucb_feature_order() -> None:
    d = SCORER.delta(B.hard_turn(), "openai").difficulty
    assert FEATURES == linucb.FEATURE_ORDER
    assert d.values == tuple(d.features[n].value for n in linucb.FEATURE_ORDER)


def test_the_text_sample_is_bounded_and_keeps_head_and_tail() -> None:
    big = "HEAD " + "x" * 1_000_000 + " TAIL"
    s = _sample(["why?", big])
    assert len(s) <= SAMPLE_CHARS + 2
    assert s.startswith("why?\nHEAD") and s.endswith("TAIL")
    small = ["a", "b"]
    assert _sample(small) == "a\nb"
    many = [f"piece {i} " * 50 for i in range(500)]
    s = _sample(many)
    assert len(s) <= SAMPLE_CHARS + 2 and "piece 0 " in s and "piece 499 " in s


def test_a_huge_tool_result_is_scored_on_a_bounded_sample() -> None:
    out = "func f() { return nil }\n" * 50_000  # 1.2 MB
    delta = SCORER.delta(B.tool_continuation("openai", output=out), "openai")
    assert feat(delta.difficulty, "code_keyword_density").value == pytest.approx(
        300 / 24, rel=0.05)
    assert delta.difficulty.tokens == math.ceil(len(out) / 4)  # tokens see it all


# ------------------------------------------------------------------ junk tolerance


JUNK: list[Any] = [
    None, [], "body", 7, {}, {"messages": "hi"}, {"messages": None, "tools": "x"},
    {"system": 5, "messages": [None, 3, "x", {"role": 5}]},
    {"messages": [{"role": "user", "content": 7}, {"role": "user", "content": [1, None,
     {"type": "text", "text": 5}, {"type": "tool_result", "content": {"a": 1}}]}]},
    {"messages": [{"role": "assistant", "tool_calls": [None, {"function": 3},
                                                       {"function": {"arguments": 9}}]}]},
    {"messages": [{"role": "tool", "content": [{"type": "image"}]}], "tools": [1]},
    {"system": [{"type": "text", "text": None}, "loose string", 4], "messages": []},
]

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["role", "content", "type", "text", "tool_calls", "function",
                         "arguments", "input", "system", "messages", "tools", "x"]),
        inner, max_size=5),
    max_leaves=30,
)
_role = st.sampled_from(["user", "assistant", "tool", "system", "developer", "x"])
_message = st.fixed_dictionaries({"role": _role, "content": _json})


@pytest.mark.parametrize("body", JUNK)
@pytest.mark.parametrize("api", APIS)
def test_junk_bodies_never_raise(body: Any, api: str) -> None:
    for d in (SCORER.full(body, api), SCORER.delta(body, api).difficulty):  # type: ignore[arg-type]
        assert 0.0 <= d.score <= 1.0


@settings(max_examples=150, deadline=None)
@given(messages=st.lists(_message | _json, max_size=6), extra=_json,
       api=st.sampled_from(APIS))
def test_arbitrary_json_shapes_never_raise(messages: list[Any], extra: Any, api: str) -> None:
    body = {"messages": messages, "system": extra, "tools": extra}
    for d in (SCORER.full(body, api), SCORER.delta(body, api).difficulty):  # type: ignore[arg-type]
        assert 0.0 <= d.score <= 1.0 and all(math.isfinite(v) for v in d.values)
