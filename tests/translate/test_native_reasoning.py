"""orca's reasoning tags in a body that goes upstream in its own format (SPEC §13.2 rule 4):
a turn served through translation gave the client its reasoning wrapped (`orca1.…`); when a
later turn is sent untranslated, each wrapped block is restored for the model that made it
and dropped, counted, for any other (`translate.native`)."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from orca_cli.translate import ResponseTranslator
from orca_cli.translate.claude import claude_traits
from orca_cli.translate.common import tag_reasoning
from orca_cli.translate.model import Reasoning
from orca_cli.translate.native import MARKER, carries_tag, fit_messages, resolve_wrappers
from orca_cli.types import Api
from tests.translate.samples import RESPONSES, anthropic_request, responses_request


def _answer(upstream: Api, dst: Api, family: str, model: str) -> dict[str, Any]:
    """`upstream`'s sample answer, made by `model`, as a `dst` client saw it."""
    rt = ResponseTranslator(upstream, dst, "client-name", upstream_model=model,
                            upstream_family=family)
    out: dict[str, Any] = orjson.loads(rt.translate_body(orjson.dumps(RESPONSES[upstream])))
    return out


def _claude_code_history(upstream: Api, family: str, model: str) -> dict[str, Any]:
    """Claude Code's next request after `model` (through translation) answered with a tool
    loop: the answer's blocks as its history, the tool results after them."""
    content = _answer(upstream, "anthropic", family, model)["content"]
    body = anthropic_request()
    body["thinking"] = {"type": "enabled", "budget_tokens": 2048}
    body["messages"] = [*body["messages"][:1], {"role": "assistant", "content": content},
                        {"role": "user", "content": [
                            {"type": "tool_result", "tool_use_id": b["id"], "content": "x"}
                            for b in content if b["type"] == "tool_use"]}]
    return body


def _codex_history(upstream: Api, family: str, model: str) -> dict[str, Any]:
    output = _answer(upstream, "responses", family, model)["output"]
    body = responses_request()
    body["input"] = [*body["input"][:2], *output,
                     {"type": "function_call_output", "call_id": "call_A", "output": "x"}]
    return body


def test_gpt_reasoning_shown_to_claude_code_is_not_sent_to_claude() -> None:
    """The audit's case: gpt-4.1 served turn 1 translated, turn 2 goes to Claude natively."""
    body = _claude_code_history("openai", "openai", "gpt-4.1")
    before = copy.deepcopy(body)
    raw = orjson.dumps(body)
    assert MARKER in raw and b'"thinking":"Two reads."' in raw
    got = resolve_wrappers(body, "anthropic", family="anthropic", model="claude-sonnet-4-5")
    assert got is not None and (got.dropped, got.restored) == (1, 0)
    sent = orjson.dumps(got.body)
    assert MARKER not in sent and b"Two reads." not in sent
    assistant = got.body["messages"][1]["content"]
    assert [b["type"] for b in assistant] == ["text", "tool_use", "tool_use"]
    # The tool loop's turn lost its thinking block: extended thinking goes off, as the
    # translating path does (the API refuses a tool loop whose turn does not open with one).
    assert "thinking" not in got.body
    assert {k: v for k, v in got.body.items() if k not in ("messages", "thinking")} == {
        k: v for k, v in before.items() if k not in ("messages", "thinking")}
    assert body == before, "the client's parsed body is not changed"


def test_reasoning_goes_back_with_its_own_signature_to_the_model_that_made_it() -> None:
    part = Reasoning("anthropic", "claude-sonnet-4-5", text="Two reads.", signature="sigREAL")
    body = anthropic_request()
    body["messages"] = [*body["messages"][:1], {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Two reads.", "signature": tag_reasoning(part)},
        {"type": "text", "text": "Reading."}]}, {"role": "user", "content": "go on"}]
    got = resolve_wrappers(body, "anthropic", family="anthropic", model="claude-sonnet-4-5")
    assert got is not None and (got.dropped, got.restored) == (0, 1)
    assert got.body["messages"][1]["content"][0] == {
        "type": "thinking", "thinking": "Two reads.", "signature": "sigREAL"}
    other = resolve_wrappers(body, "anthropic", family="anthropic", model="claude-opus-4-1")
    assert other is not None and (other.dropped, other.restored) == (1, 0)
    assert b"sigREAL" not in orjson.dumps(other.body)


def test_foreign_reasoning_as_text_keeps_the_thought_as_a_text_block() -> None:
    body = _claude_code_history("openai", "deepseek", "deepseek-chat")
    got = resolve_wrappers(body, "anthropic", family="anthropic", model="claude-sonnet-4-5",
                           foreign="as_text")
    assert got is not None and got.dropped == 1
    first = got.body["messages"][1]["content"][0]
    assert first == {"type": "text", "text": "<thinking>\nTwo reads.\n</thinking>"}
    assert MARKER not in orjson.dumps(got.body)


def test_claude_thinking_shown_to_codex_is_not_sent_to_an_openai_model() -> None:
    """The mirror case: Claude served Codex translated, the next turn goes to a native
    Responses channel."""
    body = _codex_history("anthropic", "anthropic", "claude-sonnet-4-5")
    assert MARKER in orjson.dumps(body)
    got = resolve_wrappers(body, "responses", family="openai", model="gpt-5-codex")
    assert got is not None and (got.dropped, got.restored) == (1, 0)
    sent = orjson.dumps(got.body)
    assert MARKER not in sent and b"sigABC" not in sent
    assert [i.get("type") for i in got.body["input"]] == [
        i.get("type") for i in body["input"] if i.get("type") != "reasoning"]
    assert got.body["input"][0] == body["input"][0]


