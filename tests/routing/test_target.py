"""SPEC §1.3: resolving the `model` field into a router, an alias target or a model."""

from __future__ import annotations

import pytest

from orca_cli.config.schema import Config, RouterConfig
from orca_cli.errors import UnknownModel
from orca_cli.routing import target as target_mod
from orca_cli.routing.target import SUFFIX_MODE, Target, resolve_target
from tests.routing.cfg import channel, config


def _cfg(aliases: dict[str, str] | None = None) -> Config:
    return config(
        [
            channel("deepseek", ["deepseek-chat"], type="deepseek"),
            channel(
                "anthropic",
                ["claude-haiku-4-5", "claude-opus-4-1"],
                type="anthropic",
                api="anthropic",
            ),
            channel("openrouter", ["vendor/model:free", "deepseek-chat"], type="openrouter"),
            channel("off", ["ghost-model"], enabled=False),
        ],
        routers=[RouterConfig("coding"), RouterConfig("background")],
        aliases=aliases,
    )


def test_orca_prefixed_router() -> None:
    t = resolve_target("orca/coding", _cfg())
    assert (t.kind, t.router, t.model, t.channel) == ("router", "coding", None, None)
    assert t.suffix is None
    assert t.requested == "orca/coding" and t.via_alias is None


def test_bare_router_name() -> None:
    assert resolve_target("background", _cfg()).router == "background"


def test_concrete_model() -> None:
    t = resolve_target("claude-haiku-4-5", _cfg())
    assert (t.kind, t.model, t.channel, t.router) == ("model", "claude-haiku-4-5", None, None)


def test_model_only_on_disabled_channel_is_unknown() -> None:
    with pytest.raises(UnknownModel):
        resolve_target("ghost-model", _cfg())


def test_exact_alias_beats_glob() -> None:
    cfg = _cfg({"claude-haiku-*": "orca/background", "claude-haiku-4-5": "orca/coding"})
    t = resolve_target("claude-haiku-4-5", cfg)
    assert (t.router, t.via_alias) == ("coding", "claude-haiku-4-5")


def test_glob_alias_beats_concrete_model() -> None:
    # Claude Code's housekeeping calls name a real model; the operator's pattern redirects them.
    t = resolve_target("claude-haiku-4-5", _cfg({"claude-haiku-*": "orca/background"}))
    assert (t.kind, t.router, t.via_alias) == ("router", "background", "claude-haiku-*")


def test_longest_glob_wins() -> None:
    cfg = _cfg(
        {"claude-*": "orca/coding", "claude-sonnet-*": "orca/background", "*": "deepseek-chat"}
    )
    assert resolve_target("claude-sonnet-4-5", cfg).via_alias == "claude-sonnet-*"
    assert resolve_target("claude-opus-9", cfg).via_alias == "claude-*"
    t = resolve_target("anything-else", cfg)
    assert (t.kind, t.model, t.via_alias) == ("model", "deepseek-chat", "*")


def test_alias_to_model_and_to_provider_qualified_model() -> None:
    cfg = _cfg({"gpt-4o": "deepseek-chat", "pinned": "openrouter:deepseek-chat"})
    t = resolve_target("gpt-4o", cfg)
    assert (t.kind, t.model, t.channel, t.via_alias) == ("model", "deepseek-chat", None, "gpt-4o")
    t = resolve_target("pinned", cfg)
    assert (t.model, t.channel) == ("deepseek-chat", "openrouter")


def test_alias_target_is_not_followed_into_another_alias() -> None:
    # One level only: a = b, b = a cannot loop; both are unknown.
    cfg = _cfg({"a": "b", "b": "a"})
    with pytest.raises(UnknownModel):
        resolve_target("a", cfg)


def test_self_matching_glob_resolves_to_its_model_without_looping() -> None:
    t = resolve_target("claude-haiku-3", _cfg({"claude-haiku-*": "claude-haiku-4-5"}))
    assert (t.kind, t.model, t.via_alias) == ("model", "claude-haiku-4-5", "claude-haiku-*")


def test_alias_to_unknown_target_is_unknown() -> None:
    with pytest.raises(UnknownModel):
        resolve_target("x", _cfg({"x": "orca/nope"}))


def test_provider_qualified_model() -> None:
    t = resolve_target("openrouter:deepseek-chat", _cfg())
    assert (t.kind, t.model, t.channel, t.suffix) == ("model", "deepseek-chat", "openrouter", None)


def test_provider_qualified_with_suffix() -> None:
    t = resolve_target("deepseek:deepseek-chat:cheap", _cfg())
    assert (t.model, t.channel, t.suffix) == ("deepseek-chat", "deepseek", "cheap")
    assert t.mode_for("balanced") == "price"


