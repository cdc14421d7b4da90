"""A run's attempts, its throughput when the step stops, its one typical pace, the
hysteresis of degraded and plateaued, and the evidence finished-but-running needs."""

from __future__ import annotations

import random
from typing import Any

import pytest

from exporter.core.estimate import EstimatorConfig
from exporter.core.model import ProgressReport, RunKey, RunMeta
from exporter.core.thresholds import Thresholds
from exporter.core.tracker import Tracker, TrackerConfig
from exporter.core.wire import parse_native

from .conftest import T0

KEY = RunKey("ns", "pod-0", "job")
SHORT = Thresholds(
    stall_seconds=60, plateau_seconds=300, report_timeout_seconds=120, finished_grace_seconds=60
)


def one(tracker: Tracker, now: float) -> Any:
    (s,) = tracker.snapshot(now)
    return s


def first_attempt(tracker: Tracker, loss_to: float = 0.05, steps: int = 100) -> float:
    """A finished attempt: ``steps`` steps every 5 s, loss falling to ``loss_to``."""
    t = T0
    for i in range(1, steps + 1):
        t = T0 + i * 5
        loss = 2.0 - (2.0 - loss_to) * i / steps
        tracker.apply(KEY, ProgressReport(step=i, max_steps=steps, loss=loss), t)
    tracker.apply(KEY, ProgressReport(step=steps, final=True), t + 1)
    return t + 1


def test_a_rerun_under_the_same_name_starts_its_own_best_loss_and_finished_flag() -> None:
    tracker = Tracker(TrackerConfig(thresholds=SHORT))
    t = first_attempt(tracker)
    before = one(tracker, t)
    # The best is the loss's moving average: it trails the last values a little.
    assert before.state == "finished" and before.best_loss < 0.2 and before.attempt == 1
    spent = before.gpu_seconds
    # Re-run from step 0: loss 1.9 is over 9x the old best, yet no divergence.
    for i in range(1, 20):
        tracker.apply(
            KEY, ProgressReport(step=i, max_steps=100, loss=1.9 - i * 0.01), t + 600 + i * 5
        )
    s = one(tracker, t + 700)
    assert s.state == "running" and s.attempt == 2
    assert s.best_loss is not None and s.best_loss > 1.5  # its own best, not 0.05
    assert not s.finished and s.attempt_start == pytest.approx(t + 605)
    assert s.gpu_seconds >= spent  # the job's counters carry over


def test_new_progress_after_the_end_is_a_new_attempt_even_above_the_old_step() -> None:
    tracker = Tracker(TrackerConfig(thresholds=SHORT))
    for i in range(1, 11):  # stopped early at step 100 of 400 (early stopping), said final
        tracker.apply(KEY, ProgressReport(step=i * 10, max_steps=400, loss=1.0), T0 + i * 5)
    tracker.apply(KEY, ProgressReport(final=True), T0 + 51)
    assert one(tracker, T0 + 51).finished
    for i in range(1, 10):  # run again; its first report comes at step 110
        tracker.apply(KEY, ProgressReport(step=100 + i * 10, loss=1.0), T0 + 100 + i * 5)
    s = one(tracker, T0 + 150)
    assert (s.state, s.attempt, s.finished) == ("running", 2, False)


def test_a_new_max_steps_is_a_new_attempt() -> None:
    tracker = Tracker(TrackerConfig(thresholds=SHORT))
    for i in range(1, 6):
        tracker.apply(KEY, ProgressReport(step=i * 10, max_steps=100, loss=1.0), T0 + i * 5)
    tracker.apply(KEY, ProgressReport(step=60, max_steps=500, loss=1.0), T0 + 30)
    assert one(tracker, T0 + 30).attempt == 2


def test_a_resume_from_a_checkpoint_keeps_its_best_loss() -> None:
    tracker = Tracker(TrackerConfig(thresholds=SHORT))
    for i in range(1, 141):
        tracker.apply(KEY, ProgressReport(step=i, max_steps=300, loss=2.0 - i * 0.01), T0 + i)
    best = one(tracker, T0 + 140).best_loss
    # The node died at 140; the job restarts from its step-100 checkpoint.
    tracker.apply(KEY, ProgressReport(step=100, max_steps=300, loss=1.05), T0 + 300)
    s = one(tracker, T0 + 300)
    assert s.attempt == 2 and s.best_loss == best
    assert dict(s.wasted_gpu_seconds)  # every cause present, recompute among them


