"""Loopback sockets for tests: a listener, a free port, a port nothing listens on."""

from __future__ import annotations

import socket

from orca_cli.proxy.server import bind_socket

__all__ = ["closed_port", "free_port", "listening_socket"]


def listening_socket(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A bound TCP socket (IPPROTO_TCP, so accepted sockets get TCP_NODELAY)."""
    return bind_socket(host, port)


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago (bind, read, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def closed_port() -> int:
    """A loopback port with nothing listening: connects are refused."""
    return free_port()
