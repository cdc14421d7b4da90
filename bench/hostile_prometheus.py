"""The cluster page in front of a hostile Prometheus (#56 F4 and F5 for ``cluster
--prometheus``): how long the page takes and how much memory its process reaches (VmHWM)
when the Prometheus URL answers something other than a fleet of the page's size.

Run: ``python -m bench.hostile_prometheus`` (prints one line per answer). Each answer is
served on loopback to a fresh ``cluster --prometheus`` process, which is asked for ``/``
once:

* ``slow``: one byte every 2 s;
* ``tiny``: 30 MiB of ``[],`` in a query's result (under the byte bound; 60 MiB took the
  page to 1.5 GB);
* ``samples-200000``: 200,000 well-formed samples, each a run of its own (43 MiB);
* ``samples-60001``: one more than the page accepts by default, refused;
* ``samples-60000``: as many as it accepts, the costliest answer it parses;
* ``runs-20000``: 20,000 stalled runs of three samples each (60,000 samples).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from .common import free_port, wait_http

LABELS = {"container": "trainer", "instance": "10.0.0.1:9465", "job": "training-progress-exporter"}


def _run(i: int) -> dict[str, str]:
    return {"namespace": f"ns-{i % 50}", "pod": f"pod-{i}", "job_name": f"job-{i // 8}", **LABELS}


def answer(mode: str) -> bytes:
    """The body served for ``mode`` (empty for ``slow``, which drips)."""
    if mode == "tiny":
        return b'{"status":"success","data":{"result":[' + b"[]," * (10 << 20) + b"[]]}}"
    result: list[dict[str, Any]] = []
    if mode.startswith("samples-"):
        n = int(mode.split("-")[1])
        result = [
            {"metric": {"__name__": "training_step", **_run(i)}, "value": [1, str(i)]}
            for i in range(n)
        ]
    elif mode.startswith("runs-"):
        for i in range(int(mode.split("-")[1])):
            run = _run(i)
            result += [
                {
                    "metric": {"__name__": "training_run_state", "state": "stalled", **run},
                    "value": [1, "1"],
                },
                {
                    "metric": {"__name__": "training_run_info", "node": f"gpu-{i % 100}", **run},
                    "value": [1, "1"],
                },
                {"metric": {"__name__": "training_step", **run}, "value": [1, str(i)]},
            ]
    if not result:
        return b""
    return json.dumps({"status": "success", "data": {"result": result}}).encode()


@dataclass(frozen=True)
class Measured:
    """What the page did with one answer."""

    answer_bytes: int
    status: int
    seconds: float  # for ``/``
    peak_mib: int  # the page process' VmHWM
    page: str

    @property
    def problem(self) -> str:
        """What the page names above the runs, without the Prometheus URL ("" if nothing)."""
        if "<li>" not in self.page:
            return ""
        return self.page.split("<li>")[1].split("</li>")[0].split(": ", 2)[-1]

    @property
    def shown(self) -> str:
        """How many runs the page says it shows ("20000 runs")."""
        return self.page.split("<p class=sub>")[1].split(" from ")[0]


def measure(mode: str) -> Measured:
    """The page's answer to ``/`` in front of a Prometheus answering ``mode``."""
    body = answer(mode)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body) or 100_000))
            self.end_headers()
            try:
                if body:
                    self.wfile.write(body)
                    return
                for _ in range(30):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(2)
            except OSError:
                return

        def log_message(self, *_: Any) -> None:
            pass

    prom = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    prom.daemon_threads = True
    threading.Thread(target=prom.serve_forever, daemon=True).start()
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "exporter",
            "cluster",
            f"--listen=127.0.0.1:{port}",
            f"--prometheus=http://127.0.0.1:{prom.server_address[1]}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz")
        started = time.monotonic()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=120) as resp:
            page, status = resp.read().decode(), resp.status
        took = time.monotonic() - started
        peak = next(
            int(line.split()[1]) // 1024
            for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines()
            if line.startswith("VmHWM:")
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
        prom.shutdown()
        prom.server_close()
    return Measured(len(body), status, took, peak, page)


MODES = ("slow", "tiny", "samples-200000", "samples-60001", "samples-60000", "runs-20000")


def main() -> None:
    for mode in MODES:
        m = measure(mode)
        print(
            f"{mode:15} {m.answer_bytes / 2**20:6.1f} MiB  {m.status} in {m.seconds:5.2f} s  "
            f"peak {m.peak_mib:4d} MiB  {m.shown}  {m.problem[:90]}",
            flush=True,
        )


if __name__ == "__main__":
    main()
