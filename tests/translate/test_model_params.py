"""A request reaches the model that serves it in the form that model takes: a Claude model's
thinking form and whether it takes sampling parameters (`translate.claude`), on the
same-format path (`native.fit_messages`) and when translating (`anthropic.encode_request`);
an OpenAI model's reasoning parameters, by whether it reasons (`native.fit_openai`); and an
effort OpenAI's levels lack (`common.openai_effort`)."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from orca_cli.translate.api import translate_request
from orca_cli.translate.claude import ClaudeTraits, budget_for, claude_traits
from orca_cli.translate.common import openai_effort, openai_efforts
from orca_cli.translate.native import fit_messages, fit_openai
from orca_cli.translate.policy import (
    TranslationOptions,
    chat_tools_effort,
    is_reasoning_model,
    takes_effort_updates,
    takes_reasoning_context,
)
from orca_cli.types import Api
from tests.translate.test_units import DictMemo

BUDGET = ClaudeTraits("budget", True)
BOTH = ClaudeTraits("both", True)
ADAPTIVE = ClaudeTraits("adaptive", False)
# Opus 4.8 on: mid-conversation system messages (Sonnet 5 without their tool changes)
OPUS48 = ClaudeTraits("adaptive", False, mid_system=True, tool_changes=True)
SONNET5 = ClaudeTraits("adaptive", False, mid_system=True)
# the 5.5 generation: no forced tool call, no thinking off, a per-turn effort, display updates
LATEST = ClaudeTraits("adaptive", False, False, False, True, True, True, True)


@pytest.mark.parametrize(("model", "traits"), [
    ("claude-haiku-4-5", BUDGET), ("claude-haiku-4-5-20251001", BUDGET),
    ("claude-sonnet-4-5", BUDGET), ("claude-sonnet-4-5-20250929", BUDGET),
    ("claude-opus-4-1", BUDGET), ("claude-opus-4-5", BUDGET), ("claude-opus-4-20250514", BUDGET),
    ("claude-3-7-sonnet-20250219", BUDGET), ("claude-3-5-haiku-latest", BUDGET),
    ("claude-sonnet-4-6", BOTH), ("claude-opus-4-6", BOTH), ("anthropic.claude-opus-4-6-v1", BOTH),
    ("claude-opus-4-7", ADAPTIVE), ("claude-opus-4-8", OPUS48), ("claude-sonnet-5", SONNET5),
    ("claude-opus-5", OPUS48._replace(fast_mode=True)),
    ("claude-sonnet-5-5", LATEST), ("claude-opus-5-5", LATEST._replace(fast_mode=True)),
    ("claude-fable-5-2", LATEST._replace(fast_mode=True)),
    ("claude-haiku-5-5", LATEST._replace(forced_tools=True, display_updates=False)),
    ("claude-fable-5", OPUS48._replace(thinking_off=False, display_updates=True)),
    ("claude-fable-5-1", LATEST),
    ("claude-mythos-5", SONNET5._replace(thinking_off=False)),
    ("anthropic/claude-sonnet-4.5", BUDGET), ("anthropic/claude-sonnet-5.5", LATEST),
])
def test_the_traits_of_a_claude_id(model: str, traits: ClaudeTraits) -> None:
    assert claude_traits(model) == traits


@pytest.mark.parametrize("model", ["gpt-4.1", "deepseek-chat", "claude", "my-claude-proxy",
                                   "gemini-2.5-pro"])
def test_an_id_that_is_not_claudes_has_no_traits(model: str) -> None:
    assert claude_traits(model) is None


def _claude_code(thinking: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """The top of a Claude Code 2.1.332 request as it sends it (captured from the real client)."""
    return {"model": "claude-opus-5-5", "max_tokens": 32000, "stream": True,
            "messages": [{"role": "user", "content": "fix the build"}], "thinking": thinking,
            "context_management": {"edits": [{"type": "clear_thinking_20251015",
                                              "keep": "all"}]}, **extra}


def test_adaptive_thinking_becomes_a_budget_on_a_model_that_knows_only_that() -> None:
    body = _claude_code({"type": "adaptive", "display": "omitted"},
                        output_config={"effort": "medium"})
    before = copy.deepcopy(body)
    got = fit_messages(body, claude_traits("claude-haiku-4-5"))
    assert got is not None and got.thinking_form == "enabled" and not got.thinking_off
    assert got.body["thinking"] == {"type": "enabled", "budget_tokens": 8192, "display": "omitted"}
    assert "output_config" not in got.body  # effort is the adaptive form's
    assert got.body["context_management"] == before["context_management"]
    assert body == before, "the client's parsed body is not changed"


def test_the_budget_stays_below_max_tokens_and_a_format_stays() -> None:
    body = _claude_code({"type": "adaptive"}, max_tokens=4000,
                        output_config={"format": {"type": "json_schema", "schema": {}}})
    got = fit_messages(body, claude_traits("claude-sonnet-4-5"))
    assert got is not None
    assert got.body["thinking"] == {"type": "enabled", "budget_tokens": 3999}  # effort: high
    assert got.body["output_config"] == {"format": {"type": "json_schema", "schema": {}}}


def test_no_room_for_a_budget_takes_thinking_off_with_its_context_edit() -> None:
    got = fit_messages(_claude_code({"type": "adaptive"}, max_tokens=1024), BUDGET)
    assert got is not None and got.thinking_off and got.thinking_form is None
    assert "thinking" not in got.body and "context_management" not in got.body
    assert budget_for("low", 1024) is None and budget_for("low", 1025) == 1024


def test_a_budget_becomes_adaptive_with_its_effort_on_a_model_that_refuses_budgets() -> None:
    body = _claude_code({"type": "enabled", "budget_tokens": 31999, "display": "omitted"})
    got = fit_messages(body, claude_traits("claude-opus-4-8"))
    assert got is not None and got.thinking_form == "adaptive"
    assert got.body["thinking"] == {"type": "adaptive", "display": "omitted"}
    assert got.body["output_config"] == {"effort": "high"}
    low = fit_messages(_claude_code({"type": "enabled", "budget_tokens": 2048},
                                    output_config={"effort": "medium"}), ADAPTIVE)
    assert low is not None and low.body["output_config"] == {"effort": "medium"}  # the client's


def test_sampling_parameters_go_for_a_model_that_refuses_them_and_stay_elsewhere() -> None:
    body = _claude_code({"type": "adaptive"}, temperature=0.2, top_p=0.9, top_k=40)
    got = fit_messages(body, claude_traits("claude-sonnet-5-5"))
    assert got is not None and got.sampling_dropped == ("temperature", "top_p", "top_k")
    assert not {"temperature", "top_p", "top_k"} & got.body.keys()
    assert got.body["thinking"] == {"type": "adaptive"}
    assert fit_messages(body, claude_traits("claude-sonnet-4-6")) is None


@pytest.mark.parametrize(("thinking", "traits"), [
    ({"type": "adaptive", "display": "omitted"}, ADAPTIVE),  # Claude Code on claude-opus-5-5
    ({"type": "adaptive"}, BOTH),
    ({"type": "enabled", "budget_tokens": 31999}, BUDGET),  # Claude Code on claude-haiku-4-5
    ({"type": "enabled", "budget_tokens": 31999}, BOTH),
    ({"type": "adaptive"}, None),  # not a Claude id: as the client wrote it
])
def test_a_body_written_for_its_model_goes_as_it_is(thinking: dict[str, Any],
                                                    traits: ClaudeTraits | None) -> None:
    assert fit_messages(_claude_code(thinking), traits) is None


def _translated(body: dict[str, Any], src: str, model: str) -> dict[str, Any]:
    out = translate_request(body, src, "anthropic", model=model,  # type: ignore[arg-type]
                            target_model_family="anthropic", options=TranslationOptions())
    return dict(orjson.loads(out.body))


CODEX = {"model": "gpt-5.4", "instructions": "You are Codex.", "stream": True,
         "reasoning": {"effort": "xhigh"}, "input": [{"type": "message", "role": "user",
                                                      "content": [{"type": "input_text",
                                                                   "text": "fix the build"}]}]}
AIDER = {"model": "gpt-4.1", "temperature": 0, "reasoning_effort": "low",
         "messages": [{"role": "user", "content": "fix the build"}]}


def test_a_translated_request_asks_a_current_claude_for_adaptive_thinking() -> None:
    out = _translated(CODEX, "responses", "claude-sonnet-5-5")
    assert out["thinking"] == {"type": "adaptive"}
    assert out["output_config"] == {"effort": "high"}
    aider = _translated(AIDER, "openai", "claude-opus-5-5")
    assert aider["thinking"] == {"type": "adaptive"}
    assert aider["output_config"] == {"effort": "low"}
    assert "temperature" not in aider


def test_a_translated_request_asks_an_older_claude_for_a_budget() -> None:
    out = _translated({**CODEX, "max_output_tokens": 64000}, "responses", "claude-haiku-4-5")
    assert out["thinking"] == {"type": "enabled", "budget_tokens": 32768}
    assert "output_config" not in out
    plain = _translated({**AIDER, "reasoning_effort": None}, "openai", "claude-sonnet-4-5")
    assert plain["temperature"] == 0 and "thinking" not in plain


def test_sampling_goes_for_a_current_claude_even_without_thinking() -> None:
    out = _translated({**AIDER, "reasoning_effort": None}, "openai", "claude-sonnet-5-5")
    assert "temperature" not in out and "thinking" not in out
    kept = _translated({**AIDER, "reasoning_effort": None}, "openai", "claude-sonnet-4-6")
    assert kept["temperature"] == 0


@pytest.mark.parametrize(("dst", "model"), [("openai", "gpt-5.4"), ("responses", "gpt-5.4")])
def test_claude_codes_max_effort_reaches_openai_as_its_highest_level(dst: str,
                                                                     model: str) -> None:
    body = _claude_code({"type": "adaptive"}, output_config={"effort": "max"})
    out = orjson.loads(translate_request(
        body, "anthropic", dst, model=model,  # type: ignore[arg-type]
        target_model_family="openai", options=TranslationOptions(target_reasoning=True)).body)
    effort = out["reasoning_effort"] if dst == "openai" else out["reasoning"]["effort"]
    assert effort == "xhigh"
    high = _claude_code({"type": "adaptive"}, output_config={"effort": "high"})
    out = orjson.loads(translate_request(
        high, "anthropic", dst, model=model,  # type: ignore[arg-type]
        target_model_family="openai", options=TranslationOptions(target_reasoning=True)).body)
    assert (out["reasoning_effort"] if dst == "openai" else out["reasoning"]["effort"]) == "high"


def test_gpt_6_keeps_claude_codes_max_effort_on_the_responses_api() -> None:
    """GPT-6 takes `max` on the Responses API; Chat Completions' highest is `xhigh`."""
    body = _claude_code({"type": "adaptive"}, output_config={"effort": "max"})
    for dst, effort in (("openai", "xhigh"), ("responses", "max")):
        out = orjson.loads(translate_request(
            body, "anthropic", dst, model="gpt-6.2-sol",  # type: ignore[arg-type]
            target_model_family="openai", options=TranslationOptions(target_reasoning=True)).body)
        assert (out["reasoning_effort"] if dst == "openai" else out["reasoning"]["effort"]) \
            == effort, dst


