"""One report merged into a run: attempts (a re-run, a resume, a new process), steps and
their samples, loss and plateau, checkpoints, tokens, custom metrics, Katib observations."""

from __future__ import annotations

import math
import statistics
import sys
from collections import deque
from dataclasses import replace

from ..model import SECONDARY_SOURCES, Observed, ProgressReport, RunMeta
from .accrual import at_risk, charge_pause, lost_since_checkpoint, productive
from .pace import add_sample, record_pace
from .state import Problem, RunConfig, RunState, thresholds_of
from .tokens import MFU_OUT_OF_RANGE, PRINTED_MFU, check_tokens, merge_tokens

# The best training loss is taken on a moving average, not on raw values: the minimum of a
# noisy series mostly records one lucky batch, and then stops improving long before
# training does (a false plateau). The average's time constant is this fraction of the
# run's plateau window: short enough to see a plateau well within the window, long enough
# to average many reports.
LOSS_SMOOTHING_FRACTION = 1 / 10
# However long since the last report, one report never moves the average more than this:
# after an evaluation pause the first noisy value must not become the best on its own.
LOSS_SMOOTHING_MAX_WEIGHT = 0.3
# An improvement must beat the best by this fraction (like early stopping's min_delta), so
# that noise around a flat loss does not count as progress.
MIN_IMPROVEMENT = 5e-3
# While plateaued, only an improvement of this fraction below the best at the plateau's
# onset ends it: noise around a flat loss beats MIN_IMPROVEMENT now and then, and a plateau
# that ends on one lucky average only to return a window later flaps (a page each time).
PLATEAU_EXIT_IMPROVEMENT = 0.02
# A step that goes back to at least this fraction of where it was, with the same total,
# is a resume from a checkpoint (it keeps its best loss); further back is a re-run.
RESUME_FRACTION = 0.5
# Observations (each reported value with its time) kept per Katib trial run until the Katib
# reporter reads them: minutes of one value a second between its reads.
OBSERVATIONS_KEPT = 512


def _merge_checkpoint(run: RunState, r: ProgressReport, now: float) -> None:
    """A checkpoint newer than the last one known (by its time, else by its step) resets
    what is at risk. Reports restate the last checkpoint; only a new one counts. One
    stated as saved a while ago keeps the work since at risk, at most the run's GPUs times
    that while (it may have stalled since)."""
    if r.checkpoint_seconds is not None:
        run.checkpoint_seconds = max(run.checkpoint_seconds or 0.0, r.checkpoint_seconds)
    if r.checkpoint_step is None and r.checkpoint_timestamp is None:
        return
    at = min(now, r.checkpoint_timestamp if r.checkpoint_timestamp is not None else now)
    if run.checkpoint_timestamp is not None:
        if r.checkpoint_timestamp is not None and at <= run.checkpoint_timestamp:
            return  # the same checkpoint restated, or an older one
        if r.checkpoint_timestamp is None and r.checkpoint_step == run.checkpoint_step:
            return
    since = min(at_risk(run), run.gpus * max(0.0, now - at))
    run.productive_mark = productive(run) - since
    run.checkpoint_timestamp = at
    if r.checkpoint_step is not None:
        run.checkpoint_step = r.checkpoint_step
    elif run.step is not None:
        run.checkpoint_step = run.step


def new_attempt(run: RunState, now: float, keep_best: bool) -> None:
    """Start a new attempt of ``run``: its own finished flag, pace and typical pace, and,
    unless it resumes from a checkpoint (``keep_best``), its own best loss and plateau
    history. What the job spent (GPU-seconds, waste by cause) carries over."""
    paces = [v for _, v in run.pace]
    if run.attempt_size is not None and len(paces) >= 3:
        # The attempt that ends: its size and its median pace, for the scaling it shows.
        run.sizes.append((run.attempt_size, statistics.median(paces)))
    run.attempt_size = None
    run.attempt += 1
    run.attempt_start = now
    run.failure = run.failure_at = None
    run.productive_mark = productive(run)  # a new process: nothing of it is at risk yet
    run.finished = False
    run.pace.clear()
    run.tp_cache = None
    run.forecasts.clear()  # the ETA band's record is per attempt
    run.pace_forecasts.clear()
    run.pace_reference = None
    if run.step is not None:
        run.samples.reset(now, run.step)
    run.last_improvement = now if run.best_loss is not None else None
    if not keep_best:
        run.best_loss = None
        run.best_is_eval = False
        run.best_train_loss = None
        run.loss_ema = None
        run.history.clear()


