"""Realistic request bodies for scoring tests, in both wire formats (SPEC §4, seed §3, §6.2).

Each builder returns a fresh body dict shaped like what a coding agent sends: a ~2 KB system
prompt, a two-tool definition array, and the cumulative history. The texts are written to read
like real sessions — a short opener, a hard debugging turn with a pasted goroutine dump,
Python traceback or source excerpt, trivial edit sessions, a compile-error failure loop — and
the calibration tests in test_features.py assert the seed's measured scores on them.
"""

from __future__ import annotations

import json
from typing import Any

Api = str  # "openai" | "anthropic"

SYSTEM_PROMPT = (
    "You are an interactive coding agent working in the user's repository through the tools "
    "provided. Your job is to help with software engineering tasks: fixing bugs, adding "
    "features, refactoring, explaining code and running the project's checks.\n\n"
    "# Working style\n"
    "- Be concise. Answer in a few sentences unless the user asks for detail. Do not add "
    "preamble or a summary of what you are about to do; just do it.\n"
    "- Before editing a file, read it. Prefer small, focused changes that match the "
    "surrounding conventions: naming, formatting, error handling, imports and tests.\n"
    "- Never invent file paths, APIs or command-line flags. If something is unclear, look it "
    "up in the repository first, and ask the user only when the repository cannot tell you.\n"
    "- After a change, run the relevant checks (build, unit tests, linters) with the shell "
    "tool and report failures honestly. Do not claim something works unless you ran it.\n"
    "- Keep the user's working tree tidy: no stray debug prints, temporary files or "
    "commented-out blocks. Do not commit unless asked to.\n\n"
    "# Safety\n"
    "- Do not run destructive commands (deleting directories, force-pushing, rewriting "
    "history, dropping databases) without an explicit request from the user.\n"
    "- Treat secrets with care: never print tokens or keys you find in the environment or "
    "in configuration files, and never send them anywhere.\n\n"
    "# Tools\n"
    "- read_file(path, offset, limit): read part of a file; use it before every edit.\n"
    "- run_shell(command, timeout_s): run a shell command in the repository root; prefer "
    "the project's own scripts (make, npm run, go test, pytest) over ad-hoc invocations.\n\n"
    "# Output\n"
    "When you reference code, give the path and line so the user can jump to it. Use "
    "fenced blocks only for code the user should copy. When a task is done, say so in one "
    "line and stop; the user will ask for more if they want it. If you are blocked, say "
    "what you tried and what you need from the user to continue. Respect the repository's "
    "own contributor guide when there is one, and the user's instructions over both."
)

_TOOL_SPECS = (
    (
        "read_file",
        "Read a file from the repository. Returns numbered lines.",
        {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path relative to the repo root."},
                "offset": {"type": "integer", "description": "First line to read (1-based)."},
                "limit": {"type": "integer", "description": "Maximum number of lines."},
            },
            "required": ["path"],
        },
    ),
    (
        "run_shell",
        "Run a shell command in the repository root and return its output and exit code.",
        {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line to run."},
                "timeout_s": {"type": "integer", "description": "Kill after this many seconds."},
            },
            "required": ["command"],
        },
    ),
)

OPENAI_TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": n, "description": d, "parameters": p}}
    for n, d, p in _TOOL_SPECS
]
ANTHROPIC_TOOLS: list[dict[str, Any]] = [
    {"name": n, "description": d, "input_schema": p} for n, d, p in _TOOL_SPECS
]

OPENER = "Can you add a --verbose flag to the CLI?"