@pytest.mark.parametrize(("model", "api", "levels"), [
    ("o3", "responses", "low medium high"),
    ("o4-mini", "openai", "low medium high"),
    ("gpt-5", "responses", "minimal low medium high"),
    ("gpt-5-mini", "openai", "minimal low medium high"),
    ("gpt-5-pro", "responses", "high"),
    ("gpt-5-codex", "responses", "low medium high"),
    ("gpt-5.1", "openai", "none low medium high"),
    ("gpt-5.1-codex-max", "responses", "low medium high xhigh"),
    ("gpt-5.4", "responses", "none low medium high xhigh"),
    ("openai/gpt-5.4-mini", "openai", "none low medium high xhigh"),
    ("gpt-5.2-codex", "responses", "low medium high xhigh"),
    ("gpt-5.6-luna", "responses", "none low medium high xhigh max"),
    ("gpt-5.6-sol", "openai", "none low medium high xhigh"),
    ("gpt-6-sol", "responses", "none low medium high xhigh max"),
    ("gpt-6-luna", "openai", "none low medium high xhigh"),
    ("gpt-6-astra", "responses", "low medium high xhigh max"),
    ("gpt-6.1-sol", "responses", "low medium high xhigh max"),
    ("gpt-6.2-sol", "openai", "low medium high xhigh"),
])
def test_each_openai_model_takes_its_own_efforts(model: str, api: Api, levels: str) -> None:
    assert openai_efforts(model, api) == tuple(levels.split())


