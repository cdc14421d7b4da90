"""Tracker: merging, rate and ETA, stall and plateau times, GPU-seconds, retention, caps."""

from __future__ import annotations

import math

import pytest

from exporter.core.estimate import EstimatorConfig, estimate, naive_eta_seconds, throughput
from exporter.core.model import ProgressReport, RunKey, RunMeta
from exporter.core.thresholds import Thresholds
from exporter.core.tracker import Tracker, TrackerConfig
from exporter.core.wire import parse_bytes

from .conftest import T0, kubeflow_fixture_bodies

KEY = RunKey("ns", "pod-0", "job")
OTHER = RunKey("other", "pod-1", "job2")


def one(tracker: Tracker, now: float, key: RunKey = KEY):
    return next(s for s in tracker.snapshot(now) if s.key == key)


def test_transformers_run_merges_to_complete_with_last_step_kept() -> None:
    tracker = Tracker()
    bodies = kubeflow_fixture_bodies()
    times = [T0, T0 + 5.2, T0 + 12.6]
    for body, t in zip(bodies, times, strict=True):
        tracker.apply(KEY, parse_bytes(body, t + 1e6).report, t)
    s = one(tracker, T0 + 13)
    assert s.step == 20  # the final report carried no step; the last one is kept
    assert s.max_steps == 50
    assert s.finished and s.state == "finished"
    # Finished: no ETA is exported (a finished run promises no completion time).
    assert s.progress == 1.0 and s.eta_seconds is None
    assert s.loss == pytest.approx(6.8996437072753904)
    assert dict(s.metrics)["train_loss"] == pytest.approx(6.902395248413086)


def test_steady_rate_and_eta() -> None:
    tracker = Tracker()
    for i in range(11):
        tracker.apply(KEY, ProgressReport(step=i * 10, max_steps=1000), T0 + i * 5)
    s = one(tracker, T0 + 50)
    assert s.steps_per_second == pytest.approx(2.0)
    assert s.eta_seconds == pytest.approx(900 / 2.0)
    assert s.last_step_timestamp == T0 + 50


def test_resume_from_checkpoint_jump_is_not_speed() -> None:
    tracker = Tracker()
    tracker.apply(KEY, ProgressReport(step=50_000, max_steps=60_000), T0)
    assert one(tracker, T0).steps_per_second is None
    for i in range(1, 6):
        tracker.apply(KEY, ProgressReport(step=50_000 + i * 10), T0 + i * 10)
    s = one(tracker, T0 + 50)
    assert s.steps_per_second == pytest.approx(1.0)
    assert s.eta_seconds == pytest.approx(9_950.0)


def test_evaluation_pause_does_not_collapse_throughput() -> None:
    samples = [(T0 + i * 10.0, i * 20) for i in range(30)]
    t_end, s_end = samples[-1]
    samples.append((t_end + 600.0, s_end + 20))  # a 10-minute evaluation inside one interval
    samples += [(t_end + 600.0 + i * 10.0, s_end + 20 + i * 20) for i in range(1, 4)]
    tp = throughput(samples)
    assert tp is not None
    assert tp.steps_per_second == pytest.approx(2.0)
    # ...but the ETA pays for pauses: 600 s of overhead spread over the steps made.
    assert tp.pause_seconds_per_step * tp.steps_per_second > 0.1


def test_throughput_drop_is_seen_within_the_short_window() -> None:
    samples = [(T0 + i * 10.0, i * 40) for i in range(360)]  # 4 steps/s for an hour
    t, s = samples[-1]
    samples += [(t + i * 10.0, s + i * 20) for i in range(1, 61)]  # then 2 steps/s for 10 min
    tp = throughput(samples, EstimatorConfig())
    assert tp is not None and tp.steps_per_second == pytest.approx(2.0)


def test_eta_helpers() -> None:
    assert estimate(None, 100, None) is None
    assert naive_eta_seconds(100.0, 0, 10) is None
    assert naive_eta_seconds(100.0, 50, 100) == pytest.approx(100.0)