def test_a_new_pod_uid_or_reporter_start_time_is_a_new_attempt() -> None:
    tracker = Tracker(TrackerConfig(thresholds=SHORT))
    meta = RunMeta(source="push", alive=True, pod_uid="uid-1")
    tracker.apply(KEY, ProgressReport(step=50, loss=0.1), T0, meta)
    tracker.apply(KEY, ProgressReport(step=51, loss=0.1), T0 + 5, meta)
    tracker.set_meta(KEY, RunMeta(source="push", alive=True, pod_uid="uid-2"), T0 + 10)
    assert one(tracker, T0 + 10).attempt == 2

    other = Tracker(TrackerConfig(thresholds=SHORT))
    first = parse_native({"step": 10, "loss": 0.2, "start_time": T0 - 100}, T0).report
    other.apply(KEY, first, T0)
    other.apply(KEY, parse_native({"step": 11, "start_time": T0 - 100}, T0).report, T0 + 5)
    assert one(other, T0 + 5).attempt == 1  # the same process
    again = parse_native({"step": 12, "loss": 3.0, "start_time": T0 + 10}, T0 + 20).report
    other.apply(KEY, again, T0 + 20)
    s = one(other, T0 + 20)
    assert s.attempt == 2 and s.state == "running"  # loss 3.0 is no divergence from 0.2


def test_a_start_time_ahead_of_the_exporters_clock_is_not_clamped() -> None:
    # The reporter's clock runs apart from the exporter's: its start time identifies the
    # process and must not change with each report.
    tracker = Tracker(TrackerConfig(thresholds=SHORT))
    for i in range(5):
        report = parse_native({"step": i, "start_time": T0 + 10**6}, T0 + i).report
        tracker.apply(KEY, report, T0 + i)
    assert one(tracker, T0 + 5).attempt == 1


def test_a_hung_runs_throughput_falls_to_zero_after_a_few_of_its_intervals() -> None:
    tracker = Tracker(TrackerConfig(thresholds=SHORT))
    for i in range(20):  # 2 steps/s, a report every 5 s, then a deadlock; heartbeat on
        tracker.apply(KEY, ProgressReport(step=i * 10, loss=1.0), T0 + i * 5)
    last = T0 + 19 * 5
    assert one(tracker, last + 5).steps_per_second == pytest.approx(2.0)
    assert one(tracker, last + 14).steps_per_second == pytest.approx(2.0)
    for k in range(1, 5):
        tracker.apply(KEY, ProgressReport(step=190, loss=1.0), last + k * 5)
    s = one(tracker, last + 20)  # 3 intervals of 5 s without a step: 0, not 2
    assert s.steps_per_second == 0.0 and s.state == "running"  # stalled comes at 60 s
    assert one(tracker, last + 61).state == "stalled"


def _degrade(tracker: Tracker, fast: float, slow: float, minutes: int) -> tuple[int, float]:
    step, t = 0, 0.0
    for k in range(0, 1201, 5):  # fast for 20 minutes
        step, t = int(k * fast), float(k)
        tracker.apply(KEY, ProgressReport(step=step, max_steps=10**8, loss=1.0), T0 + t)
    for _ in range(minutes * 12):  # then slow
        step, t = step + int(slow * 5), t + 5
        tracker.apply(KEY, ProgressReport(step=step, max_steps=10**8, loss=1.0), T0 + t)
    return step, t