@pytest.mark.parametrize(("model", "api", "asked", "sent"), [
    ("gpt-5.4", "responses", "max", "xhigh"),  # Codex's max for gpt-6.2-sol, served on 5.4
    ("gpt-5.4", "responses", "minimal", "low"),
    ("gpt-5.6-terra", "responses", "minimal", "low"),
    ("gpt-6.1-sol", "responses", "none", "low"),  # "use low instead"
    ("gpt-6-sol", "responses", "none", "none"),
    ("gpt-5", "openai", "none", "minimal"),
    ("gpt-5", "openai", "xhigh", "high"),
    ("o3", "openai", "minimal", "low"),
    ("gpt-5-pro", "responses", "low", "high"),
    ("gpt-6.2-sol", "openai", "max", "xhigh"),
    ("gpt-6.2-sol", "responses", "max", "max"),
    ("deepseek-reasoner", "openai", "max", "xhigh"),  # efforts unknown: max as xhigh
    ("deepseek-reasoner", "openai", "minimal", "minimal"),
    ("gpt-5.4", "responses", "turbo", "turbo"),  # not an effort orca knows: as sent
])
def test_an_effort_the_model_lacks_becomes_its_nearest(model: str, api: Api, asked: str,
                                                        sent: str) -> None:
    assert openai_effort(asked, model, api) == sent