def test_step_regression_is_a_restart_counted_and_rebaselined() -> None:
    tracker = Tracker()
    reasons: list[str] = []
    for i in range(5):
        tracker.apply(KEY, ProgressReport(step=1000 + i * 100, max_steps=5000), T0 + i * 10)
    tracker.apply(KEY, ProgressReport(step=800), T0 + 100, problem=reasons.append)
    s = one(tracker, T0 + 100)
    assert reasons == ["step_regressed"]
    assert s.step == 800
    assert s.steps_per_second is None  # a new baseline, not a negative rate
    assert s.last_step_timestamp == T0 + 100


def test_reported_eta_is_fallback_and_ages() -> None:
    tracker = Tracker()
    tracker.apply(KEY, ProgressReport(progress=0.4, eta_seconds=600), T0)
    assert one(tracker, T0 + 100).eta_seconds == pytest.approx(500)
    assert one(tracker, T0 + 700).eta_seconds == 0.0
    # Quiet for longer than the report timeout: silent, and a silent run promises nothing.
    quiet = one(tracker, T0 + 10_000)
    assert quiet.state == "silent" and quiet.eta_seconds is None


def test_best_loss_prefers_eval_loss_and_tracks_improvement_time() -> None:
    # A 100 s plateau window: train loss is smoothed over 10 s, one report weighs at most 0.3.
    tracker = Tracker(TrackerConfig(Thresholds(plateau_seconds=100)))
    tracker.apply(KEY, ProgressReport(step=1, loss=2.0), T0)
    tracker.apply(KEY, ProgressReport(step=2, loss=1.0), T0 + 10)
    s = one(tracker, T0 + 10)
    assert s.best_loss == pytest.approx(1.7)  # 2.0 moved 30 % toward 1.0
    assert s.last_improvement_timestamp == T0 + 10
    tracker.apply(KEY, ProgressReport(step=3, loss=2.5), T0 + 20)  # average rises: no record
    s = one(tracker, T0 + 20)
    assert (s.best_loss, s.last_improvement_timestamp) == (pytest.approx(1.7), T0 + 10)
    # Once eval loss is reported, best follows eval loss only, even if train loss is lower.
    tracker.apply(KEY, ProgressReport(step=4, loss=0.9, eval_loss=1.8), T0 + 30)
    tracker.apply(KEY, ProgressReport(step=5, loss=0.5), T0 + 40)
    s = one(tracker, T0 + 40)
    assert (s.best_loss, s.last_improvement_timestamp) == (1.8, T0 + 30)
    tracker.apply(KEY, ProgressReport(step=6, eval_loss=1.6), T0 + 50)
    assert one(tracker, T0 + 50).best_loss == 1.6
    # An improvement smaller than 0.5 % is noise, not progress.
    tracker.apply(KEY, ProgressReport(step=7, eval_loss=1.595), T0 + 60)
    assert one(tracker, T0 + 60).last_improvement_timestamp == T0 + 50


def test_noise_around_a_flat_loss_is_a_plateau_not_progress() -> None:
    import random

    rng = random.Random(3)
    tracker = Tracker(TrackerConfig(Thresholds(plateau_seconds=600)))
    for i in range(400):  # 400 reports 5 s apart, 5 % noise around a flat 2.0
        tracker.apply(
            KEY, ProgressReport(step=i + 1, loss=2.0 * (1 + rng.gauss(0, 0.05))), T0 + 5 * i
        )
    s = one(tracker, T0 + 5 * 399)
    assert s.state == "plateaued", s.last_improvement_timestamp - T0


def test_nan_loss_reaches_snapshot_and_marks_diverged_but_not_best() -> None:
    tracker = Tracker()
    tracker.apply(KEY, ProgressReport(step=1, loss=1.0), T0)
    tracker.apply(KEY, ProgressReport(step=2, loss=math.nan), T0 + 1)
    s = one(tracker, T0 + 1)
    assert math.isnan(s.loss)
    assert s.best_loss == 1.0
    assert s.state == "diverged"