def _resumes(run: RunState, r: ProgressReport) -> bool:
    """Whether a new attempt starting at ``r.step`` resumes from a checkpoint (keeps its best
    loss): back to no less than RESUME_FRACTION of where the run was, and no further on,
    with the same total."""
    assert r.step is not None and run.step is not None
    return run.step * RESUME_FRACTION <= r.step <= run.step and r.max_steps in (
        None,
        run.max_steps,
    )


def _keep_framework(new: RunMeta, old: RunMeta) -> RunMeta:
    """Discovery rarely knows the framework: keep the one a report told us. And a source
    that restates progress (model.SECONDARY_SOURCES) does not take the run's source name
    from one that reports it first-hand."""
    if not new.framework:
        new = replace(new, framework=old.framework)
    if new.source in SECONDARY_SOURCES and old.source and old.source not in SECONDARY_SOURCES:
        new = replace(new, source=old.source)
    return new


def merge(
    config: RunConfig,
    run: RunState,
    r: ProgressReport,
    now: float,
    problem: Problem,
    restated: bool = False,
) -> None:
    """Merge one report into the run. ``restated``: the report restates what another
    source may report first-hand (model.SECONDARY_SOURCES); one older than the run's report
    timeout (by its own timestamp: a TrainJob status written hours ago) does not make the
    run's log lose to it, since the log is the process itself, now."""
    run.last_report = now
    advanced = False
    if r.start_time is not None:
        if r.start_time != run.reporter_start and (
            run.reporter_start is not None or run.step is not None
        ):
            # A new process reports under the name (the reporter's start time, or a log
            # rewritten from its start) after the run had made progress: a new attempt,
            # a resume or a re-run by its first step.
            run.new_process = True
        run.reporter_start = r.start_time
    if (
        r.format != "log"  # a log's total grows with what it has shown (the log source
        # tells attempts apart itself: a rewritten file, bars again after the end)
        and r.max_steps is not None
        and run.max_steps is not None
        and r.max_steps != run.max_steps
        and run.step is not None
    ):
        new_attempt(run, now, keep_best=False)  # a new plan: a new attempt
    if r.step is not None:
        if run.new_process and run.step is not None:
            run.new_process = False
            if r.step < run.step:
                problem("step_regressed")
                if not lost_since_checkpoint(run, r.step):
                    run.high_water = max(run.step, run.high_water or 0)
            new_attempt(run, now, keep_best=_resumes(run, r))
            run.samples.reset(now, r.step)
            advanced = True
        elif run.finished and run.step is not None and r.step > run.step and not r.final:
            # New progress after the run said it was done: a re-run under the same name
            # that started above where the last attempt ended.
            new_attempt(run, now, keep_best=False)
            run.samples.reset(now, r.step)
            advanced = True
        elif run.step is None or r.step > run.step:
            advanced = True
            if run.high_water is not None and r.step >= run.high_water:
                run.high_water = None  # caught up: new steps again
            oldest = now - config.estimator.long_window
            for at, step in r.step_samples:
                # Only points between the last sample and this one, in order, and
                # within the window the pace is judged over: a bar's clock is the
                # log's own word, and a frame claiming a day of elapsed time must not
                # put a sample a day back. One at the report's own step says when that
                # step was made (a log line's time, not the poll's).
                last = run.samples[-1] if run.samples else None
                if last is not None and step == last[1] and last[0] < at < now:
                    # Still at that step later (a bar redrawn after an evaluation): the
                    # pause goes into the interval that ends there, not the next one.
                    run.samples.replace_last(at, step)
                elif (
                    oldest < at < now
                    and step <= r.step
                    and (last is None or (at > last[0] and step > last[1]))
                ):
                    add_sample(run.samples, at, step)
            if not run.samples or run.samples[-1][1] != r.step:
                run.samples.append(now, r.step)
        elif r.step < run.step:
            # The step went back: a new attempt. Back a little with the same total is a
            # resume from a checkpoint (it keeps its best loss); further is a re-run.
            problem("step_regressed")
            resume = _resumes(run, r)
            if not lost_since_checkpoint(run, r.step):
                run.high_water = max(run.step, run.high_water or 0)
            new_attempt(run, now, keep_best=resume)
            run.samples.reset(now, r.step)
            advanced = True
        run.step = r.step
    for name in ("max_steps", "max_epochs"):
        value = getattr(r, name)
        if value is not None:
            setattr(run, name, value)
    if r.format == "log":
        run.total_from_bar = r.total_from_bar
        # A log states all it knows in every report: a crash it no longer ends with (it
        # trained on) is over.
        if r.failure != run.failure:
            run.failure, run.failure_at = r.failure, now if r.failure is not None else None
    if r.step_stale:
        # The log's loop went on to steps it does not print exactly (LeRobot's "step:23K"):
        # the step read before is no longer the run's. Where no epoch moves either, a loss
        # logged since that differs from the last is the loop going on, not a stall (the
        # pace stays the steps' own); a line repeated as it was is no progress.
        run.step = None
        if run.epoch is None and any(
            dict(values).get("loss", run.loss) != run.loss for _, values in r.value_samples
        ):
            run.last_step = now
    if r.format == "log" and r.max_steps is None and r.step is not None:
        # A log states all it knows in every report: a total it no longer states (a bar
        # that turned out to be one epoch's) is unknown, not the last one read.
        run.max_steps = None
    if r.epoch is not None:
        if run.epoch is None or r.epoch > run.epoch:
            if run.step is None:
                advanced = True
            elif not advanced:
                # Training went on though no step was seen (Trainer's log dicts carry
                # the epoch; its bar reaches a container log only 16 KiB at a time):
                # progress, not a stall. The pace stays the steps' own.
                run.last_step = now
        run.epoch = r.epoch
    if r.progress is not None:
        if (
            run.step is None
            and run.epoch is None
            and (run.reported_progress is None or r.progress > run.reported_progress)
        ):
            advanced = True
        run.reported_progress = r.progress
    if r.eta_seconds is not None:
        run.reported_eta = r.eta_seconds
        run.reported_eta_at = now
    _merge_checkpoint(run, r, now)
    merge_tokens(run, r, now)
    if r.tokens is not None or r.flops_per_token is not None:
        check_tokens(run, config.estimator.short_window, problem)
    if advanced:
        run.last_step = now
        record_pace(config, run, now)
        charge_pause(run)
    if r.learning_rate is not None:
        run.learning_rate = r.learning_rate
    if r.grad_norm is not None:
        run.grad_norm = r.grad_norm
    if r.gpus is not None:
        run.report_gpus = r.gpus
    if r.framework and not run.meta.framework:
        run.meta = replace(run.meta, framework=r.framework)
    _merge_loss(config, run, r, now)
    for name, value in r.metrics:
        if name not in run.metrics and len(run.metrics) >= config.max_custom_metrics:
            problem("metric_cap")
            continue
        if name == PRINTED_MFU and not 0.0 <= value <= 1.0:
            problem(MFU_OUT_OF_RANGE)  # a ratio: a log's "mfu: 346%" is misread or wrong
            continue
        # The same few names recur in every run: one string for all of them.
        run.metrics[sys.intern(name)] = value
    if r.metrics:
        run.metrics_view = tuple(sorted(run.metrics.items()))
    if r.final:
        run.finished = True
    if r.thresholds:
        run.threshold_overrides.update(r.thresholds)
    if r.format != "log" and not (restated and _stale(config, run, r, now)):
        run.last_structured = now
    if r.deadline_timestamp is not None:
        run.deadline = r.deadline_timestamp
    if r.gpu_hours_budget is not None:
        run.budget_seconds = r.gpu_hours_budget * 3600.0
    _record_observations(run, r, now)


