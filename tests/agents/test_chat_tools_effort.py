"""The real OpenCode, a Chat Completions client with tools, served on GPT-6 (`xlate.
responses_first`, `policy.chat_tools_effort`).

OpenAI's Chat Completions takes function tools on GPT-5.6, GPT-6 Sol and GPT-6 Luna only
beside `reasoning_effort: "none"` (400 "Function tools with reasoning_effort are not supported
for gpt-6-sol in /v1/chat/completions. To use function tools, use /v1/responses or set
reasoning_effort to 'none'."), and on GPT-6 Astra, GPT-6.1 Sol and later not at all ("tool
calling requires Responses"). OpenCode (`@ai-sdk/openai-compatible`) sends every turn with its
tools and no effort. On a channel that speaks both of OpenAI's formats orca sends the turn to
the Responses API, which takes both; on one that speaks only Chat Completions a model that
takes `"none"` gets it, and one that takes no tools there is skipped for the next candidate.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from orca_cli.testing.upstream import Act, Seen
from tests.agents.kit import agent_env, agents_dir, run_agent, serving
from tests.agents.test_agent_loops import reply, scripted_upstream
from tests.e2e.translation.kit import chat_tools_refusal
from tests.unavailable import unavailable

MODEL = "gpt-6.2-sol"
LUNA = "gpt-6-luna"  # takes function tools on Chat Completions beside reasoning_effort "none"


def openai_api(seen: Seen) -> Act:
    refused = chat_tools_refusal(seen.path, seen.body)
    return reply(seen, "The parser tests check ids.") if refused is None else Act(
        status=400, body=refused)


def _config(fake_url: str) -> str:
    return f"""
[[channels]]
name = "both"
type = "openai"
api = ["openai", "responses"]
base_url = "{fake_url}/a/v1"
keys = ["both-key"]
models = ["{MODEL}"]

[[channels]]
name = "chat"
type = "openai"
base_url = "{fake_url}/r/v1"
keys = ["chat-key"]
models = ["{MODEL}", "{LUNA}"]

[models."{MODEL}"]
input = 2.0
output = 10.0
[models."{LUNA}"]
input = 3.0
output = 12.0

[routers.coding]
strategy = "cheapest"
allowed_models = ["{MODEL}"]
providers_allow = ["both"]
[routers.coding.escalation]
mode = "off"

[routers.chatonly]
strategy = "cheapest"
allowed_models = ["{MODEL}", "{LUNA}"]
fallbacks = ["{LUNA}"]
providers_allow = ["chat"]
[routers.chatonly.escalation]
mode = "off"
"""


def _opencode_json(base: str) -> str:
    return json.dumps({
        "$schema": "https://opencode.ai/config.json",
        "provider": {"orca": {"npm": "@ai-sdk/openai-compatible", "name": "orca",
                              "options": {"baseURL": f"{base}/v1", "apiKey": "orca"},
                              "models": {"orca/coding": {"name": "coding"},
                                         "orca/chatonly": {"name": "chat only"}}}},
        "model": "orca/orca/coding"})


def test_opencode_with_tools_is_served_on_gpt_6(tmp_path: Path) -> None:
    opencode = agents_dir() / "npm" / "node_modules" / ".bin" / "opencode"
    if not os.access(opencode, os.X_OK):
        unavailable(f"OpenCode is not installed at {opencode}; install the agents with "
                    ".ci/install-agents")
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    with scripted_upstream(openai_api) as fake, \
            serving(tmp_path, _config(fake.url("", versioned=False).rstrip("/"))) as orca:
        (work / "opencode.json").write_text(_opencode_json(orca.base))
        env = agent_env(home)
        both = run_agent([opencode, "run", "Explain the parser tests"], env, work)
        chat = run_agent([opencode, "run", "--model", "orca/orca/chatonly",
                          "Explain the parser tests"], env, work)
        responses = [s for s in fake.calls("a") if s.body.get("tools")]
        completions = [s for s in fake.calls("r") if s.body.get("tools")]
        chat_only = [orca.explain(r["request_id"]) for r in orca.cli("requests", "--limit", "50")
                     if r.get("router") == "chatonly"]
        # its turns, not its title request (no tools: gpt-6.2-sol serves it there)
        skipped = [t for t in chat_only if t.get("side") is None]
    for run in (both, chat):
        assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-2000:])
        assert "not supported" not in run.stdout + run.stderr
    assert responses and all(s.path.endswith("/responses") for s in responses)
    assert all(s.body["reasoning"]["effort"] for s in responses)
    # on Chat Completions only, the cheaper gpt-6.2-sol takes no tools: skipped, never sent
    assert completions and all(s.body["model"] == LUNA for s in completions)
    assert all(s.body["reasoning_effort"] == "none" for s in completions)
    assert skipped and all(t["selected"]["model"] == LUNA for t in skipped)
    assert all(t["attempts"][0]["model"] == MODEL and t["attempts"][0]["error"]
               == "untranslatable:tools:chat_completions" for t in skipped), skipped[0]["attempts"]
