"""A run's life in charts: the bounded timeline, the chart document, its HTTP routes, the
vendored uPlot, and the page drawn by real headless Chromium."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from pathlib import Path
from typing import Any

import pytest

from exporter.core.model import ProgressReport, RunKey
from exporter.core.states import BY_NAME
from exporter.core.thresholds import Thresholds
from exporter.core.timeline import EVAL_ROWS, TIMELINE_INTERVAL, TIMELINE_ROWS, Thinned, Timeline
from exporter.core.tracker import Tracker, TrackerConfig
from exporter.daemon.persist import StateError, decode_run, encode_file, encode_run
from exporter.views.charts import MIN_RELATIVE_SPAN, chart_document, sensible_range, state_segments

from .conftest import T0, http, strict_json

WEB = Path(__file__).resolve().parent.parent / "exporter" / "views" / "web"
# What `npm pack uplot@1.6.32` gives (dist/uPlot.iife.min.js, dist/uPlot.min.css, LICENSE).
UPLOT_SHA256 = {
    "uPlot.iife.min.js": "19c8d4c6ad88929a79f4ae49d6f7161566dfd0ba3d15cc495e974f787eb78f1f",
    "uPlot.min.css": "df630c6a8d6f8eeaff264b50f73ce5b114f646ffd9a0bb74f049b0a00135fa04",
    "uPlot.LICENSE": "8f989229699b4fe2f1a0432d0e9edc338a8a911e250e2d1b01ecd770a5f5b1bd",
}


# -- the timeline: bounded, spans the whole life ---------------------------------------------


def test_a_month_of_reports_fits_in_the_same_rows_and_spans_the_whole_life() -> None:
    table = Thinned(2, TIMELINE_ROWS, TIMELINE_INTERVAL)
    month = 30 * 86400
    for t in range(0, month, 7):  # a report every 7 s for 30 days
        if table.due(t):
            table.add((float(t), float(t)))
    times = table.columns()[0]
    assert TIMELINE_ROWS // 2 <= len(times) <= TIMELINE_ROWS
    assert times[0] < 0.02 * month, "the first days are still there"
    assert times[-1] > month - 2 * table.interval, "and the newest"
    assert times == sorted(times)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert max(gaps) <= 4 * min(gaps), "spread evenly, not bunched at one end"


def test_thinning_keeps_the_newest_row_and_refuses_older_times() -> None:
    table = Thinned(1, 4)
    for t in (1.0, 2.0, 3.0, 4.0, 5.0):
        table.add((t,))
    assert table.columns()[0] == [1.0, 3.0, 5.0]
    table.add((0.5,))  # a clock that went back: ignored, times stay in order
    assert table.columns()[0] == [1.0, 3.0, 5.0]


def test_every_evaluation_is_kept_until_the_table_thins() -> None:
    timeline = Timeline()
    for i in range(30):
        timeline.evaluated(T0 + i * 600, i * 100, 2.0 - i * 0.01)
    assert timeline.view().evals[1] == [float(i * 100) for i in range(30)]
    for i in range(30, 500):
        timeline.evaluated(T0 + i * 600, i * 100, 1.0)
    steps = timeline.view().evals[1]
    assert len(steps) <= EVAL_ROWS and steps[0] == 0.0 and steps[-1] == 49_900.0


@pytest.mark.slow
def test_a_timeline_costs_a_bounded_few_kilobytes_however_long_the_run() -> None:
    tracker = Tracker()
    key = RunKey("ml", "long-0", "long")
    for i in range(20_000):
        tracker.apply(
            key,
            ProgressReport(step=i, max_steps=10**6, loss=1.0, eval_loss=1.0 if i % 50 else 0.9),
            T0 + i * 30,
        )
        if i % 40 == 0:
            tracker.snapshot(T0 + i * 30)
    run = tracker._runs[key]
    tl = run.timeline
    size = tl.rows.nbytes() + tl.evals.nbytes()
    assert len(tl.rows) <= TIMELINE_ROWS and len(tl.evals) <= EVAL_ROWS
    assert size < 12_000, size


# -- what the charts draw ---------------------------------------------------------------------


def test_noise_is_not_magnified_and_a_wide_range_is_padded() -> None:
    lo, hi = sensible_range([1.02, 1.04, 1.03, math.nan, None])  # type: ignore[list-item]
    assert hi - lo >= MIN_RELATIVE_SPAN * 1.04 - 1e-12 and lo < 1.02 and hi > 1.04
    lo, hi = sensible_range([2.5, 0.5])  # type: ignore[misc]
    assert lo == pytest.approx(0.4) and hi == pytest.approx(2.6)
    lo, _ = sensible_range([0.0, 1.0])  # type: ignore[misc]
    assert lo == 0.0, "a loss is not drawn below zero"
    assert sensible_range([math.nan, None]) is None  # type: ignore[list-item]
    lo, hi = sensible_range([0.0, 0.0])  # type: ignore[misc]
    assert lo < hi


def test_the_state_band_covers_each_state_until_the_next_and_the_last_until_now() -> None:
    day = 86400.0
    states = [(T0, "waiting"), (T0 + 60, "running"), (T0 + 5000, "stalled"), (T0 + 5120, "running")]
    segments = state_segments(states, T0, T0 + day)
    assert [(s["state"], s["from"], s["to"]) for s in segments] == [
        ("waiting", T0, T0 + 60),
        ("running", T0 + 60, T0 + 5000),
        ("stalled", T0 + 5000, T0 + 5120),  # two minutes of a day, still there
        ("running", T0 + 5120, T0 + day),
    ]
    assert segments[2]["color"] == BY_NAME["stalled"].css_color


def _trains_then_hangs(tracker: Tracker, key: RunKey) -> float:
    """A run that trains for 20 minutes with an evaluation every 5, then stops stepping
    while its heartbeat goes on; returns the time it was last looked at."""
    t = T0
    for i in range(240):
        t = T0 + i * 5
        eval_loss = 2.0 - i * 0.002 if i % 60 == 59 else None
        tracker.apply(
            key,
            ProgressReport(
                step=i * 10, max_steps=10_000, loss=3.0 - i * 0.005, eval_loss=eval_loss
            ),
            t,
        )
        tracker.snapshot(t)  # what a scrape every 5 s does
    for _j in range(1, 80):  # hung at step 2390; still reporting
        t += 5
        tracker.apply(key, ProgressReport(step=2390, max_steps=10_000, loss=1.805), t)
        tracker.snapshot(t)
    return t


def test_a_stalled_runs_charts_say_so_and_end_now() -> None:
    tracker = Tracker(TrackerConfig(thresholds=Thresholds(stall_seconds=120)))
    key = RunKey("ml", "hung-0", "hung")
    now = _trains_then_hangs(tracker, key) + 1
    found = tracker.timeline(key, now)
    assert found is not None
    snap, view = found
    doc = strict_json(json.dumps(chart_document(snap, view, now), allow_nan=False))
    assert doc["state"] == "stalled"
    assert doc["notice"].startswith("Stalled: no step for 6m36s (threshold 2m)")
    rows = doc["rows"]
    assert rows["time"][-1] == now and rows["time"] == sorted(rows["time"])
    assert rows["step"][-1] == 2390 and all(isinstance(s, int) for s in rows["step"])
    assert rows["eta_seconds"][-1] is None, "a stalled run promises no completion"
    assert doc["evals"]["eval_loss"] == pytest.approx(
        [2.0 - i * 0.002 for i in (59, 119, 179, 239)]
    )
    assert [s["state"] for s in doc["states"]] == ["waiting", "running", "stalled"][
        -len(doc["states"]) :
    ]
    assert doc["states"][-1]["to"] == now
    lo, hi = doc["loss_range"]
    assert lo <= 1.805 and hi >= 3.0
    # ETA bounds were drawn while it ran: the band under the ETA line has both edges.
    running = [i for i, e in enumerate(rows["eta_seconds"]) if e is not None]
    assert running and all(
        rows["eta_lower_seconds"][i] <= rows["eta_seconds"][i] <= rows["eta_upper_seconds"][i]
        for i in running
        if rows["eta_lower_seconds"][i] is not None
    )


def test_a_run_with_one_report_says_there_is_nothing_to_draw_yet() -> None:
    tracker = Tracker()
    key = RunKey("ml", "new-0", "new")
    tracker.apply(key, ProgressReport(step=1, max_steps=100, loss=float("nan")), T0)
    snap, view = tracker.timeline(key, T0 + 1)  # type: ignore[misc]
    doc = chart_document(snap, view, T0 + 1)
    assert doc["rows"]["loss"] == [None, None]
    json.dumps(doc, allow_nan=False)  # NaN became null
    doc = chart_document(snap, Timeline().view(), T0 + 1)
    assert "Not enough reports yet" in doc["notice"]


def test_the_timeline_survives_a_restart_and_a_hostile_one_is_refused() -> None:
    tracker = Tracker(TrackerConfig(thresholds=Thresholds(stall_seconds=120)))
    key = RunKey("ml", "hung-0", "hung")
    now = _trains_then_hangs(tracker, key)
    before = tracker._runs[key].timeline.to_doc()  # bytes: NaN compares equal there
    (doc,) = [
        json.loads(line)
        for line in encode_file(tracker.save(now, encode_run), now).splitlines()[1:2]
    ]
    _, run = decode_run(doc)
    assert run.timeline.to_doc() == before and len(run.timeline.rows) > 10
    good = doc["timeline"]
    for bad in (
        "x",
        {**good, "rows": good["rows"][:3]},
        {**good, "rows": ["!!", *good["rows"][1:]]},
        {**good, "interval": float("inf")},
        {**good, "states": [[T0, "x" * 100]]},
        {**good, "states": [[T0 + 5, "running"], [T0, "stalled"]]},
        {**good, "rows": [good["rows"][0][:-4], *good["rows"][1:]]},
    ):
        with pytest.raises(StateError, match="timeline"):
            decode_run({**doc, "timeline": bad})
    old = dict(doc)
    del old["timeline"]  # a state file from before the charts still restores
    assert len(decode_run(old)[1].timeline.rows) == 0


# -- over HTTP ----------------------------------------------------------------------------------


def test_the_vendored_uplot_is_the_released_one_and_is_served_with_its_license(
    exporter_factory: Any,
) -> None:
    exp = exporter_factory()
    for name, digest in UPLOT_SHA256.items():
        assert hashlib.sha256((WEB / name).read_bytes()).hexdigest() == digest
        status, body = http("GET", f"{exp.url}/static/{name}")
        assert status == 200 and body == (WEB / name).read_bytes()
    assert b"MIT License" in (WEB / "uPlot.LICENSE").read_bytes()
    for path in ("/static/../pyproject.toml", "/static/", "/static/charts", "/static/%2e%2e/x"):
        assert http("GET", exp.url + path)[0] == 404


def test_the_timeline_route_answers_strict_json_and_404s_unknown_runs(
    exporter_factory: Any,
) -> None:
    exp = exporter_factory()
    key = RunKey("ml space", "bert/0", "bert")  # names that must be quoted in the path
    for i in range(20):
        exp.tracker.apply(key, ProgressReport(step=i, max_steps=100, loss=2 - i / 20), exp.clock())
        exp.clock.now += 6
    status, body = http("GET", exp.url + "/api/v1/runs/ml%20space/bert%2F0/timeline")
    assert status == 200, body
    doc = strict_json(body)
    assert doc["pod"] == "bert/0" and len(doc["rows"]["time"]) >= 10
    for path in (
        "/api/v1/runs/ml/nope/timeline",
        "/api/v1/runs/ml/timeline",
        "/api/v1/runs//x/timeline",
    ):
        assert http("GET", exp.url + path)[0] == 404
    status, page = http("GET", exp.url + "/runs/ml%20space/bert%2F0")
    assert status == 200
    assert b'data-timeline="../../api/v1/runs/ml%20space/bert%2F0/timeline"' in page
    assert b'src="../../static/uPlot.iife.min.js"' in page
