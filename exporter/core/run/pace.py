"""A run's pace: its step samples, throughput and ETA (cached per new sample), its typical
pace, and the :class:`~exporter.core.states.Observation` the classifier judges it by."""

from __future__ import annotations

from ..estimate import (
    MIN_ETA_INTERVALS,
    Estimate,
    Throughput,
    coalesces,
    estimate,
    forecast_due,
    quantile,
    record_errors,
    seconds_per_remaining_step,
    seconds_per_step,
    throughput,
)
from ..series import Series
from ..states import Observation
from .state import RunConfig, RunState, thresholds_of

# The run's typical pace (for the throughput-drop predicate) is the 90th percentile of its
# steps/s over this window, sampled every PACE_FRACTION of the rate window (at least 1 s).
PACE_WINDOW = 7200.0
PACE_FRACTION = 1 / 10


PACE_MIN_POINTS = 3
PACE_QUANTILE = 0.9


# Throughput falls to 0 once the step has not advanced for this many of the run's own
# typical intervals between advances (and at least IDLE_MIN_SECONDS): a hung job must not
# keep showing its last pace until the stall threshold.
IDLE_INTERVALS = 3.0
IDLE_MIN_SECONDS = 5.0


def add_sample(samples: Series[int], t: float, step: int) -> None:
    """Add a sample read from a progress bar's own clock (a log chunk brings one a second),
    merged with the newest when they are close (estimate.coalesces). Reports themselves are
    always added: a run pushing every second still has its ETA after two reports."""
    if coalesces(samples, t):
        samples.replace_last(t, step)
    else:
        samples.append(t, step)


def current_pace(run: RunState, tp: Throughput | None, now: float) -> float | None:
    """The run's steps/s now: its pace, or 0 once the step has not advanced for
    ``IDLE_INTERVALS`` of its own typical intervals (a hung job does not keep its pace)."""
    if tp is None or not run.samples:
        return None
    idle_after = max(IDLE_MIN_SECONDS, IDLE_INTERVALS * tp.interval_seconds)
    return 0.0 if now - run.samples[-1][0] > idle_after else tp.steps_per_second


def observe(config: RunConfig, run: RunState, now: float, tp: Throughput | None) -> Observation:
    """The classifier's view of ``run``. Without a throughput (the stall check on every
    report) the typical pace is not computed either: only the throughput-drop predicate
    needs it, and it cannot hold without a throughput."""
    return Observation(
        now=now,
        first_report=run.first_report,
        last_report=run.last_report,
        last_step=run.last_step,
        last_improvement=run.last_improvement,
        finished=run.finished,
        progress=progress_of(run),
        loss=run.loss,
        eval_loss=run.eval_loss,
        best_train_loss=run.best_train_loss,
        gpus=run.gpus,
        gone_since=run.gone_since,
        alive=run.meta.alive,
        pod_failed=run.meta.pod_failed,
        steps_per_second=tp.steps_per_second if tp else None,
        typical_steps_per_second=typical_pace(config, run, now) if tp is not None else None,
        bar_end_only=run.total_from_bar,
        failure=run.failure,
        failure_at=run.failure_at,
    )


def typical_pace(config: RunConfig, run: RunState, now: float) -> float | None:
    """The run's typical pace: the 90th percentile of its recent pace, or, while it is
    degraded, the pace it had before the drop."""
    if run.pace_reference is not None:
        return run.pace_reference
    recent = [v for t, v in run.pace if now - t <= PACE_WINDOW]
    if len(recent) < PACE_MIN_POINTS:
        return None
    return quantile(recent, PACE_QUANTILE)


def record_pace(config: RunConfig, run: RunState, now: float) -> None:
    """At a step advance: hold the typical pace while the run is below its drop ratio
    (degraded: it recovers only by reaching the ratio of the pace it had before, and
    the typical pace must not follow it down), else sample the pace now and then. At
    step advances, not at scrapes: the state must not depend on who looked when."""
    every = max(1.0, config.estimator.short_window * PACE_FRACTION)
    if run.pace_reference is None and run.pace and now - run.pace[-1][0] < every:
        return  # judged at the pace's own cadence (every advance while degraded)
    tp = run_throughput(config, run)
    if tp is None:
        return
    typical = typical_pace(config, run, now)
    if typical is not None:
        slow = tp.steps_per_second < thresholds_of(config, run).throughput_drop_ratio * typical
        run.pace_reference = typical if slow else None
    if run.pace_reference is None:
        run.pace.append(now, tp.steps_per_second)
        if run.attempt_size is None and run.size is not None:
            run.attempt_size = run.size[0]


def progress_of(run: RunState) -> float | None:
    if run.finished:
        return 1.0
    if run.step is not None and run.max_steps:
        return min(1.0, run.step / run.max_steps)
    if run.reported_progress is not None:
        return run.reported_progress
    if run.epoch is not None and run.max_epochs:
        return min(1.0, run.epoch / run.max_epochs)
    return None


def run_throughput(config: RunConfig, run: RunState) -> Throughput | None:
    # The total too: the seconds per step weigh the two paces at the horizon it leaves.
    key = (len(run.samples), run.samples[-1][0] if run.samples else 0.0, run.max_steps)
    if run.tp_cache is None or run.tp_cache[0] != key:
        tp = throughput(run.samples, config.estimator)
        per_step = _per_step(run, tp) if tp is not None and tp.steps_per_second > 0 else None
        run.tp_cache = (key, tp, per_step)
        if tp is not None and per_step is not None and tp.intervals >= MIN_ETA_INTERVALS:
            t, step = run.samples[-1]
            if forecast_due(run.forecasts, t, run.samples[0][0]):
                run.pace_forecasts.append((t, step, seconds_per_step(tp)))
                run.forecasts.append((t, step, per_step))
    return run.tp_cache[1]


def run_estimate(run: RunState, tp: Throughput | None) -> Estimate | None:
    """The ETA from the last step sample, with its band from the run's record; computed
    once per new sample (or new total), not at every scrape."""
    key = (run.tp_cache[0] if run.tp_cache else None, run.step)
    if run.est_cache is None or run.est_cache[0] != key:
        errors = record_errors(run.forecasts, *run.samples[-1]) if run.samples else []
        per_step = run.tp_cache[2] if run.tp_cache else None
        run.est_cache = (key, estimate(run.step, run.max_steps, tp, errors, per_step))
    return run.est_cache[1]


def _per_step(run: RunState, tp: Throughput) -> float:
    """Seconds per remaining step at the last sample: the recent pace's and the run's mean
    pace's since warm-up, weighed by the run's record, met halfway by the pace over the
    stretch just past as long as the time left (estimate.seconds_per_remaining_step)."""
    t, step = run.samples[-1]
    remaining = max(0, (run.max_steps or step) - step)
    return seconds_per_remaining_step(
        seconds_per_step(tp), run.pace_forecasts, t, step, remaining, tp.warmup_end
    )
