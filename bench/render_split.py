"""/metrics' two halves at 1,000 runs, timed apart: the tracker's snapshot and the text
render, medians of 60. For comparing two builds side by side (run it in each checkout with
``PYTHONPATH`` set to that checkout), where the whole-scrape bench's few-millisecond noise
would hide a change of either half.

Run: ``python -m bench.render_split [collector module]`` (default ``exporter.views.collector``;
``exporter.collector`` for builds before the redesign of #55).
"""

from __future__ import annotations

import importlib
import sys
import time
from statistics import median

from .metrics_render import T0, populated_tracker


def measure(collector_module: str, runs: int = 1000, repeat: int = 60) -> tuple[float, float]:
    """Median milliseconds of (snapshot, render) over ``repeat`` scrapes of ``runs`` runs."""
    collector = importlib.import_module(collector_module)
    tracker = populated_tracker(runs)
    snapshot_ms, render_ms = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        snapshots = tracker.snapshot(T0 + 60)
        taken = time.perf_counter()
        collector.render_runs_text(snapshots)
        snapshot_ms.append((taken - start) * 1000)
        render_ms.append((time.perf_counter() - taken) * 1000)
    return median(snapshot_ms), median(render_ms)


if __name__ == "__main__":
    snap, render = measure(sys.argv[1] if len(sys.argv) > 1 else "exporter.views.collector")
    print(f"snapshot {snap:.1f} ms, render {render:.1f} ms (1,000 runs, medians of 60)")