def test_openai_reasoning_goes_back_with_its_own_encrypted_content() -> None:
    """A Responses model's reasoning that reached Codex wrapped (served through another
    format's client path) returns to that model as its own encrypted content."""
    part = Reasoning("openai", "gpt-5-codex", text="Two reads.", encrypted="gAAAAreal")
    body = responses_request()
    body["input"] = [*body["input"][:2], {"type": "reasoning", "summary": [],
                                          "encrypted_content": tag_reasoning(part)}]
    got = resolve_wrappers(body, "responses", family="openai", model="gpt-5-codex")
    assert got is not None and (got.dropped, got.restored) == (0, 1)
    item = got.body["input"][-1]
    assert item["type"] == "reasoning" and item["encrypted_content"] == "gAAAAreal"
    assert MARKER not in orjson.dumps(got.body)


def test_a_body_without_wrapped_reasoning_is_left_alone() -> None:
    """Native reasoning (a real signature, real encrypted content), the marker inside plain
    text, and Chat Completions: nothing to resolve, the caller sends the raw bytes."""
    claude = anthropic_request()
    claude["messages"].append({"role": "user", "content": "what is orca1.abc?"})
    assert resolve_wrappers(claude, "anthropic", family="anthropic", model="m") is None
    assert resolve_wrappers(responses_request(), "responses", family="openai",
                            model="m") is None
    assert resolve_wrappers({"messages": [{"role": "user", "content": "orca1."}]}, "openai",
                            family="openai", model="m") is None


def _loop(first_block: str | None, thinking: dict[str, Any] | None) -> dict[str, Any]:
    """A Messages tool loop whose last assistant turn opens with `first_block` (None: with its
    tool call, as a turn another model made does)."""
    turn: list[dict[str, Any]] = [{"type": "tool_use", "id": "toolu_1", "name": "Bash",
                                   "input": {"command": "go build ./..."}}]
    if first_block == "thinking":
        turn.insert(0, {"type": "thinking", "thinking": "Build it.", "signature": "sig"})
    body: dict[str, Any] = {"model": "claude-opus-4-1", "max_tokens": 32000, "messages": [
        {"role": "user", "content": "fix the build"},
        {"role": "assistant", "content": turn},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                      "content": "cannot use x (variable of type int)"}]}]}
    if thinking is not None:
        body["thinking"] = thinking
    return body


def test_extended_thinking_goes_off_for_a_tool_loop_another_model_began() -> None:
    """After a model change inside a tool loop (an escalation), the loop's last assistant
    turn has no thinking block of the new model's: with `thinking.type: enabled` the API
    answers 400, so the same-format body goes without `thinking` (and says so)."""
    enabled = {"type": "enabled", "budget_tokens": 16000}
    body = _loop(None, enabled)
    before = copy.deepcopy(body)
    got = fit_messages(body, claude_traits("claude-opus-4-1"))
    assert got is not None and got.thinking_off and (got.dropped, got.restored) == (0, 0)
    assert "thinking" not in got.body
    assert {k: v for k, v in got.body.items()} == {
        k: v for k, v in before.items() if k != "thinking"}
    assert body == before, "the client's parsed body is not changed"


@pytest.mark.parametrize(("first", "thinking"), [
    ("thinking", {"type": "enabled", "budget_tokens": 16000}),  # the loop kept its block
    (None, {"type": "adaptive"}),  # adaptive thinking may skip a block: left alone
    (None, None), (None, {"type": "disabled"})])
def test_a_body_the_api_takes_is_left_as_it_is(first: str | None,
                                                thinking: dict[str, Any] | None) -> None:
    # Sonnet 4.6 takes both thinking forms and sampling parameters
    assert fit_messages(_loop(first, thinking), claude_traits("claude-sonnet-4-6")) is None


@pytest.mark.parametrize(("upstream", "family", "model"), [
    ("openai", "openai", "gpt-4.1"), ("anthropic", "anthropic", "claude-sonnet-4-5")])
def test_carries_tag_finds_a_wrapper_where_the_raw_bytes_hold_one(
        upstream: Api, family: str, model: str) -> None:
    """The walk the same-format path asks instead of searching the raw bytes: it finds the
    tag in a Messages thinking block and a Responses reasoning item, and nothing in bodies
    that carry none (a text that quotes the tag included)."""
    for api, body in (("anthropic", _claude_code_history(upstream, family, model)),
                      ("responses", _codex_history(upstream, family, model))):
        assert MARKER in orjson.dumps(body)
        assert carries_tag(body, api)  # type: ignore[arg-type]
    plain = _loop("thinking", {"type": "enabled", "budget_tokens": 2048})
    plain["messages"][0]["content"] = "what does orca1.x mean?"
    assert MARKER in orjson.dumps(plain) and not carries_tag(plain, "anthropic")
    assert not carries_tag(responses_request(), "responses")
    assert not carries_tag(anthropic_request(), "anthropic")
