"""The tests' free port: free when given, and never one the kernel hands to a connection."""

from __future__ import annotations

import socket

from bench.common import _ephemeral_low, free_port


def test_a_free_port_is_below_the_ephemeral_range_and_binds() -> None:
    low = _ephemeral_low()
    ports = {free_port() for _ in range(20)}
    assert all(1024 <= port < low for port in ports), (sorted(ports), low)
    assert len(ports) > 1  # picked at random, so two callers rarely agree
    for port in ports:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


def test_outgoing_connections_never_take_it() -> None:
    # Source ports of connections come from the ephemeral range: open many and none is ours.
    low = _ephemeral_low()
    with socket.socket() as server:
        server.bind(("127.0.0.1", free_port()))
        server.listen(64)
        clients = [socket.create_connection(server.getsockname()) for _ in range(32)]
        try:
            assert all(c.getsockname()[1] >= low for c in clients)
        finally:
            for c in clients:
                c.close()
