"""The official OpenAI and Anthropic SDKs against `orca serve` (SPEC §13.1, §14.2, §14.6).

Each SDK holds a three-turn conversation under one `X-Session-Id` (turn 3 streamed): one
model and key, cached tokens from turn 2 as the client sees them and as the trace records,
and the response's `model` is the name the client sent (`response_model = "requested"`).
"""

from __future__ import annotations

from typing import Any

import anthropic
import openai

from tests.agents.kit import Orca, assert_one_session

QUESTIONS = ["Explain what the parser module tests check",
             "Now list the parser edge cases they miss",
             "Write one more test for the worst of them"]


def _session_traces(orca: Orca, prefix: str) -> list[dict[str, Any]]:
    return [orca.explain(f"{prefix}-{turn}") for turn in range(1, len(QUESTIONS) + 1)]


def _openai_chat(orca: Orca, model: str, session: str) -> tuple[list[str], list[int]]:
    client = openai.OpenAI(base_url=f"{orca.base}/v1", api_key="orca-dummy-key", max_retries=0,
                           default_headers={"X-Session-Id": session})
    messages: list[Any] = [{"role": "system", "content": "You are a careful reviewer."}]
    models, cached = [], []
    for turn, question in enumerate(QUESTIONS, start=1):
        messages.append({"role": "user", "content": question})
        headers = {"X-Request-Id": f"{session}-{turn}"}
        if turn < len(QUESTIONS):
            resp = client.chat.completions.create(model=model, messages=messages,
                                                  extra_headers=headers)
            text = resp.choices[0].message.content or ""
            models.append(resp.model)
            details = resp.usage.prompt_tokens_details if resp.usage else None
            cached.append(details.cached_tokens or 0 if details else 0)
        else:
            stream = client.chat.completions.create(
                model=model, messages=messages, stream=True, extra_headers=headers,
                stream_options={"include_usage": True})
            parts = []
            for chunk in stream:
                models.append(chunk.model)
                if chunk.choices and chunk.choices[0].delta.content:
                    parts.append(chunk.choices[0].delta.content)
            text = "".join(parts)
        assert text
        messages.append({"role": "assistant", "content": text})
    return models, cached


def test_openai_chat_completions_three_turns(orca: Orca) -> None:
    _openai_chat(orca, "orca/coding", "sdk-openai-chat")
    traces = _session_traces(orca, "sdk-openai-chat")
    assert assert_one_session(traces) == "sdk-openai-chat"
    assert {t["session_source"] for t in traces} == {"header:x-session-id"}


def test_openai_chat_response_model_is_the_requested_name(orca: Orca) -> None:
    models, cached = _openai_chat(orca, "orca/coding", "sdk-openai-model")
    assert set(models) == {"orca/coding"}, models
    assert all(c > 0 for c in cached[1:]), cached


def _anthropic_messages(orca: Orca, model: str, session: str) -> tuple[list[str], list[int]]:
    client = anthropic.Anthropic(base_url=orca.base, api_key="orca-dummy-key", max_retries=0,
                                 default_headers={"X-Session-Id": session})
    messages: list[Any] = []
    models, cached = [], []
    for turn, question in enumerate(QUESTIONS, start=1):
        messages.append({"role": "user", "content": question})
        headers = {"X-Request-Id": f"{session}-{turn}"}
        if turn < len(QUESTIONS):
            msg = client.messages.create(model=model, max_tokens=512, system="You review code.",
                                         messages=messages, extra_headers=headers)
        else:
            with client.messages.stream(model=model, max_tokens=512, system="You review code.",
                                        messages=messages, extra_headers=headers) as stream:
                msg = stream.get_final_message()
        models.append(msg.model)
        cached.append(msg.usage.cache_read_input_tokens or 0)
        text = "".join(b.text for b in msg.content if b.type == "text")
        assert text
        messages.append({"role": "assistant", "content": text})
    return models, cached


ANTHROPIC_MODEL = "claude-sonnet-4-5-20250929"   # a dated id, caught by the claude-sonnet-* alias


def test_anthropic_messages_three_turns(orca: Orca) -> None:
    _, cached = _anthropic_messages(orca, ANTHROPIC_MODEL, "sdk-anthropic")
    traces = _session_traces(orca, "sdk-anthropic")
    assert assert_one_session(traces) == "sdk-anthropic"
    assert {t["inbound_api"] for t in traces} == {"anthropic"}
    assert all(c > 0 for c in cached[1:]), cached


def test_anthropic_response_model_is_the_requested_name(orca: Orca) -> None:
    models, _ = _anthropic_messages(orca, ANTHROPIC_MODEL, "sdk-anthropic-model")
    assert set(models) == {ANTHROPIC_MODEL}, models


def test_openai_responses_three_turns(orca: Orca) -> None:
    """The Responses API as the OpenAI SDK speaks it (Codex's format), `store: false` with
    the full input each turn, like Codex."""
    client = openai.OpenAI(base_url=f"{orca.base}/v1", api_key="orca-dummy-key", max_retries=0,
                           default_headers={"X-Session-Id": "sdk-responses"})
    items: list[Any] = []
    models, cached = [], []
    for turn, question in enumerate(QUESTIONS, start=1):
        items.append({"role": "user", "content": question})
        headers = {"X-Request-Id": f"sdk-responses-{turn}"}
        if turn < len(QUESTIONS):
            resp = client.responses.create(model="orca/coding", instructions="You review code.",
                                           input=items, store=False, extra_headers=headers)
        else:
            with client.responses.stream(model="orca/coding", instructions="You review code.",
                                         input=items, store=False,
                                         extra_headers=headers) as stream:
                resp = stream.get_final_response()
        models.append(resp.model)
        cached.append(resp.usage.input_tokens_details.cached_tokens if resp.usage else 0)
        assert resp.output_text
        items.append({"role": "assistant", "content": resp.output_text})
    traces = _session_traces(orca, "sdk-responses")
    assert assert_one_session(traces) == "sdk-responses"
    assert {t["inbound_api"] for t in traces} == {"responses"}
    assert all(c > 0 for c in cached[1:]), cached
    assert set(models) == {"orca/coding"}, models
