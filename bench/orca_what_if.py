"""Run the `orca` CLI with one serving fix applied from outside, to measure what it is worth.

    python bench/orca_what_if.py nodelay serve --config orca.toml --port 8787
    python bench/orca_what_if.py asyncio serve --config orca.toml --port 8787
    python bench/orca_what_if.py tree=/tmp/orca-old serve --config orca.toml --port 8787

`bench_proxy.py --what-if nodelay,asyncio` measures these beside the shipped `orca serve`.
Nothing here changes orca; each variant models a change to its serving path:

* `nodelay`: the listening socket is created with `IPPROTO_TCP`, as `uvicorn.Config.bind_socket`
  does (orca's own `bind_socket` does so since it was measured here; the variant now equals
  the shipped server and stays only to reproduce the before/after figures). asyncio sets `TCP_NODELAY` on accepted connections only when the socket's protocol
  is `IPPROTO_TCP`; a socket made with `socket.socket(family, SOCK_STREAM)` has protocol 0, so
  its connections keep Nagle's algorithm, and a response written as headers then body waits
  for the client's delayed ACK (40 ms on Linux) on every keep-alive request after the first.
* `asyncio`: the stdlib event loop instead of uvloop (`orca serve` runs on the loop
  `build_server` asks uvicorn for, uvloop where it is installed; until 2026-12-06 it ran
  `asyncio.run(server.serve(...))`, which bypassed that choice: this variant is that server).
* `uvloop`: uvloop set as the event loop policy; it now equals the shipped server and stays
  only to reproduce the before/after figures.
* `tree=<dir>`: the `orca_cli` package in `<dir>` (an export of an earlier commit) runs
  instead of the installed one. `bench_proxy.py --what-if at:<rev>` exports `<rev>` with
  `git archive` and measures it beside the current tree in the same interleaved run: a
  before/after comparison on the same machine at the same time.
"""

from __future__ import annotations

import asyncio
import socket
import sys

__all__ = ["main"]


def _bind_socket_tcp(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def main() -> None:
    variant = sys.argv.pop(1) if len(sys.argv) > 1 else ""
    if variant == "nodelay":
        from orca_cli.proxy import server

        server.bind_socket = _bind_socket_tcp  # serve.py imports it at call time
    elif variant == "asyncio":
        import uvicorn

        uvicorn.Config.get_loop_factory = lambda self: None  # type: ignore[method-assign]
    elif variant == "uvloop":
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    elif variant.startswith("tree="):
        sys.path.insert(0, variant.removeprefix("tree="))
    else:
        sys.exit(f"usage: orca_what_if.py nodelay|asyncio|uvloop|tree=<dir> serve ...; got {variant!r}")
    from orca_cli.cli import main as orca_main

    sys.argv[0] = "orca"
    orca_main()


if __name__ == "__main__":
    main()