def test_a_same_format_body_gets_the_effort_its_serving_model_takes() -> None:
    codex = {"model": "gpt-6.2-sol", "input": "hi", "include": [],
             "reasoning": {"effort": "max", "context": "all_turns", "summary": "auto"}}
    fitted = fit_openai(codex, "responses", True, model="gpt-5.4")
    assert fitted is not None
    assert fitted.body["reasoning"] == {"effort": "xhigh", "summary": "auto"}
    assert fitted.params_renamed == (("reasoning.effort: max", "reasoning.effort: xhigh"),)
    assert fitted.params_dropped == ("reasoning.context",)
    kept = fit_openai(codex, "responses", True, model="gpt-6.2-sol")
    assert kept is None  # max is gpt-6.2-sol's own
    chat = {"model": "m", "messages": [], "reasoning_effort": "minimal"}
    fitted = fit_openai(chat, "openai", True, model="gpt-5.6-luna")
    assert fitted is not None and fitted.body["reasoning_effort"] == "low"
    assert fit_openai(chat, "openai", True) is None  # no serving model named: as sent
    tools = {**chat, "tools": [{"type": "function", "function": {"name": "f"}}]}
    beside = fit_openai(tools, "openai", True, "none", model="gpt-5.6-luna")
    assert beside is not None and beside.body["reasoning_effort"] == "none"  # the tools rule


@pytest.mark.parametrize(("model", "reasons"), [
    ("gpt-6.2-sol", True), ("gpt-6-luna", True), ("gpt-6-astra", True), ("gpt-6.1-sol", True),
    ("openai/gpt-6-sol", True), ("gpt-5.4", True), ("gpt-5.6-terra", True), ("o3", True),
    ("gpt-5-chat-latest", False), ("gpt-5.1-chat-latest", False), ("gpt-4.1-mini", False),
    ("gpt-4o", False), ("deepseek-chat", False), ("deepseek-reasoner", True),
])
def test_which_models_reason_by_id(model: str, reasons: bool) -> None:
    """Codex 0.171's default, `gpt-6.2-sol`, reasons: it refuses Chat Completions'
    `max_tokens` and takes Codex's reasoning effort and encrypted reasoning."""
    assert is_reasoning_model(model) is reasons


# Codex 0.171's top-level fields (captured from the real client), its input cut short
CODEX_NATIVE = {"model": "gpt-6.2-sol", "instructions": "You are Codex.", "stream": True,
                "tool_choice": "auto", "parallel_tool_calls": False,
                "reasoning": {"effort": "low", "context": "all_turns"},
                "include": ["reasoning.encrypted_content"], "store": False,
                "prompt_cache_key": "01a24b5d-ef9d-7d10-ba3a-dfc74132c76f",
                "text": {"verbosity": "low"},
                "input": [{"type": "message", "role": "user",
                           "content": [{"type": "input_text", "text": "fix the build"}]}]}


def test_codexs_reasoning_goes_for_an_openai_model_that_does_not_reason() -> None:
    before = copy.deepcopy(CODEX_NATIVE)
    got = fit_openai(CODEX_NATIVE, "responses", reasoning=False)
    assert got is not None
    assert "reasoning" not in got.body and "include" not in got.body
    assert got.params_dropped == ("reasoning", "text.verbosity",
                                  "include:reasoning.encrypted_content")
    assert {k: v for k, v in got.body.items()} == {
        k: v for k, v in before.items() if k not in ("reasoning", "include", "text")}
    assert CODEX_NATIVE == before, "the client's parsed body is not changed"
    other = fit_openai({**CODEX_NATIVE, "include": ["reasoning.encrypted_content",
                                                    "message.output_text.logprobs"]},
                       "responses", reasoning=False)
    assert other is not None and other.body["include"] == ["message.output_text.logprobs"]
    formatted = fit_openai({**CODEX_NATIVE, "text": {"verbosity": "low", "format": {
        "type": "text"}}}, "responses", reasoning=False)
    assert formatted is not None and formatted.body["text"] == {"format": {"type": "text"}}
    assert fit_openai(CODEX_NATIVE, "responses", reasoning=True) is None
    # a reasoning model before GPT-5.6 has no `reasoning.context`; the effort stays
    older = fit_openai(CODEX_NATIVE, "responses", reasoning=True, model="gpt-5.4")
    assert older is not None and older.body["reasoning"] == {"effort": "low"}
    assert older.params_dropped == ("reasoning.context",)
    assert [m for m in ("gpt-5.4", "gpt-5.5", "o3", "gpt-5.6-sol", "gpt-6.2-sol")
            if takes_reasoning_context(m)] == ["gpt-5.6-sol", "gpt-6.2-sol"]