HARD_PROSE = (
    "I'm stuck on a bug in the order cache and I want a real analysis, not a guess. Under load "
    "(64 workers) the service occasionally serves a stale order after an update, and once a "
    "day or so it panics with the dump below. I think there's a race condition between "
    "Cache.Get and the eviction sweep, but I can't find the root cause.\n\n"
    "What I know: the invariant is that every key in `index` has exactly one entry in the LRU "
    "list, and that `len(index) == lru.Len()` after every operation. The sweep re-sorts the "
    "heap on every pass, so eviction is O(n log n) per sweep instead of O(log n) per "
    "removal, and the lock is held for the whole sweep. Why would the invariant break if every "
    "writer holds mu? My hypothesis is that Get upgrades from RLock to Lock without rechecking, "
    "so two readers can both decide to promote the same entry. The hot path is "
    "`func (c *Cache) Get(key string) (*Order, bool)`: it takes `c.mu.RLock()`, reads "
    "`c.index[key]`, and when the entry is stale it calls `c.mu.Lock()` with a `defer "
    "c.mu.Unlock()` and moves it to the front before it can return the order.\n\n"
    "Can you prove the lock ordering is deadlock-free, or give a counterexample? And what is "
    "the trade-off between sharding the map (say 16 shards) and keeping one mutex, in terms "
    "of complexity and tail latency? If the hit probability under our key distribution is "
    "about 0.9, what is the expected value of the lock hold time per request? Treat it like a "
    "lemma: state the assumptions, then the argument."
)

GOROUTINE_DUMP_HEADER = (
    "panic: runtime error: invalid memory address or nil pointer dereference\n"
    "[signal SIGSEGV: segmentation violation code=0x1 addr=0x18 pc=0x6a3f2c]\n\n"
)


def goroutine_dump(goroutines: int = 8) -> str:
    """A Go panic followed by `goroutines` goroutine stacks (~650 bytes each): the running
    one, readers blocked on the cache's RWMutex, and server goroutines parked in select."""
    out = [GOROUTINE_DUMP_HEADER]
    for g in range(goroutines):
        gid = 17 + g * 3
        if g == 0:
            head = (
                f"goroutine {gid} [running]:\n"
                f"github.com/acme/orders/internal/cache.(*entry).promote(...)\n"
                f"\t/src/orders/internal/cache/lru.go:88\n"
            )
        elif g % 2:
            head = (
                f"goroutine {gid} [semacquire]:\n"
                f"sync.runtime_SemacquireRWMutex(0xc000118048, 0x0, 0x0)\n"
                f"\t/usr/local/go/src/runtime/sema.go:87 +0x25\n"
                f"sync.(*RWMutex).Lock(0xc000118040)\n"
                f"\t/usr/local/go/src/sync/rwmutex.go:146 +0x6a\n"
            )
        else:
            head = (
                f"goroutine {gid} [select]:\n"
                f"runtime.gopark(0xc0000b6f50, 0x0, 0x0, 0x0, 0x0)\n"
                f"\t/usr/local/go/src/runtime/proc.go:398 +0xce\n"
                f"runtime.selectgo(0xc0000b6f38, 0xc0000b6e90, 0x2, 0x0, 0x0)\n"
                f"\t/usr/local/go/src/runtime/select.go:327 +0x725\n"
            )
        out.append(
            head
            + f"github.com/acme/orders/internal/cache.(*Cache).Get(0xc000123450, "
            f"{{0xc00001a2b8, 0x8}})\n"
            f"\t/src/orders/internal/cache/cache.go:{142 + g} +0x2c\n"
            f"github.com/acme/orders/internal/api.(*Handler).ServeOrder(0xc0000a8000, "
            f"{{0x7f1e2c, 0xc0001c2000}}, 0xc0001be100)\n"
            f"\t/src/orders/internal/api/handler.go:{57 + g} +0x1b5\n"
            f"net/http.HandlerFunc.ServeHTTP(0xc0001a4000, {{0x7f1e2c, 0xc0001c2000}}, "
            f"0xc0001be100)\n"
            f"\t/usr/local/go/src/net/http/server.go:2136 +0x29\n"
            f"created by net/http.(*Server).Serve in goroutine 1\n"
            f"\t/usr/local/go/src/net/http/server.go:3086 +0x5cb\n\n"
        )
    return "".join(out)


def python_traceback(repeats: int = 6) -> str:
    """A Python traceback through an async web stack (~650 bytes a repeat)."""
    out = ["Traceback (most recent call last):\n"]
    for i in range(repeats):
        out.append(
            f'  File "/usr/lib/python3.11/asyncio/base_events.py", line {653 + i}, '
            f"in run_until_complete\n"
            f"    return future.result()\n"
            f'  File "/app/.venv/lib/python3.11/site-packages/starlette/routing.py", '
            f"line {762 + i}, in __call__\n"
            f"    await route.handle(scope, receive, send)\n"
            f'  File "/app/orders/api/handlers.py", line {88 + i}, in get_order\n'
            f"    order = await cache.get(order_id)\n"
            f'  File "/app/orders/cache/store.py", line {120 + i}, in get\n'
            f"    entry = self._index[key]\n"
        )
    out.append("KeyError: 'order:4411'\n")
    return "".join(out)


