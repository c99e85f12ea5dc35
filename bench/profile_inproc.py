"""orca's own per-request CPU, without a socket: `OrcaApp` called directly (SPEC §12 method).

    python bench/profile_inproc.py                 # µs per request, JSON and stream, 10 KB
    python bench/profile_inproc.py --cprofile 30   # and the top 30 functions by self time
    python bench/profile_inproc.py --size 1MB
    python bench/profile_inproc.py --api responses --stages   # µs per request by stage
    python bench/profile_inproc.py --api anthropic --to openai  # translated (SPEC §13.2)

The real app, runtime, memory store, scorer and router run as `orca serve` runs them, with the
benchmark's config and agent bodies; only the upstream is a canned in-process transport that
answers at once (the JSON completion, or the 36-event stream, that `fake_upstream.py` sends).
uvicorn, the event loop's sockets and aiohttp are not in the figure: what remains is the
Python orca itself runs a request, which is what a change to orca can move. The cyclic
collector runs as in `orca serve` (`proxy.server.collect_as_a_server`); `--gc interpreter`
leaves the interpreter's thresholds, as the counts before 2026-12-06 04:00 UTC ran.

As `orca serve` does by default, the request log writes one line per request (to a file here);
`--quiet` leaves it out. `--api` picks the wire format (Chat Completions, Messages or the
Responses API, each with the benchmark's 10 KB agent body). `--to` serves it on the channel of
another format, translated (SPEC §13.2): `--api anthropic --to openai` is bench_proxy's
`messages_to_chat` rows, `--api openai --to anthropic` its `chat_to_messages` ones; without
`--to` (or with the client's own format) the request goes native, as in bench_proxy's
same-format rows. `--stages` times the steps of the
request path with wrappers (intake, prepare, store read, decide, forward, settle, trace sinks,
commit, metrics); what no wrapper covers is the ASGI plumbing between them. Wrapped, each
stage reads a little high (two clock reads and a call per stage).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import inspect
import os
import pstats
import shutil
import sys
import time
from collections.abc import AsyncIterator, Callable, MutableMapping
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import fake_upstream as F
from bench import proxy_targets as T
from bench.proxy_bodies import SIZES, agent_body, encode
from orca_cli.compose import create_app
from orca_cli.config.load import load
from orca_cli.proxy.app import OrcaApp
from orca_cli.proxy.runtime import Runtime
from orca_cli.proxy.server import collect_as_a_server
from orca_cli.proxy.transport import Timeouts, UpstreamRequest
from orca_cli.types import CLIENT_EXTENSION, ClientLink

REDIS_URL = "redis://127.0.0.1:6379/15"  # the benchmark's database (bench_proxy.py)


class _Canned:
    def __init__(self, status: int, headers: tuple[tuple[str, str], ...], parts: list[bytes]):
        self.status, self.headers, self._parts = status, headers, parts

    async def chunks(self) -> AsyncIterator[bytes]:
        for p in self._parts:
            yield p

    async def read(self) -> bytes:
        return b"".join(self._parts)

    async def aclose(self) -> None:
        return None


class CannedTransport:
    """Answers every request at once with the fake upstream's own bytes."""

    def __init__(self) -> None:
        self._canned = {(True, "messages"): F.anthropic_events(),
                        (True, "completions"): F.openai_events(),
                        (True, "responses"): F.responses_events(),
                        (False, "messages"): [F.anthropic_json()],
                        (False, "completions"): [F.openai_json()],
                        (False, "responses"): [F.responses_json()]}

    async def send(self, req: UpstreamRequest, timeouts: Timeouts) -> _Canned:
        parts = self._canned[(req.stream, req.url.rsplit("/", 1)[-1])]
        kind = "text/event-stream" if req.stream else "application/json"
        return _Canned(200, (("content-type", kind),), parts)

    async def aclose(self) -> None:
        return None


def build_app(tmp: Path, backend: str = "memory", key_prefix: str = "orca",
              log_to: TextIO | None = None, redis_url: str = REDIS_URL,
              trace_max: int | None = None) -> tuple[OrcaApp, Runtime]:
    cfg_path = tmp / "orca.toml"
    # A generous store timeout: under valgrind a first round trip can take 250 ms, and a
    # timeout would degrade the run (the store's errors are printed after it).
    text = T.orca_config(9, backend=backend, redis_url=redis_url, key_prefix=key_prefix,
                         store_timeout_ms=10_000)
    if trace_max is not None:
        text = text.replace("[server]\n", f"[server]\ntrace_max = {trace_max}\n", 1)
    cfg_path.write_text(text)
    cfg = load(str(cfg_path))
    canned = CannedTransport()
    app = create_app(cfg, transports={c.name: canned for c in cfg.channels},
                     admin_token="t" * 32, port=8787)
    if log_to is not None:  # the request log, as `orca serve` runs it by default
        from orca_cli.trace.log import RequestLog

        app.rt.trace_sinks.append(RequestLog(log_to, fmt="text").emit)
    return app, app.rt


_PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages",
          "responses": "/v1/responses"}


def route_model(api: str, to: str | None) -> str:
    """The model a client names to be served in `to`'s format (`T.orca_config`'s routers):
    `orca/claude` has only the Anthropic channel's models, `orca/coding` picks its cheapest,
    on the Chat Completions channel (which also speaks the Responses API)."""
    served = to or api
    return "orca/claude" if served == "anthropic" else "orca/coding"


def _scope(session: str, rid: int, path: str = "/v1/chat/completions") -> dict[str, Any]:
    return {"type": "http", "method": "POST", "path": path, "raw_path":
            path.encode(), "query_string": b"", "http_version": "1.1",
            "scheme": "http", "server": ("127.0.0.1", 8787), "client": ("127.0.0.1", 50000),
            "headers": [(b"host", b"127.0.0.1:8787"), (b"content-type", b"application/json"),
                        (b"authorization", b"Bearer sk-client"),
                        (b"x-orca-session", session.encode()),
                        (b"x-request-id", f"bench-{rid}".encode())],
            # what orca's server puts in every scope (`proxy.server`)
            "extensions": {CLIENT_EXTENSION: {"link": ClientLink(body_complete=True)}}}


async def drive(app: OrcaApp, raw: bytes, n: int, sessions: int,
                path: str = "/v1/chat/completions") -> list[int]:
    statuses: list[int] = []

    for i in range(n):
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if sent:
                await asyncio.sleep(3600)
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}

        async def send(msg: MutableMapping[str, Any]) -> None:
            if msg["type"] == "http.response.start":
                statuses.append(msg["status"])

        await app(_scope(f"s{i % sessions}", i, path), receive, send)
    return statuses


class Stages:
    """Wall time (ns) spent in each wrapped step of the request path. Requests run one at a
    time and the upstream answers in process, so wall time is this process's CPU."""

    def __init__(self, app: OrcaApp) -> None:
        from orca_cli.proxy import app as app_mod
        from orca_cli.proxy import handler

        self.ns: dict[str, int] = {}
        self._undo: list[Callable[[], None]] = []
        for label, owner, name in (
                ("intake: scan_head (head, guard)", app_mod, "scan_head"),
                ("intake: read_json (body read, parse)", handler, "read_json"),
                ("prepare (target, session, facts, score)", handler, "prepare"),
                ("store read", app.rt.gate, "read_turn"),
                ("decide (plan_route)", handler, "decide"),
                ("forward (attempt, relay, usage tap)", handler, "forward"),
                ("settle (commit batch, trace)", handler, "settle"),
                ("trace sinks (request log)", app.rt, "emit_trace"),
                ("store commit", app.rt.gate, "commit"),
                ("metrics", app.rt.metrics, "request")):
            self._wrap(label, owner, name)

    def _wrap(self, label: str, owner: Any, name: str) -> None:
        fn = getattr(owner, name)
        ns, clock = self.ns, time.perf_counter_ns
        ns[label] = 0
        wrapped: Callable[..., Any]
        if inspect.iscoroutinefunction(fn):
            async def wrapped(*a: Any, **k: Any) -> Any:
                t0 = clock()
                try:
                    return await fn(*a, **k)
                finally:
                    ns[label] += clock() - t0
        else:
            def wrapped(*a: Any, **k: Any) -> Any:
                t0 = clock()
                try:
                    return fn(*a, **k)
                finally:
                    ns[label] += clock() - t0
        had = name in getattr(owner, "__dict__", {})  # a module's function, not a method
        setattr(owner, name, wrapped)
        self._undo.append((lambda: setattr(owner, name, fn)) if had
                          else (lambda: delattr(owner, name)))

    def reset(self) -> None:
        for k in self.ns:
            self.ns[k] = 0

    def undo(self) -> None:
        for u in reversed(self._undo):
            u()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", choices=tuple(SIZES), default="10KB")
    p.add_argument("--requests", type=int, default=1000, help="per round")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--sessions", type=int, default=16)
    p.add_argument("--cprofile", type=int, default=0, metavar="TOP")
    p.add_argument("--sort", choices=("tottime", "cumulative"), default="tottime",
                   help="the --cprofile table's order")
    p.add_argument("--scenario", choices=("json", "stream"), default=None)
    p.add_argument("--api", choices=tuple(_PATHS), default="openai",
                   help="wire format of the body and path (responses: /v1/responses)")
    p.add_argument("--to", choices=tuple(_PATHS), default=None,
                   help="the channel's wire format: another one than --api is translated")
    p.add_argument("--stages", action="store_true", help="µs per request by stage")
    p.add_argument("--quiet", action="store_true", help="no request log (orca serve --quiet)")
    p.add_argument("--trace-max", type=int, default=None,
                   help="the store's `trace_max` (default the config's, 20,000); the store "
                        "evicts once rounds x requests passes it")
    p.add_argument("--store", choices=("memory", "redis"), default="memory",
                   help="redis: --redis-url, a unique key prefix deleted afterwards")
    p.add_argument("--redis-url", default=REDIS_URL, help=f"default {REDIS_URL}")
    p.add_argument("--gc", choices=("serve", "interpreter"), default="serve",
                   help="the cyclic collector as `orca serve` runs it (frozen start-up, "
                        "collections every 20,000 allocations) or at the interpreter's "
                        "defaults (every 700), as counts before 2026-12-06 04:00 UTC ran")
    args = p.parse_args()
    tmp = T.workdir()
    prefix = f"orca-inproc-{os.getpid()}"
    try:
        with open(tmp / "requests.log", "w") as log_to:  # the request log's file
            # one loop: the Redis client is bound to it
            asyncio.run(_measure(tmp, prefix, args, log_to))
    finally:
        if args.store == "redis":
            T.redis_cleanup(args.redis_url, prefix)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


