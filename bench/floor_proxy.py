"""The floor: the least a Python proxy on orca's serving stack does for one request.

    python bench/floor_proxy.py --upstream-port 9000 --port 8790

uvicorn (httptools on uvloop, as `orca serve` runs it; `--loop asyncio` for the stdlib loop), a
raw ASGI app and one aiohttp client session; for each request it reads the body, parses it once
with orjson, swaps the `model` value in the bytes, forwards the bytes and relays the answer
(whole, or chunk by chunk for a stream). No routing, no store, no scoring, no trace.
`bench_proxy.py` measures it as the `floor` target beside `orca serve` in the same run, so the
table shows how much of orca's cost is the serving stack on this machine, today, and how much
is orca's own work.
"""

from __future__ import annotations

import argparse
import socket
import sys
from typing import Any

import aiohttp
import orjson
import uvicorn

# The benchmark's router names map to the fake upstream's models, as orca's config maps them.
MODELS = {"orca/coding": "fake-base", "orca/paced": "fake-paced"}
ANTHROPIC_MODELS = {"orca/coding": "fake-claude-base", "orca/claude": "fake-claude-base"}


class FloorApp:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.session: aiohttp.ClientSession | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    self.session = aiohttp.ClientSession(
                        connector=aiohttp.TCPConnector(limit=64), auto_decompress=False)
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    if self.session is not None:
                        await self.session.close()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        assert self.session is not None
        chunks = []
        more = True
        while more:
            msg = await receive()
            chunks.append(msg.get("body", b""))
            more = msg.get("more_body", False)
        raw = b"".join(chunks)
        doc = orjson.loads(raw)
        path = scope["path"]
        wanted = doc.get("model", "")
        table = ANTHROPIC_MODELS if path == "/v1/messages" else MODELS
        raw = raw.replace(b'"model":' + orjson.dumps(wanted),
                          b'"model":' + orjson.dumps(table.get(wanted, wanted)), 1)
        headers = {"content-type": "application/json"}
        async with self.session.post(self.upstream + path, data=raw, headers=headers) as resp:
            out = [(b"content-type", resp.headers.get("content-type", "").encode())]
            if doc.get("stream") is True:
                await send({"type": "http.response.start", "status": resp.status, "headers": out})
                async for chunk in resp.content.iter_any():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            else:
                body = await resp.read()
                out.append((b"content-length", str(len(body)).encode()))
                await send({"type": "http.response.start", "status": resp.status, "headers": out})
                await send({"type": "http.response.body", "body": body, "more_body": False})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--upstream-port", type=int, required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--loop", choices=("uvloop", "asyncio"), default="uvloop",
                   help="the event loop (uvloop, as orca serve runs)")
    args = p.parse_args(argv)
    # As orca's bind_socket: IPPROTO_TCP, so asyncio sets TCP_NODELAY on accepted connections.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    app = FloorApp(f"http://127.0.0.1:{args.upstream_port}")
    config = uvicorn.Config(app, http="httptools", loop=args.loop, lifespan="on",
                            access_log=False, log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