def test_a_chat_body_fits_a_reasoning_model_and_one_that_does_not_reason() -> None:
    chat = {"model": "orca/coding", "temperature": 0.2, "top_p": 0.9, "max_tokens": 512,
            "reasoning_effort": "low", "messages": [{"role": "user", "content": "hi"}]}
    to_reasoning = fit_openai(chat, "openai", reasoning=True)
    assert to_reasoning is not None
    assert to_reasoning.sampling_dropped == ("temperature", "top_p")
    assert to_reasoning.params_renamed == (("max_tokens", "max_completion_tokens"),)
    assert to_reasoning.body["max_completion_tokens"] == 512
    assert "max_tokens" not in to_reasoning.body and "temperature" not in to_reasoning.body
    assert to_reasoning.body["reasoning_effort"] == "low"
    to_plain = fit_openai(chat, "openai", reasoning=False)
    assert to_plain is not None and to_plain.params_dropped == ("reasoning_effort",)
    verbose = fit_openai({**chat, "verbosity": "low"}, "openai", reasoning=False)
    assert verbose is not None and verbose.params_dropped == ("reasoning_effort", "verbosity")
    assert to_plain.body["temperature"] == 0.2 and to_plain.body["max_tokens"] == 512
    plain = {k: v for k, v in chat.items() if k != "reasoning_effort"}
    assert fit_openai(plain, "openai", reasoning=False) is None


@pytest.mark.parametrize("model", ["claude-sonnet-5", "claude-haiku-4-5"])
def test_a_forced_tool_call_leaves_thinking_off(model: str) -> None:
    """The Messages API takes only `tool_choice` auto or none with extended thinking."""
    tools = [{"type": "function", "function": {"name": "edit", "parameters": {
        "type": "object", "properties": {}}}}]
    body = {**AIDER, "tools": tools, "max_tokens": 64000, "reasoning_effort": "high",
            "tool_choice": {"type": "function", "function": {"name": "edit"}}}
    out = _translated(body, "openai", model)
    assert out["tool_choice"]["type"] == "tool" and "thinking" not in out
    free = _translated({**body, "tool_choice": "auto"}, "openai", model)
    assert "thinking" in free


def test_the_latest_claude_gets_a_forced_tool_call_as_auto_and_no_disabled_thinking() -> None:
    body = _claude_code({"type": "disabled"}, tools=[{"name": "edit", "input_schema": {
        "type": "object"}}], tool_choice={"type": "tool", "name": "edit",
                                           "disable_parallel_tool_use": True})
    got = fit_messages(body, claude_traits("claude-sonnet-5-5"))
    assert got is not None and got.params_dropped == ("tool_choice.forced", "thinking.disabled")
    assert got.body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert "thinking" not in got.body  # the model's default, adaptive
    assert got.body["context_management"] == body["context_management"]
    # Opus 4.8 takes both (only adaptive thinking, but forcing and turning thinking off)
    assert fit_messages(body, claude_traits("claude-opus-4-8")) is None
    assert claude_traits("claude-fable-5-1")[:4] == ("adaptive", False, False, False)
    assert claude_traits("claude-mythos-5")[:4] == ("adaptive", False, True, False)
    assert claude_traits("claude-fable-5")[:4] == ("adaptive", False, True, False)
    translated = _translated({**AIDER, "reasoning_effort": None, "tools": [
        {"type": "function", "function": {"name": "edit", "parameters": {"type": "object"}}}],
        "tool_choice": "required"}, "openai", "claude-opus-5-5")
    assert translated["tool_choice"] == {"type": "auto"}
    kept = _translated({**AIDER, "reasoning_effort": None, "tools": [
        {"type": "function", "function": {"name": "edit", "parameters": {"type": "object"}}}],
        "tool_choice": "required"}, "openai", "claude-opus-4-8")
    assert kept["tool_choice"] == {"type": "any"}


def _opus55_turn() -> dict[str, Any]:
    """The shape of Claude Code 2.1.332's opening request for its default `claude-opus-5-5`
    (captured): environment notes as a mid-conversation system message after the user's,
    with a per-turn effort and a cache breakpoint, and `display` on its thinking."""
    return {"model": "claude-opus-5-5", "max_tokens": 128000, "stream": True,
            "system": [{"type": "text", "text": "You are a Claude agent."}],
            "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
            "thinking": {"type": "adaptive", "display": "updates"},
            "output_config": {"effort": "medium"},
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Rename the helper"}]},
                {"role": "system", "output_config": {"effort": "medium"}, "content": [
                    {"type": "text", "text": "# Environment\nPlatform: linux",
                     "cache_control": {"type": "ephemeral"}}]}]}


