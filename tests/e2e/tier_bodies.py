"""Cumulative OpenAI request bodies of the sessions the escalation stories replay (seed §6).

A `Conversation` holds the transcript an agent would resend: each `user_turn` /
`tool_continuation` returns the next request body (system prompt and tools every time) and
then records a plausible assistant message, so the next body carries the whole history.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from tests.routing.bodies import OPENAI_TOOLS, SYSTEM_PROMPT, TRIVIAL_EDITS

__all__ = [
    "FIX_THE_BUILD",
    "VOLATILE",
    "Conversation",
    "build_failure",
    "passing_tool_output",
    "volatile_failure",
]

FIX_THE_BUILD = "fix the build"


def build_failure(n: int) -> str:
    """The same broken build on run `n`: every error line carries something that changes
    between runs (line and column numbers, a hex address, a goroutine id, a pid), so only a
    normalised signature can tell that it is the same failure."""
    line = 140 + 7 * n
    return (
        f"$ go build ./...   (pid {40211 + 37 * n})\n"
        "# github.com/acme/orders/internal/api\n"
        f"internal/api/handler.go:{line}:{17 + n}: undefined: cache.NewWithTTL\n"
        f"internal/api/handler.go:{line + 15}:9: cannot use order (variable of type *Order) "
        "as OrderView value in argument to writeJSON\n"
        f"error: build cache lock held by goroutine {19 + 4 * n} at 0x{0xc000118040 + 64 * n:x}\n"
        "exit status 1"
    )


_TOKENS = ("kqzx", "mwvp", "trbn", "hjyd", "fgcl", "sxwe", "pluo")

# One failure per kind of volatile part: its only error line changes between runs by that part
# alone, so a strike proves that this part is normalised away.
VOLATILE: dict[str, str] = {
    "line_numbers": "internal/api/handler.go:{line}:{col}: undefined: cache.NewWithTTL",
    "hex_addresses": ("panic: runtime error: invalid memory address or nil pointer "
                      "dereference [addr=0x{addr:x} pc=0x{pc:x}]"),
    "goroutine_and_pids": "fatal error: all goroutines are asleep - deadlock! "
                          "(goroutine {gid}, pid {pid})",
    "paths": "error: open /tmp/go-build{tok}/b{tok}/importcfg: no such file or directory",
    "quoted_identifiers": ("TypeError: Cannot read properties of undefined "
                           "(reading '{tok}Handler')"),
}


def volatile_failure(kind: str, n: int) -> str:
    template = VOLATILE[kind]
    line = template.format(line=140 + 7 * n, col=9 + n, addr=0xC00011A0F0 + 0x1B3 * n,
                           pc=0x6A3F2C + 0xAB * n, gid=17 + 3 * n, pid=40211 + 37 * n,
                           tok=_TOKENS[n % len(_TOKENS)])
    return f"$ make check\n{line}\nexit status 2"


def passing_tool_output(n: int) -> str:
    """A tool result without any failure in it (a file read), for tool continuations."""
    return (
        f"{n:>4}  package api\n"
        f"{n + 1:>4}  \n"
        f"{n + 2:>4}  import \"net/http\"\n"
        f"{n + 3:>4}  \n"
        f"{n + 4:>4}  func routes(mux *http.ServeMux) {{ mux.HandleFunc(\"/orders\", serve) }}\n"
    )


@dataclass
class Conversation:
    """An agent's transcript; `tools=False` sends no tool definitions."""

    tools: bool = True
    system: str = SYSTEM_PROMPT
    messages: list[dict[str, Any]] = field(default_factory=list)
    _calls: int = 0

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "model": "orca/coding",
            "messages": [{"role": "system", "content": self.system},
                         *copy.deepcopy(self.messages)],
        }
        if self.tools:
            out["tools"] = copy.deepcopy(OPENAI_TOOLS)
        return out

    def reply(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})

    def call_tool(self, command: str) -> str:
        """The assistant asks to run `command`; returns the call id."""
        self._calls += 1
        cid = f"call_{self._calls:03d}"
        self.messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": cid, "type": "function",
             "function": {"name": "run_shell", "arguments": json.dumps({"command": command})}}]})
        return cid

    def user_turn(self, text: str, *, tool_output: str | None = None) -> dict[str, Any]:
        """A user turn: optionally the result of the previous tool call, then user text."""
        if tool_output is not None:
            cid = self.call_tool("go build ./...")
            self.messages.append({"role": "tool", "tool_call_id": cid, "content": tool_output})
        self.messages.append({"role": "user", "content": text})
        return self.body()

    def tool_continuation(self, output: str, command: str = "cat internal/api/routes.go"
                          ) -> dict[str, Any]:
        """A continuation: the assistant's tool call and its result, no user text."""
        cid = self.call_tool(command)
        self.messages.append({"role": "tool", "tool_call_id": cid, "content": output})
        return self.body()

    def trivial_edit(self, i: int) -> dict[str, Any]:
        ask, answer = TRIVIAL_EDITS[i % len(TRIVIAL_EDITS)]
        body = self.user_turn(ask)
        self.reply(answer)
        return body
