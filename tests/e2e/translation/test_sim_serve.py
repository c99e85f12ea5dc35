"""Claude Code on a Chat Completions channel and Codex on an Anthropic one, through a real
`orca serve --config orca.toml.example` (SPEC §13.2, issue item 4).

The example's sim channels speak only the formats in their `api`, so these requests are
translated, and a request that reached a sim in the wrong format would fail loudly there
(`SimFormatError`). The bodies are the recorded agent shapes of the translation goldens
(`tests/translate/golden`: Claude Code with signed thinking blocks and cache markers, Codex
with encrypted reasoning items and a freeform `apply_patch` tool), sent over a real socket with
the agents' own headers; the trace is read back through `orca explain --json`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from orca_cli.testing import sse_events
from tests.agents.kit import Orca, serving

GOLDEN = Path(__file__).resolve().parents[2] / "translate" / "golden"
CLAUDE_CODE_HEADERS = {
    "x-api-key": "agent-key", "anthropic-version": "2023-06-01",
    "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14",
    "user-agent": "claude-cli/2.1.332 (external, sdk-cli)", "x-app": "cli"}
CODEX_HEADERS = {"authorization": "Bearer agent-key", "originator": "codex_exec",
                 "accept": "text/event-stream"}


@pytest.fixture(scope="module")
def orca(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Orca]:
    with serving(tmp_path_factory.mktemp("serve")) as served:
        yield served


def _golden(name: str, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = orjson.loads((GOLDEN / name).read_bytes())
    body["stream"] = stream
    return body


def _post(orca: Orca, path: str, body: dict[str, Any], headers: dict[str, str]
          ) -> tuple[httpx.Response, dict[str, Any]]:
    """The answer, and its trace as `orca explain ID --json` prints it."""
    r = httpx.post(orca.base + path, content=orjson.dumps(body),
                   headers={"content-type": "application/json", **headers}, timeout=30)
    assert r.status_code == 200, r.text
    return r, orca.explain(r.headers["x-orca-request-id"])


def _names(r: httpx.Response) -> list[str | None]:
    assert r.headers["content-type"].startswith("text/event-stream")
    return [name for name, _ in sse_events(r.content)]


def _datas(r: httpx.Response) -> list[dict[str, Any]]:
    return [orjson.loads(data) for _, data in sse_events(r.content) if data != "[DONE]"]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_claude_code_is_served_by_the_chat_completions_sim(orca: Orca, stream: bool) -> None:
    body = _golden("claude_code.anthropic.json", stream)
    r, trace = _post(orca, "/v1/messages?beta=true", body,
                     {**CLAUDE_CODE_HEADERS, "x-claude-code-session-id": f"cc-{stream}"})
    # The example's cheap tier: deepseek-chat on sim-cheap, which speaks Chat Completions only.
    assert (r.headers["x-orca-model"], r.headers["x-orca-channel"]) == ("deepseek-chat",
                                                                        "sim-cheap")
    assert trace["translation"]["from"] == "anthropic" and trace["translation"]["to"] == "openai"
    assert trace["translation"]["dropped_reasoning"] == 3  # Anthropic signatures, not for DeepSeek
    assert trace["tier"]["decision"] == "base" and trace["usage"]["prompt_tokens"] > 0
    if stream:  # the Messages event sequence, text deltas, the stop reason
        names, datas = _names(r), _datas(r)
        assert names[0] == "message_start" and names[-1] == "message_stop"
        assert "content_block_delta" in names and "message_delta" in names
        assert datas[0]["message"]["model"] == body["model"]  # the name Claude Code sent
        text = "".join(d["delta"].get("text", "") for d in datas
                       if d["type"] == "content_block_delta")
        stop = next(d["delta"]["stop_reason"] for d in datas if d["type"] == "message_delta")
    else:
        doc = r.json()
        assert (doc["type"], doc["role"], doc["model"]) == ("message", "assistant", body["model"])
        assert doc["id"].startswith("msg_") and doc["usage"]["input_tokens"] > 0
        text, stop = doc["content"][0]["text"], doc["stop_reason"]
    assert text.startswith("[sim] ") and stop == "end_turn"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_codex_escalates_to_the_anthropic_sim(orca: Orca, stream: bool) -> None:
    """Codex's base tier is native (sim-cheap speaks Responses too); its frontier tier is the
    Anthropic sim channel, through translation."""
    body = _golden("codex.responses.json", stream)
    session = {**CODEX_HEADERS, "session-id": f"codex-{stream}"}
    base, base_trace = _post(orca, "/v1/responses", body, session)
    assert (base.headers["x-orca-model"], base.headers["x-orca-channel"]) == ("deepseek-chat",
                                                                              "sim-cheap")
    assert base_trace["tier"]["decision"] == "base" and "translation" not in base_trace
    r, trace = _post(orca, "/v1/responses", body, {**session, "x-orcarouter-tier": "strong"})
    assert (r.headers["x-orca-model"], r.headers["x-orca-channel"]) == (
        "claude-sonnet-4-6", "sim-anthropic-frontier")
    assert trace["tier"]["decision"] == "strong" and trace["session_id"] == f"codex-{stream}"
    assert trace["translation"]["from"] == "responses"
    assert trace["translation"]["to"] == "anthropic"
    assert trace["translation"]["dropped_reasoning"] == 3  # OpenAI's encrypted reasoning
    assert trace["translation"]["cache_breakpoints_added"] > 0
    if stream:  # the Responses event sequence, ending completed
        names, datas = _names(r), _datas(r)
        assert names[0] == "response.created" and names[-1] == "response.completed"
        assert "response.output_text.delta" in names
        done = datas[-1]["response"]
    else:
        done = r.json()
    assert (done["object"], done["status"], done["model"]) == ("response", "completed",
                                                               body["model"])
    assert done["id"].startswith("resp_") and done["usage"]["input_tokens"] > 0
    (message,) = [o for o in done["output"] if o["type"] == "message"]
    assert message["content"][0]["text"].startswith("[sim] ")