def test_a_mid_conversation_system_message_goes_as_user_text_before_opus_4_8() -> None:
    body = _opus55_turn()
    before = copy.deepcopy(body)
    fitted = fit_messages(body, claude_traits("claude-sonnet-4-6"))
    assert fitted is not None and body == before
    messages = fitted.body["messages"]
    assert [m["role"] for m in messages] == ["user", "user"]
    assert messages[1] == {"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>\n# Environment\nPlatform: linux\n"
                                 "</system-reminder>", "cache_control": {"type": "ephemeral"}}]}
    assert fitted.params_renamed == (("messages.role:system", "user <system-reminder> text"),)
    # the per-turn effort goes, the request's stays; so does `display: updates`
    assert fitted.params_dropped == ("messages.output_config", "thinking.display")
    assert fitted.body["output_config"] == {"effort": "medium"}
    assert fitted.body["thinking"] == {"type": "adaptive"}
    # the same body, fitted again (the next turn re-sends it), is written the same way
    assert fit_messages(copy.deepcopy(before), claude_traits("claude-sonnet-4-6")) == fitted


def test_a_string_system_message_and_a_breakpoint_on_the_message_are_kept() -> None:
    body = _opus55_turn()
    body["messages"][1] = {"role": "system", "content": "Be terse.",
                           "cache_control": {"type": "ephemeral"}}
    fitted = fit_messages(body, claude_traits("claude-haiku-4-5"))
    assert fitted is not None
    assert fitted.body["messages"][1] == {"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>\nBe terse.\n</system-reminder>",
         "cache_control": {"type": "ephemeral"}}]}


def test_opus_4_8_keeps_the_system_message_and_loses_only_the_per_turn_effort() -> None:
    fitted = fit_messages(_opus55_turn(), claude_traits("claude-opus-4-8"))
    assert fitted is not None
    system = fitted.body["messages"][1]
    assert system["role"] == "system" and "output_config" not in system
    assert system["content"] == _opus55_turn()["messages"][1]["content"]
    assert fitted.params_renamed == ()


def test_tool_changes_move_to_tools_for_a_model_that_does_not_take_them() -> None:
    body = _opus55_turn()
    grep = {"name": "Grep", "input_schema": {"type": "object"}}
    body["messages"] += [
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        {"role": "user", "content": [{"type": "text", "text": "go on"}]},
        {"role": "system", "content": [
            {"type": "tool_addition", "tool": {"type": "tool_definition", "definition": grep}},
            {"type": "tool_removal", "tool": {"type": "tool_reference", "name": "Bash"}}]}]
    for model in ("claude-sonnet-5", "claude-haiku-4-5"):
        fitted = fit_messages(body, claude_traits(model))
        assert fitted is not None
        assert fitted.body["tools"] == [grep], model
        # the message that only changed tools is gone
        assert [m["role"] for m in fitted.body["messages"]][-1] == "user", model
        assert ("messages.tool_addition", "tools") in fitted.params_renamed
    # a model that takes tool changes keeps them where they were
    kept = fit_messages(body, claude_traits("claude-opus-4-8"))
    assert kept is not None and kept.body["messages"][-1] == body["messages"][-1]
    assert kept.body["tools"] == body["tools"]


def test_fast_mode_goes_where_the_model_has_none() -> None:
    """Claude Code's `/fast` writes `speed: "fast"` (Opus 5.5); Sonnet, Haiku and Opus 4.8
    (whose fast mode was removed) refuse it."""
    body = {**_opus55_turn(), "speed": "fast"}
    for model in ("claude-sonnet-5-5", "claude-opus-4-8", "claude-haiku-4-5"):
        fitted = fit_messages(body, claude_traits(model))
        assert fitted is not None and "speed" not in fitted.body, model
        assert fitted.params_dropped[0] == "speed", model
    assert fit_messages(body, claude_traits("claude-opus-5-5")) is None


def test_the_body_written_for_the_newest_models_goes_as_it_is_there() -> None:
    for model in ("claude-opus-5-5", "claude-sonnet-5-5", "claude-fable-5-1"):
        assert fit_messages(_opus55_turn(), claude_traits(model)) is None, model
    plain = _opus55_turn()
    del plain["messages"][1], plain["thinking"]["display"]
    # nothing of the newest models in it: Opus 4.8 takes it as it is
    assert fit_messages(plain, claude_traits("claude-opus-4-8")) is None


