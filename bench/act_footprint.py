"""``act``'s memory: idle, and under a header flood (256 connections at a time, each sending
up to 100 header lines of 8 KB and never ending its head, reopened as soon as the server
closes it), against its Deployment's 128Mi limit.

``act`` runs as it is deployed (``python -m exporter act``, its own process) against the
tests' stand-in API server; its resident memory and peak (VmHWM) are read from /proc.

Run: ``python -m bench.act_footprint [--connections 256] [--seconds 12]``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.fakekube import fake_kube

from .common import free_port, proc_sample, stop, wait_http

MIB = 1024 * 1024


def _open(port: int) -> socket.socket | None:
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"POST /api/v1/alerts HTTP/1.1\r\nHost: x\r\n")
    except OSError:
        return None
    s.setblocking(False)
    return s


def flood(port: int, connections: int, seconds: float) -> int:
    """Keep ``connections`` sockets open for ``seconds``, each sending 8 KB header lines
    (up to 100) and never ending its head; one the server closes (431, a deadline) is
    opened again at once. Returns how many connections were made in all."""
    line = b"X-Flood: " + b"a" * 8180 + b"\r\n"
    socks: list[tuple[socket.socket, int] | None] = [None] * connections
    made = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for i, held in enumerate(socks):
            if held is None:
                s = _open(port)
                made += s is not None
                socks[i] = None if s is None else (s, 0)
                continue
            s, sent = held
            try:
                if sent < 100:
                    s.send(line)
                    socks[i] = (s, sent + 1)
                s.recv(4096)  # an answer (431) or the close
                s.close()
                socks[i] = None
            except BlockingIOError:
                continue
            except OSError:
                s.close()
                socks[i] = None
        time.sleep(0.01)
    for held in socks:
        if held is not None:
            held[0].close()
    return made


def run(connections: int = 256, seconds: float = 12.0) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, fake_kube(Path(tmp)) as (_, kubeconfig):
        token = Path(tmp) / "token"
        token.write_text("bench-token\n")
        port = free_port()
        env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        proc = subprocess.Popen(
            [sys.executable, "-m", "exporter", "act", "--listen", f"127.0.0.1:{port}",
             "--token-file", str(token)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            wait_http(f"http://127.0.0.1:{port}/healthz")
            time.sleep(2.0)
            idle = proc_sample(proc.pid)
            made = flood(port, connections, seconds)
            flooded = proc_sample(proc.pid)
        finally:
            stop(proc)
    return {
        "connections": connections,
        "connections_made": made,
        "idle_rss_mib": round(idle.rss_bytes / MIB, 1),
        "peak_rss_mib": round(flooded.hwm_bytes / MIB, 1),
        "limit_mib": 128,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=256)
    parser.add_argument("--seconds", type=float, default=12.0)
    args = parser.parse_args()
    print(json.dumps(run(args.connections, args.seconds), indent=2))
