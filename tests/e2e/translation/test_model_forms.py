"""A request reaches the model orca serves it on in the form that model takes, through the
real server, against an upstream that refuses what the provider's API refuses.

Claude (`translate.claude`): Haiku 4.5 knows only a thinking budget, Sonnet 5.5 only adaptive
thinking and no sampling parameters. Claude Code writes the form of the model it asked for
(adaptive for `claude-opus-5-5`, a budget for `claude-haiku-4-5`), and a router serves it on
another; Codex and Chat Completions clients ask for reasoning in their own words.

OpenAI (`native.fit_openai`): `gpt-4.1-mini` does not reason and refuses Codex's reasoning
effort and encrypted reasoning; `gpt-5.4` reasons and refuses `temperature` and `max_tokens`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
import pytest_asyncio

from orca_cli.config.load import loads
from orca_cli.testing import Act, FakeUpstream, Sidecar
from orca_cli.testing.upstream import Script, Seen
from tests.e2e.translation.kit import (
    chat_tools_refusal,
    explained,
    messages_refusal,
    two_tier,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

@contextlib.asynccontextmanager
async def serving(server: Sidecar, provider: FakeUpstream, config: str, prefix: str,
                  rule: Script) -> AsyncIterator[Sidecar]:
    """The sidecar on `config`, its upstream at `prefix` answering by `rule`."""
    provider.seen.clear()
    provider.rules.clear()
    provider.handler = None
    provider.always[prefix] = rule
    try:
        async with server.use(loads(config.format(up=provider.base_url), source="test")) as st:
            yield st
    finally:
        provider.always.pop(prefix, None)


CONFIG = """
[[channels]]
name = "an"
type = "anthropic"
base_url = "{up}/an"
keys = ["sk-an-0"]
models = ["claude-haiku-4-5", "claude-sonnet-5-5"]

[models.claude-haiku-4-5]
input = 1.0
output = 5.0

[models.claude-sonnet-5-5]
input = 2.0
output = 10.0

[workspace]
share_cap = 1.0
""" + two_tier("cc", "claude-haiku-4-5", "claude-sonnet-5-5") + """
[routers.strong]
strategy = "cheapest"
allowed_models = ["claude-sonnet-5-5"]
[routers.strong.escalation]
mode = "off"

