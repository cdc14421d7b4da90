"""Does Prometheus get its scrape? Three hostile clients, each from its own loopback address
(127.0.0.2), against the exporter process serving 500 runs, while "Prometheus" (127.0.0.1)
scrapes ``/metrics`` once a second with a 10 s timeout:

* ``churn``: opens connections as fast as it can and sends nothing;
* ``slow``: 3,000 connections sending a push body a byte at a time, reconnecting at once
  when cut;
* ``nonreading``: asks for ``/metrics`` once a second and never reads the answer.

For each it prints how many of the scrapes answered 200 within 10 s (the goal: at least 29
of 30) and their slowest time. Before the per-address caps, churn failed 14 of 30, the slow
clients 9 of 15, and the non-reading client 4 of 5.

Run: ``python -m bench.starvation [--scrapes 30] [--runs 500]``. The attackers run in this
process, the exporter in its own.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import selectors
import socket
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .common import free_port
from .scale import start, state_file

ATTACKER = "127.0.0.2"
TIMEOUT = 10.0


def _connect(port: int) -> socket.socket | None:
    sock = socket.socket()
    try:
        sock.bind((ATTACKER, 0))
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", port))
    except OSError:
        sock.close()
        return None
    return sock


def churn(port: int, stop: threading.Event, per_second: int = 2000) -> None:
    """About ``per_second`` new connections a second (the rate that starved scrapes
    before), each left open and silent (the newest 5,000 kept)."""
    held: list[socket.socket] = []
    started, opened = time.monotonic(), 0
    while not stop.is_set():
        ahead = opened / per_second - (time.monotonic() - started)
        if ahead > 0:
            time.sleep(ahead)
        sock = _connect(port)
        opened += 1
        if sock is not None:
            held.append(sock)
        if len(held) > 5000:
            held.pop(0).close()
    for sock in held:
        sock.close()


def slow(port: int, stop: threading.Event, clients: int = 3000) -> None:
    """Clients sending a push body a byte at a time; a client cut off reconnects at once."""
    head = (
        b"POST /api/v1/namespaces/ml/runs/r/report HTTP/1.1\r\nHost: x\r\n"
        b"Content-Length: 10000\r\n\r\n"
    )
    sel = selectors.DefaultSelector()
    socks: dict[socket.socket, bool] = {}

    def open_one() -> None:
        sock = _connect(port)
        if sock is not None:
            socks[sock] = False
            sel.register(sock, selectors.EVENT_WRITE | selectors.EVENT_READ)

    for _ in range(clients):
        open_one()
    last_byte = 0.0
    while not stop.is_set():
        for key, events in sel.select(timeout=0.2):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            try:
                if events & selectors.EVENT_READ and not sock.recv(4096):
                    raise ConnectionError
                if events & selectors.EVENT_WRITE and not socks[sock]:
                    sock.send(head)
                    socks[sock] = True
                    sel.modify(sock, selectors.EVENT_READ)
            except OSError:
                sel.unregister(sock)
                sock.close()
                del socks[sock]
                open_one()
        if time.monotonic() - last_byte >= 1.0:
            last_byte = time.monotonic()
            for sock, sent in list(socks.items()):
                if sent:
                    with contextlib.suppress(OSError):
                        sock.send(b"{")
    for sock in socks:
        sock.close()


def nonreading(port: int, stop: threading.Event) -> None:
    """Asks for /metrics once a second, never reads the answer, keeps the connection."""
    held: list[socket.socket] = []
    while not stop.wait(1.0):
        sock = socket.socket()
        sock.bind((ATTACKER, 0))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        try:
            sock.connect(("127.0.0.1", port))
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        except OSError:
            sock.close()
            continue
        held.append(sock)
    for sock in held:
        sock.close()


ATTACKS: dict[str, Callable[[int, threading.Event], None]] = {
    "churn": churn,
    "slow": slow,
    "nonreading": nonreading,
}


def scrapes(url: str, count: int, interval: float = 1.0) -> list[float | None]:
    """``count`` scrapes, ``interval`` apart: each one's seconds, or None if it failed or
    took longer than :data:`TIMEOUT`."""
    out: list[float | None] = []
    for _ in range(count):
        started = time.monotonic()
        try:
            with urllib.request.urlopen(url, timeout=TIMEOUT) as resp:
                resp.read()
                took = time.monotonic() - started
                out.append(took if resp.status == 200 and took <= TIMEOUT else None)
        except OSError:
            out.append(None)
        time.sleep(max(0.0, interval - (time.monotonic() - started)))
    return out


def measure(
    port: int, attack: str, count: int, interval: float = 1.0, **attack_options: Any
) -> dict[str, Any]:
    """``count`` scrapes under ``attack`` (``attack_options`` go to it: ``clients=`` for
    ``slow``, ``per_second=`` for ``churn``)."""
    stop = threading.Event()
    attacker = threading.Thread(
        target=ATTACKS[attack], args=(port, stop), kwargs=attack_options, daemon=True
    )
    attacker.start()
    time.sleep(2.0)  # the attack is under way
    times = scrapes(f"http://127.0.0.1:{port}/metrics", count, interval)
    stop.set()
    attacker.join(30)
    answered = [t for t in times if t is not None]
    return {
        "attack": attack,
        "scrapes": count,
        "answered_within_10s": len(answered),
        "slowest_seconds": max(answered, default=None),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scrapes", type=int, default=30)
    parser.add_argument("--runs", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state.json"
        state_file(state, args.runs)
        port = free_port()
        proc = start(port, state, args.runs)
        try:
            for attack in ATTACKS:
                print(json.dumps(measure(port, attack, args.scrapes)), flush=True)
        finally:
            proc.terminate()
            proc.wait(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
