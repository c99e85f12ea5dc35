"""`orca demo`: the sidecar on a real port with simulated upstreams, driven by five scripted
sessions over real HTTP — no API key, nothing leaves the machine.

The sessions show the mechanism end to end: trivial edits stay in the cheap tier on one key
with a warm cache; an agent stuck on the same compile error escalates by strikes on turn 4
and stays on its strong model — once as a Chat Completions client whose cheap tier is native
and whose frontier tier is served through translation, once as Claude Code (Messages) the
other way round; an explicit one-turn boost serves exactly one turn strong; Claude Code's
housekeeping model name goes to the cheap background router. Each row is what the response
headers, the upstream's usage and the trace's `translation` block said.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import httpx

from orca_cli.clock import SystemClock
from orca_cli.compose import running
from orca_cli.config.schema import Config
from orca_cli.immutable import immutable
from orca_cli.proxy.runtime import Runtime
from orca_cli.state.memory import MemoryStore
from orca_cli.types import Api

__all__ = ["DemoRow", "run_demo"]

SYSTEM = ("You are a coding agent working in a Go repository. Read files before editing, run "
          "the build after every change, keep diffs minimal. ") * 8
_TOOL = {"name": "run_command", "description": "Run a shell command",
         "schema": {"type": "object", "properties": {"cmd": {"type": "string"}}}}
TOOLS = [{"type": "function", "function": {"name": _TOOL["name"],
                                           "description": _TOOL["description"],
                                           "parameters": _TOOL["schema"]}}]
ANTHROPIC_TOOLS = [{"name": _TOOL["name"], "description": _TOOL["description"],
                    "input_schema": _TOOL["schema"]}]
_PATHS: dict[Api, str] = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}


@immutable
class DemoRow:
    session: str
    turn: int
    tier: str  # the X-Orca-Session-Tier header
    model: str
    channel: str
    prompt_tokens: int
    cached_tokens: int
    cost_usd: float
    request_id: str
    api: str = "openai"  # the format the client spoke
    upstream_api: str = "openai"  # the format the channel was sent (translated when different)


def _compile_error(turn: int) -> str:
    line, col = 40 + 7 * turn, 3 + turn
    return (f"$ go build ./...\n# example.com/shop/internal/cache\n"
            f"internal/cache/store.go:{line}:{col}: undefined: lookupEntry\n"
            f"note: module example.com/shop@v0.{turn}.0 build id {turn * 7919:08x}\n")


def _trivial(turn: int) -> str:
    return f"rename the variable tmp{turn} to result{turn} in internal/cache/store.go"


def _body(api: Api, model: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    if api == "anthropic":  # Claude Code's shape: system apart, max_tokens, its tool schema
        return {"model": model, "max_tokens": 4096, "system": SYSTEM, "messages": messages,
                "tools": ANTHROPIC_TOOLS}
    return {"model": model, "messages": [{"role": "system", "content": SYSTEM}, *messages],
            "tools": TOOLS}


def _usage(api: Api, doc: dict[str, Any]) -> tuple[int, int]:
    """(prompt tokens, cached tokens) as the client's own format reports them."""
    u = doc.get("usage") or {}
    if api == "anthropic":
        cached = int(u.get("cache_read_input_tokens") or 0)
        return (int(u.get("input_tokens", 0)) + cached
                + int(u.get("cache_creation_input_tokens") or 0), cached)
    return (int(u.get("prompt_tokens", 0)),
            int((u.get("prompt_tokens_details") or {}).get("cached_tokens", 0)))


def _reply(api: Api, doc: dict[str, Any]) -> dict[str, Any]:
    if api == "anthropic":
        text = "".join(b.get("text", "") for b in doc["content"] if b.get("type") == "text")
        return {"role": "assistant", "content": text or "ok"}
    return {"role": "assistant", "content": doc["choices"][0]["message"]["content"] or "ok"}


async def _session(client: httpx.AsyncClient, rt: Runtime, name: str, turns: int,
                   make: Callable[[Api, int, list[dict[str, Any]]], None],
                   headers_for: Callable[[int], dict[str, str]] | None = None,
                   model: str = "orca/coding", api: Api = "openai") -> list[DemoRow]:
    messages: list[dict[str, Any]] = []
    rows = []
    for turn in range(1, turns + 1):
        make(api, turn, messages)
        headers = {"x-orca-session": f"demo-{name}",  # the session id the table shows
                   **(headers_for(turn) if headers_for else {})}
        resp = await client.post(_PATHS[api], json=_body(api, model, messages), headers=headers)
        resp.raise_for_status()
        doc = resp.json()
        prompt, cached = _usage(api, doc)
        rid = resp.headers["x-orca-request-id"]
        trace = await rt.gate.store.get_trace(rid) or {}
        crossed = trace.get("translation") or {}
        rows.append(DemoRow(f"demo-{name}", turn, resp.headers["x-orca-session-tier"],
                            resp.headers.get("x-orca-model", ""),
                            resp.headers.get("x-orca-channel", ""), prompt, cached,
                            float(trace.get("cost_usd", 0.0)), rid, api,
                            str(crossed.get("to", api))))
        messages.append(_reply(api, doc))
    return rows