def test_states_over_time() -> None:
    tracker = Tracker(TrackerConfig(Thresholds(stall_seconds=100, plateau_seconds=300)))
    tracker.apply(KEY, ProgressReport(loss=3.0), T0)
    assert one(tracker, T0).state == "waiting"
    tracker.apply(KEY, ProgressReport(step=1, loss=3.0), T0 + 1)
    assert one(tracker, T0 + 50).state == "running"
    assert one(tracker, T0 + 101).state == "stalled"
    for i in range(2, 40):  # steps advance, loss never beats 3.0
        tracker.apply(KEY, ProgressReport(step=i, loss=3.1), T0 + i * 10)
    assert one(tracker, T0 + 391).state == "plateaued"


def test_gpu_seconds_and_stalled_gpu_seconds_are_exact() -> None:
    tracker = Tracker(TrackerConfig(Thresholds(stall_seconds=100)))
    tracker.apply(KEY, ProgressReport(step=1), T0, RunMeta(gpus=8))
    tracker.apply(KEY, ProgressReport(step=2), T0 + 50)
    # Step frozen from T0+50: stalled from T0+150.
    s = one(tracker, T0 + 250)
    assert s.gpu_seconds == pytest.approx(8 * 250)
    assert s.stalled_gpu_seconds == pytest.approx(8 * 100)
    # Progress resumes: the stall stops accruing, the total goes on.
    tracker.apply(KEY, ProgressReport(step=3), T0 + 300)
    s = one(tracker, T0 + 400)
    assert s.gpu_seconds == pytest.approx(8 * 400)
    assert s.stalled_gpu_seconds == pytest.approx(8 * 150)
    # Repeated snapshots never double count.
    one(tracker, T0 + 400)
    assert one(tracker, T0 + 400).gpu_seconds == pytest.approx(8 * 400)


def test_finished_run_accrues_gpu_seconds_but_never_stalls() -> None:
    tracker = Tracker(TrackerConfig(Thresholds(stall_seconds=10)))
    tracker.apply(KEY, ProgressReport(step=100, max_steps=100, final=True, gpus=2), T0)
    s = one(tracker, T0 + 1000)
    assert s.gpu_seconds == pytest.approx(2000) and s.stalled_gpu_seconds == 0


def test_gone_runs_keep_final_values_for_retention_then_disappear() -> None:
    tracker = Tracker(TrackerConfig(retention=600))
    tracker.apply(KEY, ProgressReport(step=7, loss=0.3), T0, RunMeta(gpus=1))
    tracker.apply(OTHER, ProgressReport(step=9), T0)
    tracker.mark_gone(KEY, T0 + 100)
    tracker.expire(T0 + 650)
    s = one(tracker, T0 + 650)
    assert s.gone and s.step == 7 and s.loss == 0.3
    assert s.gpu_seconds == pytest.approx(100)  # frozen when the pod went away
    assert tracker.expire(T0 + 700) == [KEY]
    assert [s.key for s in tracker.snapshot(T0 + 700)] == [OTHER]


def test_idle_push_runs_expire_in_standalone() -> None:
    tracker = Tracker(TrackerConfig(retention=10))
    tracker.apply(KEY, ProgressReport(step=1), T0)
    tracker.expire(T0 + 50, idle_after=100)
    assert len(tracker) == 1
    tracker.expire(T0 + 101, idle_after=100)
    assert tracker.expire(T0 + 112, idle_after=100) == [KEY]