def test_provider_qualified_to_disabled_channel_still_resolves() -> None:
    # Candidates then exclude it with a reason, which is clearer than "unknown model".
    t = resolve_target("off:ghost-model", _cfg())
    assert (t.model, t.channel) == ("ghost-model", "off")


def test_channel_not_listing_the_model_is_not_a_qualifier() -> None:
    with pytest.raises(UnknownModel):
        resolve_target("deepseek:claude-opus-4-1", _cfg())


def test_unknown_first_segment_stays_part_of_the_model_id() -> None:
    cfg = config([channel("c", ["org:model-x"])])
    t = resolve_target("org:model-x", cfg)
    assert (t.model, t.channel) == ("org:model-x", None)


def test_colon_segment_that_is_not_a_suffix_stays_in_the_id() -> None:
    t = resolve_target("vendor/model:free", _cfg())
    assert (t.model, t.suffix) == ("vendor/model:free", None)
    t = resolve_target("openrouter:vendor/model:free:nitro", _cfg())
    assert (t.model, t.channel, t.suffix) == ("vendor/model:free", "openrouter", "nitro")


def test_suffix_on_plain_model() -> None:
    t = resolve_target("claude-haiku-4-5:fast", _cfg())
    assert (t.model, t.suffix, t.mode_override) == ("claude-haiku-4-5", "fast", "latency")


def test_suffix_on_router_and_on_glob_alias() -> None:
    assert resolve_target("orca/coding:nitro", _cfg()).mode_override == "throughput"
    t = resolve_target("claude-haiku-4-5:cheap", _cfg({"claude-haiku-*": "orca/background"}))
    assert (t.router, t.suffix, t.via_alias) == ("background", "cheap", "claude-haiku-*")


def test_request_suffix_overrides_suffix_in_alias_target() -> None:
    cfg = _cfg({"quick": "orca/coding:fast"})
    assert resolve_target("quick", cfg).suffix == "fast"
    assert resolve_target("quick:cheap", cfg).suffix == "cheap"


def test_model_literally_ending_in_a_suffix_word_is_served_as_itself() -> None:
    cfg = config([channel("c", ["m", "m:fast"])])
    expected = Target("model", None, "m:fast", None, None, "m:fast", None)
    assert resolve_target("m:fast", cfg) == expected
    assert resolve_target("m:cheap", cfg).suffix == "cheap"


@pytest.mark.parametrize(
    ("suffix", "mode"), [("nitro", "throughput"), ("cheap", "price"), ("fast", "latency")]
)
def test_suffix_mode_mapping(suffix: str, mode: str) -> None:
    assert SUFFIX_MODE[suffix] == mode
    assert resolve_target(f"deepseek-chat:{suffix}", _cfg()).mode_for("balanced") == mode


def test_no_suffix_keeps_configured_mode() -> None:
    assert resolve_target("deepseek-chat", _cfg()).mode_for("latency") == "latency"


def test_bare_suffix_word_is_not_a_suffix() -> None:
    with pytest.raises(UnknownModel):
        resolve_target(":fast", _cfg())


def test_unknown_model_lists_routers_aliases_and_models_sorted_unique() -> None:
    cfg = _cfg({"claude-haiku-*": "orca/background", "deepseek-chat": "orca/coding"})
    with pytest.raises(UnknownModel) as err:
        resolve_target("gpt-9", cfg)
    assert err.value.requested == "gpt-9"
    assert err.value.available == [
        "claude-haiku-*",
        "claude-haiku-4-5",
        "claude-opus-4-1",
        "deepseek-chat",
        "orca/background",
        "orca/coding",
        "vendor/model:free",
    ]
    assert "gpt-9" in str(err.value)


def test_empty_field_is_unknown() -> None:
    with pytest.raises(UnknownModel):
        resolve_target("  ", _cfg())


def test_broken_alias_is_not_silently_bypassed_for_a_same_named_model() -> None:
    with pytest.raises(UnknownModel):
        resolve_target("deepseek-chat", _cfg({"deepseek-chat": "orca/nope"}))


def test_unknown_router_name_is_unknown() -> None:
    with pytest.raises(UnknownModel):
        resolve_target("orca/nope", _cfg())


@pytest.mark.parametrize(("sent", "near", "pattern"), [
    ("claude-opus-4-1-20250805", "claude-opus-4-1", '"claude-opus-4-1-*" = "claude-opus-4-1"'),
    ("deepseek-chat-latest", "deepseek-chat", '"deepseek-chat-*" = "deepseek-chat"'),
])
def test_an_unknown_model_names_the_nearest_name_and_the_alias_to_add(
        sent: str, near: str, pattern: str) -> None:
    with pytest.raises(UnknownModel) as err:
        resolve_target(sent, _cfg())
    text = str(err.value)
    assert f"nearest configured name is {near!r}" in text
    assert pattern in text


