"""Slow clients: thousands of connections that send a push body a byte at
a time, against the exporter process, while /metrics, /healthz and /readyz are requested.

Before: one thread per connection, no deadline. 9,000 such clients took RSS to 318 MiB,
/metrics to 5 s, and after they left /metrics was unavailable for ~6 minutes while 8,800
BrokenPipe tracebacks were logged. This measures, for the same 9,000 clients:

* the exporter's peak RSS and thread count while they are connected;
* /metrics, /healthz and /readyz latency during the flood (every 0.5 s);
* how the clients were answered (503 to make room, or cut at the read deadline);
* /metrics latency right after they leave, and the exporter's log lines (no tracebacks).

The clients are non-blocking sockets in this process, each sending one byte a second.

Run: ``python -m bench.slow_clients [--clients 9000] [--seconds 30]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import selectors
import socket
import sys
import threading
import time
import urllib.request
from statistics import median
from typing import Any

from .common import free_port, proc_sample, start_exporter

REQUEST = (
    b"POST /api/v1/namespaces/ml/runs/r/report HTTP/1.1\r\nHost: x\r\n"
    b"Content-Type: application/json\r\nContent-Length: 10000\r\n\r\n"
)


def timed_get(url: str) -> tuple[float, int]:
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:
            resp.read()
            status = resp.status
    except urllib.error.HTTPError as e:
        status = e.code
    except OSError:
        status = 0
    return time.perf_counter() - started, status


class Flood:
    """``count`` connections, each sending the request head, then a body byte a second."""

    def __init__(self, port: int, count: int) -> None:
        self.port = port
        self.count = count
        self.answers: dict[str, int] = {}
        self.connect_errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _note(self, data: bytes) -> None:
        key = data.split(b" ", 2)[1].decode() if data.startswith(b"HTTP/") else "closed"
        self.answers[key] = self.answers.get(key, 0) + 1

    def _run(self) -> None:
        sel = selectors.DefaultSelector()
        socks: list[socket.socket] = []
        for _ in range(self.count):
            if self._stop.is_set():
                break
            s = socket.socket()
            try:
                s.connect(("127.0.0.1", self.port))
                s.sendall(REQUEST)
            except OSError:
                self.connect_errors += 1
                s.close()
                continue
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ)
            socks.append(s)
        while not self._stop.is_set():
            started = time.monotonic()
            for s in list(socks):
                with contextlib.suppress(OSError):
                    s.send(b"x")
            for key, _ in sel.select(timeout=0):
                s = key.fileobj  # type: ignore[assignment]
                try:
                    data = s.recv(4096)
                except OSError:
                    data = b""
                self._note(data)
                sel.unregister(s)
                s.close()
                socks.remove(s)
            self._stop.wait(max(0.0, 1.0 - (time.monotonic() - started)))
        for s in socks:
            s.close()
        self.answers["open_at_end"] = len(socks)


def run(clients: int = 9000, seconds: float = 30.0) -> dict[str, Any]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = start_exporter(port)
    try:
        flood = Flood(port, clients)
        flood.start()
        latencies: dict[str, list[float]] = {"/metrics": [], "/healthz": [], "/readyz": []}
        failures: dict[str, int] = {}
        peak_rss = peak_threads = 0
        ends = time.monotonic() + seconds
        while time.monotonic() < ends:
            for path, times in latencies.items():
                took, status = timed_get(base + path)
                times.append(took)
                if status != 200:
                    failures[f"{path} {status}"] = failures.get(f"{path} {status}", 0) + 1
            sample = proc_sample(proc.pid)
            peak_rss = max(peak_rss, sample.rss_bytes)
            with open(f"/proc/{proc.pid}/status") as fh:
                threads = next(int(line.split()[1]) for line in fh if line.startswith("Threads:"))
            peak_threads = max(peak_threads, threads)
            time.sleep(0.5)
        flood.stop()
        after = [timed_get(base + "/metrics")[0] for _ in range(5)]
        with urllib.request.urlopen(base + "/metrics") as resp:
            own = [
                line.decode()
                for line in resp
                if line.startswith(b"training_exporter_http_")
                and not line.startswith(b"training_exporter_http_connections ")
            ]
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=30)
    log = stderr.decode(errors="replace").splitlines()
    return {
        "clients": clients,
        "seconds": seconds,
        "peak_rss_mib": peak_rss / 2**20,
        "peak_threads": peak_threads,
        "latency_during_ms": {
            path: {"median": median(t) * 1000, "max": max(t) * 1000}
            for path, t in latencies.items()
        },
        "probe_failures": failures,
        "metrics_after_ms": {"median": median(after) * 1000, "max": max(after) * 1000},
        "client_answers": flood.answers,
        "client_connect_errors": flood.connect_errors,
        "exporter_counters": own,
        "log_lines": len(log),
        "tracebacks": sum(1 for line in log if line.startswith("Traceback")),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=9000)
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    print(json.dumps(run(args.clients, args.seconds), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