def _stale(config: RunConfig, run: RunState, r: ProgressReport, now: float) -> bool:
    """Whether the report's own timestamp is older than the run's report timeout."""
    timeout = thresholds_of(config, run).report_timeout_seconds
    return r.timestamp is not None and now - r.timestamp > timeout


def _record_observations(run: RunState, r: ProgressReport, now: float) -> None:
    """Keep each value a trial run reported, in order and with its own time, for Katib.

    A log report brings the values of every line it read (``value_samples``); any other
    report is one observation, skipped when it repeats the last one exactly (a status file
    or HTTP endpoint read again unchanged)."""
    if not run.meta.trial:
        return
    if run.observed is None:
        run.observed = deque(maxlen=OBSERVATIONS_KEPT)
    # A log report's own values are the latest of everything it read so far: only the
    # lines read since the last one (value_samples) are new.
    log = r.format == "log"
    samples = r.value_samples if log else (((r.timestamp or now), r.values()),)
    for when, values in samples:
        if not values:
            continue
        if not log and run.observed and run.observed[-1].values == values:
            continue
        run.observed_count += 1
        run.observed.append(Observed(run.observed_count, when, values))


def observations(run: RunState, after: int) -> tuple[list[Observed], int]:
    """The run's observations with a sequence number above ``after``, oldest first, and how
    many of those are no longer kept (the reader came too late for them). An ``after``
    beyond the run's count (a run started over under its name) reads from the start."""
    kept = list(run.observed or ())
    if after > run.observed_count:
        after = 0
    new = [o for o in kept if o.seq > after]
    first = new[0].seq if new else run.observed_count + 1
    return new, max(0, first - after - 1)


