"""One memory budget per kind of thing held (exporter/core/budgets.py): each per-item size
the budgets are made of is checked against a measure of the real thing (``tracemalloc``),
and the budgets enforced by eviction evict, oldest first, and say so."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from exporter.core import budgets
from exporter.core.model import ProgressReport, RunKey, RunMeta
from exporter.core.timeline import Timeline
from exporter.core.tracker import Tracker, TrackerConfig
from exporter.views import statuspage
from exporter.views.collector import iter_runs_text

T0 = 1_800_000_000.0
ROOT = Path(__file__).resolve().parent.parent


def _allocated(build: Callable[[], Any]) -> tuple[int, Any]:
    """Bytes ``build()``'s result holds (traced, after a collection), and the result."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        made = build()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before, made
    finally:
        tracemalloc.stop()


def _full_runs(n: int, reports: int = 530) -> Tracker:
    """``n`` runs at their fullest: every series and history full, 32 custom metrics,
    evaluations, a long timeline."""
    tracker = Tracker(TrackerConfig(max_runs=10_000))
    for i in range(n):
        key = RunKey(f"team-{i % 20}", f"job-{i}-worker-0", f"job-{i}")
        meta = RunMeta(job_kind="TrainJob", source="push", node="gpu-1", rank="0", gpus=8)
        for k in range(reports):
            report = ProgressReport(
                step=k * 10,
                max_steps=100_000,
                loss=2.0 / (1 + k),
                eval_loss=1.0 if k % 50 == 0 else None,
                learning_rate=1e-4,
                grad_norm=0.5,
                metrics=tuple((f"custom_{m}", float(k + m)) for m in range(32)),
            )
            tracker.apply(key, report, T0 + 5 * k, meta)
    return tracker


def _apart(measure: str) -> Any:
    """What ``measure()`` of this module returns, run in a process of its own.

    tracemalloc counts every thread's allocations: in the shared test process an exporter
    another test left stopping was charged to the thing measured (136 KiB for a 12 KiB
    timeline in CI), so each measure runs alone."""
    code = f"import json; from tests.test_budgets import {measure}; print(json.dumps({measure}()))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def measure_full_runs(runs: int = 10) -> tuple[int, int]:
    """Bytes ``runs`` full runs hold in all, and their timelines' own count. A warm-up
    tracker first pays for the caches first use fills (interned names, lru_caches)."""
    _full_runs(2)
    held, tracker = _allocated(lambda: _full_runs(runs))
    return held, tracker.memory_used()["timelines"]


def measure_timeline() -> tuple[int, int]:
    """One timeline filled alone: its own count of its bytes, and what tracemalloc sees."""
    timeline = Timeline()

    def fill() -> Timeline:
        for k in range(5000):
            timeline.sample(T0 + 5 * k, {"step": k, "loss": 1.0})
            if k % 20 == 0:
                timeline.evaluated(T0 + 5 * k, k, 0.5)
            timeline.state(T0 + 5 * k, "running" if k % 2 else "stalled")
        return timeline

    traced, _ = _allocated(fill)
    return timeline.nbytes(), traced


def measure_views() -> dict[str, tuple[int, int]]:
    """Peak bytes while the status page of 1,000 runs is made and while /metrics of 1,000
    runs is written (every run's snapshot held), each with its budget."""
    tracker = _full_runs(1000, reports=3)
    now = T0 + 30

    def page() -> str:
        snaps = tracker.snapshot(now)
        return statuspage.index_page(snaps, now, statuspage.Page(1, 1000, "urgency"), 1000, {})

    def metrics() -> int:
        return sum(len(part) for part in iter_runs_text(tracker.snapshot(now)))

    peaks: dict[str, tuple[int, int]] = {}
    for build, budget in ((page, budgets.PAGE_BYTES), (metrics, 1000 * budgets.SNAPSHOT_BYTES)):
        gc.collect()
        tracemalloc.start()
        try:
            build()
            peaks[build.__name__] = (tracemalloc.get_traced_memory()[1], budget)
        finally:
            tracemalloc.stop()
    return peaks


@pytest.mark.slow
def test_a_run_and_its_timeline_at_their_fullest_fit_their_per_run_sizes() -> None:
    runs = 10
    held, timelines = _apart("measure_full_runs")
    per_run = (held - timelines) / runs
    assert 20 * 1024 < per_run <= budgets.RUN_BYTES, per_run
    per_timeline = timelines / runs
    assert 6 * 1024 < per_timeline <= budgets.TIMELINE_BYTES, per_timeline
    # The timeline's own count agrees with what tracemalloc sees of one, filled alone.
    counted, traced = _apart("measure_timeline")
    assert 6 * 1024 < counted <= budgets.TIMELINE_BYTES, counted
    assert traced <= budgets.TIMELINE_BYTES * 1.5, traced


@pytest.mark.slow
def test_a_view_at_its_largest_fits_the_view_budget() -> None:
    """The status page of 1,000 runs within PAGE_BYTES; /metrics of 1,000 runs (every
    run's snapshot held while families are written) within 1,000 x SNAPSHOT_BYTES."""
    for name, (peak, budget) in _apart("measure_views").items():
        assert peak <= budget, (name, peak, budget)


def test_katib_observations_stay_within_their_budget_oldest_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """All trial runs' observations together are held to OBSERVATIONS_BUDGET: past it, the
    oldest of any run go first, each counted ``observations_budget``; runs that are no
    trial hold none."""
    import exporter.core.tracker as tracker_module

    monkeypatch.setattr(tracker_module, "OBSERVATIONS_BUDGET", 100)
    tracker = Tracker()
    said: list[str] = []
    trial = RunMeta(source="push", trial="exp-abc")
    for run in range(3):
        key = RunKey("ml", f"trial-{run}", f"trial-{run}")
        for k in range(60):
            tracker.apply(
                key,
                ProgressReport(step=k, loss=1.0 / (k + 1)),
                T0 + run * 1000 + k,
                trial,
                said.append,
            )
    tracker.apply(RunKey("ml", "plain", "plain"), ProgressReport(step=1, loss=1.0), T0)
    assert tracker.memory_used()["observations"] == 100 * budgets.OBSERVED_BYTES
    assert said.count("observations_budget") == 3 * 60 - 100
    kept = {
        run: tracker.observations(RunKey("ml", f"trial-{run}", f"trial-{run}"), 0)[0]
        for run in range(3)
    }
    assert [len(kept[r]) for r in range(3)] == [0, 40, 60]  # the first run's went first
