"""Codex's namespaced and hosted tools towards Chat Completions and Anthropic, and the
namespaced calls back to a Responses client (JSON and stream)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from orca_cli.translate import ResponseTranslator, TranslationOptions, translate_request
from orca_cli.translate.responses_tools import flat_name
from orca_cli.types import Api
from tests.translate.samples import anthropic_stream, openai_stream
from tests.translate.sdk import check_request, check_response, check_stream

OPTS = TranslationOptions()
MEMBERS = ["close_agent", "resume_agent", "send_input", "spawn_agent", "wait_agent"]
FLAT = [f"multi_agent_v1__{m}" for m in MEMBERS]
FAMILY = {"anthropic": "anthropic", "openai": "openai"}


def _schema() -> dict[str, Any]:
    return {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}


def codex_body() -> dict[str, Any]:
    """The shape Codex CLI 0.171 sends (tests/agents/CAPTURES.md): function tools, the
    `multi_agent_v1` namespace, the hosted `web_search`; a history with a namespaced call."""
    fn = {"type": "function", "strict": False, "parameters": _schema()}
    return {
        "model": "orca/coding",
        "input": [
            {"type": "message", "role": "developer", "content": "You are a coding agent."},
            {"type": "message", "role": "user", "content": "Spawn a helper."},
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "spawn_agent",
                "namespace": "multi_agent_v1",
                "arguments": '{"id":"a1"}',
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "started"},
            {
                "type": "web_search_call",
                "id": "ws_1",
                "status": "completed",
                "action": {"type": "search", "query": "orca docs"},
            },
            {"type": "message", "role": "assistant", "content": "Done."},
            {"type": "message", "role": "user", "content": "Wait for it."},
        ],
        "tools": [
            {**fn, "name": "exec_command", "description": "Run a command."},
            {
                "type": "namespace",
                "name": "multi_agent_v1",
                "description": "Sub-agents.",
                "tools": [{**fn, "name": m, "description": m} for m in MEMBERS],
            },
            {"type": "web_search", "external_web_access": False},
        ],
        "tool_choice": "auto",
        "parallel_tool_calls": True,
        "store": False,
        "stream": True,
    }


def _tr(body: dict[str, Any], dst: Api) -> tuple[dict[str, Any], Any]:
    out = translate_request(
        body, "responses", dst, model="m", target_model_family=FAMILY[dst], options=OPTS
    )
    return check_request(dst, out.body), out


# --- requests ----------------------------------------------------------------------------


def test_namespace_flattened_and_web_search_dropped_towards_chat() -> None:
    chat, out = _tr(codex_body(), "openai")
    assert [t["function"]["name"] for t in chat["tools"]] == ["exec_command", *FLAT]
    assert chat["tools"][4]["function"]["parameters"] == _schema()
    assert out.report["untranslatable"] == []
    assert out.report["dropped_tools"] == ["web_search"]
    call = chat["messages"][2]["tool_calls"][0]
    assert call["function"]["name"] == "multi_agent_v1__spawn_agent"
    assert chat["messages"][3] == {"role": "tool", "tool_call_id": "call_1", "content": "started"}
    assert chat["messages"][4]["content"].startswith("[web search: orca docs]")


def test_namespace_flattened_and_web_search_dropped_towards_anthropic() -> None:
    claude, out = _tr(codex_body(), "anthropic")
    assert [t["name"] for t in claude["tools"]] == ["exec_command", *FLAT]
    assert "web_search" not in orjson.dumps(claude["tools"]).decode()
    assert out.report["untranslatable"] == [] and out.report["dropped_tools"] == ["web_search"]
    use = claude["messages"][1]["content"][0]
    assert use["type"] == "tool_use" and use["name"] == "multi_agent_v1__spawn_agent"
    assert use["input"] == {"id": "a1"}
    assert claude["messages"][3]["content"][0] == {
        "type": "text",
        "text": "[web search: orca docs]",
    }
    assert out.tools["multi_agent_v1__spawn_agent"].namespace == "multi_agent_v1"
    assert out.tools["multi_agent_v1__spawn_agent"].name == "spawn_agent"


@pytest.mark.parametrize("dst", ["anthropic", "openai"])
def test_translation_is_deterministic(dst: Api) -> None:
    first = translate_request(
        codex_body(), "responses", dst, model="m", target_model_family=FAMILY[dst], options=OPTS
    )
    again = translate_request(
        codex_body(), "responses", dst, model="m", target_model_family=FAMILY[dst], options=OPTS
    )
    assert first.body == again.body and first.report == again.report


def test_flat_name_follows_codex_and_fits_64() -> None:
    assert flat_name("multi_agent_v1", "spawn_agent") == "multi_agent_v1__spawn_agent"
    assert flat_name("mcp__calendar__", "__create_event") == "mcp__calendar__create_event"
    long_ns = "mcp__" + "a_very_long_server_name_" * 3
    a, b = flat_name(long_ns, "read_file"), flat_name(long_ns, "read_files")
    assert len(a) == len(b) == 64 and a != b
    assert a == flat_name(long_ns, "read_file") and a.startswith(long_ns[:40])
    body = codex_body()
    body["tools"][1]["name"] = long_ns
    body["input"][2]["namespace"] = long_ns
    claude, out = _tr(body, "anthropic")
    names = [t["name"] for t in claude["tools"]]
    assert all(len(n) <= 64 for n in names)
    assert claude["messages"][1]["content"][0]["name"] == flat_name(long_ns, "spawn_agent")
    assert out.tools[names[4]].name == "spawn_agent"


def test_tool_choice_of_a_member_and_of_a_hosted_tool() -> None:
    body = codex_body()
    body["tool_choice"] = {"type": "function", "namespace": "multi_agent_v1", "name": "wait_agent"}
    claude, out = _tr(body, "anthropic")
    assert claude["tool_choice"]["name"] == "multi_agent_v1__wait_agent"
    body["tool_choice"] = {"type": "web_search"}
    _, out = _tr(body, "anthropic")
    assert out.report["untranslatable"] == ["tool_choice:web_search"]
    # `required` with nothing left but hosted tools: the demand cannot be met elsewhere
    only_hosted = {"input": "hi", "tools": [{"type": "web_search"}], "tool_choice": "required"}
    _, out = _tr(only_hosted, "openai")
    assert out.report["untranslatable"] == ["tool_choice:required"]
    _, out = _tr({**body, "tool_choice": "required"}, "openai")
    assert out.report["untranslatable"] == []


def test_other_tool_types_stay_untranslatable() -> None:
    body = codex_body()
    body["tools"].append({"type": "local_shell"})
    body["tools"].append({"type": "file_search", "vector_store_ids": ["vs_1"]})
    _, out = _tr(body, "openai")
    assert out.report["untranslatable"] == ["tool:local_shell"]
    assert out.report["dropped_tools"] == ["web_search", "file_search"]
    body = codex_body()
    body["tools"].append({**body["tools"][0], "name": "multi_agent_v1__wait_agent"})
    _, out = _tr(body, "openai")
    assert out.report["untranslatable"] == ["tool:duplicate_name"]


# --- answers back to the Responses client ------------------------------------------------


def _answer(dst: Api, name: str) -> dict[str, Any]:
    if dst == "anthropic":
        return {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
            "content": [
                {"type": "tool_use", "id": "toolu_1", "name": name, "input": {"id": "a1"}},
                {"type": "tool_use", "id": "toolu_2", "name": "exec_command",
                 "input": {"id": "ls"}},
            ],
            "stop_reason": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 1},
        }  # fmt: skip
    calls = [("call_1", name, '{"id":"a1"}'), ("call_2", "exec_command", '{"id":"ls"}')]
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": None,
            "tool_calls": [{"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                           for i, n, a in calls]}}],
    }  # fmt: skip


@pytest.mark.parametrize("dst", ["anthropic", "openai"])
def test_namespaced_call_comes_back_as_json(dst: Api) -> None:
    _, out = _tr(codex_body(), dst)
    rt = ResponseTranslator(
        dst, "responses", "orca/coding", upstream_model="m", upstream_family=FAMILY[dst],
        tools=out.tools,
    )  # fmt: skip
    raw = rt.translate_body(orjson.dumps(_answer(dst, "multi_agent_v1__spawn_agent")))
    got = check_response("responses", raw)
    first, second = got["output"]
    assert (first["type"], first["name"], first["namespace"]) == (
        "function_call", "spawn_agent", "multi_agent_v1",
    )  # fmt: skip
    assert orjson.loads(first["arguments"]) == {"id": "a1"}
    assert second["name"] == "exec_command" and "namespace" not in second


def _stream_events(dst: Api, tools: Any) -> list[dict[str, Any]]:
    sample = anthropic_stream() if dst == "anthropic" else openai_stream()
    raw = sample.replace(b'"name":"read"', b'"name":"multi_agent_v1__spawn_agent"', 1)
    rt = ResponseTranslator(
        dst, "responses", "orca/coding", upstream_model="m", upstream_family=FAMILY[dst],
        tools=tools,
    )  # fmt: skip
    return [o for _, o in check_stream("responses", rt.feed(raw) + rt.close())]


@pytest.mark.parametrize("dst", ["anthropic", "openai"])
def test_namespaced_call_comes_back_in_a_stream(dst: Api) -> None:
    _, out = _tr(codex_body(), dst)
    events = _stream_events(dst, out.tools)
    added = [
        e["item"] for e in events
        if e["type"] == "response.output_item.added" and e["item"]["type"] == "function_call"
    ]  # fmt: skip
    assert [(i["name"], i.get("namespace")) for i in added] == [
        ("spawn_agent", "multi_agent_v1"), ("read", None),
    ]  # fmt: skip
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert {"name": "spawn_agent", "namespace": "multi_agent_v1"}.items() <= next(
        i for i in done if i["type"] == "function_call"
    ).items()
    final = next(e for e in events if e["type"] == "response.completed")["response"]["output"]
    calls = [i for i in final if i["type"] == "function_call"]
    assert calls[0]["namespace"] == "multi_agent_v1" and "namespace" not in calls[1]


def test_without_the_mapping_the_flat_name_passes_through() -> None:
    events = _stream_events("anthropic", {})
    names = [
        e["item"]["name"] for e in events
        if e["type"] == "response.output_item.added" and e["item"]["type"] == "function_call"
    ]  # fmt: skip
    assert names[0] == "multi_agent_v1__spawn_agent"


def test_a_custom_member_comes_back_as_a_namespaced_custom_call() -> None:
    body = codex_body()
    body["tools"][1]["tools"].append({"type": "custom", "name": "patch", "description": "Edit."})
    claude, out = _tr(body, "anthropic")
    assert claude["tools"][-1]["name"] == "multi_agent_v1__patch"
    assert _custom_call_back(out, "multi_agent_v1__patch", "*** Begin Patch") == (
        "custom_tool_call", "patch", "multi_agent_v1", "*** Begin Patch",
    )  # fmt: skip


def _custom_call_back(out: Any, flat: str, text: str) -> tuple[str, str, str, str]:
    """Claude's call of the custom tool `flat` with `text`, as it reaches the Responses client:
    (type, name, namespace, input)."""
    rt = ResponseTranslator(
        "anthropic", "responses", "c", upstream_model="m", upstream_family="anthropic",
        tools=out.tools,
    )  # fmt: skip
    answer = _answer("anthropic", flat)
    answer["content"][0]["input"] = {"input": text}
    call = check_response("responses", rt.translate_body(orjson.dumps(answer)))["output"][0]
    return call["type"], call["name"], call["namespace"], call["input"]


# --- Codex's code mode: tools declared by an `additional_tools` input item --------------


def code_mode_body() -> dict[str, Any]:
    """What Codex 0.171 sends for a model of its catalog (tests/agents/CAPTURES.md): no
    `tools`; an `additional_tools` item first, its `exec` custom tool in the `functions`
    namespace; a history where the model ran a script."""
    fn = {"type": "function", "strict": False, "parameters": _schema()}
    return {
        "model": "gpt-6.2-sol",
        "input": [
            {"type": "additional_tools", "id": "at_1", "role": "developer", "tools": [
                {"type": "namespace", "name": "functions", "description": "", "tools": [
                    {"type": "custom", "name": "exec", "description": "Run JavaScript code."},
                    {**fn, "name": "wait", "description": "Wait for a cell."}]},
                {"type": "namespace", "name": "clock", "description": "",
                 "tools": [{**fn, "name": "sleep", "description": "Sleep."}]}]},
            {"type": "message", "role": "developer", "content": "You are Codex."},
            {"type": "message", "role": "user", "content": "Run the tests."},
            {"type": "custom_tool_call", "call_id": "call_1", "name": "exec",
             "namespace": "functions", "input": "text(await tools.exec_command('pytest'))"},
            {"type": "custom_tool_call_output", "call_id": "call_1",
             "output": [{"type": "input_text", "text": "Script completed"}]},
            {"type": "message", "role": "user", "content": "Now fix them."},
        ],
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "store": False,
        "stream": True,
    }  # fmt: skip


CODE_MODE = ["functions__exec", "functions__wait", "clock__sleep"]


def test_code_mode_tools_reach_chat_as_top_level_tools() -> None:
    chat, out = _tr(code_mode_body(), "openai")
    assert [t["function"]["name"] for t in chat["tools"]] == CODE_MODE
    assert out.report["untranslatable"] == []
    assert "additional_tools" not in orjson.dumps(chat["messages"]).decode()
    call = chat["messages"][2]["tool_calls"][0]
    assert call["function"]["name"] == "functions__exec"
    assert out.tools["functions__exec"].kind == "custom"
    assert out.tools["functions__exec"].namespace == "functions"


def test_code_mode_tools_reach_anthropic_and_a_call_comes_back_namespaced() -> None:
    claude, out = _tr(code_mode_body(), "anthropic")
    assert [t["name"] for t in claude["tools"]] == CODE_MODE
    assert claude["tools"][0]["description"] == "Run JavaScript code."
    assert _custom_call_back(out, "functions__exec", "text('hi')") == (
        "custom_tool_call", "exec", "functions", "text('hi')",
    )  # fmt: skip


def test_top_level_and_item_tools_join_and_a_later_declaration_replaces_an_earlier() -> None:
    body = code_mode_body()
    fn = {"type": "function", "parameters": _schema()}
    body["tools"] = [{**fn, "name": "apply_patch", "description": "Patch."},
                     {**fn, "name": "clock__sleep", "description": "Old sleep."}]
    body["input"].append({"type": "additional_tools", "role": "developer", "tools": [
        {"type": "namespace", "name": "functions", "description": "", "tools": [
            {"type": "custom", "name": "exec", "description": "Run JavaScript, v2."}]}]})
    chat, out = _tr(body, "openai")
    tools = {t["function"]["name"]: t["function"]["description"] for t in chat["tools"]}
    assert list(tools) == ["apply_patch", "clock__sleep", *CODE_MODE[:2]]
    assert tools["clock__sleep"] == "Sleep."  # the item's, declared after the top level's
    assert tools["functions__exec"] == "Run JavaScript, v2."
    assert out.report["untranslatable"] == []


def test_a_name_twice_in_one_declaration_stays_untranslatable() -> None:
    body = code_mode_body()
    tools = body["input"][0]["tools"]
    tools.append({"type": "function", "name": "functions__wait", "parameters": _schema()})
    out = translate_request(body, "responses", "openai", model="m",
                            target_model_family="openai", options=OPTS)
    assert "tool:duplicate_name" in out.report["untranslatable"]


@pytest.mark.parametrize("dst", ["anthropic", "openai"])
def test_code_mode_translation_is_the_same_unit_by_unit(dst: Api) -> None:
    """The request path translates the conversation unit by unit with a memo; the head keeps
    the `additional_tools` items, so the tools are the same either way."""
    from orca_cli.translate.units import conversation
    from tests.translate.test_units import DictMemo

    conv = conversation(code_mode_body(), "responses", dst, model="m",
                        target_model_family=FAMILY[dst], options=OPTS, memo=DictMemo())
    assert [t.name for t in conv.head.tools] == CODE_MODE
    assert conv.head.untranslatable == []


def _agent_message(author: str, recipient: str, kind: str, *payload: dict[str, Any]
                   ) -> dict[str, Any]:
    """An `agent_message` item as Codex 0.171 sends it (captured, tests/agents/CAPTURES.md)."""
    head = f"Message Type: {kind}\nTask name: {recipient}\nSender: {author}\nPayload:\n"
    return {"type": "agent_message", "id": "amsg_1", "author": author, "recipient": recipient,
            "content": [{"type": "input_text", "text": head}, *payload]}


@pytest.mark.parametrize("dst", ["anthropic", "openai"])
def test_a_sub_agents_task_and_answer_are_the_users_input(dst: Api) -> None:
    body = code_mode_body()
    body["input"][-1] = _agent_message("/root", "/root/find", "NEW_TASK", {
        "type": "encrypted_content", "encrypted_content": "Find the parser module"})
    got, out = _tr(body, dst)
    assert out.report["untranslatable"] == []
    last = orjson.dumps(got["messages"][-1]).decode()
    assert got["messages"][-1]["role"] == "user"
    assert "Message Type: NEW_TASK" in last and "Find the parser module" in last
    answer = _agent_message("/root/find", "/root", "FINAL_ANSWER")
    answer["content"][0]["text"] += "src/parser.py"
    body["input"][-1] = answer
    got, out = _tr(body, dst)
    assert "Payload:\\nsrc/parser.py" in orjson.dumps(got["messages"][-1]).decode()


def test_a_task_openai_encrypted_goes_only_where_it_can_be_read() -> None:
    """A sub-agent's task the parent ran on OpenAI is OpenAI's ciphertext: no other model
    reads it, so the request stays on OpenAI's format (untranslatable elsewhere)."""
    body = code_mode_body()
    body["input"][-1] = _agent_message("/root", "/root/find", "NEW_TASK", {
        "type": "encrypted_content", "encrypted_content": "gAAAAABp" + "Qx9_-z" * 30})
    _, out = _tr(body, "anthropic")
    assert out.report["untranslatable"] == ["content:encrypted_content"]
