"""Goodput: each GPU-second a run holds is productive or wasted for one cause, exactly."""

from __future__ import annotations

import json
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.core.estimate import PAUSE as PAUSE_KIND
from exporter.core.estimate import REFERENCE_INTERVALS, classify_intervals, newest_pause_seconds
from exporter.core.goodput import EXPORTED_CAUSES, cause_of, interval_share
from exporter.core.model import ProgressReport, RunKey, RunMeta
from exporter.core.run.snapshot import RunSnapshot
from exporter.core.thresholds import Thresholds
from exporter.core.tracker import Tracker, TrackerConfig
from exporter.daemon.persist import decode_run, encode_run

from .conftest import T0

KEY = RunKey("ns", "pod-0", "job")


def one(tracker: Tracker, now: float) -> RunSnapshot:
    return tracker.snapshot(now)[0]


def wasted(s: RunSnapshot) -> dict[str, float]:
    return dict(s.wasted_gpu_seconds)


def test_cause_of_each_state_and_restart() -> None:
    assert cause_of("waiting", None, None) == "waiting"
    assert cause_of("stalled", 5, None) == "stalled"
    assert cause_of("finished", 5, None) == cause_of("finished-but-running", 5, None)
    assert cause_of("running", 5, None) is None
    assert cause_of("plateaued", 5, None) is None
    assert cause_of("running", 5, 9) == "restart"
    assert cause_of("running", 9, 9) is None
    assert interval_share(0, 10, None) == 10
    assert interval_share(0, 10, 4) == 6
    assert interval_share(0, 10, 12) == 0


def test_every_cause_is_exported_from_the_first_report() -> None:
    tracker = Tracker()
    tracker.apply(KEY, ProgressReport(loss=3.0), T0, RunMeta(gpus=4))
    s = one(tracker, T0)
    assert [c for c, _ in s.wasted_gpu_seconds] == list(EXPORTED_CAUSES)
    assert all(v == 0 for _, v in s.wasted_gpu_seconds)


def test_waiting_stalled_and_finished_are_charged_exactly() -> None:
    th = Thresholds(stall_seconds=100, finished_grace_seconds=50)
    tracker = Tracker(TrackerConfig(th))
    meta = RunMeta(gpus=8, alive=True)
    tracker.apply(KEY, ProgressReport(loss=3.0, max_steps=30), T0, meta)  # no step yet
    tracker.apply(KEY, ProgressReport(step=1), T0 + 40, meta)  # waited 40 s
    for i in range(2, 11):
        tracker.apply(KEY, ProgressReport(step=i), T0 + 40 + (i - 1) * 10, meta)
    # Last step at T0+130; stalled from T0+230 (threshold 100) until the step moves at +300.
    s = one(tracker, T0 + 299)
    assert wasted(s)["waiting"] == pytest.approx(8 * 40)
    assert wasted(s)["stalled"] == pytest.approx(8 * 69)
    for step, t in ((11, 300), (12, 310), (30, 320)):
        tracker.apply(KEY, ProgressReport(step=step, final=step == 30), T0 + t, meta)
    s = one(tracker, T0 + 420)  # finished at +320, still holding its GPUs
    w = wasted(s)
    assert s.stalled_gpu_seconds == pytest.approx(8 * 70)  # in state stalled
    assert w["stalled"] == pytest.approx(8 * 160)  # the whole hang, seen once it ended
    assert w["finished_but_running"] == pytest.approx(8 * 100)
    assert s.gpu_seconds == pytest.approx(8 * 420)
    productive = s.gpu_seconds - sum(w.values())
    # 40 s waiting; the hang from +140 (one step's time after the last step) to +300, of
    # which the 90 s before the stall threshold are charged to stalled once the step moves
    # (state stalled itself covered 70 s); 100 s after the finish; the rest advanced steps.
    assert productive == pytest.approx(8 * (420 - 40 - 160 - 100))
    assert w["pause"] == 0


def test_kubernetes_pod_start_before_the_first_report_is_waiting() -> None:
    tracker = Tracker()
    meta = RunMeta(gpus=2, alive=True, gpu_start_timestamp=T0 - 300)
    tracker.apply(KEY, ProgressReport(step=1), T0, meta)
    tracker.apply(KEY, ProgressReport(step=2), T0 + 10, meta)
    s = one(tracker, T0 + 10)
    assert wasted(s)["waiting"] == pytest.approx(2 * 300)
    assert s.gpu_seconds == pytest.approx(2 * 310)


