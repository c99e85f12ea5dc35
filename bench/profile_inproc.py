"""orca's own per-request CPU, without a socket: `OrcaApp` called directly (SPEC §12 method).

    python bench/profile_inproc.py                 # µs per request, JSON and stream, 10 KB
    python bench/profile_inproc.py --cprofile 30   # and the top 30 functions by self time
    python bench/profile_inproc.py --size 1MB

The real app, runtime, memory store, scorer and router run as `orca serve` runs them, with the
benchmark's config and agent bodies; only the upstream is a canned in-process transport that
answers at once (the JSON completion, or the 36-event stream, that `fake_upstream.py` sends).
uvicorn, the event loop's sockets and aiohttp are not in the figure: what remains is the
Python orca itself runs a request, which is what a change to orca can move.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import fake_upstream as F  # noqa: E402
from bench import proxy_targets as T  # noqa: E402
from bench.proxy_bodies import SIZES, agent_body, encode  # noqa: E402
from orca_cli.compose import create_app  # noqa: E402
from orca_cli.config.load import load  # noqa: E402
from orca_cli.proxy.app import OrcaApp  # noqa: E402
from orca_cli.proxy.runtime import Runtime  # noqa: E402
from orca_cli.proxy.transport import Timeouts, UpstreamRequest  # noqa: E402

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
        self._canned = {(True, True): F.anthropic_events(), (True, False): F.openai_events(),
                        (False, True): [F.anthropic_json()], (False, False): [F.openai_json()]}

    async def send(self, req: UpstreamRequest, timeouts: Timeouts) -> _Canned:
        parts = self._canned[(req.stream, req.url.endswith("/messages"))]
        kind = "text/event-stream" if req.stream else "application/json"
        return _Canned(200, (("content-type", kind),), parts)

    async def aclose(self) -> None:
        return None


def build_app(tmp: Path, backend: str = "memory",
              key_prefix: str = "orca") -> tuple[OrcaApp, Runtime]:
    cfg_path = tmp / "orca.toml"
    cfg_path.write_text(T.orca_config(9, backend=backend, redis_url=REDIS_URL,
                                      key_prefix=key_prefix))
    cfg = load(str(cfg_path))
    canned = CannedTransport()
    app = create_app(cfg, transports={c.name: canned for c in cfg.channels},
                     admin_token="t" * 32, port=8787)
    return app, app.rt


def _scope(session: str, rid: int) -> dict[str, Any]:
    return {"type": "http", "method": "POST", "path": "/v1/chat/completions", "raw_path":
            b"/v1/chat/completions", "query_string": b"", "http_version": "1.1",
            "scheme": "http", "server": ("127.0.0.1", 8787), "client": ("127.0.0.1", 50000),
            "headers": [(b"host", b"127.0.0.1:8787"), (b"content-type", b"application/json"),
                        (b"authorization", b"Bearer sk-client"),
                        (b"x-orca-session", session.encode()),
                        (b"x-request-id", f"bench-{rid}".encode())]}


async def drive(app: OrcaApp, raw: bytes, n: int, sessions: int) -> list[int]:
    statuses: list[int] = []

    for i in range(n):
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if sent:
                await asyncio.sleep(3600)
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}

        async def send(msg: dict[str, Any]) -> None:
            if msg["type"] == "http.response.start":
                statuses.append(msg["status"])

        await app(_scope(f"s{i % sessions}", i), receive, send)
    return statuses


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", choices=tuple(SIZES), default="10KB")
    p.add_argument("--requests", type=int, default=1000, help="per round")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--sessions", type=int, default=16)
    p.add_argument("--cprofile", type=int, default=0, metavar="TOP")
    p.add_argument("--scenario", choices=("json", "stream"), default=None)
    p.add_argument("--store", choices=("memory", "redis"), default="memory",
                   help=f"redis: {REDIS_URL}, a unique key prefix deleted afterwards")
    args = p.parse_args()
    tmp = T.workdir()
    prefix = f"orca-inproc-{os.getpid()}"
    try:
        asyncio.run(_measure(tmp, prefix, args))  # one loop: the Redis client is bound to it
    finally:
        if args.store == "redis":
            T.redis_cleanup(REDIS_URL, prefix)
    return 0


async def _measure(tmp: Path, prefix: str, args: argparse.Namespace) -> None:
    app, rt = build_app(tmp, args.store, prefix)
    try:
        await _rounds(app, args)
    finally:
        await rt.aclose()


async def _rounds(app: OrcaApp, args: argparse.Namespace) -> None:
    scenarios = (args.scenario,) if args.scenario else ("json", "stream")
    for sc in scenarios:
        raw = encode(agent_body("openai", SIZES[args.size], model="orca/coding",
                                stream=sc == "stream"))
        await drive(app, raw, 200, args.sessions)  # warm-up; pins every session
        prof = cProfile.Profile() if args.cprofile else None
        per: list[float] = []
        bad = 0
        for _ in range(args.rounds):
            c0 = time.process_time()
            if prof:
                prof.enable()
            st = await drive(app, raw, args.requests, args.sessions)
            if prof:
                prof.disable()
            per.append(1e6 * (time.process_time() - c0) / args.requests)
            bad += sum(1 for s in st if s != 200)
        per.sort()
        print(f"{sc} {args.size} ({args.store}): {per[len(per) // 2]:7.1f} µs CPU/request "
              f"median, {per[0]:7.1f} min ({args.rounds} x {args.requests} requests, "
              f"{bad} not 200){' under cProfile' if prof else ''}")
        if prof:
            pstats.Stats(prof).sort_stats("tottime").print_stats(args.cprofile)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
