"""Writes the synthetic agent-sized requests of this directory and their golden translations.

    PYTHONPATH=. python tests/translate/golden/make_fixtures.py          # inputs + goldens
    PYTHONPATH=. python tests/translate/golden/make_fixtures.py --golden # goldens only

The inputs imitate what Claude Code (Messages), Codex CLI (Responses) and a Chat Completions
agent send: a long system prompt / instructions, many tools, a tool-call history with parallel
calls, thinking blocks with signatures and reasoning items with encrypted content. Their text
is synthetic (generated from a fixed seed), not copied from any agent.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).parent
WORDS = [
    "file",
    "repository",
    "command",
    "test",
    "change",
    "commit",
    "branch",
    "function",
    "module",
    "error",
    "output",
    "user",
    "request",
    "tool",
    "result",
    "path",
    "directory",
    "read",
    "write",
    "edit",
    "search",
    "pattern",
    "line",
    "code",
    "review",
    "plan",
    "task",
    "step",
    "check",
    "verify",
    "build",
    "run",
    "shell",
    "patch",
    "diff",
    "context",
    "session",
    "model",
    "answer",
    "format",
    "markdown",
    "concise",
    "safety",
    "permission",
    "sandbox",
    "network",
    "approval",
    "workspace",
    "project",
    "style",
]


def _prose(rng: random.Random, size: int) -> str:
    out: list[str] = []
    length = 0
    while length < size:
        if rng.random() < 0.1:
            line = "\n# " + " ".join(rng.choice(WORDS).title() for _ in range(3)) + "\n"
        else:
            n = rng.randint(8, 22)
            line = "- " + " ".join(rng.choice(WORDS) for _ in range(n)) + ".\n"
        out.append(line)
        length += len(line)
    return "".join(out)


def _schema(rng: random.Random, props: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            p: {
                "type": rng.choice(["string", "integer", "boolean"]),
                "description": _prose(rng, 25).strip(),
            }
            for p in props
        },
        "required": props[:1],
        "additionalProperties": False,
        "$schema": "http://json-schema.org/draft-07/schema#",
    }


CC_TOOLS = [
    "Task",
    "Bash",
    "Glob",
    "Grep",
    "LS",
    "ExitPlanMode",
    "Read",
    "Edit",
    "MultiEdit",
    "Write",
    "NotebookEdit",
    "WebFetch",
    "TodoWrite",
    "BashOutput",
    "KillShell",
    "SlashCommand",
]


def claude_code(rng: random.Random) -> dict[str, Any]:
    tools = [
        {
            "name": n,
            "description": _prose(rng, 120),
            "input_schema": _schema(rng, ["command", "path", "limit"][: rng.randint(1, 3)]),
        }
        for n in CC_TOOLS
    ]
    messages: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": "<system-reminder>\n" + _prose(rng, 600) + "</system-reminder>",
                },
                {"type": "text", "text": "Fix the failing test in the parser module."},
            ],
        }
    ]
    for turn in range(3):
        ids = [f"toolu_01{turn}{k}{rng.randrange(16**8):08x}" for k in range(2)]
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "thinking",
                        "thinking": _prose(rng, 100),
                        "signature": f"Eq{rng.randrange(16**40):040x}==",
                    },
                    {"type": "text", "text": _prose(rng, 80).strip()},
                    {
                        "type": "tool_use",
                        "id": ids[0],
                        "name": "Read",
                        "input": {"file_path": f"/repo/src/mod{turn}.py"},
                    },
                    {
                        "type": "tool_use",
                        "id": ids[1],
                        "name": "Grep",
                        "input": {"pattern": "def parse", "path": "/repo/src"},
                    },
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": ids[0], "content": _prose(rng, 250)},
                    {
                        "type": "tool_result",
                        "tool_use_id": ids[1],
                        "content": [{"type": "text", "text": _prose(rng, 200)}],
                    },
                ],
            }
        )
    messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return {
        "model": "claude-sonnet-4-5-20250929",
        "max_tokens": 32000,
        "system": [
            {
                "type": "text",
                "text": "You are Claude Code, a coding agent.",
                "cache_control": {"type": "ephemeral"},
            },
            {"type": "text", "text": _prose(rng, 15000), "cache_control": {"type": "ephemeral"}},
        ],
        "messages": messages,
        "tools": tools,
        "metadata": {"user_id": "user_abc_account_def_session_0f1e2d3c"},
        "temperature": 1,
        "stream": True,
    }


def _codex_0171(rng: random.Random, tools: list[dict[str, Any]], items: list[Any]) -> None:
    """What Codex CLI 0.171 adds: the `multi_agent_v1` namespace tool, the hosted
    `web_search` tool, and in the history a namespaced call and a web search."""
    members = ["close_agent", "resume_agent", "send_input", "spawn_agent", "wait_agent"]
    tools.append(
        {
            "type": "namespace",
            "name": "multi_agent_v1",
            "description": _prose(rng, 120),
            "tools": [
                {
                    "type": "function",
                    "name": name,
                    "description": _prose(rng, 150),
                    "strict": False,
                    "parameters": _schema(rng, ["id", "message", "timeout_ms"]),
                }
                for name in members
            ],
        }
    )
    tools.append({"type": "web_search", "external_web_access": False})
    call = f"call_{rng.randrange(16**24):024x}"
    items.append(
        {
            "type": "function_call",
            "name": "spawn_agent",
            "namespace": "multi_agent_v1",
            "call_id": call,
            "arguments": '{"message":"Write the test for --json."}',
        }
    )
    items.append({"type": "function_call_output", "call_id": call, "output": "agent_1 started"})
    items.append(
        {
            "type": "web_search_call",
            "id": "ws_0",
            "status": "completed",
            "action": {"type": "search", "query": "argparse json flag"},
        }
    )


def codex(rng: random.Random) -> dict[str, Any]:
    tools: list[dict[str, Any]] = [
        {
            "type": "function",
            "name": "shell",
            "description": _prose(rng, 300),
            "strict": False,
            "parameters": _schema(rng, ["command", "workdir", "timeout_ms"]),
        },
        {
            "type": "function",
            "name": "update_plan",
            "description": _prose(rng, 200),
            "strict": False,
            "parameters": _schema(rng, ["plan", "explanation"]),
        },
        {
            "type": "function",
            "name": "view_image",
            "description": _prose(rng, 80),
            "strict": False,
            "parameters": _schema(rng, ["path"]),
        },
        {
            "type": "custom",
            "name": "apply_patch",
            "description": _prose(rng, 300),
            "format": {
                "type": "grammar",
                "syntax": "lark",
                "definition": 'start: begin_patch hunk+ end_patch\nbegin_patch: "*** Begin '
                'Patch" LF\nend_patch: "*** End Patch" LF?\n',
            },
        },
    ]
    items: list[dict[str, Any]] = [
        {
            "type": "message",
            "role": "developer",
            "content": [
                {
                    "type": "input_text",
                    "text": "<permissions instructions>\n"
                    + _prose(rng, 500)
                    + "</permissions instructions>",
                }
            ],
        },
        {
            "type": "message",
            "role": "user",
            "content": [
                {
                    "type": "input_text",
                    "text": "<environment_context>\n  <cwd>/repo</cwd>\n"
                    "  <shell>zsh</shell>\n</environment_context>",
                }
            ],
        },
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "Make the CLI accept a --json flag."}],
        },
    ]
    for turn in range(3):
        items.append(
            {
                "type": "reasoning",
                "summary": [
                    {"type": "summary_text", "text": "**Planning**\n\n" + _prose(rng, 120)}
                ],
                "content": None,
                "encrypted_content": "gAAAAAB" + f"{rng.randrange(16**200):0200x}",
            }
        )
        call = f"call_{rng.randrange(16**24):024x}"
        items.append(
            {
                "type": "function_call",
                "name": "shell",
                "call_id": call,
                "arguments": orjson.dumps(
                    {"command": ["bash", "-lc", f"rg -n json src/{turn}"], "workdir": "/repo"}
                ).decode(),
            }
        )
        items.append(
            {
                "type": "function_call_output",
                "call_id": call,
                "output": orjson.dumps(
                    {"output": _prose(rng, 200), "metadata": {"exit_code": 0}}
                ).decode(),
            }
        )
        patch = f"call_{rng.randrange(16**24):024x}"
        items.append(
            {
                "type": "custom_tool_call",
                "name": "apply_patch",
                "call_id": patch,
                "input": "*** Begin Patch\n*** Update File: src/cli.py\n@@\n-old\n+new\n"
                "*** End Patch\n",
            }
        )
        items.append(
            {
                "type": "custom_tool_call_output",
                "call_id": patch,
                "output": "Success. Updated the following files:\nM src/cli.py\n",
            }
        )
    final = _prose(rng, 200)
    _codex_0171(random.Random("codex-0.171"), tools, items)
    items.append(
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": final}],
        }
    )
    items.append(
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "Now add a test."}],
        }
    )
    return {
        "model": "gpt-5-codex",
        "instructions": _prose(rng, 10000),
        "input": items,
        "tools": tools,
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "reasoning": {"effort": "medium", "summary": "auto"},
        "store": False,
        "stream": True,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "0199a2b3-c4d5-7e6f-8a9b-0c1d2e3f4a5b",
    }


def chat_agent(rng: random.Random) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": _prose(rng, 1000)},
        {"role": "user", "content": "Rename foo to bar everywhere."},
    ]
    for turn in range(3):
        calls = [
            {
                "id": f"call_{turn}{k}{rng.randrange(16**12):012x}",
                "type": "function",
                "function": {
                    "name": rng.choice(["read_file", "grep", "edit_file"]),
                    "arguments": orjson.dumps({"path": f"src/m{turn}{k}.py"}).decode(),
                },
            }
            for k in range(2)
        ]
        messages.append(
            {"role": "assistant", "content": _prose(rng, 60).strip(), "tool_calls": calls}
        )
        for c in calls:
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": _prose(rng, 100)})
    messages.append({"role": "user", "content": "Good, continue."})
    names = [
        "read_file",
        "grep",
        "edit_file",
        "write_file",
        "list_dir",
        "run_command",
        "web_fetch",
        "ask_user",
        "todo",
        "glob",
        "git_diff",
        "git_commit",
        "search_symbols",
        "open_url",
        "finish",
    ]
    tools = [
        {
            "type": "function",
            "function": {
                "name": n,
                "description": _prose(rng, 50),
                "parameters": _schema(rng, ["path", "query"]),
            },
        }
        for n in names
    ]
    return {
        "model": "gpt-4.1",
        "messages": messages,
        "tools": tools,
        "tool_choice": "auto",
        "temperature": 0.2,
        "max_tokens": 8192,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


SOURCES = {
    "claude_code": ("anthropic", claude_code),
    "codex": ("responses", codex),
    "chat_agent": ("openai", chat_agent),
}
TARGETS = {
    "anthropic": ("claude-sonnet-4-5", "anthropic"),
    "openai": ("deepseek-chat", "deepseek"),
    "responses": ("gpt-5-codex", "openai"),
}


def golden(name: str, src: str, body: dict[str, Any]) -> dict[str, bytes]:
    from orca_cli.translate import TranslationOptions, translate_request

    out: dict[str, bytes] = {}
    for dst, (model, family) in TARGETS.items():
        if dst == src:
            continue
        t = translate_request(
            body,
            src,
            dst,
            model=model,
            target_model_family=family,  # type: ignore[arg-type]
            options=TranslationOptions(),
        )
        out[f"{name}.to_{dst}.json"] = t.body + b"\n"
        out[f"{name}.to_{dst}.report.json"] = (
            orjson.dumps(t.report, option=orjson.OPT_INDENT_2) + b"\n"
        )
    return out


def main() -> None:
    only_golden = "--golden" in sys.argv
    for name, (src, make) in SOURCES.items():
        path = HERE / f"{name}.{src}.json"
        if not only_golden:
            body = make(random.Random(name))
            path.write_bytes(orjson.dumps(body) + b"\n")
        for fname, data in golden(name, src, orjson.loads(path.read_bytes())).items():
            (HERE / fname).write_bytes(data)


if __name__ == "__main__":
    main()