@pytest.mark.parametrize(("model", "rule"), [
    ("gpt-5.2", "omit"), ("gpt-5.4", "omit"), ("gpt-5.5", "omit"), ("openai/gpt-5.4", "omit"),
    ("gpt-5.6-luna", "none"), ("gpt-5.6-terra", "none"), ("gpt-6-sol", "none"),
    ("gpt-6-luna", "none"), ("gpt-6-astra", "responses"), ("gpt-6.1-sol", "responses"),
    ("gpt-6.2-sol", "responses"), ("gpt-5", "any"), ("gpt-5.1", "any"),
    ("gpt-5.4-mini", "any"), ("o3", "any"), ("gpt-4.1", "any"),
])
def test_what_chat_completions_takes_beside_function_tools(model: str, rule: str) -> None:
    """OpenAI: "Function tools with reasoning_effort are not supported for gpt-5.4 in
    /v1/chat/completions" (left out, the request passes); GPT-5.6, GPT-6 Sol and Luna "… or
    set reasoning_effort to 'none'" (left out, they still refuse); GPT-6 Astra and GPT-6.1 Sol
    "support Chat Completions, but tool calling requires Responses" (and have no `none`)."""
    assert chat_tools_effort(model) == rule


def test_tools_on_chat_completions_for_a_model_that_takes_them_only_on_responses() -> None:
    body = {**_claude_code({"type": "adaptive"}, output_config={"effort": "high"}),
            "tools": [{"name": "edit", "input_schema": {"type": "object"}}]}
    opts = TranslationOptions(target_reasoning=True, chat_tools_effort="responses")
    tr = translate_request(body, "anthropic", "openai", model="gpt-6.2-sol",
                           target_model_family="openai", options=opts)
    assert tr.report["untranslatable"] == ["tools:chat_completions"]
    without = {k: v for k, v in body.items() if k != "tools"}
    tr = translate_request(without, "anthropic", "openai", model="gpt-6.2-sol",
                           target_model_family="openai", options=opts)
    assert tr.report["untranslatable"] == []  # Chat Completions takes the rest


CHAT_TOOLS = {"model": "orca/coding", "reasoning_effort": "high", "max_tokens": 400,
              "messages": [{"role": "user", "content": "fix the build"}],
              "tools": [{"type": "function", "function": {"name": "edit", "parameters": {
                  "type": "object"}}}]}


def test_a_chat_body_with_tools_fits_what_the_reasoning_model_takes_beside_them() -> None:
    omitted = fit_openai(CHAT_TOOLS, "openai", reasoning=True, tools_effort="omit")
    assert omitted is not None and "reasoning_effort" not in omitted.body
    assert omitted.params_dropped == ("reasoning_effort",)
    assert omitted.body["max_completion_tokens"] == 400
    nothing = fit_openai(CHAT_TOOLS, "openai", reasoning=True, tools_effort="none")
    assert nothing is not None and nothing.body["reasoning_effort"] == "none"
    assert ("reasoning_effort: high", "reasoning_effort: none") in nothing.params_renamed
    unset = {k: v for k, v in CHAT_TOOLS.items() if k not in ("reasoning_effort", "max_tokens")}
    got = fit_openai(unset, "openai", reasoning=True, tools_effort="none")
    assert got is not None and got.body["reasoning_effort"] == "none"
    # without tools, or where the model takes both, the effort stays
    no_tools = {k: v for k, v in CHAT_TOOLS.items() if k != "tools"}
    assert fit_openai(no_tools, "openai", reasoning=True, tools_effort="omit").body[
        "reasoning_effort"] == "high"  # type: ignore[union-attr]
    assert fit_openai(CHAT_TOOLS, "openai", reasoning=True).body[  # type: ignore[union-attr]
        "reasoning_effort"] == "high"


def test_a_translated_chat_request_with_tools_fits_the_same_rule() -> None:
    body = {**_claude_code({"type": "adaptive"}, output_config={"effort": "high"}),
            "tools": [{"name": "edit", "input_schema": {"type": "object"}}]}
    for rule, want in (("omit", None), ("none", "none"), ("any", "high")):
        tr = translate_request(body, "anthropic", "openai", model="gpt-5.4",
                               target_model_family="openai",
                               options=TranslationOptions(target_reasoning=True,
                                                          chat_tools_effort=rule))  # type: ignore[arg-type]
        assert orjson.loads(tr.body).get("reasoning_effort") == want, rule
        assert ("reasoning_effort" in tr.report["dropped_params"]) is (rule != "any"), rule


def test_an_effort_the_model_lacks_goes_as_high() -> None:
    """`xhigh` came with Opus 4.7 and `max` with the 4.6 generation (Anthropic's effort docs);
    Claude Code sends `high` for either where the model lacks it, and so does orca."""
    body = _claude_code({"type": "adaptive"}, output_config={"effort": "xhigh"})
    fitted = fit_messages(body, claude_traits("claude-sonnet-4-6"))
    assert fitted is not None and fitted.body["output_config"] == {"effort": "high"}
    assert fitted.params_renamed == (("output_config.effort: xhigh", "output_config.effort: high"),)
    assert fitted.body["thinking"] == {"type": "adaptive"}
    top = _claude_code({"type": "adaptive"}, output_config={"effort": "max"})
    assert fit_messages(top, claude_traits("claude-sonnet-4-6")) is None  # 4.6 has max
    for model in ("claude-opus-4-8", "claude-sonnet-5", "claude-opus-5-5"):
        assert fit_messages(body, claude_traits(model)) is None, model
    budget = _claude_code({"type": "enabled", "budget_tokens": 4000},
                          output_config={"effort": "max"})
    older = fit_messages(budget, claude_traits("claude-opus-4-5"))
    assert older is not None and older.body["output_config"] == {"effort": "high"}