[aliases]
"claude-opus-*" = "orca/cc"
"""


def _refuse(message: str) -> Act:
    return Act(status=400, body=orjson.dumps({"type": "error", "error": {
        "type": "invalid_request_error", "message": message}}))


def messages_api(seen: Seen) -> Act:
    """What the Messages API refuses of these two models, in its own words."""
    refusal = messages_refusal(seen.body)
    return Act() if refusal is None else _refuse(refusal)


@pytest_asyncio.fixture(loop_scope="module")
async def forms(server: Sidecar, provider: FakeUpstream) -> AsyncIterator[Sidecar]:
    async with serving(server, provider, CONFIG, "an", messages_api) as st:
        yield st


def claude_code(thinking: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A Claude Code 2.1.332 request's top-level fields as it sends them (captured)."""
    return {"model": "claude-opus-5-5", "max_tokens": 32000, "stream": False,
            "messages": [{"role": "user", "content": "rename the helper"}],
            "thinking": thinking, "context_management": {
                "edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}, **extra}


async def post(st: Sidecar, path: str, body: dict[str, Any],
               headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    r = await st.http.post(path, content=orjson.dumps(body), headers={
        "content-type": "application/json", "x-api-key": "agent",
        "anthropic-version": "2023-06-01", **headers})
    await st.settled(r.headers["x-orca-request-id"])
    trace = await st.rt.gate.store.get_trace(r.headers["x-orca-request-id"])
    assert trace is not None
    return r.status_code, dict(trace)


async def test_claude_codes_adaptive_thinking_becomes_a_budget_on_haiku_and_stays_on_sonnet(
        forms: Sidecar, provider: FakeUpstream) -> None:
    session = {"x-orca-session": "forms-cc-1"}
    body = claude_code({"type": "adaptive", "display": "omitted"},
                       output_config={"effort": "medium"})
    status, trace = await post(forms, "/v1/messages", body, session)
    assert status == 200, trace
    (seen,) = provider.calls("an")
    assert seen.body["model"] == "claude-haiku-4-5"
    assert seen.body["thinking"] == {"type": "enabled", "budget_tokens": 8192,
                                     "display": "omitted"}
    assert "output_config" not in seen.body
    assert seen.body["context_management"] == body["context_management"]
    assert trace["translation"]["thinking_form"] == "enabled"
    text = explained(trace)
    assert "thinking written in the enabled form the model takes" in text

    provider.seen.clear()
    status, trace = await post(forms, "/v1/messages", body,
                               {**session, "x-orcarouter-tier": "strong"})
    assert status == 200, trace
    (seen,) = provider.calls("an")
    assert seen.body["model"] == "claude-sonnet-5-5"
    assert {k: v for k, v in seen.body.items() if k != "model"} == {
        k: v for k, v in body.items() if k != "model"}, "sent as the client wrote it"
    assert trace.get("translation") is None


async def test_claude_codes_system_message_and_per_turn_effort_reach_haiku_as_it_takes_them(
        forms: Sidecar, provider: FakeUpstream) -> None:
    """Claude Code 2.1.332's opening request for `claude-opus-5-5` (captured shape): its
    environment notes are a mid-conversation system message with its own effort, and
    interactive Claude Code asks for `display: "updates"`. Haiku 4.5 refuses all three."""
    provider.seen.clear()
    note = "# Environment\nPrimary working directory: /work"
    body = claude_code({"type": "adaptive", "display": "updates"},
                       output_config={"effort": "medium"})
    body["messages"] = [
        {"role": "user", "content": [{"type": "text", "text": "rename the helper"}]},
        {"role": "system", "output_config": {"effort": "medium"}, "content": [
            {"type": "text", "text": note, "cache_control": {"type": "ephemeral"}}]}]
    status, trace = await post(forms, "/v1/messages", body, {"x-orca-session": "forms-cc-4"})
    assert status == 200, trace
    (seen,) = provider.calls("an")
    assert seen.body["model"] == "claude-haiku-4-5"
    assert seen.body["messages"] == [body["messages"][0], {"role": "user", "content": [
        {"type": "text", "text": f"<system-reminder>\n{note}\n</system-reminder>",
         "cache_control": {"type": "ephemeral"}}]}]
    assert seen.body["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    tr = trace["translation"]
    assert tr["params_renamed"] == {"messages.role:system": "user <system-reminder> text"}
    assert tr["params_dropped"] == ["messages.output_config", "thinking.display"]
    text = explained(trace)
    assert "messages.role:system sent as user <system-reminder> text" in text
    assert "messages.output_config, thinking.display" in text

    provider.seen.clear()  # escalated: Sonnet 5.5 takes the body as Claude Code wrote it
    status, trace = await post(forms, "/v1/messages", body,
                               {"x-orca-session": "forms-cc-4", "x-orcarouter-tier": "strong"})
    assert status == 200, trace
    (seen,) = provider.calls("an")
    assert seen.body["model"] == "claude-sonnet-5-5"
    assert seen.body["messages"] == body["messages"]
    assert trace.get("translation") is None


async def test_a_budget_and_sampling_become_adaptive_on_a_model_that_refuses_them(
        forms: Sidecar, provider: FakeUpstream) -> None:
    provider.seen.clear()
    body = {**claude_code({"type": "enabled", "budget_tokens": 31999, "display": "omitted"}),
            "model": "orca/strong", "temperature": 1}
    status, trace = await post(forms, "/v1/messages", body, {"x-orca-session": "forms-cc-2"})
    assert status == 200, trace
    (seen,) = provider.calls("an")
    assert seen.body["thinking"] == {"type": "adaptive", "display": "omitted"}
    assert seen.body["output_config"] == {"effort": "high"}
    assert "temperature" not in seen.body
    assert trace["translation"]["thinking_form"] == "adaptive"
    assert trace["translation"]["sampling_dropped"] == ["temperature"]


async def test_codex_and_chat_reasoning_reach_sonnet_5_5_as_adaptive_thinking(
        forms: Sidecar, provider: FakeUpstream) -> None:
    provider.seen.clear()
    codex = {"model": "orca/strong", "instructions": "You are Codex.", "stream": False,
             "reasoning": {"effort": "high"}, "store": False, "input": [
                 {"type": "message", "role": "user",
                  "content": [{"type": "input_text", "text": "fix the build"}]}]}
    status, trace = await post(forms, "/v1/responses", codex, {"x-orca-session": "forms-cx"})
    assert status == 200, trace
    chat = {"model": "orca/strong", "temperature": 0, "reasoning_effort": "low",
            "messages": [{"role": "user", "content": "fix the build"}]}
    status, trace = await post(forms, "/v1/chat/completions", chat, {})
    assert status == 200, trace
    first, second = provider.calls("an")
    assert first.body["thinking"] == {"type": "adaptive"}
    assert first.body["output_config"] == {"effort": "high"}
    assert second.body["thinking"] == {"type": "adaptive"}
    assert second.body["output_config"] == {"effort": "low"}
    assert "temperature" not in second.body


OPENAI = """
[[channels]]
name = "rs"
type = "openai"
api = ["responses", "openai"]
base_url = "{up}/rs/v1"
keys = ["sk-rs-0"]
models = ["gpt-4.1-mini", "gpt-5.4", "gpt-6.2-sol"]

[models."gpt-4.1-mini"]
input = 0.4
output = 1.6

[models."gpt-5.4"]
input = 1.25
output = 10.0
max_output_tokens = 500
""" + two_tier("cx", "gpt-4.1-mini", "gpt-5.4")


def _openai_refuse(param: str, message: str) -> Act:
    return Act(status=400, body=orjson.dumps({"error": {
        "message": message, "type": "invalid_request_error", "param": param,
        "code": "unsupported_parameter"}}))


def openai_api(seen: Seen) -> Act:
    """What OpenAI refuses of a model that does not reason and of one that does."""
    body, model = seen.body, seen.body.get("model")
    if model == "gpt-4.1-mini":
        if "reasoning" in body or "reasoning_effort" in body:
            return _openai_refuse("reasoning.effort", "Unsupported parameter: "
                                  "'reasoning.effort' is not supported with this model.")
        if "reasoning.encrypted_content" in (body.get("include") or []):
            return _openai_refuse("include", "Encrypted content is not supported with this "
                                  "model.")
        if "verbosity" in (body.get("text") or {}):
            return _openai_refuse("text.verbosity", "Unsupported parameter: 'text.verbosity' "
                                  "is not supported with this model.")
    if model in ("gpt-5.4", "gpt-6.2-sol"):
        if "max_tokens" in body:
            return _openai_refuse("max_tokens", "Unsupported parameter: 'max_tokens' is not "
                                  "supported with this model. Use 'max_completion_tokens' "
                                  "instead.")
        if body.get("temperature", 1) != 1:
            return _openai_refuse("temperature", "Unsupported value: 'temperature' does not "
                                  "support 0 with this model. Only the default (1) value is "
                                  "supported.")
    return Act()


@pytest_asyncio.fixture(loop_scope="module")
async def openai_models(server: Sidecar, provider: FakeUpstream) -> AsyncIterator[Sidecar]:
    async with serving(server, provider, OPENAI, "rs", openai_api) as st:
        yield st


async def test_codexs_reasoning_is_left_out_for_a_model_that_does_not_reason(
        openai_models: Sidecar, provider: FakeUpstream) -> None:
    codex = {"model": "orca/cx", "instructions": "You are Codex.", "stream": False,
             "reasoning": {"effort": "low", "context": "all_turns"}, "store": False,
             "text": {"verbosity": "low"},
             "include": ["reasoning.encrypted_content"], "input": [
                 {"type": "message", "role": "user",
                  "content": [{"type": "input_text", "text": "fix the build"}]}]}
    session = {"x-orca-session": "forms-codex"}
    status, trace = await post(openai_models, "/v1/responses", codex, session)
    assert status == 200, trace
    (seen,) = provider.calls("rs")
    assert seen.body["model"] == "gpt-4.1-mini"
    assert not {"reasoning", "include", "text"} & seen.body.keys()
    assert trace["translation"]["params_dropped"] == [
        "reasoning", "text.verbosity", "include:reasoning.encrypted_content"]
    text = explained(trace)
    assert "parameters the target does not take dropped: reasoning" in text
    provider.seen.clear()
    status, trace = await post(openai_models, "/v1/responses", codex,
                               {**session, "x-orcarouter-tier": "strong"})
    assert status == 200, trace
    (seen,) = provider.calls("rs")
    # GPT-5.4 reasons, but reads no `reasoning.context` (GPT-5.6 and later do)
    assert seen.body["model"] == "gpt-5.4" and seen.body["reasoning"] == {"effort": "low"}
    assert trace["translation"]["params_dropped"] == ["reasoning.context"]


async def test_a_chat_request_fits_the_reasoning_model_it_escalates_to(
        openai_models: Sidecar, provider: FakeUpstream) -> None:
    provider.seen.clear()
    chat = {"model": "orca/cx", "temperature": 0, "max_tokens": 700,
            "messages": [{"role": "user", "content": "fix the build"}]}
    status, trace = await post(openai_models, "/v1/chat/completions", chat,
                               {"x-orca-session": "forms-chat", "x-orcarouter-tier": "strong"})
    assert status == 200, trace
    (seen,) = provider.calls("rs")
    # renamed, and lowered to the model's max_output_tokens under its new name
    assert seen.body["model"] == "gpt-5.4" and seen.body["max_completion_tokens"] == 500
    assert "max_tokens" not in seen.body and "temperature" not in seen.body
    assert trace["translation"]["params_renamed"] == {"max_tokens": "max_completion_tokens"}
    assert trace["translation"]["sampling_dropped"] == ["temperature"]


async def test_codexs_default_gpt_6_model_is_sent_what_a_reasoning_model_takes(
        openai_models: Sidecar, provider: FakeUpstream) -> None:
    """Codex 0.171 asks for `gpt-6.2-sol` when its config names no model; GPT-6 reasons."""
    provider.seen.clear()
    codex = {"model": "gpt-6.2-sol", "instructions": "You are Codex.", "stream": False,
             "reasoning": {"effort": "high", "context": "all_turns"}, "store": False,
             "include": ["reasoning.encrypted_content"], "text": {"verbosity": "low"},
             "input": [{"type": "message", "role": "user",
                        "content": [{"type": "input_text", "text": "fix the build"}]}]}
    status, trace = await post(openai_models, "/v1/responses", codex, {})
    assert status == 200, trace
    chat = {"model": "gpt-6.2-sol", "max_tokens": 300,
            "messages": [{"role": "user", "content": "fix the build"}]}
    status, chat_trace = await post(openai_models, "/v1/chat/completions", chat, {})
    assert status == 200, chat_trace
    native, renamed = provider.calls("rs")
    assert {k: v for k, v in native.body.items() if k != "model"} == {
        k: v for k, v in codex.items() if k != "model"}, "Codex's reasoning goes as it was"
    assert trace.get("translation") is None
    assert renamed.body["max_completion_tokens"] == 300 and "max_tokens" not in renamed.body


TOOLS_CONFIG = """
[[channels]]
name = "both"
type = "openai"
api = ["openai", "responses"]
base_url = "{up}/both/v1"
keys = ["sk-both-0"]
models = ["gpt-5.4"]

[[channels]]
name = "chat"
type = "openai"
base_url = "{up}/chat/v1"
keys = ["sk-chat-0"]
models = ["gpt-5.2", "gpt-6-luna", "gpt-6.1-sol"]

[aliases]
"claude-*" = "gpt-6-luna"
"""


def chat_tools_api(seen: Seen) -> Act:
    refused = chat_tools_refusal(seen.path, seen.body)
    return Act() if refused is None else Act(status=400, body=refused)


@pytest_asyncio.fixture(loop_scope="module")
async def tool_models(server: Sidecar, provider: FakeUpstream) -> AsyncIterator[Sidecar]:
    provider.always["chat"] = chat_tools_api
    try:
        async with serving(server, provider, TOOLS_CONFIG, "both", chat_tools_api) as st:
            yield st
    finally:
        provider.always.pop("chat", None)


def _chat_with_tools(model: str) -> dict[str, Any]:
    return {"model": model, "reasoning_effort": "high", "stream": False,
            "messages": [{"role": "user", "content": "fix the build"}],
            "tools": [{"type": "function", "function": {
                "name": "edit", "parameters": {"type": "object"}}}]}


async def test_chat_with_tools_goes_to_the_responses_api_where_the_channel_speaks_it(
        tool_models: Sidecar, provider: FakeUpstream) -> None:
    status, trace = await post(tool_models, "/v1/chat/completions",
                               _chat_with_tools("gpt-5.4"), {})
    assert status == 200, trace
    (seen,) = provider.calls("both")
    assert seen.path.endswith("/responses")
    assert seen.body["reasoning"]["effort"] == "high" and seen.body["tools"]
    assert trace["translation"]["from"] == "openai" and trace["translation"]["to"] == "responses"


async def test_chat_with_what_responses_cannot_express_stays_on_chat_completions(
        tool_models: Sidecar, provider: FakeUpstream) -> None:
    provider.seen.clear()
    status, trace = await post(tool_models, "/v1/chat/completions",
                               {**_chat_with_tools("gpt-5.4"), "n": 2}, {})
    assert status == 200, trace
    (seen,) = provider.calls("both")
    assert seen.path.endswith("/chat/completions") and seen.body["n"] == 2
    assert "reasoning_effort" not in seen.body
    assert trace["translation"]["params_dropped"] == ["reasoning_effort"]


async def test_chat_with_tools_loses_only_the_effort_a_chat_only_channel_refuses(
        tool_models: Sidecar, provider: FakeUpstream) -> None:
    provider.seen.clear()
    status, trace = await post(tool_models, "/v1/chat/completions",
                               _chat_with_tools("gpt-5.2"), {})
    assert status == 200, trace
    assert trace["translation"]["params_dropped"] == ["reasoning_effort"]
    status, luna = await post(tool_models, "/v1/chat/completions",
                              _chat_with_tools("gpt-6-luna"), {})
    assert status == 200, luna
    assert luna["translation"]["params_renamed"] == {
        "reasoning_effort: high": "reasoning_effort: none"}
    # Claude Code, translated for GPT-6 on Chat Completions
    claude = {**claude_code({"type": "adaptive"}, output_config={"effort": "high"}),
              "model": "claude-opus-5-5",
              "tools": [{"name": "edit", "input_schema": {"type": "object"}}]}
    status, translated = await post(tool_models, "/v1/messages", claude, {})
    assert status == 200, translated
    five, six, cc = provider.calls("chat")
    assert "reasoning_effort" not in five.body
    assert six.body["reasoning_effort"] == "none" and cc.body["reasoning_effort"] == "none"
    # with what only Anthropic's API has (`context_management`)
    assert translated["translation"]["params_dropped"] == ["context_management",
                                                           "reasoning_effort"]
    assert "dropped: context_management, reasoning_effort" in explained(translated)


async def test_tools_for_a_model_that_takes_them_only_on_responses_skip_a_chat_only_channel(
        tool_models: Sidecar, provider: FakeUpstream) -> None:
    """GPT-6.1 Sol takes function tools only on the Responses API: on a channel of Chat
    Completions only the request is untranslatable, never sent; without tools it is served."""
    provider.seen.clear()
    status, trace = await post(tool_models, "/v1/chat/completions",
                               _chat_with_tools("gpt-6.1-sol"), {})
    assert status == 400, trace
    assert provider.calls("chat") == []
    assert trace["attempts"][0]["error"] == "untranslatable:tools:chat_completions"
    error = str(trace.get("error"))
    assert "tools:chat_completions" in error and 'api = ["responses", "openai"]' in error
    plain = {k: v for k, v in _chat_with_tools("gpt-6.1-sol").items() if k != "tools"}
    status, served = await post(tool_models, "/v1/chat/completions", plain, {})
    assert status == 200, served
    (seen,) = provider.calls("chat")
    assert seen.body["reasoning_effort"] == "high"


async def test_a_forced_tool_call_and_thinking_off_fit_sonnet_5_5(
        forms: Sidecar, provider: FakeUpstream) -> None:
    provider.seen.clear()
    tools = [{"name": "edit", "description": "edit a file", "input_schema": {"type": "object"}}]
    body = {**claude_code({"type": "disabled"}), "model": "orca/strong", "tools": tools,
            "tool_choice": {"type": "tool", "name": "edit"}}
    status, trace = await post(forms, "/v1/messages", body, {"x-orca-session": "forms-cc-3"})
    assert status == 200, trace
    chat = {"model": "orca/strong", "tool_choice": "required", "messages": [
        {"role": "user", "content": "fix the build"}], "tools": [{"type": "function",
                                                                  "function": {"name": "edit"}}]}
    status, chat_trace = await post(forms, "/v1/chat/completions", chat, {})
    assert status == 200, chat_trace
    native, translated = provider.calls("an")
    assert native.body["tool_choice"] == {"type": "auto"} and "thinking" not in native.body
    assert trace["translation"]["params_dropped"] == ["tool_choice.forced", "thinking.disabled"]
    assert translated.body["tool_choice"] == {"type": "auto"}


FAST_CONFIG = """
[[channels]]
name = "fast"
type = "anthropic"
base_url = "{up}/fast"
keys = ["sk-fast-0"]
models = ["claude-opus-5-5", "claude-sonnet-5-5"]

[models."claude-opus-5-5"]
input = 5.0
output = 25.0
fast = 2.0

[models."claude-sonnet-5-5"]
input = 2.0
output = 10.0
"""


def fast_api(seen: Seen) -> Act:
    """Anthropic's fast mode: Sonnet refuses `speed`; Opus 5.5 answers in fast mode and says
    so in its usage."""
    model = seen.body.get("model")
    if "speed" in seen.body and model == "claude-sonnet-5-5":
        return _refuse("speed: fast mode is not supported for this model")
    speed = {"speed": "fast"} if seen.body.get("speed") == "fast" else {}
    return Act(body=orjson.dumps({
        "id": "msg_fast", "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn",
        "stop_sequence": None, "usage": {"input_tokens": 1000, "output_tokens": 100,
                                         "cache_read_input_tokens": 0,
                                         "cache_creation_input_tokens": 0, **speed}}))


@pytest_asyncio.fixture(loop_scope="module")
async def fast(server: Sidecar, provider: FakeUpstream) -> AsyncIterator[Sidecar]:
    async with serving(server, provider, FAST_CONFIG, "fast", fast_api) as st:
        yield st


async def test_fast_mode_is_priced_at_its_multiplier_and_goes_where_the_model_has_none(
        fast: Sidecar, provider: FakeUpstream) -> None:
    """Claude Code's `/fast` sends `speed: "fast"`; Anthropic bills it at a premium."""
    body = {"model": "claude-opus-5-5", "max_tokens": 1000, "speed": "fast",
            "messages": [{"role": "user", "content": "rename the helper"}]}
    status, trace = await post(fast, "/v1/messages", body, {})
    assert status == 200, trace
    assert trace["usage"]["speed"] == "fast"
    # (1,000 × $5 + 100 × $25) / 1M, twice over
    assert trace["cost_usd"] == pytest.approx(2 * (1000 * 5.0 + 100 * 25.0) / 1e6)
    assert "fast mode" in explained(trace)
    status, slow = await post(fast, "/v1/messages", {**body, "model": "claude-sonnet-5-5"}, {})
    assert status == 200, slow
    assert "speed" not in provider.calls("fast")[-1].body
    assert slow["translation"]["params_dropped"] == ["speed"]
    assert slow["cost_usd"] == pytest.approx((1000 * 2.0 + 100 * 10.0) / 1e6)
