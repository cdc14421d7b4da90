"""Collector: golden exposition files, checked with the real ``promtool check metrics``."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from exporter.core.model import ProgressReport, RunKey, RunMeta
from exporter.core.thresholds import Thresholds
from exporter.core.tracker import Tracker, TrackerConfig
from exporter.plumbing.stats import ExporterStats
from exporter.views.collector import (
    TrainingCollector,
    render_runs_text,
    run_families,
)
from exporter.views.selfmetrics import ExporterCollector

from .conftest import GOLDEN, T0, FakeClock

PROMTOOL = shutil.which("promtool")


def golden_tracker() -> Tracker:
    """Three runs covering every family: healthy with eval, diverged, finished with budget."""
    tracker = Tracker(TrackerConfig(Thresholds(stall_seconds=600)))
    a = RunKey("team-a", "llm-worker-0", "llm")
    meta = RunMeta(
        job_kind="TrainJob",
        framework="transformers",
        source="push",
        node="gpu-1",
        rank="0",
        container="trainer",
        gpus=8,
    )
    for i in range(5):
        tracker.apply(
            a,
            ProgressReport(
                step=100 * i,
                max_steps=1000,
                epoch=0.1 * i,
                max_epochs=1,
                loss=2.0 - 0.1 * i,
                learning_rate=1e-4,
                grad_norm=0.5,
                metrics=(("tokens_per_second", 5000.0),),
            ),
            T0 + 60 * i,
            meta,
        )
    tracker.apply(a, ProgressReport(eval_loss=1.9), T0 + 250)
    b = RunKey("team-b", "gpt-0", "gpt")
    tracker.apply(b, ProgressReport(step=10, loss=1.0), T0, RunMeta(source="file", gpus=4))
    tracker.apply(b, ProgressReport(step=11, loss=math.nan), T0 + 10)
    c = RunKey("team-b", "vit-0", "vit")
    tracker.apply(
        c,
        ProgressReport(step=300, max_steps=300, loss=0.2, final=True),
        T0,
        RunMeta(source="http", gpus=2, deadline_timestamp=T0 + 86400, gpu_seconds_budget=360000),
    )
    return tracker


class _Families(Collector):
    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        yield from self.families


def render(tracker: Tracker, now: float) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(run_families(tracker.snapshot(now))))
    return generate_latest(registry)


def check_golden(name: str, text: bytes) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_bytes(text)
    assert text.decode() == path.read_text(), (
        f"regenerate with UPDATE_GOLDEN=1 if intended ({path})"
    )


def promtool_check(text: bytes) -> str:
    assert PROMTOOL, "promtool is installed by the test command (make test-deps)"
    proc = subprocess.run(
        [PROMTOOL, "check", "metrics"], input=text, capture_output=True, timeout=30
    )
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
    return proc.stdout.decode() + proc.stderr.decode()


def test_run_families_golden_and_promtool_clean() -> None:
    text = render(golden_tracker(), T0 + 300)
    check_golden("runs.prom", text)
    assert promtool_check(text).strip() == ""


def test_exporter_self_metrics_golden_and_promtool_clean() -> None:
    tracker = golden_tracker()
    stats = ExporterStats()
    stats.report("push", "accepted")
    stats.report("push", "rejected")
    stats.drop("push", "invalid_json")
    stats.drop("file", "symlink")
    stats.set_up("file", True)
    stats.set_up("http", False)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ExporterCollector(tracker, stats))
    text = generate_latest(registry)
    check_golden("exporter.prom", text)
    assert promtool_check(text).strip() == ""


def test_nan_loss_is_exposed_as_nan() -> None:
    text = render(golden_tracker(), T0 + 300).decode()
    assert 'training_loss{job_name="gpt",namespace="team-b",pod="gpt-0"} NaN' in text


def test_vanished_run_leaves_no_stale_series() -> None:
    clock = FakeClock(T0)
    tracker = Tracker(TrackerConfig(retention=60))
    registry = CollectorRegistry(auto_describe=False)
    registry.register(TrainingCollector(tracker, clock))
    key = RunKey("ns", "p", "j")
    tracker.apply(key, ProgressReport(step=1), T0)
    assert b'pod="p"' in generate_latest(registry)
    tracker.mark_gone(key, T0 + 1)
    clock.advance(100)
    tracker.expire(clock())
    assert b'pod="p"' not in generate_latest(registry)


@pytest.mark.parametrize("name", ['evil"name', "new\nline", "back\\slash"])
def test_label_values_are_escaped_in_exposition(name: str) -> None:
    """Even if a hostile value reached a label, the exposition stays parseable."""
    tracker = Tracker()
    tracker.apply(RunKey("ns", name, name), ProgressReport(step=1), T0)
    promtool_check(render(tracker, T0))


def test_fast_text_renderer_is_byte_identical_to_client_python() -> None:
    tracker = golden_tracker()
    hostile = RunKey('n"s', "p\\od\nx", "jöb")
    tracker.apply(hostile, ProgressReport(step=1, metrics=(("m", 1.0),)), T0, RunMeta(rank='"0"'))
    snaps = tracker.snapshot(T0 + 300)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(run_families(snaps)))
    assert render_runs_text(snaps).encode() == generate_latest(registry)


def test_empty_tracker_renders_headers_only() -> None:
    text = render_runs_text([])
    assert "# TYPE training_step gauge" in text
    assert not [line for line in text.splitlines() if not line.startswith("#")]


def test_streamed_openmetrics_is_byte_identical_to_client_python() -> None:
    """OpenMetrics is streamed like the text format (it was built whole by client_python:
    four scrapes at once held 245 MiB at 2,000 runs)."""
    from prometheus_client.openmetrics.exposition import generate_latest as openmetrics

    from exporter.views.collector import iter_runs_text

    tracker = golden_tracker()
    hostile = RunKey('n"s', "p\\od\nx", "jöb")
    tracker.apply(hostile, ProgressReport(step=1, metrics=(("m", 1.0),)), T0, RunMeta(rank='"0"'))
    snaps = tracker.snapshot(T0 + 300)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(run_families(snaps)))
    streamed = "".join(iter_runs_text(snaps, chunk_runs=2, openmetrics=True)) + "# EOF\n"
    assert streamed.encode() == openmetrics(registry)


def test_streamed_runs_json_is_the_whole_document() -> None:
    import json

    from exporter.views.api import iter_runs_json, runs_document

    tracker = golden_tracker()
    snaps = tracker.snapshot(T0 + 300, history=True)
    streamed = json.loads("".join(iter_runs_json(iter(snaps), T0 + 300)))
    assert streamed == json.loads(json.dumps(runs_document(snaps, T0 + 300)))
    assert json.loads("".join(iter_runs_json(iter([]), T0))) == {"time": T0, "runs": []}


@pytest.mark.slow
def test_a_streamed_runs_document_holds_a_batch_not_every_run() -> None:
    """``/api/v1/runs`` at 600 runs with full loss histories: streamed (a batch of
    snapshots, one run's JSON at a time) it peaks at a fraction of building it whole, as it
    was built before (four at once took 218 MiB)."""
    import json
    import tracemalloc

    from exporter.views.api import iter_runs_json, runs_document

    tracker = Tracker(TrackerConfig(max_runs=600))
    for i in range(600):
        key = RunKey("ns", f"r{i}", "j")
        for k in range(120):
            tracker.apply(key, ProgressReport(step=k, loss=1.0 / (k + 1)), T0 + k)

    def peak(render: Callable[[], None]) -> int:
        tracemalloc.start()
        render()
        _, high = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return high

    def streamed() -> None:
        for _ in iter_runs_json(tracker.iter_snapshots(T0 + 200, history=True), T0 + 200):
            pass

    def whole() -> None:
        json.dumps(runs_document(tracker.snapshot(T0 + 200, history=True), T0 + 200))

    assert peak(streamed) * 4 < peak(whole), (peak(streamed), peak(whole))