def test_custom_metrics_are_capped_per_run_and_counted() -> None:
    tracker = Tracker(TrackerConfig(max_custom_metrics=32))
    reasons: list[str] = []
    for batch in range(10):
        metrics = tuple((f"m{batch}_{i}", float(i)) for i in range(1000))
        tracker.apply(KEY, ProgressReport(metrics=metrics), T0 + batch, problem=reasons.append)
    tracker.apply(OTHER, ProgressReport(metrics=(("ok", 1.0),)), T0)
    assert len(one(tracker, T0 + 10).metrics) == 32
    assert reasons.count("metric_cap") == 10_000 - 32
    assert one(tracker, T0 + 10, OTHER).metrics == (("ok", 1.0),)
    # Known names keep updating after the cap is reached.
    tracker.apply(KEY, ProgressReport(metrics=(("m0_0", 42.0),)), T0 + 20)
    assert dict(one(tracker, T0 + 20).metrics)["m0_0"] == 42.0


def test_run_cap_refuses_new_runs_only() -> None:
    tracker = Tracker(TrackerConfig(max_runs=2))
    reasons: list[str] = []
    assert tracker.apply(KEY, ProgressReport(step=1), T0)
    assert tracker.apply(OTHER, ProgressReport(step=1), T0)
    assert not tracker.apply(
        RunKey("x", "y", "z"), ProgressReport(step=1), T0, problem=reasons.append
    )
    assert reasons == ["run_cap"]
    assert tracker.apply(KEY, ProgressReport(step=2), T0 + 1)
    assert len(tracker) == 2


def test_one_runs_reports_never_touch_another_run() -> None:
    tracker = Tracker()
    tracker.apply(KEY, ProgressReport(step=5, loss=1.0), T0)
    tracker.apply(OTHER, ProgressReport(step=9, loss=math.nan, final=True), T0 + 1)
    s = one(tracker, T0 + 2)
    assert (s.step, s.loss, s.finished) == (5, 1.0, False)


def test_progress_from_epochs_or_reported_percentage() -> None:
    tracker = Tracker()
    tracker.apply(KEY, ProgressReport(epoch=1.5, max_epochs=3.0), T0)
    assert one(tracker, T0).progress == 0.5
    tracker.apply(OTHER, ProgressReport(progress=0.25), T0)
    assert one(tracker, T0, OTHER).progress == 0.25
    assert one(tracker, T0, OTHER).last_step_timestamp == T0


def test_per_run_threshold_overrides_from_reports_and_meta() -> None:
    tracker = Tracker(TrackerConfig(Thresholds(stall_seconds=1800)))
    tracker.apply(KEY, ProgressReport(step=1, thresholds=(("stall_seconds", 60.0),)), T0)
    tracker.apply(OTHER, ProgressReport(step=1), T0)
    assert one(tracker, T0 + 61).state == "stalled"
    assert one(tracker, T0 + 61, OTHER).state == "running"
    assert one(tracker, T0, OTHER).thresholds == Thresholds(stall_seconds=1800)
    # An annotation (meta) beats the report's own override.
    tracker.set_meta(KEY, RunMeta(thresholds=(("stall_seconds", 120.0),)), T0 + 1)
    s = one(tracker, T0 + 100)
    assert s.thresholds.stall_seconds == 120 and s.state == "running"


def test_deadline_and_budget_from_reports_and_annotations() -> None:
    tracker = Tracker()
    tracker.apply(
        KEY, ProgressReport(step=1, deadline_timestamp=T0 + 3600, gpu_hours_budget=10), T0
    )
    s = one(tracker, T0)
    assert (s.deadline_timestamp, s.gpu_seconds_budget) == (T0 + 3600, 36000.0)
    tracker.set_meta(KEY, RunMeta(deadline_timestamp=T0 + 60), T0)
    s = one(tracker, T0)
    assert (s.deadline_timestamp, s.gpu_seconds_budget) == (T0 + 60, 36000.0)


# -- the one classifier, through the tracker --------------------------------------------

SHORT = Thresholds(stall_seconds=60, report_timeout_seconds=60, plateau_seconds=3600)


