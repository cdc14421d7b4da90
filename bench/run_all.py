"""Run every benchmark once and write bench/results/latest.json plus a Markdown summary.

Run: ``make bench`` (about 7 minutes on a 2-core machine). Benchmarks measure; they do not
assert. The targets they are compared with are in docs/benchmarks.md.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from . import (
    eta_accuracy,
    idle_footprint,
    metrics_render,
    push_ingest,
    reporter_overhead,
    scale,
    slow_clients,
    status_dir,
    trainjob_scale,
)

OUT = Path(__file__).parent / "results" / "latest.json"


def summary(r: dict[str, Any]) -> str:
    p, m, i, e = r["push_ingest"], r["metrics_render"], r["idle_footprint"], r["eta_accuracy"]
    ro = r["reporter_overhead"]
    real_o, real_n = eta_accuracy.overall(
        [eta_accuracy.RunResult(**x) for x in r["eta_accuracy_real"]]
    )
    o, g, f = p["ours"], p["pushgateway"], p["pushgateway_no_consistency_check"]
    rows = [
        "| benchmark | result | target |",
        "| --- | --- | --- |",
        f"| push ingest, requests/s (16 keep-alive clients) | ours {o['requests_per_second']:.0f}"
        f" vs Pushgateway {g['requests_per_second']:.0f} (with"
        f" `--push.disable-consistency-check`: {f['requests_per_second']:.0f}) | reported |",
        f"| push latency p50 / p99 | ours {o['p50_ms']:.1f} / {o['p99_ms']:.1f} ms; Pushgateway"
        f" {g['p50_ms']:.1f} / {g['p99_ms']:.1f} ms (unchecked {f['p50_ms']:.1f} /"
        f" {f['p99_ms']:.1f} ms) | reported |",
        f"| /metrics with 1,000 runs, median (in process) | {m['in_process']['median_ms']:.1f} ms"
        f" ({m['in_process']['series']:.0f} series) | <= 50 ms |",
        f"| /metrics with 1,000 runs, median (HTTP GET) | {m['http']['median_ms']:.1f} ms | |",
        f"| idle, 50 runs every 5 s: RSS | {i['rss_mib']:.1f} MiB | <= 60 MiB |",
        f"| idle, 50 runs every 5 s: CPU | {i['cpu_percent_of_one_core']:.2f} % of a core"
        " | < 1 % |",
        f"| ETA MAPE, real-run corpus (ours vs naive) | {real_o:.1%} vs {real_n:.1%} |"
        " ours <= half of naive, < 15 % |",
        f"| ETA MAPE, simulated corpus (ours vs naive) | {e['overall']['ours']:.1%} vs"
        f" {e['overall']['naive']:.1%} | ours <= half of naive |",
        f"| reporter update(), median | {ro['update']['update_median_us']:.2f} µs (no-op call"
        f" {ro['update']['noop_median_us']:.2f} µs) | <= 2 µs |",
        "| reporter update(), exporter unreachable, p99 of 100,000 |"
        f" {ro['unreachable']['p99_us']:.1f} µs"
        " | <= 50 µs |",
        f"| training steps/s with reporter / without | {ro['training']['ratio']:.3f} | >= 0.99 |",
    ]
    for sc in r["scale"]:
        rows.append(
            f"| {sc['runs']:,} runs x 32 custom metrics: RSS loaded / peak with six concurrent"
            f" scrapes | {sc['rss_loaded_mib']:.0f} / {sc['rss_peak_six_scrapes_mib']:.0f} MiB"
            f" (scrape {sc['scrape_seconds_median']:.2f} s, push p99 during scrapes"
            f" {sc['push_during_scrape_ms']['p99']:.0f} ms) | peak < 256 MiB at the default"
            " 2,000 |"
        )
    sl = r["slow_clients"]
    rows.append(
        f"| {sl['clients']:,} slow clients: peak RSS, /metrics max during | "
        f"{sl['peak_rss_mib']:.0f} MiB, {sl['latency_during_ms']['/metrics']['max']:.0f} ms"
        f" ({sl['tracebacks']} tracebacks) | < 256 MiB, < 10 s |"
    )
    for sd in r["status_dir"]:
        rows.append(
            f"| {sd['files']:,} unchanged status files: CPU per second | "
            f"{sd['cpu_seconds_per_second']:.3f} s | linear |"
        )
    return "\n".join(rows)


def main() -> int:
    started = time.time()
    results: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "machine": {"python": platform.python_version(), "cpus": len(os.sched_getaffinity(0))},
        "eta_accuracy": eta_accuracy.evaluate(),
        "eta_accuracy_real": [r.__dict__ for r in eta_accuracy.evaluate_corpus()],
        "metrics_render": metrics_render.run(),
        "idle_footprint": idle_footprint.run(),
        "push_ingest": push_ingest.run(),
        "reporter_overhead": reporter_overhead.run(),
        "scale": scale.run([1000, 2000, 10000]),
        "slow_clients": slow_clients.run(9000, 30.0),
        "status_dir": status_dir.run([1000, 10000]),
        "trainjob_scale": trainjob_scale.run(),
    }
    results["seconds"] = time.time() - started
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(results, indent=2) + "\n")
    print(summary(results))
    real = [eta_accuracy.RunResult(**r) for r in results["eta_accuracy_real"]]
    print("\nETA accuracy on real runs:\n" + eta_accuracy.corpus_table(real))
    print("\nETA accuracy by scenario:\n" + eta_accuracy.table(results["eta_accuracy"]))
    print(
        "\nTrainJob source, 20,000 TrainJobs:\n" + trainjob_scale.table(results["trainjob_scale"])
    )
    print(f"\nwritten to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