def _with_update(effort: str) -> dict[str, Any]:
    """A Responses body that raised its effort mid-conversation, as OpenAI's GPT-6 guide
    writes it: the request-level effort stays, a `configuration_update` item before the turn
    that needs more."""
    return {"model": "gpt-6-astra", "reasoning": {"effort": "low", "summary": "auto"},
            "include": [], "input": [
                {"type": "message", "role": "user", "content": "Rename the helper."},
                {"type": "message", "role": "assistant", "content": "Renamed."},
                {"type": "configuration_update", "reasoning": {"effort": effort}},
                {"type": "message", "role": "user", "content": "Now find the race."}]}


def test_an_effort_update_is_kept_for_gpt_6_astra_and_folded_for_an_earlier_model() -> None:
    assert takes_effort_updates("gpt-6-astra") and takes_effort_updates("gpt-6.2-sol")
    assert not takes_effort_updates("gpt-6-sol") and not takes_effort_updates("gpt-5.6-sol")
    assert fit_openai(_with_update("high"), "responses", True, model="gpt-6-astra") is None
    fitted = fit_openai(_with_update("high"), "responses", True, model="gpt-5.4")
    assert fitted is not None
    assert [i.get("type") for i in fitted.body["input"]] == ["message"] * 3
    assert fitted.body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert fitted.params_dropped == ("input:configuration_update",)
    assert fitted.params_renamed == (("reasoning.effort: low", "reasoning.effort: high"),)
    # an update to an effort the model lacks: folded, then the nearest it has
    maxed = fit_openai(_with_update("max"), "responses", True, model="gpt-5.4")
    assert maxed is not None and maxed.body["reasoning"]["effort"] == "xhigh"
    # a model that does not reason: the items go with the rest of the reasoning
    # only a body that names a model taking updates is looked through (a client writes them
    # for the model it asked for)
    named = {**_with_update("high"), "model": "orca/coding"}
    assert fit_openai(named, "responses", True, model="gpt-5.4") is None
    plain = fit_openai(_with_update("high"), "responses", False, model="gpt-4.1-mini")
    assert plain is not None and "reasoning" not in plain.body
    assert "configuration_update" not in orjson.dumps(plain.body).decode()


@pytest.mark.parametrize("dst", ["openai", "anthropic"])
@pytest.mark.parametrize("by_unit", [False, True])  # the request path's unit-by-unit memo
def test_a_translated_request_runs_at_its_last_effort_update(dst: str, by_unit: bool) -> None:
    out = translate_request(_with_update("high"), "responses", dst,  # type: ignore[arg-type]
                            model="gpt-5.4" if dst == "openai" else "claude-opus-4-8",
                            target_model_family="openai" if dst == "openai" else "anthropic",
                            options=TranslationOptions(target_reasoning=True),
                            memo=DictMemo() if by_unit else None)
    body = orjson.loads(out.body)
    assert out.report["untranslatable"] == []
    assert "configuration_update" not in out.body.decode()
    if dst == "openai":
        assert body["reasoning_effort"] == "high"
    else:
        assert body["output_config"]["effort"] == "high"


@pytest.mark.parametrize("api", ["responses", "openai"])
def test_gpt_5_6_cache_options_and_pro_mode_go_for_an_earlier_model(api: Api) -> None:
    """GPT-5.6's `prompt_cache_options` (TTL and mode) and `reasoning.mode` ("pro"): "return a
    400 on GPT-5.5 and older"; kept for GPT-5.6 and later."""
    body: dict[str, Any] = {"model": "gpt-6.2-sol", "prompt_cache_options": {"ttl": "30m"}}
    if api == "responses":
        body |= {"input": "hi", "reasoning": {"effort": "high", "mode": "pro"}}
    else:
        body |= {"messages": [], "reasoning_effort": "high"}
    assert fit_openai(body, api, True, model="gpt-6.2-sol") is None
    fitted = fit_openai(body, api, True, model="gpt-5.4")
    assert fitted is not None and "prompt_cache_options" not in fitted.body
    assert "prompt_cache_options" in fitted.params_dropped
    if api == "responses":
        assert fitted.body["reasoning"] == {"effort": "high"}
        assert "reasoning.mode" in fitted.params_dropped
    plain = fit_openai(body, api, False, model="gpt-4.1")
    assert plain is not None and "prompt_cache_options" not in plain.body
