"""Golden files: agent-sized requests (Claude Code, Codex CLI, a Chat Completions agent)
translated in every direction must give exactly the checked-in bytes. A change to the output
is a change to every user's prompt-cache prefix: regenerate on purpose only
(`python tests/translate/golden/make_fixtures.py --golden`) and review the diff."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from orca_cli.translate import TranslationOptions, translate_request
from orca_cli.types import Api
from tests.translate.golden.make_fixtures import SOURCES, TARGETS
from tests.translate.sdk import check_request

GOLDEN = Path(__file__).parent / "golden"
CASES = [(name, src, dst) for name, (src, _) in SOURCES.items() for dst in TARGETS if dst != src]


def _input(name: str, src: str) -> dict[str, Any]:
    return orjson.loads((GOLDEN / f"{name}.{src}.json").read_bytes())  # type: ignore[no-any-return]


@pytest.mark.parametrize(("name", "src", "dst"), CASES, ids=[f"{n}-to-{d}" for n, _, d in CASES])
def test_golden(name: str, src: Api, dst: Api) -> None:
    model, family = TARGETS[dst]
    body = _input(name, src)
    out = translate_request(
        body, src, dst, model=model, target_model_family=family, options=TranslationOptions()
    )
    assert out.body + b"\n" == (GOLDEN / f"{name}.to_{dst}.json").read_bytes()
    report = orjson.loads((GOLDEN / f"{name}.to_{dst}.report.json").read_bytes())
    assert out.report == report
    assert report["untranslatable"] == []
    sent = check_request(dst, out.body)
    # Nothing of the conversation is lost: every tool and every call id crosses.
    assert len(sent["tools"]) == _tool_count(body) >= 4
    assert report["dropped_tools"] == (["web_search"] if name == "codex" else [])
    raw = out.body.decode()
    for call_id in _call_ids(src, body):
        assert raw.count(f'"{call_id}"') == 2, call_id  # the call and its result
    if src != "openai":
        assert report["dropped_reasoning"] == 3  # the history's foreign reasoning
        assert "Eq" not in raw and "gAAAAAB" not in raw
    if dst == "anthropic":
        assert 1 <= raw.count("cache_control") <= 4


def _tool_count(body: dict[str, Any]) -> int:
    """The tools the target gets: a namespace's members each, hosted tools none."""
    count = 0
    for tool in body.get("tools") or []:
        if tool.get("type") == "namespace":
            count += len(tool["tools"])
        elif tool.get("type") != "web_search":
            count += 1
    return count


def _call_ids(src: str, body: dict[str, Any]) -> list[str]:
    if src == "anthropic":
        return [
            b["id"]
            for m in body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b["type"] == "tool_use"
        ]
    if src == "responses":
        return [
            i["call_id"]
            for i in body["input"]
            if i["type"] in ("function_call", "custom_tool_call")
        ]
    return [c["id"] for m in body["messages"] for c in m.get("tool_calls") or ()]


def test_codex_specifics_towards_anthropic() -> None:
    sent = orjson.loads((GOLDEN / "codex.to_anthropic.json").read_bytes())
    # instructions, then the developer message, form the system; the patch tool is a function
    # with one string parameter and its calls carry {"input": raw}.
    assert len(sent["system"]) == 2 and "permissions instructions" in sent["system"][1]["text"]
    patch = next(t for t in sent["tools"] if t["name"] == "apply_patch")
    assert patch["input_schema"]["required"] == ["input"]
    uses = [
        b
        for m in sent["messages"]
        for b in m["content"]
        if b["type"] == "tool_use" and b["name"] == "apply_patch"
    ]
    assert len(uses) == 3 and uses[0]["input"]["input"].startswith("*** Begin Patch")
    assert sent["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}


def test_claude_code_specifics_towards_chat() -> None:
    sent = orjson.loads((GOLDEN / "claude_code.to_openai.json").read_bytes())
    assert sent["messages"][0]["role"] == "system"
    assert len(sent["messages"][0]["content"]) > 15000
    assert sent["max_tokens"] == 32000 and sent["user"].startswith("user_abc")
    assert sent["stream_options"] == {"include_usage": True}
    tool_msgs = [m for m in sent["messages"] if m["role"] == "tool"]
    assert len(tool_msgs) == 6