def _steps(tracker: Tracker, key: RunKey, until: int, meta: RunMeta | None = None) -> None:
    for t in range(0, until + 1, 5):
        tracker.apply(key, ProgressReport(step=t, max_steps=10_000, loss=1.0), T0 + t, meta)


def test_a_silent_run_is_stalled_while_its_pod_runs_and_silent_when_nobody_knows() -> None:
    tracker = Tracker(TrackerConfig(thresholds=SHORT))
    pod = RunKey("ns", "pod-0", "k8s")
    _steps(tracker, KEY, 100)  # standalone: nothing tells whether it lives
    _steps(tracker, pod, 100, RunMeta(gpus=8, alive=True))  # Kubernetes: its pod runs
    # Both went quiet at T0 + 100.
    assert one(tracker, T0 + 159).state == "running"
    assert one(tracker, T0 + 159, pod).state == "running"
    quiet, hung = one(tracker, T0 + 160), one(tracker, T0 + 160, pod)
    assert (quiet.state, hung.state) == ("silent", "stalled")
    assert quiet.state_since == hung.state_since == T0 + 160
    assert hung.state_reason == "stalled for 1m (threshold 1m)"
    assert quiet.eta_seconds is None and hung.eta_seconds is None
    # Stalled GPU-seconds accrue for the hung pod from the moment it became stalled.
    assert one(tracker, T0 + 220, pod).stalled_gpu_seconds == pytest.approx(8 * 60)
    assert one(tracker, T0 + 220).stalled_gpu_seconds == 0


def test_heartbeat_with_a_frozen_step_is_stalled_and_since_is_exact() -> None:
    tracker = Tracker(TrackerConfig(thresholds=SHORT))
    _steps(tracker, KEY, 100)
    for t in range(105, 400, 30):  # the reporter's heartbeat: the same step again
        tracker.apply(KEY, ProgressReport(step=100, max_steps=10_000, loss=1.0), T0 + t)
    s = one(tracker, T0 + 300)  # first looked at long after it became stalled
    assert s.state == "stalled" and s.state_since == T0 + 160
    assert one(tracker, T0 + 390).state_since == T0 + 160  # unchanged while it holds
    tracker.apply(KEY, ProgressReport(step=105, max_steps=10_000, loss=1.0), T0 + 400)
    s = one(tracker, T0 + 400)
    assert s.state == "running" and s.state_since == T0 + 400 and s.eta_seconds is not None


def test_throughput_drop_against_the_runs_own_typical_pace_is_degraded() -> None:
    cfg = TrackerConfig(thresholds=SHORT, estimator=EstimatorConfig(short_window=60))
    tracker = Tracker(cfg)
    step = 0
    for t in range(0, 1201, 5):  # 10 steps/s for 20 minutes
        step = t * 10
        tracker.apply(KEY, ProgressReport(step=step, max_steps=10**7, loss=1.0), T0 + t)
    assert one(tracker, T0 + 1200).state == "running"
    for t in range(1205, 1501, 5):  # then 3 steps/s
        step += 15
        tracker.apply(KEY, ProgressReport(step=step, max_steps=10**7, loss=1.0), T0 + t)
    s = one(tracker, T0 + 1500)
    assert s.state == "degraded", s.state_reason
    assert s.steps_per_second == pytest.approx(3.0, rel=0.05)
    assert "of its typical 10" in s.state_reason
    assert s.eta_seconds is not None  # a slow run still promises a (later) finish


def test_a_failed_pod_makes_a_failed_run() -> None:
    tracker = Tracker(TrackerConfig(thresholds=SHORT))
    _steps(tracker, KEY, 50, RunMeta(gpus=8, alive=True))
    tracker.set_meta(KEY, RunMeta(gpus=8, alive=False, pod_failed=True), T0 + 60)
    tracker.mark_gone(KEY, T0 + 60)
    s = one(tracker, T0 + 70)
    assert s.state == "failed" and s.state_since == T0 + 60 and s.eta_seconds is None