def source_excerpt(functions: int = 8) -> str:
    """A pasted Go source excerpt (~550 bytes a function)."""
    out = ["```go\npackage cache\n\nimport (\n\t\"sync\"\n\t\"time\"\n)\n\n"]
    for i in range(functions):
        out.append(
            f"// get{i} returns the entry for key, promoting it in the LRU list.\n"
            f"func (c *Cache) get{i}(key string) (*Order, bool) {{\n"
            f"\tc.mu.RLock()\n"
            f"\te, ok := c.index[key]\n"
            f"\tc.mu.RUnlock()\n"
            f"\tif !ok || e == nil {{\n"
            f"\t\treturn nil, false\n"
            f"\t}}\n"
            f"\tif time.Since(e.loaded) > c.ttl {{\n"
            f"\t\tc.mu.Lock()\n"
            f"\t\tdefer c.mu.Unlock()\n"
            f"\t\tc.lru.MoveToFront(e.elem)\n"
            f"\t\treturn e.order, true\n"
            f"\t}}\n"
            f"\treturn e.order, true\n"
            f"}}\n\n"
        )
    out.append("```\n")
    return "".join(out)


COMPILE_ERROR = (
    "# github.com/acme/orders/internal/api\n"
    "internal/api/handler.go:{line}:17: undefined: cache.NewWithTTL\n"
    "internal/api/handler.go:{line2}:9: cannot use order (variable of type *Order) as "
    "OrderView value in argument to writeJSON\n"
    "internal/api/routes.go:31:2: \"github.com/acme/orders/internal/metrics\" imported "
    "and not used\n"
    "exit status 1"
)

TRIVIAL_EDITS = (
    ("Rename the variable `cfg` to `config` in load.go.",
     "Done — renamed `cfg` to `config` in `internal/config/load.go` (4 references). Nothing "
     "else referenced it."),
    ("Add a nil check before we dereference `opts` in NewServer.",
     "Added the check in `server.go`:\n```go\nif opts == nil {\n\treturn nil, errNilOptions\n}\n```"),
    ("Make the timeout message say seconds instead of s.",
     "Updated the message in `client.go:88`; it now reads `timed out after 30 seconds`."),
    ("Sort the imports in handler.go.",
     "Sorted the import block in `internal/api/handler.go`:\n```go\nimport (\n\t\"context\"\n"
     "\t\"encoding/json\"\n\t\"net/http\"\n)\n```\n`go build ./...` passes."),
    ("Change the default port to 8080.",
     "Changed it in `cmd/server/main.go`:\n```go\nconst defaultPort = 8080\n```\nand updated "
     "the README example."),
)


def openai_body(messages: list[dict[str, Any]], *, system: str = SYSTEM_PROMPT,
                tools: bool = True, model: str = "orca/coding") -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "system", "content": system}, *messages] if system else messages,
    }
    if tools:
        body["tools"] = json.loads(json.dumps(OPENAI_TOOLS))
    return body


def anthropic_body(messages: list[dict[str, Any]], *, system: str = SYSTEM_PROMPT,
                   tools: bool = True, model: str = "orca/coding") -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "max_tokens": 4096, "messages": messages}
    if system:
        body["system"] = [{"type": "text", "text": system}]
    if tools:
        body["tools"] = json.loads(json.dumps(ANTHROPIC_TOOLS))
    return body


def body(api: Api, messages: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    return anthropic_body(messages, **kw) if api == "anthropic" else openai_body(messages, **kw)


def user(api: Api, text: str) -> dict[str, Any]:
    if api == "anthropic":
        return {"role": "user", "content": [{"type": "text", "text": text}]}
    return {"role": "user", "content": text}


def assistant(api: Api, text: str) -> dict[str, Any]:
    if api == "anthropic":
        return {"role": "assistant", "content": [{"type": "text", "text": text}]}
    return {"role": "assistant", "content": text}


def tool_call(api: Api, call_id: str, command: str) -> dict[str, Any]:
    """An assistant message that runs `command` through run_shell."""
    if api == "anthropic":
        return {"role": "assistant", "content": [
            {"type": "text", "text": "Running the build."},
            {"type": "tool_use", "id": call_id, "name": "run_shell", "input": {"command": command}},
        ]}
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function",
         "function": {"name": "run_shell", "arguments": json.dumps({"command": command})}},
    ]}