@pytest.mark.parametrize(("sent", "meant"), [
    ("orca/codng", "orca/coding"), ("deepsek-chat", "deepseek-chat"),
    ("claude-haiku-4.5", "claude-haiku-4-5")])
def test_a_typo_of_a_served_name_is_asked_about(sent: str, meant: str) -> None:
    with pytest.raises(UnknownModel) as err:
        resolve_target(sent, _cfg({"o[0-9]*": "orca/coding"}))
    text = str(err.value)
    assert f"did you mean {meant!r}?" in text and "[aliases]" not in text


def test_a_pattern_with_one_letter_in_common_is_no_guess() -> None:
    """`o[0-9]*` shares only its `o` with `orca/nope`: no suggestion to alias it."""
    with pytest.raises(UnknownModel) as err:
        resolve_target("orca/nope", _cfg({"o[0-9]*": "orca/coding"}))
    assert "o[0-9]*" not in str(err.value).split("available: ")[0]


def test_a_name_like_nothing_lists_what_is_available_without_a_guess() -> None:
    with pytest.raises(UnknownModel) as err:
        resolve_target("zzzz", _cfg())
    assert "nearest" not in str(err.value) and "available: " in str(err.value)


def test_equal_length_globs_tie_on_the_pattern_text() -> None:
    cfg = config([channel("c1", ["m-a", "m-b"])],
                 aliases={"gpt-?": "m-b", "gpt-*": "m-a", "g*t-5": "m-b"})
    # "gpt-5" matches all three; "gpt-*" and "g*t-5" are the longest: "g*t-5" sorts first
    assert resolve_target("gpt-5", cfg).model == "m-b"
    assert resolve_target("gpt-4o", cfg).model == "m-a"


def test_an_unknown_suffix_on_a_known_name_lists_the_suffixes() -> None:
    with pytest.raises(UnknownModel) as err:
        resolve_target("orca/coding:bogus", _cfg({"o[0-9]*": "orca/coding"}))
    msg = str(err.value)
    assert msg.startswith("unknown routing suffix ':bogus' after 'orca/coding'"), msg
    assert "unknown model or router" not in msg
    assert ":nitro (throughput), :cheap (price), :fast (latency)" in msg
    assert "nearest configured name" not in msg and "[aliases]" not in msg


def test_a_channel_that_does_not_serve_the_model_says_so_and_what_it_serves() -> None:
    with pytest.raises(UnknownModel) as err:
        resolve_target("deepseek:claude-haiku-4-5", _cfg())
    msg = str(err.value)
    assert msg.startswith("channel 'deepseek' does not serve model 'claude-haiku-4-5' "
                          "(anthropic does); it serves deepseek-chat"), msg
    with pytest.raises(UnknownModel) as err:
        resolve_target("anthropic:deepseek-chat:fast", _cfg())
    assert ("channel 'anthropic' does not serve model 'deepseek-chat' (deepseek, openrouter "
            "do); it serves claude-haiku-4-5, claude-opus-4-1") in str(err.value)
    with pytest.raises(UnknownModel) as err:
        resolve_target("deepseek:gpt-9", _cfg())
    assert "channel 'deepseek' does not serve model 'gpt-9'; it serves deepseek-chat" in str(
        err.value)


@pytest.mark.parametrize("name", ["orca/coding", "background", " orca/coding ",
                                  "claude-haiku-4-5", "claude-haiku-4-5:fast",
                                  "claude-haiku-9", "openrouter:deepseek-chat",
                                  "vendor/model:free", "deepseek-chat:cheap"])
def test_memoised_answer_is_the_resolved_one(name: str) -> None:
    """A name resolved once is answered from the config's memo with what resolving it gives."""
    cfg = _cfg({"claude-haiku-*": "orca/background"})
    first = resolve_target(name, cfg)
    assert cfg.compiled.target_memo[name] is first
    assert resolve_target(name, cfg) is first
    assert first == target_mod._resolve_field(name, _cfg({"claude-haiku-*": "orca/background"}))


def test_unknown_names_are_not_memoised_and_the_memo_is_bounded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An unknown name still raises every time; past the bound, names resolve unmemoised."""
    cfg = _cfg({"claude-*": "orca/background"})
    for _ in range(2):
        with pytest.raises(UnknownModel):
            resolve_target("nothing-like-it", cfg)
    assert "nothing-like-it" not in cfg.compiled.target_memo
    monkeypatch.setattr(target_mod, "TARGET_MEMO_MAX", 3)
    for i in range(6):
        assert resolve_target(f"claude-{i}", cfg).router == "background"
    assert len(cfg.compiled.target_memo) == 3