def test_a_report_waits_for_one_batch_of_a_pass_not_the_whole_pass() -> None:
    """A scrape of many runs holds the tracker lock a batch at a time, so
    a push arriving mid-pass is merged before the pass ends (before: it waited for the
    whole pass, 3.6 s at 50,000 runs)."""
    import threading

    from exporter.core.tracker import SNAPSHOT_BATCH

    tracker = Tracker(TrackerConfig(max_runs=5 * SNAPSHOT_BATCH))
    for i in range(5 * SNAPSHOT_BATCH):
        tracker.apply(RunKey("ns", f"p{i}", "j"), ProgressReport(step=1), T0)
    merged = threading.Event()
    seen_when_merged: list[int] = []
    calls = 0

    def encode(key: RunKey, run: object) -> RunKey:
        nonlocal calls
        calls += 1
        if calls == 1:  # mid-pass: a report arrives from another thread
            threading.Thread(
                target=lambda: (tracker.apply(KEY, ProgressReport(step=2), T0 + 1), merged.set())
            ).start()
        if merged.is_set() and not seen_when_merged:
            seen_when_merged.append(calls)
        return key

    for index, _ in enumerate(tracker.save(T0 + 1, encode)):
        if index % SNAPSHOT_BATCH == SNAPSHOT_BATCH - 1:
            merged.wait(0.05)  # the lock is free between batches
    assert merged.is_set()
    assert seen_when_merged and seen_when_merged[0] <= 2 * SNAPSHOT_BATCH + 1


def test_the_eta_counts_down_between_reports_to_a_fixed_completion_time() -> None:
    """The ETA is computed for the moment of the scrape, not of the last report."""
    tracker = Tracker()
    for i in range(11):
        tracker.apply(KEY, ProgressReport(step=i * 10, max_steps=1000), T0 + i * 5)
    at_report = one(tracker, T0 + 50)
    later = one(tracker, T0 + 65)
    assert at_report.eta_seconds == pytest.approx(450.0)
    assert later.eta_seconds == pytest.approx(435.0)  # 15 s later, 15 s less
    assert later.eta_timestamp == at_report.eta_timestamp == pytest.approx(T0 + 500.0)
    # The run's own ETA (no step to rate) counts down the same way.
    tracker.apply(OTHER, ProgressReport(eta_seconds=100.0), T0)
    assert one(tracker, T0 + 30, OTHER).eta_seconds == pytest.approx(70.0)
    assert one(tracker, T0 + 30, OTHER).eta_timestamp == pytest.approx(T0 + 100.0)


