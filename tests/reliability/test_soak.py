"""A bounded soak (RELIABILITY.md S30; issue item 8): 3,000 requests at concurrency 32 through a
real sidecar on the sim channel — both wire formats, streaming and not, 48 sessions of a
session-aware router plus sessionless traffic — in this process.

Pass criteria: no unexpected answer (every request 200 and complete: a clean end on every
stream, no in-band error), resident memory flat after warm-up, and no file-descriptor, task or
connection leak (counted after warm-up, at the end, and after shutdown). Bounded by request
count and by wall clock.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import time
from typing import Any

import aiohttp
import orjson
import pytest

from orca_cli.config.load import loads
from orca_cli.proxy.sim import SimTransport
from orca_cli.testing import sidecar, sse_events
from tests.reliability.configs import SIM_CODING_ROUTERS, sim_channels
from tests.reliability.probes import fd_count, rss_kib

TOTAL = 3000
WARMUP = 800
CONCURRENCY = 32
SESSIONS = 48
WALL_BOUND_S = 60.0
# Measured here: +2.2 MiB over the 2,200 requests after warm-up (12 MiB over 12,000). Two
# known structures grow per request until their TTL, not by count: the memory store's
# idempotency markers (kept an hour, one per request and slot, ~0.6 KiB a request) and the
# sim channel's `calls` log. The slack covers them at this length; a leak of a body per request
# (kilobytes each) would not fit in it.
RSS_SLACK_KIB = 8 * 1024

CONFIG = f"""
[server]
max_concurrency = 256
trace_max = 500

{sim_channels(o_keys=2, a_keys=2, o_models=("small-o", "big-o"), a_models=("small-a", "big-a"))}
{SIM_CODING_ROUTERS.format(escalation="max_per_session = 1")}"""

TURNS = ["rename x to count in utils.py", "why does the cache test deadlock under load?",
         "[tool] run the tests again", "add a docstring to count"]
TOOLS_O = [{"type": "function", "function": {"name": "bash", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}]
TOOLS_A = [{"name": "bash", "input_schema": {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}]


def request(i: int) -> tuple[str, bytes, dict[str, str], bool, str]:
    """Request number `i`: (path, body, headers, stream, format). A fixed set of bodies, so
    after warm-up nothing new is cached anywhere and memory must stay flat."""
    api = "anthropic" if i % 2 else "openai"
    stream = (i // 2) % 2 == 0
    session = i % (SESSIONS + 8)
    turn = (i // (SESSIONS + 8)) % len(TURNS)
    msgs: list[dict[str, Any]] = []
    for k in range(turn + 1):
        msgs.append({"role": "user", "content": TURNS[k]})
        if k < turn:
            msgs.append({"role": "assistant", "content": "done"})
    headers = {"content-type": "application/json"}
    router = "orca/coding"
    if session < SESSIONS:
        headers["x-orca-session"] = f"soak-{session}"
    else:
        router = "orca/background"  # sessionless
    if api == "anthropic":
        body: dict[str, Any] = {"model": router, "max_tokens": 256, "messages": msgs,
                                "tools": TOOLS_A, "system": "You are a coding agent."}
        path = "/v1/messages"
    else:
        body = {"model": router, "messages": [{"role": "system", "content": "You code."},
                                              *msgs], "tools": TOOLS_O}
        path = "/v1/chat/completions"
    if stream:
        body["stream"] = True
    return path, orjson.dumps(body), headers, stream, api


def check_answer(api: str, stream: bool, status: int, body: bytes) -> str | None:
    """None for a complete, clean answer; else what was wrong with it."""
    if status != 200:
        return f"status {status}: {body[:200]!r}"
    if not stream:
        doc = orjson.loads(body)
        ok = bool(doc.get("choices")) if api == "openai" else doc.get("type") == "message"
        return None if ok else f"bad body {body[:200]!r}"
    events = sse_events(body)
    if any(name == "error" or data.startswith('{"error"') for name, data in events):
        return f"in-band error {body[-200:]!r}"
    end = (None, "[DONE]") if api == "openai" else ("message_stop", '{"type":"message_stop"}')
    return None if events and events[-1] == end else f"no clean end {body[-200:]!r}"


def settle() -> tuple[int, int, int]:
    gc.collect()
    return rss_kib(), fd_count(), len(asyncio.all_tasks())


@pytest.mark.slow
async def test_a_bounded_soak_has_no_errors_and_no_leaks() -> None:
    baseline_fds = fd_count()
    baseline_tasks = len(asyncio.all_tasks())
    errors: list[str] = []
    done = 0
    marks: dict[str, tuple[int, int, int]] = {}
    started = time.monotonic()
    async with sidecar(loads(CONFIG, source="soak")) as sc:
        connector = aiohttp.TCPConnector(limit=CONCURRENCY, force_close=False)
        async with aiohttp.ClientSession(sc.base, connector=connector) as http:
            counter = itertools.count()

            async def worker(limit: int) -> None:
                nonlocal done
                for i in counter:
                    if i >= limit:
                        return
                    path, body, headers, stream, api = request(i)
                    async with http.post(path, data=body, headers=headers) as resp:
                        payload = await resp.read()
                        problem = check_answer(api, stream, resp.status, payload)
                    if problem is not None:
                        errors.append(f"#{i} {path} stream={stream}: {problem}")
                    done += 1

            async with asyncio.timeout(WALL_BOUND_S + 30):
                await asyncio.gather(*(worker(WARMUP) for _ in range(CONCURRENCY)))
                marks["warm"] = settle()
                counter = itertools.count(WARMUP)
                await asyncio.gather(*(worker(TOTAL) for _ in range(CONCURRENCY)))
                marks["end"] = settle()
            elapsed = time.monotonic() - started
            calls = sum(len(t.calls) for t in sc.rt.transports.values()
                        if isinstance(t, SimTransport))
            commits = sc.store.commits
    marks["after"] = settle()
    assert done == TOTAL and not errors, f"{len(errors)} unexpected answers, first: {errors[:3]}"
    assert elapsed < WALL_BOUND_S, f"the soak took {elapsed:.1f} s"
    assert calls == TOTAL, "every request was served by exactly one upstream attempt"
    assert commits >= TOTAL
    (rss_warm, fds_warm, _), (rss_end, fds_end, tasks_end) = marks["warm"], marks["end"]
    assert rss_end - rss_warm < RSS_SLACK_KIB, (
        f"RSS grew {(rss_end - rss_warm) / 1024:.1f} MiB over {TOTAL - WARMUP} requests "
        f"after warm-up ({rss_warm / 1024:.1f} -> {rss_end / 1024:.1f} MiB)")
    assert fds_end <= fds_warm + 2, f"fds {fds_warm} after warm-up, {fds_end} at the end"
    # Pooled keep-alive connections are at most CONCURRENCY pairs (client and server side).
    assert fds_end - baseline_fds <= 2 * CONCURRENCY + 8, (baseline_fds, fds_end)
    assert tasks_end <= baseline_tasks + CONCURRENCY + 8
    _, fds_after, tasks_after = marks["after"]
    assert fds_after <= baseline_fds + 1, f"fds {baseline_fds} before, {fds_after} after"
    assert tasks_after <= baseline_tasks, f"tasks {baseline_tasks} before, {tasks_after} after"
