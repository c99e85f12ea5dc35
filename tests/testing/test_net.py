"""The kit's ports: a reserved port is never one the kernel hands to an outgoing connection."""

from __future__ import annotations

import socket

from orca_cli.testing.net import ephemeral_range, free_port


def test_a_free_port_is_outside_the_ephemeral_range_and_bindable() -> None:
    lo, hi = ephemeral_range()
    for _ in range(50):
        port = free_port()
        assert not lo <= port <= hi and 10000 <= port <= 65535
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


def test_a_cluster_port_leaves_its_bus_port_free_and_outside_the_range() -> None:
    lo, hi = ephemeral_range()
    for _ in range(50):
        port = free_port(with_bus=True)
        assert not lo <= port <= hi and not lo <= port + 10000 <= hi and port + 10000 <= 65535
        with socket.socket() as a, socket.socket() as b:
            a.bind(("127.0.0.1", port))
            b.bind(("127.0.0.1", port + 10000))


def test_an_outgoing_connection_never_takes_a_reserved_port() -> None:
    """What broke a cluster test: a client of one server got, as its own source port, the port
    reserved for the next server. Source ports come from the ephemeral range only."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        lo, hi = ephemeral_range()
        clients = [socket.create_connection(server.getsockname()) for _ in range(20)]
        try:
            assert all(lo <= c.getsockname()[1] <= hi for c in clients)
        finally:
            for c in clients:
                c.close()