def test_a_run_sampled_every_second_keeps_its_evaluations_in_view() -> None:
    """A log chunk every 20 s brings a sample a second (the bar's clock). Close samples are
    merged, so the 512 kept reach back past an evaluation 16 minutes ago and its time is
    still paid for in the ETA; one sample a second would have forgotten it in 8.5 minutes."""
    tracker = Tracker()
    t, step = T0, 0
    tracker.apply(KEY, ProgressReport(step=0, max_steps=10_000), t)
    ticks: list[tuple[float, int]] = []
    while t < T0 + 1800:
        t += 1.0
        step += 1
        if step % 1000 == 0:
            t += 60.0  # a one-minute evaluation every 1,000 steps
        ticks.append((t, step))
        if len(ticks) == 20:  # a chunk: its newest frame now, the older ones as samples
            samples = tuple(ticks[:-1])
            tracker.apply(KEY, ProgressReport(step=step, max_steps=10_000, step_samples=samples), t)
            ticks = []
    (s,) = tracker.snapshot(t)
    remaining = 10_000 - step
    truth = remaining + 60.0 * (10_000 // 1000 - step // 1000 - 1)  # the last one ends it
    assert s.eta_seconds == pytest.approx(truth, rel=0.03)


def test_a_bar_clock_cannot_put_samples_before_the_estimators_window() -> None:
    """Bar-clock samples come from the log's own text: one claiming to be a day old is
    dropped, so a bogus elapsed time cannot stretch the first interval over a day."""
    tracker = Tracker()
    day = 86_400.0
    bogus = ((T0 - day, 1), (T0 - 20, 2), (T0 - 10, 3))
    tracker.apply(KEY, ProgressReport(step=4, max_steps=100, step_samples=bogus), T0)
    run = tracker._runs[KEY]
    assert [t - T0 for t, _ in run.samples] == [-20, -10, 0]


def test_a_restated_status_does_not_take_the_runs_source_from_a_first_hand_one() -> None:
    """The TrainJob source restates what a log or push reports first-hand: whichever reads
    first, the run is the first-hand source's (its info series does not flip, and the
    write-back does not take the run's progress for the TrainJob's own)."""
    from exporter.core.model import TRAINJOB_SOURCE

    for order in (("log", TRAINJOB_SOURCE), (TRAINJOB_SOURCE, "log")):
        tracker = Tracker()
        key = RunKey("ml", "llm-node-0", "llm")
        for i, source in enumerate(order * 2):
            tracker.apply(key, ProgressReport(step=i + 1), T0 + i, RunMeta(source=source))
        (snap,) = tracker.snapshot(T0 + 10)
        assert snap.meta.source == "log", order
    alone = Tracker()
    alone.apply(key, ProgressReport(step=1), T0, RunMeta(source=TRAINJOB_SOURCE))
    assert alone.snapshot(T0)[0].meta.source == TRAINJOB_SOURCE


def test_only_a_fresh_restated_status_makes_the_log_wait() -> None:
    """A TrainJob status written 10 s ago wins over the log for a while (structured wins);
    one written two hours ago is old news and does not silence the process' own log."""
    from exporter.core.model import TRAINJOB_SOURCE

    now = T0 + 10_000
    for age, wins in ((10.0, True), (7200.0, False)):
        tracker = Tracker()
        key = RunKey("ml", "llm-node-0", "llm")
        report = ProgressReport(step=7, timestamp=now - age, format="kubeflow")
        tracker.apply(key, report, now, RunMeta(source=TRAINJOB_SOURCE))
        assert tracker.structured_recently(key, now + 1) is wins, age
    tracker.apply(key, ProgressReport(step=8, timestamp=now - 7200), now, RunMeta(source="push"))
    assert tracker.structured_recently(key, now + 1), "a first-hand push wins, however dated"


def test_log_step_samples_say_when_a_step_was_made_and_when_it_was_still_there() -> None:
    """A log report's step samples: one at the report's own step gives that step's time
    (a Trainer log dict's line time, not the poll's); one at the last sample's step, later,
    moves that sample to when the step was still there (a bar redrawn after an evaluation),
    so the pause lands in the interval that ends there. Nothing moves back in time."""
    tracker = Tracker()
    log = {"max_steps": 600, "format": "log"}
    tracker.apply(KEY, ProgressReport(step=100, **log), T0)
    tracker.apply(KEY, ProgressReport(step=238, step_samples=((T0 + 40, 230),), **log), T0 + 52)
    run = tracker._runs[KEY]
    assert list(run.samples)[-1] == (T0 + 52, 238)
    report = ProgressReport(step=258, step_samples=((T0 + 58.9, 238), (T0 + 65.6, 258)), **log)
    tracker.apply(KEY, report, T0 + 66)
    assert list(run.samples)[-2:] == [(T0 + 58.9, 238), (T0 + 65.6, 258)]
    # A "still" sample older than the last one, or in the future, changes nothing.
    report = ProgressReport(step=270, step_samples=((T0 + 60.0, 258), (T0 + 99.0, 258)), **log)
    tracker.apply(KEY, report, T0 + 70)
    assert list(run.samples)[-2:] == [(T0 + 65.6, 258), (T0 + 70, 270)]
