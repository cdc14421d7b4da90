"""Idle footprint: 50 runs reporting every 5 s, scraped every 15 s; RSS and CPU share.

The exporter runs as users run it (a separate process, standalone mode). A driver thread
here sends each run's native report every 5 s (staggered) and scrapes /metrics every 15 s,
like a Prometheus would; the exporter's CPU time and memory are read from /proc.

Run: ``python -m bench.idle_footprint [--seconds 60]``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import time
from typing import Any

from .common import free_port, proc_sample, start_exporter, stop

RUNS = 50
REPORT_EVERY = 5.0
SCRAPE_EVERY = 15.0


def drive(port: int, seconds: float) -> int:
    """Report and scrape for ``seconds``; returns the number of requests made."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    start = time.monotonic()
    next_scrape = start
    requests = 0
    tick = 0
    while time.monotonic() - start < seconds:
        slot = start + tick * (REPORT_EVERY / RUNS)
        time.sleep(max(0.0, slot - time.monotonic()))
        run = tick % RUNS
        step = tick // RUNS + 1
        body = json.dumps(
            {
                "step": step * 10,
                "max_steps": 100_000,
                "loss": 2.0 / step,
                "learning_rate": 1e-4,
                "gpus": 8,
            }
        ).encode()
        conn.request(
            "POST",
            f"/api/v1/namespaces/bench/runs/run-{run}/report",
            body,
            {"Content-Type": "application/json"},
        )
        conn.getresponse().read()
        requests += 1
        if time.monotonic() >= next_scrape:
            conn.request("GET", "/metrics")
            conn.getresponse().read()
            requests += 1
            next_scrape += SCRAPE_EVERY
        tick += 1
    conn.close()
    return requests


def run(seconds: float = 60.0, warmup: float = 10.0) -> dict[str, Any]:
    port = free_port()
    proc = start_exporter(port)
    try:
        drive(port, warmup)
        before, t0 = proc_sample(proc.pid), time.monotonic()
        requests = drive(port, seconds)
        after, t1 = proc_sample(proc.pid), time.monotonic()
    finally:
        stop(proc)
    return {
        "runs": RUNS,
        "seconds": seconds,
        "requests": requests,
        "cpu_percent_of_one_core": 100 * (after.cpu_seconds - before.cpu_seconds) / (t1 - t0),
        "rss_mib": after.rss_bytes / 2**20,
        "peak_rss_mib": after.hwm_bytes / 2**20,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    print(json.dumps(run(args.seconds), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