async def _measure(tmp: Path, prefix: str, args: argparse.Namespace, log_to: TextIO) -> None:
    app, rt = build_app(tmp, args.store, prefix, None if args.quiet else log_to, args.redis_url,
                        args.trace_max)
    if args.gc == "serve":
        collect_as_a_server()
    try:
        await _rounds(app, args)
        st = rt.gate.store
        if st.backend == "redis":  # a store fault (a timeout under valgrind) voids the figure
            print(f"store: {st.reads} reads, {st.commits} commits, "
                  f"{getattr(st, 'round_trips', '?')} round trips, "
                  f"{getattr(st, 'errors', '?')} errors, healthy={rt.gate.healthy}")
    finally:
        await rt.aclose()


async def _rounds(app: OrcaApp, args: argparse.Namespace) -> None:
    scenarios = (args.scenario,) if args.scenario else ("json", "stream")
    path = _PATHS[args.api]
    log = "--quiet" if args.quiet else "request log on"
    for sc in scenarios:
        model = route_model(args.api, args.to)
        raw = encode(agent_body(args.api, SIZES[args.size], model=model,
                                stream=sc == "stream"))
        await drive(app, raw, 200, args.sessions, path)  # warm-up; pins every session
        prof = cProfile.Profile() if args.cprofile else None
        stages = Stages(app) if args.stages else None
        per: list[float] = []
        by_stage: list[dict[str, float]] = []
        bad = 0
        for _ in range(args.rounds):
            if stages:
                stages.reset()
            c0 = time.process_time()
            if prof:
                prof.enable()
            st = await drive(app, raw, args.requests, args.sessions, path)
            if prof:
                prof.disable()
            per.append(1e6 * (time.process_time() - c0) / args.requests)
            if stages:
                by_stage.append({k: v / 1000 / args.requests for k, v in stages.ns.items()})
            bad += sum(1 for s in st if s != 200)
        if stages:
            stages.undo()
        order = sorted(range(len(per)), key=per.__getitem__)
        mid = order[len(order) // 2]
        api = f"{args.api}>{args.to}" if args.to and args.to != args.api else args.api
        print(f"{sc} {api} {args.size} ({args.store}, {log}): {per[mid]:7.1f} µs "
              f"CPU/request median, {per[order[0]]:7.1f} min ({args.rounds} x {args.requests} "
              f"requests, {bad} not 200){' under cProfile' if prof else ''}"
              f"{' with stage wrappers' if stages else ''}")
        print("  rounds: " + " ".join(f"{x:.1f}" for x in per))
        if stages:
            row = by_stage[mid]  # the median round's stages
            for label, us in sorted(row.items(), key=lambda kv: -kv[1]):
                print(f"  {us:7.1f} µs  {label}")
            print(f"  {per[mid] - sum(row.values()):7.1f} µs  the rest (ASGI plumbing between "
                  "stages, the driver)")
        if prof:
            pstats.Stats(prof).sort_stats(args.sort).print_stats(args.cprofile)
            if os.environ.get("ORCA_PROFILE_DUMP"):
                prof.dump_stats(os.environ["ORCA_PROFILE_DUMP"])


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