@pytest.mark.slow
def test_one_typical_pace_held_while_degraded_and_recovery_by_the_same_rule() -> None:
    th = Thresholds(stall_seconds=60, plateau_seconds=10**6)
    tracker = Tracker(TrackerConfig(thresholds=th, estimator=EstimatorConfig(short_window=60)))
    step, t = _degrade(tracker, 10.0, 4.0, 60)  # 40 % of its pace for an hour
    s = one(tracker, T0 + t)
    # Still degraded after an hour (more than nine tenths of its pace samples are slow by
    # then): the typical pace did not follow it down.
    assert s.state == "degraded" and s.typical_steps_per_second == pytest.approx(10, rel=0.05)
    assert "of its typical 10" in s.state_reason
    for _ in range(24):  # 5.5 steps/s: above 40 %, still below 60 % of 10
        step, t = step + 27, t + 5
        tracker.apply(KEY, ProgressReport(step=step, loss=1.0), T0 + t)
    assert one(tracker, T0 + t).state == "degraded"
    for _ in range(24):  # back to 9 steps/s: recovered
        step, t = step + 45, t + 5
        tracker.apply(KEY, ProgressReport(step=step, loss=1.0), T0 + t)
    assert one(tracker, T0 + t).state == "running"


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_a_plateau_does_not_flap_on_noise_around_its_best(seed: int) -> None:
    # With 0.5 % to leave a plateau (the bar to enter it), three of these four noisy flat
    # losses flap plateaued -> running -> plateaued; with 2 % none does.
    tracker = Tracker(TrackerConfig(thresholds=SHORT))
    rng = random.Random(seed)
    states = []
    for i in range(1, 900):  # improving for 200 s, then flat with 3 % noise
        t = float(i * 2)
        loss = (2.0 - min(t, 200) / 200) * (1 + rng.gauss(0, 0.03))
        tracker.apply(KEY, ProgressReport(step=i, loss=loss), T0 + t)
        states.append(one(tracker, T0 + t).state)
    changes = [k for k in range(1, len(states)) if states[k] != states[k - 1]]
    assert states[-1] == "plateaued"
    assert len(changes) == 1, [states[k] for k in changes]  # running -> plateaued, once


def test_a_final_push_from_a_process_that_exited_stays_finished() -> None:
    # Standalone: nothing says the process holds its 2 GPUs after its final report.
    tracker = Tracker(TrackerConfig(thresholds=SHORT))
    tracker.apply(KEY, ProgressReport(step=100, max_steps=100, final=True, gpus=2), T0)
    assert one(tracker, T0 + 45).state == "finished"
    assert one(tracker, T0 + 600).state == "finished"


def test_a_heartbeat_after_the_final_report_is_finished_but_running() -> None:
    tracker = Tracker(TrackerConfig(thresholds=SHORT))
    for k in range(0, 200, 30):  # the reporter's heartbeat goes on after finish()
        tracker.apply(KEY, ProgressReport(step=100, max_steps=100, final=True, gpus=2), T0 + k)
    s = one(tracker, T0 + 180)
    assert s.state == "finished-but-running", s.state_reason
    assert one(tracker, T0 + 180 + 600).state == "finished"  # it went quiet: it exited


def test_a_log_whose_steps_go_on_rounded_is_not_stalled_and_keeps_no_stale_step() -> None:
    """LeRobot prints its step exact below 1000 and rounded from there (``step:1K``, round
    118): the step read before is then no longer the run's (unknown, never the stale 800 on
    /metrics), and its lines of values keep coming, which is training going on, not a stall.
    When they stop, the run stalls. Fed as the log source feeds the tracker: each poll the
    accumulator's report with the value samples read since the last."""
    from dataclasses import replace

    from exporter.logs.accumulate import LogAccumulator
    from exporter.logs.parse import parse_message

    line = (
        "INFO 2026-06-12 10:58:46 ot_train.py:357 step:{s} smpl:32K ep:81 epch:2.53"
        " loss:{loss} grdn:34.8 lr:1.0e-05"
    )
    tracker = Tracker(TrackerConfig(thresholds=SHORT))
    acc = LogAccumulator()

    def poll(text: str, now: float) -> Any:
        for found in parse_message(text, now):
            acc.feed(found, now)
        samples = acc.take_samples()
        tracker.apply(KEY, replace(acc.report(), value_samples=samples), now)
        return one(tracker, now)

    assert poll(line.format(s=800, loss=1.5), T0).step == 800
    t = T0
    for i in range(1, 31):  # five minutes of rounded steps, a line every 10 s
        t = T0 + 10 * i
        s = poll(line.format(s=f"{i}K", loss=1.5 - i * 0.01), t)
        assert s.state == "running" and s.step is None, (i, s.state, s.step)
    assert s.loss == pytest.approx(1.2)
    # The same line again and again (a loop stuck printing) is no progress, nor are no lines:
    # stalled once the threshold has passed since the last line that moved.
    last = line.format(s="30K", loss=1.5 - 30 * 0.01)
    assert poll(last, t + 30).state == "running"
    assert poll(last, t + SHORT.stall_seconds + 5).state == "stalled"
    assert poll("", t + SHORT.stall_seconds + 15).state == "stalled"