def test_steps_redone_after_a_restart_are_restart_waste() -> None:
    tracker = Tracker()
    meta = RunMeta(gpus=4)
    for i in range(6):  # to step 500 at 10 steps/s
        tracker.apply(KEY, ProgressReport(step=i * 100, max_steps=2000), T0 + i * 10, meta)
    # Crash; resumes from the checkpoint at step 300: steps 300..500 are done again.
    tracker.apply(KEY, ProgressReport(step=300), T0 + 60, meta)
    for i in range(1, 5):
        tracker.apply(KEY, ProgressReport(step=300 + i * 100), T0 + 60 + i * 10, meta)
    s = one(tracker, T0 + 100)
    # Redoing 300 -> 500 took 20 s (the report at 500 ends it); new steps after that.
    assert wasted(s)["restart"] == pytest.approx(4 * 20)
    assert sum(wasted(s).values()) == pytest.approx(4 * 20)


def test_a_restart_from_a_known_checkpoint_charges_the_work_lost_since_it_at_once() -> None:
    tracker = Tracker()
    meta = RunMeta(gpus=4)
    for i in range(6):  # to step 500 at 10 steps/s; the checkpoint at step 300 (30 s)
        ck = {"checkpoint_step": 300, "checkpoint_timestamp": T0 + 30} if i >= 3 else {}
        tracker.apply(KEY, ProgressReport(step=i * 100, max_steps=2000, **ck), T0 + i * 10, meta)
    # Crash at 60 s; resumes from the checkpoint at step 300: the 30 s of training since it
    # (4 GPUs) are lost, charged at once; redoing 300 -> 500 is not charged again.
    tracker.apply(KEY, ProgressReport(step=300), T0 + 60, meta)
    assert wasted(one(tracker, T0 + 60))["restart"] == pytest.approx(4 * 30)
    for i in range(1, 5):
        tracker.apply(KEY, ProgressReport(step=300 + i * 100), T0 + 60 + i * 10, meta)
    s = one(tracker, T0 + 100)
    assert wasted(s)["restart"] == pytest.approx(4 * 30)
    assert sum(wasted(s).values()) == pytest.approx(4 * 30)
    # A restart further back than the checkpoint (from scratch): the redone steps again.
    tracker.apply(KEY, ProgressReport(step=0), T0 + 110, meta)
    tracker.apply(KEY, ProgressReport(step=100), T0 + 120, meta)
    assert wasted(one(tracker, T0 + 120))["restart"] > 4 * 30


def test_an_evaluation_pause_is_charged_beyond_the_pace_only() -> None:
    tracker = Tracker()
    meta = RunMeta(gpus=8)
    t = T0
    for i in range(12):  # 10 steps every 10 s
        tracker.apply(KEY, ProgressReport(step=i * 10, max_steps=10_000), t, meta)
        t += 10
    # t is T0+120: the report of step 120 is due, but a 60-s evaluation comes first: the
    # interval is 70 s for 10 steps, 60 s beyond the pace.
    t += 60
    for i in range(12, 16):
        tracker.apply(KEY, ProgressReport(step=i * 10), t, meta)
        t += 10
    s = one(tracker, t)
    assert wasted(s)["pause"] == pytest.approx(8 * 60)
    assert sum(wasted(s).values()) == pytest.approx(8 * 60)


def test_waste_survives_a_restart_of_the_exporter_and_old_state_files_restore() -> None:
    tracker = Tracker()
    meta = RunMeta(gpus=1)
    tracker.apply(KEY, ProgressReport(step=100), T0, meta)
    tracker.apply(KEY, ProgressReport(step=50), T0 + 10, meta)  # restart: high water 100
    docs = list(tracker.save(T0 + 20, encode_run))
    doc = json.loads(json.dumps(docs[0]))
    _, run = decode_run(doc)
    assert run.high_water == 100 and run.wasted == docs[0]["wasted"]
    for name in ("wasted", "wasted_at_step", "high_water"):
        doc.pop(name)
    _, old = decode_run(doc)  # a state file from before goodput
    assert old.wasted == {} and old.high_water is None
    bad = dict(json.loads(json.dumps(docs[0])), wasted={"made_up": 1.0})
    with pytest.raises(ValueError, match="wasted"):
        decode_run(bad)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.floats(0.5, 200.0), st.integers(1, 50)), min_size=0, max_size=16))
def test_newest_pause_is_what_the_full_classification_says(steps: list[tuple[float, int]]) -> None:
    """The fast path at every step advance agrees with classify_intervals over the same
    window, for any sequence of intervals."""
    samples, t, step = [(0.0, 0)], 0.0, 0
    for dt, ds in steps:
        t, step = t + dt, step + ds
        samples.append((t, step))
    intervals = [(t1 - t0, s1 - s0) for (t0, s0), (t1, s1) in pairwise(samples)][
        -(REFERENCE_INTERVALS + 1) :
    ]
    expected = 0.0
    if len(intervals) >= 2:
        kinds, refs = classify_intervals([dt / ds for dt, ds in intervals])
        if kinds[-1] == PAUSE_KIND:
            dt, ds = intervals[-1]
            expected = max(0.0, dt - ds * refs[-1])
    assert newest_pause_seconds(samples) == pytest.approx(expected)
