"""The fidelity rules of SPEC §13.2 one by one: reasoning provenance, cache markers, tool ids
and custom tools, developer messages, untranslatable features, errors."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from orca_cli.translate import (
    ResponseTranslator,
    TranslationOptions,
    translate_error,
    translate_request,
)
from orca_cli.translate.common import restore_id, safe_id
from orca_cli.translate.model import ToolOrigin
from orca_cli.types import Api
from tests.translate.samples import RESPONSES, anthropic_request, openai_request, responses_request
from tests.translate.sdk import check_request, check_stream

OPTS = TranslationOptions()


def _tr(
    body: dict[str, Any],
    src: Api,
    dst: Api,
    family: str,
    model: str = "m",
    options: TranslationOptions = OPTS,
) -> tuple[dict[str, Any], dict[str, Any]]:
    out = translate_request(
        body, src, dst, model=model, target_model_family=family, options=options
    )
    return check_request(dst, out.body), out.report


# --- rule 4: reasoning provenance --------------------------------------------------------


def _claude_turn(upstream: Api, upstream_family: str, upstream_model: str) -> dict[str, Any]:
    """An answer of `upstream_model` shown to Claude Code, then sent back in its history."""
    rt = ResponseTranslator(
        upstream,
        "anthropic",
        "claude-sonnet-4-5",
        upstream_model=upstream_model,
        upstream_family=upstream_family,
    )
    answer = orjson.loads(rt.translate_body(orjson.dumps(RESPONSES[upstream])))
    body = anthropic_request()
    body["messages"] = body["messages"][:1] + [
        {"role": "assistant", "content": answer["content"]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": b["id"], "content": "x"}
                for b in answer["content"]
                if b["type"] == "tool_use"
            ],
        },
    ]
    return body


def test_foreign_reasoning_never_reaches_another_model() -> None:
    # DeepSeek reasoning shown to Claude Code as a thinking block, then a tier switch.
    body = _claude_turn("openai", "deepseek", "deepseek-chat")
    sent = orjson.dumps(body)
    assert b'"thinking":"Two reads."' in sent
    # Back to the same model: reasoning_content returns (DeepSeek's tool loop needs it).
    same, report = _tr(body, "anthropic", "openai", "deepseek", "deepseek-chat")
    assistant = next(m for m in same["messages"] if m["role"] == "assistant")
    assert assistant["reasoning_content"] == "Two reads." and report["dropped_reasoning"] == 0
    # Another model of the same family, another family: dropped, counted.
    for family, model in (("deepseek", "deepseek-reasoner"), ("openai", "gpt-5")):
        other, report = _tr(
            body, "anthropic", "responses" if family == "openai" else "openai", family, model
        )
        assert b"Two reads." not in orjson.dumps(other)
        assert report["dropped_reasoning"] == 1


def test_claude_thinking_signature_only_to_claude() -> None:
    # Codex served by Claude: the thinking comes back to Codex as an encrypted reasoning item.
    rt = ResponseTranslator(
        "anthropic",
        "responses",
        "gpt-5-codex",
        upstream_model="claude-sonnet-4-5",
        upstream_family="anthropic",
    )
    answer = orjson.loads(rt.translate_body(orjson.dumps(RESPONSES["anthropic"])))
    reasoning = next(i for i in answer["output"] if i["type"] == "reasoning")
    assert reasoning["encrypted_content"].startswith("orca1.")
    assert "sigABC" not in reasoning["encrypted_content"]  # opaque, not the raw signature
    body = responses_request()
    body["input"] = (
        body["input"][:2]
        + answer["output"]
        + [
            {"type": "function_call_output", "call_id": "toolu_01A", "output": "x"},
            {"type": "function_call_output", "call_id": "toolu_01B", "output": "x"},
        ]
    )
    body["input"] = [
        {k: v for k, v in i.items() if k not in ("id", "status")} for i in body["input"]
    ]
    to_claude, report = _tr(body, "responses", "anthropic", "anthropic", "claude-sonnet-4-5")
    blocks = [b for m in to_claude["messages"] for b in m["content"]]
    thinking = [b for b in blocks if b["type"] == "thinking"]
    assert thinking == [{"type": "thinking", "thinking": "Two reads.", "signature": "sigABC"}]
    assert report["dropped_reasoning"] == 0
    to_gpt, report = (
        _tr(body, "responses", "responses", "openai", "gpt-5")
        if False
        else _tr(body, "responses", "openai", "openai", "gpt-5")
    )
    assert b"sigABC" not in orjson.dumps(to_gpt) and report["dropped_reasoning"] == 1
    to_other_claude, report = _tr(body, "responses", "anthropic", "anthropic", "claude-opus-4-1")
    assert b"sigABC" not in orjson.dumps(to_other_claude)
    assert report["dropped_reasoning"] == 1


def test_codex_encrypted_reasoning_only_to_openai() -> None:
    body = responses_request()
    to_claude, report = _tr(body, "responses", "anthropic", "anthropic")
    assert b"gAAAAenc1" not in orjson.dumps(to_claude) and report["dropped_reasoning"] == 1
    as_text, report = _tr(
        body,
        "responses",
        "anthropic",
        "anthropic",
        options=TranslationOptions(foreign_reasoning="as_text"),
    )
    assert b"<thinking>\\nNeed both files.\\n</thinking>" in orjson.dumps(as_text)
    assert b"gAAAAenc1" not in orjson.dumps(as_text) and report["dropped_reasoning"] == 1


# --- rule 2: cache markers ---------------------------------------------------------------


def _markers(body: dict[str, Any]) -> list[str]:
    found = []
    for i, b in enumerate(body.get("system") or ()):
        if "cache_control" in b:
            found.append(f"system[{i}]")
    for i, t in enumerate(body.get("tools") or ()):
        if "cache_control" in t:
            found.append(f"tools[{i}]")
    for i, m in enumerate(body["messages"]):
        for j, b in enumerate(m["content"]):
            if "cache_control" in b:
                found.append(f"messages[{i}][{j}]")
    return found


def test_cache_breakpoints_towards_anthropic() -> None:
    body, report = _tr(openai_request(), "openai", "anthropic", "anthropic")
    # End of system; the end of this turn; where the previous turn's request ended.
    assert _markers(body) == ["system[0]", "messages[0][1]", "messages[2][2]"]
    assert report["cache_breakpoints_added"] == 3
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    hour, _ = _tr(
        openai_request(),
        "openai",
        "anthropic",
        "anthropic",
        options=TranslationOptions(cache_ttl_1h=True),
    )
    assert hour["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    off, report = _tr(
        openai_request(),
        "openai",
        "anthropic",
        "anthropic",
        options=TranslationOptions(anthropic_cache="off"),
    )
    assert _markers(off) == [] and report["cache_breakpoints_added"] == 0
    no_system = openai_request()
    no_system["messages"] = no_system["messages"][1:]
    body, _ = _tr(no_system, "openai", "anthropic", "anthropic")
    assert _markers(body)[0] == "tools[0]" and len(_markers(body)) <= 4


def test_cache_markers_dropped_towards_automatic_formats() -> None:
    for dst in ("openai", "responses"):
        body, report = _tr(anthropic_request(), "anthropic", dst, "openai")  # type: ignore[arg-type]
        assert b"cache_control" not in orjson.dumps(body)
        assert report["cache_breakpoints_added"] == 0


def test_cache_breakpoints_stable_turn_after_turn() -> None:
    """Turn n+1's body starts with turn n's bytes up to the previous last marker."""
    first = openai_request()
    second = openai_request()
    second["messages"] += [
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "Thanks, next."},
    ]
    a, _ = _tr(first, "openai", "anthropic", "anthropic")
    b, _ = _tr(second, "openai", "anthropic", "anthropic")
    # Markers are not part of the cached content; the content prefix is byte-identical ...
    plain_a = orjson.dumps(a).replace(b',"cache_control":{"type":"ephemeral"}', b"")
    plain_b = orjson.dumps(b).replace(b',"cache_control":{"type":"ephemeral"}', b"")
    cut = plain_a.index(b"Now explain.")
    assert plain_a[:cut] == plain_b[:cut]
    # ... and this turn reads at the block where the previous turn wrote.
    assert "messages[2][2]" in _markers(a) and "messages[2][2]" in _markers(b)
    assert "messages[4][0]" in _markers(b) and len(_markers(b)) <= 4


# --- rule 3: tools -----------------------------------------------------------------------


def test_tool_ids_rewritten_reversibly_for_anthropic() -> None:
    body = openai_request()
    body["messages"][2]["tool_calls"][0]["id"] = "functions.read:0"
    body["messages"][3]["tool_call_id"] = "functions.read:0"
    out, report = _tr(body, "openai", "anthropic", "anthropic")
    use = out["messages"][1]["content"][1]
    result = out["messages"][2]["content"][0]
    assert use["id"] == result["tool_use_id"] == safe_id("functions.read:0")[0]
    assert report["rewritten_ids"] == 1
    assert restore_id(use["id"]) == "functions.read:0"
    # And back from an Anthropic client to Chat Completions: the original id again.
    back = anthropic_request()
    back["messages"][1]["content"][1]["id"] = use["id"]
    back["messages"][2]["content"][0]["tool_use_id"] = use["id"]
    chat, _ = _tr(back, "anthropic", "openai", "openai")
    assert chat["messages"][2]["tool_calls"][0]["id"] == "functions.read:0"
    assert chat["messages"][3]["tool_call_id"] == "functions.read:0"


@pytest.mark.parametrize("dst", ["anthropic", "openai"])
def test_custom_tools_become_function_tools_and_come_back(dst: Api) -> None:
    family = "anthropic" if dst == "anthropic" else "openai"
    out = translate_request(
        responses_request(), "responses", dst, model="m", target_model_family=family, options=OPTS
    )
    body = orjson.loads(out.body)
    assert out.custom_tools == frozenset({"apply_patch"})
    if dst == "anthropic":
        call = body["messages"][-2]["content"][0]
        assert call["input"] == {"input": "*** Begin Patch\n*** End Patch"}
        assert body["tools"][1]["input_schema"]["properties"] == {
            "input": {"type": "string", "description": "The raw tool input."}
        }
    else:
        call = body["messages"][-3]["tool_calls"][0]
        assert orjson.loads(call["function"]["arguments"]) == {
            "input": "*** Begin Patch\n*** End Patch"
        }
    # The model calls it in function form; Codex gets a custom_tool_call back.
    if dst == "anthropic":
        answer = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_9",
                    "name": "apply_patch",
                    "input": {"input": "*** Begin Patch\n*** End Patch"},
                }
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    else:
        answer = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_9",
                                "type": "function",
                                "function": {
                                    "name": "apply_patch",
                                    "arguments": '{"input":"*** Begin Patch\\n*** End Patch"}',
                                },
                            }
                        ],
                    },
                }
            ],
        }
    rt = ResponseTranslator(
        dst,
        "responses",
        "gpt-5-codex",
        upstream_model="m",
        upstream_family=family,
        tools=out.tools,
    )
    got = orjson.loads(rt.translate_body(orjson.dumps(answer)))
    call = got["output"][0]
    assert call["type"] == "custom_tool_call"
    assert call["input"] == "*** Begin Patch\n*** End Patch"


def test_custom_tool_call_streams_back_as_custom() -> None:
    from tests.translate.samples import anthropic_stream

    raw = anthropic_stream().replace(b'"name":"read"', b'"name":"apply_patch"', 1)
    raw = raw.replace(b'{\\"path\\":', b'{\\"input\\":', 1).replace(b'\\"a.py\\"}', b'\\"*** x\\"}')
    rt = ResponseTranslator(
        "anthropic",
        "responses",
        "c",
        upstream_model="m",
        upstream_family="anthropic",
        tools={"apply_patch": ToolOrigin("apply_patch", "custom")},
    )
    events = check_stream("responses", rt.feed(raw) + rt.close())
    done = [
        o
        for _, o in events
        if o["type"] == "response.output_item.done" and o["item"]["type"] == "custom_tool_call"
    ]
    assert done and done[0]["item"]["input"] == "*** x"


def test_tool_choice_and_parallel_mapping() -> None:
    body = openai_request()
    body["tool_choice"] = {"type": "function", "function": {"name": "read"}}
    body["parallel_tool_calls"] = False
    out, _ = _tr(body, "openai", "anthropic", "anthropic")
    assert out["tool_choice"] == {"type": "tool", "name": "read", "disable_parallel_tool_use": True}
    body["tool_choice"] = "required"
    out, _ = _tr(body, "openai", "responses", "openai")
    assert out["tool_choice"] == "required" and out["parallel_tool_calls"] is False
    claude = anthropic_request()
    claude["tool_choice"] = {"type": "any"}
    out, _ = _tr(claude, "anthropic", "openai", "openai")
    assert out["tool_choice"] == "required"


# --- developer messages, content ---------------------------------------------------------


def test_developer_messages_kept() -> None:
    body = responses_request()
    body["input"].append(
        {
            "type": "message",
            "role": "developer",
            "content": [{"type": "input_text", "text": "Late rule."}],
        }
    )
    claude, _ = _tr(body, "responses", "anthropic", "anthropic")
    assert [b["text"] for b in claude["system"]] == [
        "You are a coding agent.",
        "Sandbox: workspace-write.",
    ]
    assert claude["messages"][-1]["content"][-1]["text"] == "Late rule."
    chat, _ = _tr(body, "responses", "openai", "openai")
    assert chat["messages"][1] == {"role": "system", "content": "Sandbox: workspace-write."}
    assert chat["messages"][-1] == {"role": "system", "content": "Late rule."}


def test_untranslatable_features_reported() -> None:
    body = responses_request()
    body["tools"].append({"type": "local_shell"})
    body["previous_response_id"] = "resp_1"
    _, report = _tr(body, "responses", "anthropic", "anthropic")
    assert report["untranslatable"] == ["tool:local_shell", "previous_response_id"]
    claude = anthropic_request()
    claude["messages"][0]["content"].append(
        {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}}
    )
    out = translate_request(
        claude, "anthropic", "openai", model="m", target_model_family="openai", options=OPTS
    )
    assert out.report["untranslatable"] == ["document_url"]
    _, report = _tr(claude, "anthropic", "responses", "openai")
    assert report["untranslatable"] == []
    claude["stop_sequences"] = ["STOP"]
    _, report = _tr(claude, "anthropic", "responses", "openai")
    assert report["untranslatable"] == ["stop_sequences"]  # the Responses API has none


def test_pdf_document_both_ways() -> None:
    claude = anthropic_request()
    claude["messages"][0]["content"].append(
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0x"},
        }
    )
    chat, _ = _tr(claude, "anthropic", "openai", "openai")
    part = chat["messages"][1]["content"][-1]
    assert part == {
        "type": "file",
        "file": {"filename": "document.pdf", "file_data": "data:application/pdf;base64,JVBERi0x"},
    }
    back, _ = _tr(chat, "openai", "anthropic", "anthropic")
    assert back["messages"][0]["content"][-1]["source"] == {
        "type": "base64",
        "media_type": "application/pdf",
        "data": "JVBERi0x",
    }


# --- rule 8: errors ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "etype", "expect_status", "expect_type"),
    [
        (529, "overloaded_error", 503, "server_error"),
        (429, "rate_limit_error", 429, "rate_limit_error"),
        (400, "invalid_request_error", 400, "invalid_request_error"),
        (401, "authentication_error", 401, "authentication_error"),
        (403, "permission_error", 403, "permission_error"),
        (404, "not_found_error", 404, "invalid_request_error"),  # OpenAI's own 404 type
        (500, "api_error", 500, "server_error"),
    ],
)
def test_errors_anthropic_to_openai_and_back(
    status: int, etype: str, expect_status: int, expect_type: str
) -> None:
    body = orjson.dumps({"type": "error", "error": {"type": etype, "message": "Nope."}})
    for dst in ("openai", "responses"):
        got_status, got = translate_error("anthropic", dst, status, body)  # type: ignore[arg-type]
        err = orjson.loads(got)["error"]
        assert (got_status, err["type"], err["message"]) == (expect_status, expect_type, "Nope.")
    # And the OpenAI error of that status back to Anthropic gives the Anthropic type.
    oai = orjson.dumps({"error": {"message": "Nope.", "type": expect_type, "code": None}})
    back_status, back = translate_error("openai", "anthropic", expect_status, oai)
    assert back_status == status
    assert orjson.loads(back) == {"type": "error", "error": {"type": etype, "message": "Nope."}}


def test_error_without_json_body_keeps_text() -> None:
    status, body = translate_error("openai", "anthropic", 502, b"Bad Gateway")
    assert status == 502
    assert orjson.loads(body)["error"] == {"type": "api_error", "message": "Bad Gateway"}


def test_max_tokens_capped_to_the_target() -> None:
    body = anthropic_request()
    body["max_tokens"] = 32000
    out, _ = _tr(
        body, "anthropic", "openai", "deepseek", options=TranslationOptions(max_tokens_cap=8192)
    )
    assert out["max_tokens"] == 8192
    out, _ = _tr(body, "anthropic", "openai", "openai")
    assert out["max_completion_tokens"] == 32000


def test_tool_results_open_the_user_turn_towards_anthropic() -> None:
    body = responses_request()
    # A user message between the calls' outputs: the outputs still come first.
    body["input"].insert(
        7,
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hurry."}]},
    )
    out, _ = _tr(body, "responses", "anthropic", "anthropic")
    for msg in out["messages"]:
        kinds = [b["type"] for b in msg["content"]]
        if "tool_result" in kinds:
            assert kinds[: kinds.count("tool_result")] == ["tool_result"] * kinds.count(
                "tool_result"
            )


def test_cost_usage_counts_cache_writes() -> None:
    rt = ResponseTranslator(
        "anthropic", "openai", "m", upstream_model="u", upstream_family="anthropic"
    )
    rt.translate_body(orjson.dumps(RESPONSES["anthropic"]))
    u = rt.cost_usage()
    assert (u.prompt_tokens, u.cached_tokens, u.cache_write_tokens, u.output_tokens) == (
        1000,
        880,
        20,
        50,
    )


def test_provider_only_parameters_dropped_and_reported() -> None:
    body = anthropic_request()
    body["top_k"] = 5
    _, report = _tr(body, "anthropic", "openai", "openai")
    assert report["dropped_params"] == ["top_k"] and report["untranslatable"] == []
    chat = openai_request()
    chat["seed"] = 7
    chat["presence_penalty"] = 0.1
    _, report = _tr(chat, "openai", "anthropic", "anthropic")
    assert report["dropped_params"] == ["seed", "presence_penalty"]
    chat["web_search_options"] = {}
    _, report = _tr(chat, "openai", "responses", "openai")
    assert report["untranslatable"] == ["web_search_options"]


def test_tool_choice_none_keeps_tools_towards_anthropic() -> None:
    body = openai_request()
    body["tool_choice"] = "none"
    out, _ = _tr(body, "openai", "anthropic", "anthropic")
    assert out["tool_choice"] == {"type": "none"} and len(out["tools"]) == 1


def test_chat_usage_chunk_only_when_asked() -> None:
    from tests.translate.samples import STREAMS

    for include in (True, False):
        rt = ResponseTranslator(
            "anthropic",
            "openai",
            "m",
            upstream_model="u",
            upstream_family="anthropic",
            include_usage=include,
        )
        out = rt.feed(STREAMS["anthropic"]()) + rt.close()
        assert (b'"usage"' in out) is include and out.endswith(b"data: [DONE]\n\n")


def test_anthropic_file_and_text_documents() -> None:
    claude = anthropic_request()
    claude["messages"][0]["content"].append(
        {"type": "document", "source": {"type": "file", "file_id": "file_1"}}
    )
    _, report = _tr(claude, "anthropic", "openai", "openai")
    assert report["untranslatable"] == ["file_id"]
    claude["messages"][0]["content"][-1] = {
        "type": "document",
        "title": "notes",
        "source": {"type": "text", "media_type": "text/plain", "data": "file: a text document"},
    }
    out, report = _tr(claude, "anthropic", "responses", "openai")
    assert report["untranslatable"] == []
    assert out["input"][0]["content"][-1] == {"type": "input_text", "text": "file: a text document"}
