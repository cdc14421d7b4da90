"""/metrics render time with 1,000 tracked runs (every catalog field and 5 custom metrics).

Measures both the in-process render (collector + exposition) and a real HTTP GET of
/metrics from a running exporter fed over its native push endpoint.

Run: ``python -m bench.metrics_render [--runs 1000] [--repeat 30]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.request
from statistics import median
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest

from exporter.core.model import ProgressReport, RunKey, RunMeta
from exporter.core.tracker import Tracker
from exporter.plumbing.stats import ExporterStats
from exporter.views.collector import TrainingCollector, render_runs_text
from exporter.views.selfmetrics import ExporterCollector

from .common import free_port, start_exporter, stop

T0 = 1_796_000_000.0


def full_report(i: int, step: int) -> ProgressReport:
    return ProgressReport(
        step=step,
        max_steps=100_000,
        epoch=step / 5000,
        max_epochs=20.0,
        loss=2.0 / (1 + step / 1e4),
        eval_loss=2.1 / (1 + step / 1e4),
        learning_rate=3e-4,
        grad_norm=0.9,
        metrics=tuple((f"custom_{k}", float(i + k)) for k in range(5)),
    )


def populated_tracker(runs: int) -> Tracker:
    tracker = Tracker()
    for i in range(runs):
        key = RunKey(f"team-{i % 20}", f"job-{i}-worker-0", f"job-{i}")
        meta = RunMeta(
            job_kind="TrainJob",
            framework="transformers",
            source="push",
            node=f"gpu-node-{i % 50}",
            rank="0",
            container="trainer",
            gpus=8,
            deadline_timestamp=T0 + 86400,
            gpu_seconds_budget=3.6e6,
        )
        for k in range(5):
            tracker.apply(key, full_report(i, 1000 + 10 * k), T0 + 10 * k, meta)
    return tracker


def in_process(runs: int, repeat: int) -> dict[str, float]:
    """What /metrics does per scrape (snapshot, direct text render, self metrics), and the
    same catalog through client_python's generic encoder for comparison."""
    tracker = populated_tracker(runs)
    self_registry = CollectorRegistry(auto_describe=False)
    self_registry.register(ExporterCollector(tracker, ExporterStats()))
    times, body = [], b""
    for _ in range(repeat):
        start = time.perf_counter()
        body = render_runs_text(tracker.snapshot(T0 + 60)).encode() + generate_latest(self_registry)
        times.append(time.perf_counter() - start)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(TrainingCollector(tracker, lambda: T0 + 60))
    generic = []
    for _ in range(max(3, repeat // 5)):
        start = time.perf_counter()
        generate_latest(registry)
        generic.append(time.perf_counter() - start)
    series = sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))
    return {
        "median_ms": median(times) * 1000,
        "max_ms": max(times) * 1000,
        "client_python_encoder_median_ms": median(generic) * 1000,
        "bytes": float(len(body)),
        "series": float(series),
    }


def over_http(runs: int, repeat: int) -> dict[str, float]:
    port = free_port()
    proc = start_exporter(port)
    try:
        base = f"http://127.0.0.1:{port}"
        for i in range(runs):
            body = json.dumps(
                {
                    "step": 1000 + i,
                    "max_steps": 100_000,
                    "epoch": 0.2,
                    "max_epochs": 20,
                    "loss": 1.5,
                    "eval_loss": 1.6,
                    "learning_rate": 3e-4,
                    "grad_norm": 0.9,
                    "gpus": 8,
                    "metrics": {f"custom_{k}": k for k in range(5)},
                }
            ).encode()
            req = urllib.request.Request(
                f"{base}/api/v1/namespaces/team-{i % 20}/runs/job-{i}/report",
                data=body,
                method="POST",
                headers={"Content-Type": "application/json"},
            )
            urllib.request.urlopen(req, timeout=10).read()
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            with urllib.request.urlopen(f"{base}/metrics", timeout=30) as resp:
                resp.read()
            times.append(time.perf_counter() - start)
    finally:
        stop(proc)
    return {"median_ms": median(times) * 1000, "max_ms": max(times) * 1000}


def run(runs: int = 1000, repeat: int = 30) -> dict[str, Any]:
    return {"runs": runs, "in_process": in_process(runs, repeat), "http": over_http(runs, repeat)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    print(json.dumps(run(args.runs, args.repeat), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