def _trivial_turn(api: Api, turn: int, messages: list[dict[str, Any]]) -> None:
    messages.append({"role": "user", "content": _trivial(turn)})


def _loop_turn(api: Api, turn: int, messages: list[dict[str, Any]]) -> None:
    """The agent ran the build, it failed the same way again, and the user says fix it."""
    ask = "fix the build"
    if turn == 1:
        messages.append({"role": "user", "content": ask})
        return
    call, error = f"call_{turn}", _compile_error(turn)
    if api == "anthropic":
        messages.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"toolu_{turn:02d}", "name": "run_command",
             "input": {"cmd": "go build ./..."}}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{turn:02d}", "content": error},
            {"type": "text", "text": ask}]})
        return
    messages.append({"role": "assistant", "content": None, "tool_calls": [
        {"id": call, "type": "function",
         "function": {"name": "run_command", "arguments": '{"cmd": "go build ./..."}'}}]})
    messages.append({"role": "tool", "tool_call_id": call, "content": error})
    messages.append({"role": "user", "content": ask})


async def run_demo(cfg: Config, *, on_row: Callable[[DemoRow], None] | None = None,
                   keep: Callable[[list[DemoRow], str], None] | None = None,
                   port: int = 0) -> list[DemoRow]:
    """Serve `cfg` (its routers `coding` and `background`) on a loopback port (`port`, 0 for
    a free one) and run the scripted sessions through it. With `keep`, the sidecar also
    serves the admin API (token and record written as `orca serve` does), `keep(rows, url)`
    is called once the sessions are done, and the sidecar runs until the task is cancelled
    (Ctrl-C), so `orca requests`, `orca explain` and `orca session show` work on the demo."""
    clock = SystemClock()
    store = MemoryStore(clock=clock, trace_max=cfg.server.trace_max)
    token: str | None = None
    if keep is not None:
        from orca_cli.proxy.token import write_admin_token

        token = write_admin_token()
    rows: list[DemoRow] = []
    async with running(cfg, store=store, clock=clock, port=port,
                       admin_token=token) as served:
        rt = served.runtime
        async with httpx.AsyncClient(base_url=served.url, timeout=30) as client:
            plans: list[tuple[str, int, Any, Any, str, Api]] = [
                ("trivial-edits", 5, _trivial_turn, None, "orca/coding", "openai"),
                ("failure-loop", 6, _loop_turn, None, "orca/coding", "openai"),
                # Claude Code's own model name (an alias of orca/coding) over Messages.
                ("claude-code-loop", 5, _loop_turn, None, "claude-opus-5-5", "anthropic"),
                ("one-turn-boost", 3, _trivial_turn,
                 lambda t: {"x-orcarouter-tier": "once"} if t == 2 else {}, "orca/coding",
                 "openai"),
                ("housekeeping", 2, _trivial_turn, None, "claude-haiku-4-5", "anthropic"),
            ]
            for name, turns, make, hdrs, model, api in plans:
                for row in await _session(client, rt, name, turns, make, hdrs, model, api):
                    rows.append(row)
                    if on_row is not None:
                        on_row(row)
        if keep is not None and token is not None:
            from orca_cli.proxy.token import sidecar_record

            # Ctrl-C and SIGTERM end the wait gracefully from before the record exists: a
            # client that sees the record may stop the demo at once.
            with _stop_on_signals() as stop:
                keep(rows, served.url)
                with sidecar_record("127.0.0.1", served.port, token, cfg.source):
                    await stop.wait()
    return rows


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[asyncio.Event]:
    """An event Ctrl-C or SIGTERM sets (instead of ending the process) while inside."""
    import signal

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        yield stop
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


def run(cfg: Config, on_row: Callable[[DemoRow], None] | None = None, *,
        keep: Callable[[list[DemoRow], str], None] | None = None,
        port: int = 0) -> list[DemoRow]:
    return asyncio.run(run_demo(cfg, on_row=on_row, keep=keep, port=port))
