"""Loopback sockets for tests: a listener, a free port, a port nothing listens on.

A port a test reserves for a server it starts later (a redis-server, a sidecar in another
process) is picked outside the kernel's ephemeral range (`ip_local_port_range`). Ports in
that range are handed out to every outgoing connection and every bind to port 0, so one
picked from it can be taken between the pick and the server's bind — by a client of an
earlier server, or by a cluster node's bus connection — and the server then fails to start.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

from orca_cli.proxy.server import bind_socket

__all__ = ["closed_port", "free_port", "listening_socket"]

_PORT_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10000  # below: well-known and registered services' ports
_BUS_OFFSET = 10000  # a Redis Cluster node's bus listens on its port + 10000
_pick = random.Random()  # its own generator: a test seeding `random` does not steer it


def listening_socket(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A bound TCP socket (IPPROTO_TCP, so accepted sockets get TCP_NODELAY)."""
    return bind_socket(host, port)


def ephemeral_range() -> tuple[int, int]:
    """The kernel's range for ports it assigns (Linux's file; elsewhere a range covering
    Linux's and the IANA default)."""
    try:
        lo, hi = _PORT_RANGE_FILE.read_text().split()
        return int(lo), int(hi)
    except (OSError, ValueError):
        return 32768, 65535


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1", *, with_bus: bool = False) -> int:
    """A port free a moment ago and outside the ephemeral range, so no outgoing connection
    takes it meanwhile; `with_bus`: port + 10000 is free and outside that range too."""
    lo, hi = ephemeral_range()
    top = 65535 - _BUS_OFFSET if with_bus else 65535
    outside = [(a, b) for a, b in ((_LOWEST, lo - 1), (hi + 1, top)) if a <= b]
    for _ in range(500 if outside else 0):
        a, b = _pick.choice(outside)
        port = _pick.randint(a, b)
        bus = port + _BUS_OFFSET
        if with_bus and lo <= bus <= hi:
            continue
        if _bindable(host, port) and (not with_bus or _bindable(host, bus)):
            return port
    raise RuntimeError(f"no free port outside the ephemeral range {lo}-{hi} in 500 tries")


def closed_port() -> int:
    """A loopback port with nothing listening: connects are refused."""
    return free_port()