def _merge_loss(config: RunConfig, run: RunState, r: ProgressReport, now: float) -> None:
    if r.loss is None and r.eval_loss is None:
        return
    plateau = thresholds_of(config, run).plateau_seconds
    if r.loss is not None:
        run.loss = r.loss
        if math.isfinite(r.loss):
            run.history.append(now, r.loss)
            ema = run.loss_ema
            if ema is None:
                run.loss_ema = r.loss
            else:
                tau = plateau * LOSS_SMOOTHING_FRACTION
                alpha = min(
                    LOSS_SMOOTHING_MAX_WEIGHT,
                    1.0 - math.exp(-max(0.0, now - run.loss_ema_at) / tau),
                )
                run.loss_ema = ema + alpha * (r.loss - ema)
            run.loss_ema_at = now
            best = run.best_train_loss
            run.best_train_loss = run.loss_ema if best is None else min(best, run.loss_ema)
    if r.eval_loss is not None:
        run.eval_loss = r.eval_loss
        if math.isfinite(r.eval_loss):
            run.timeline.evaluated(now, run.step, r.eval_loss)
    # Best loss follows eval loss once any is reported; train loss is noisier.
    candidate: float | None = None
    if r.eval_loss is not None and math.isfinite(r.eval_loss):
        if not run.best_is_eval:
            run.best_is_eval = True
            run.best_loss = None
        candidate = r.eval_loss
    elif not run.best_is_eval and r.loss is not None and math.isfinite(r.loss):
        candidate = run.loss_ema
    if candidate is None:
        return
    best = run.best_loss
    needed = MIN_IMPROVEMENT
    if run.last_improvement is not None and now - run.last_improvement >= plateau:
        needed = PLATEAU_EXIT_IMPROVEMENT  # plateaued: only a clear improvement ends it
    if best is None or candidate < best - abs(best) * needed:
        run.best_loss = candidate
        run.last_improvement = now


def update_meta(run: RunState, meta: RunMeta, now: float) -> None:
    """What discovery now says about the run's pod; a recreated pod (a new UID) is a new
    attempt."""
    if meta.pod_uid and run.meta.pod_uid and meta.pod_uid != run.meta.pod_uid:
        new_attempt(run, now, keep_best=False)
    run.meta = _keep_framework(meta, run.meta)
