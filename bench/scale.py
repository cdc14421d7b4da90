"""Memory and time at the limits: the exporter process with N long runs,
each at the custom-metric cap (32) with full history, scraped by six clients at once.

For each N it measures, on the real exporter process started from a state file:

* RSS with the runs loaded, and the peak RSS (VmHWM, reset before) over six concurrent
  scrapes;
* one scrape's time (median of three), and the slowest of six concurrent scrapes;
* push latency while scrapes run back to back (200 sequential pushes: p50, p99, max).

The runs are loaded from a state file (exporter/daemon/persist.py) because filling 10,000 runs
with 600 reports each over HTTP would take longer than the measurement itself; the file is
built from one run grown report by report and copied under N names.

Run: ``python -m bench.scale [--runs 1000 2000 10000]``.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from statistics import median
from typing import Any

from exporter.core.model import ProgressReport, RunKey, RunMeta
from exporter.core.tracker import Tracker, TrackerConfig
from exporter.daemon.persist import StateKeeper, encode_lines, encode_run, write_atomically

from .common import free_port, proc_sample, wait_http

T0 = time.time() - 3600
CUSTOM_METRICS = 32
REPORTS = 600  # every 5 s for 50 minutes: every history buffer is full


def template_run() -> dict[str, Any]:
    """One long run, encoded as the state file stores it."""
    tracker = Tracker()
    key = RunKey("team", "template", "template")
    meta = RunMeta(source="push", gpus=8)
    for i in range(REPORTS):
        metrics = tuple((f"custom_metric_{k:02d}", float(i + k)) for k in range(CUSTOM_METRICS))
        report = ProgressReport(
            step=10 * i,
            max_steps=100_000,
            loss=2.0 / (1 + i / 50),
            eval_loss=2.1 / (1 + i / 50) if i % 100 == 0 else None,
            learning_rate=3e-4,
            grad_norm=0.9,
            gpus=8,
            metrics=metrics if i % 10 == 0 else (),
        )
        tracker.apply(key, report, T0 + 5 * i, meta)
    return next(tracker.save(T0 + 5 * REPORTS, encode_run))


def state_file(path: Path, runs: int) -> int:
    """Write the state file for ``runs`` copies of the template; returns its size."""
    template = template_run()

    def docs() -> Iterator[dict[str, Any]]:
        for i in range(runs):
            doc = copy.copy(template)
            doc["key"] = [f"team-{i % 20}", f"job-{i}", f"job-{i}"]
            doc["metrics"] = {k: v + i for k, v in template["metrics"].items()}
            yield doc

    return write_atomically(str(path), encode_lines(docs(), T0 + 5 * REPORTS))


def start(
    port: int, state: Path, runs: int, env_extra: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
    env.update(env_extra or {})
    env["TPE_MAX_RUNS"] = str(runs)
    env["TPE_STATE_INTERVAL"] = "1h"  # measure serving, not saving
    proc = subprocess.Popen(
        [sys.executable, "-m", "exporter", "run", "--mode", "standalone",
         "--listen", f"127.0.0.1:{port}", "--state-file", str(state)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", timeout=300, proc=proc)
    except RuntimeError:
        proc.kill()
        raise
    return proc


OPENMETRICS = "application/openmetrics-text; version=1.0.0"
# The views measured four at a time (name -> path, Accept header).
VIEWS = {
    "metrics_text": ("/metrics", None),
    "metrics_openmetrics": ("/metrics", OPENMETRICS),
    "api_runs": ("/api/v1/runs", None),
    "status_page": ("/", None),
    "status_page_1000": ("/?per_page=1000", None),
}


def scrape(url: str, accept: str | None = None) -> tuple[float, int]:
    started = time.perf_counter()
    size = 0
    headers = {"Accept": accept} if accept else {}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=300) as resp:
        while chunk := resp.read(1 << 20):
            size += len(chunk)
    return time.perf_counter() - started, size


def reset_peak(pid: int) -> None:
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current RSS


def push_latencies(base: str, count: int) -> list[float]:
    out = []
    for i in range(count):
        # Reports to runs that exist (the run cap is full).
        body = json.dumps({"step": 10 * REPORTS + i, "loss": 1.0}).encode()
        run = (i * 7) % 1000
        req = urllib.request.Request(
            f"{base}/api/v1/namespaces/team-{run % 20}/runs/job-{run}/report",
            data=body,
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        started = time.perf_counter()
        with urllib.request.urlopen(req, timeout=60) as resp:
            resp.read()
        out.append(time.perf_counter() - started)
    return out


def measure(runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state.json"
        file_bytes = state_file(state, runs)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        loaded_at = time.perf_counter()
        proc = start(port, state, runs)
        try:
            load_seconds = time.perf_counter() - loaded_at
            scrape(base + "/metrics")  # warm
            idle = proc_sample(proc.pid)
            singles = [scrape(base + "/metrics") for _ in range(3)]
            with urllib.request.urlopen(base + "/metrics", timeout=120) as resp:
                series = sum(1 for line in resp if not line.startswith(b"#"))
            reset_peak(proc.pid)
            results: list[tuple[float, int]] = []
            threads = [
                threading.Thread(target=lambda: results.append(scrape(base + "/metrics")))
                for _ in range(6)
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            peak = proc_sample(proc.pid)
            four: dict[str, float] = {}
            for view, (path, accept) in VIEWS.items():
                reset_peak(proc.pid)
                group = [
                    threading.Thread(target=scrape, args=(base + path, accept)) for _ in range(4)
                ]
                for t in group:
                    t.start()
                for t in group:
                    t.join()
                four[view] = proc_sample(proc.pid).hwm_bytes / 2**20
            # Push latency while scrapes run back to back.
            stop = threading.Event()

            def scraper() -> None:
                while not stop.is_set():
                    scrape(base + "/metrics")

            background = threading.Thread(target=scraper)
            background.start()
            time.sleep(0.2)
            latencies = sorted(push_latencies(base, 200))
            stop.set()
            background.join()
        finally:
            proc.terminate()
            proc.wait(30)
        save_seconds = save_cost(state, runs)
    return {
        "runs": runs,
        "series": series,
        "body_mib": singles[0][1] / 2**20,
        "state_file_mib": file_bytes / 2**20,
        "start_seconds": load_seconds,
        "state_save_cpu_seconds": save_seconds,
        "rss_loaded_mib": idle.rss_bytes / 2**20,
        "rss_peak_six_scrapes_mib": peak.hwm_bytes / 2**20,
        "rss_peak_four_at_once_mib": four,
        "scrape_seconds_median": median(t for t, _ in singles),
        "six_scrapes_slowest_seconds": max(t for t, _ in results),
        "push_during_scrape_ms": {
            "p50": latencies[len(latencies) // 2] * 1000,
            "p99": latencies[int(len(latencies) * 0.99) - 1] * 1000,
            "max": latencies[-1] * 1000,
        },
    }


def restore_peak(file_runs: int, cap: int) -> dict[str, Any]:
    """Peak RSS of an exporter starting from a state file of ``file_runs`` runs with
    ``max_runs`` ``cap``: the restore holds the cap, not the file."""
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state.json"
        file_bytes = state_file(state, file_runs)
        port = free_port()
        proc = start(port, state, cap)
        try:
            peak = proc_sample(proc.pid)
        finally:
            proc.terminate()
            proc.wait(30)
    return {
        "state_file_runs": file_runs,
        "state_file_mib": file_bytes / 2**20,
        "max_runs": cap,
        "rss_peak_after_restore_mib": peak.hwm_bytes / 2**20,
    }


def save_cost(state: Path, runs: int) -> float:
    """CPU seconds one write of the state file takes with these runs (in process)."""
    tracker = Tracker(TrackerConfig(max_runs=runs))
    keeper = StateKeeper(str(state), tracker, time.time, 5.0)
    keeper.restore()
    started = time.process_time()
    keeper.save(force=True)
    return time.process_time() - started


def run(sizes: list[int]) -> list[dict[str, Any]]:
    return [measure(n) for n in sizes]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, nargs="+", default=[1000, 2000, 10000])
    parser.add_argument(
        "--restore", type=int, default=30_000, help="runs in the state file of the restore"
    )
    args = parser.parse_args()
    for result in run(args.runs):
        print(json.dumps(result), flush=True)
    if args.restore:
        print(json.dumps(restore_peak(args.restore, 2_000)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