def tool_results(api: Api, call_id: str, output: str, text: str | None = None) -> list[dict[str, Any]]:
    """The messages carrying one tool result (and optionally user text in the same turn)."""
    if api == "anthropic":
        blocks: list[dict[str, Any]] = [
            {"type": "tool_result", "tool_use_id": call_id, "content": output}
        ]
        if text is not None:
            blocks.append({"type": "text", "text": text})
        return [{"role": "user", "content": blocks}]
    out: list[dict[str, Any]] = [{"role": "tool", "tool_call_id": call_id, "content": output}]
    if text is not None:
        out.append({"role": "user", "content": text})
    return out


def opener(api: Api = "openai") -> dict[str, Any]:
    """Turn 1: a short ask, system prompt and tools (seed §3.1: ≈ 0.21 on the delta)."""
    return body(api, [user(api, OPENER)])


def _history(api: Api) -> list[dict[str, Any]]:
    return [user(api, OPENER), assistant(api, "Added `--verbose` to `cmd/orders/main.go`; "
                                          "it sets the log level to debug.")]


def hard_turn(api: Api = "openai", paste: str | None = "goroutine") -> dict[str, Any]:
    """A hard debugging turn after a trivial opener (seed §6.2: ≈ 0.72 with the paste,
    ≈ 0.66 without). `paste`: "goroutine", "traceback", "source" or None."""
    pasted = {"goroutine": goroutine_dump, "traceback": python_traceback,
              "source": source_excerpt}
    text = HARD_PROSE if paste is None else f"{HARD_PROSE}\n\n{pasted[paste]()}"
    return body(api, [*_history(api), user(api, text)])


def trivial_session(api: Api = "openai", turns: int = 25) -> list[dict[str, Any]]:
    """The request bodies of a `turns`-turn session of trivial edits (seed §3.2), turn 1 first."""
    bodies: list[dict[str, Any]] = []
    history: list[dict[str, Any]] = []
    for t in range(turns):
        ask, reply = TRIVIAL_EDITS[t % len(TRIVIAL_EDITS)]
        bodies.append(body(api, [*history, user(api, ask)]))
        history += [user(api, ask), assistant(api, reply)]
    return bodies


def compile_error(line: int = 142) -> str:
    return COMPILE_ERROR.format(line=line, line2=line + 15)


def failure_loop_turn(api: Api = "openai", turn: int = 2) -> dict[str, Any]:
    """Turn `turn` of a failure loop (seed §6.1): from turn 2 the delta is the build's
    ~300-char compile error (line numbers changing) plus the same short "fix the build"."""
    msgs: list[dict[str, Any]] = [user(api, "fix the build")]
    for t in range(1, turn):
        msgs.append(tool_call(api, f"call_{t}", "go build ./..."))
        msgs += tool_results(api, f"call_{t}", compile_error(140 + t), text="fix the build")
    return body(api, msgs)


def tool_continuation(api: Api = "openai", output: str | None = None) -> dict[str, Any]:
    """The hard ask, then the agent's tool call, then only its result (a continuation)."""
    msgs = [*_history(api), user(api, HARD_PROSE), tool_call(api, "call_9", "go test ./...")]
    msgs += tool_results(api, "call_9", output if output is not None else
                         "ok  \tgithub.com/acme/orders/internal/cache\t0.412s")
    return body(api, msgs)


def padded_transcript(api: Api, target_bytes: int, latest: list[dict[str, Any]]) -> dict[str, Any]:
    """A transcript of about `target_bytes` JSON bytes of history, ending with `latest`."""
    history: list[dict[str, Any]] = []
    size = 0
    i = 0
    while size < target_bytes:
        ask, reply = TRIVIAL_EDITS[i % len(TRIVIAL_EDITS)]
        pair = [user(api, f"{ask} (step {i})"), assistant(api, reply * 3)]
        size += len(json.dumps(pair))
        history += pair
        i += 1
    return body(api, [*history, *latest])
