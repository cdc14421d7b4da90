"""One run: its state, how a report merges into it, and what it looks like at an instant.

Plain functions over one :class:`RunState` and the :class:`RunConfig` that rules it: merge a
report (attempts, pace, loss, plateau), accrue GPU-seconds by cause of waste, and snapshot
it (state, ETA). Every function takes ``now``; nothing here reads a clock, does I/O or
locks: the tracker (:mod:`exporter.tracker`) holds the table of runs and its lock.
"""

from __future__ import annotations

import math
import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from .directives import CHECKPOINT, STACKS, Facts, due, reasons
from .estimate import (
    FORECASTS_KEPT,
    MIN_ETA_INTERVALS,
    Estimate,
    EstimatorConfig,
    Throughput,
    coalesces,
    estimate,
    forecast_due,
    newest_pause_seconds,
    quantile,
    record_errors,
    seconds_per_remaining_step,
    seconds_per_step,
    throughput,
)
from .goodput import (
    EXPORTED_CAUSES,
    PAUSE,
    RESTART,
    STALLED,
    WAITING,
    cause_of,
    interval_share,
)
from .gpus import mfu, peak_flops
from .model import SECONDARY_SOURCES, Observed, ProgressReport, RunKey, RunMeta
from .series import Series, Triples
from .stacks import Diagnosis
from .stall import StallRecord
from .states import NO_ETA, TRAINING, Observation, classify, done, entered, reason
from .thresholds import Thresholds, effective
from .timeline import Timeline

HISTORY_POINTS = 120
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
# The run's typical pace (for the throughput-drop predicate) is the 90th percentile of its
# steps/s over this window, sampled every PACE_FRACTION of the rate window (at least 1 s).
PACE_WINDOW = 7200.0
PACE_FRACTION = 1 / 10
PACE_POINTS = 256
# Observations (each reported value with its time) kept per Katib trial run until the Katib
# reporter reads them: minutes of one value a second between its reads.
OBSERVATIONS_KEPT = 512
PACE_MIN_POINTS = 3
PACE_QUANTILE = 0.9
# While plateaued, only an improvement of this fraction below the best at the plateau's
# onset ends it: noise around a flat loss beats MIN_IMPROVEMENT now and then, and a plateau
# that ends on one lucky average only to return a window later flaps (a page each time).
PLATEAU_EXIT_IMPROVEMENT = 0.02
# Throughput falls to 0 once the step has not advanced for this many of the run's own
# typical intervals between advances (and at least IDLE_MIN_SECONDS): a hung job must not
# keep showing its last pace until the stall threshold.
IDLE_INTERVALS = 3.0
IDLE_MIN_SECONDS = 5.0
# A step that goes back to at least this fraction of where it was, with the same total,
# is a resume from a checkpoint (it keeps its best loss); further back is a re-run.
RESUME_FRACTION = 0.5


@dataclass(frozen=True)
class RunConfig:
    """What rules every run: the default thresholds, the estimator, the custom-metric cap."""

    thresholds: Thresholds = field(default_factory=Thresholds)
    estimator: EstimatorConfig = field(default_factory=EstimatorConfig)
    max_custom_metrics: int = 32


@dataclass(frozen=True, slots=True)
class RunSnapshot:
    """Everything known about one run at one instant; what the collector and API render."""

    key: RunKey
    meta: RunMeta
    state: str
    state_since: float  # when the run entered ``state``
    state_reason: str  # why, in words: "stalled for 42m (threshold 30m)"
    step: int | None
    max_steps: int | None
    epoch: float | None
    max_epochs: float | None
    progress: float | None
    eta_seconds: float | None
    eta_timestamp: float | None  # predicted completion (Unix seconds)
    eta_lower_seconds: float | None  # the ETA's bounds, counted down like it
    eta_upper_seconds: float | None
    steps_per_second: float | None
    typical_steps_per_second: float | None  # the pace the degraded state is judged against
    attempt: int  # 1 for the first attempt; +1 at each re-run, restart or resume
    attempt_start: float  # when the current attempt began
    loss: float | None
    eval_loss: float | None
    learning_rate: float | None
    grad_norm: float | None
    best_loss: float | None
    metrics: tuple[tuple[str, float], ...]
    first_report_timestamp: float
    last_report_timestamp: float
    last_step_timestamp: float | None
    last_improvement_timestamp: float | None
    finished: bool
    gpus: float
    gpu_seconds: float
    stalled_gpu_seconds: float
    # GPU-seconds wasted, by cause (exporter.goodput.EXPORTED_CAUSES, every cause present)
    wasted_gpu_seconds: tuple[tuple[str, float], ...]
    deadline_timestamp: float | None
    gpu_seconds_budget: float | None
    thresholds: Thresholds
    gone: bool
    loss_history: tuple[tuple[float, float], ...]
    # Why it is stuck: each rank's cause and frame, from stacks taken since its last step
    # (exporter.stacks; empty unless stalled or silent, and explained).
    stall: tuple[Diagnosis, ...] = ()
    # GPU-seconds stalled, by stall cause (exporter.stacks.STALL_CAUSES, every one present)
    stall_gpu_seconds: tuple[tuple[str, float], ...] = ()
    last_checkpoint_step: int | None = None
    last_checkpoint_timestamp: float | None = None
    # GPU-seconds of training since the last checkpoint (or the attempt's start): what a
    # preemption now would lose (None before any GPU-second)
    at_risk_gpu_seconds: float | None = None
    tokens: int | None = None  # trained on so far
    tokens_per_second: float | None = None  # 0 while it does not train
    flops_per_token: float | None = None
    gpu_peak_flops: float | None = None  # one GPU's dense BF16 peak (exporter.gpus)
    model_flops_utilization: float | None = None
    # What ended it, where its log ended in a traceback: "Type: message" (bounded).
    failure: str | None = None


@dataclass
class RunState:
    """Mutable per-run state; never leaves the tracker (snapshots are copies) except to be
    saved to and restored from the state file (exporter/persist.py)."""

    meta: RunMeta
    first_report: float
    last_report: float
    accrued_at: float
    step: int | None = None
    max_steps: int | None = None
    epoch: float | None = None
    max_epochs: float | None = None
    reported_progress: float | None = None
    reported_eta: float | None = None
    reported_eta_at: float = 0.0
    loss: float | None = None
    eval_loss: float | None = None
    learning_rate: float | None = None
    grad_norm: float | None = None
    best_loss: float | None = None
    best_is_eval: bool = False
    # What divergence holds the train loss to: its own smoothed best, not best_loss (the
    # eval loss's once any is reported). A train loss is not divergent for being 3x an eval
    # loss (Keras' epoch-running mean against its end-of-epoch validation).
    best_train_loss: float | None = None
    loss_ema: float | None = None
    loss_ema_at: float = 0.0
    report_gpus: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    # ``metrics`` sorted, rebuilt when it changes: every snapshot shares this one tuple
    # instead of copying 32 pairs per run per scrape.
    metrics_view: tuple[tuple[str, float], ...] = ()
    threshold_overrides: dict[str, float] = field(default_factory=dict)
    deadline: float | None = None
    # Checkpoint reasons already delivered (exporter.directives), so each is told once.
    directed: frozenset[str] = frozenset()
    job_checkpoint_request: str | None = None  # the checkpoint annotation on its TrainJob
    budget_seconds: float | None = None
    # The run's last checkpoint (step, Unix time), and its productive GPU-seconds (held, less
    # every cause of waste) then, or at the attempt's start before any: what a preemption
    # would lose is what was productive since (at_risk).
    checkpoint_step: int | None = None
    checkpoint_timestamp: float | None = None
    productive_mark: float = 0.0
    # Tokens trained on so far, with (time, tokens) points for their rate; the model's
    # training FLOPs per token; the GPU model the run says it has, and its node's label.
    tokens: int | None = None
    token_points: deque[tuple[float, int]] = field(default_factory=lambda: deque(maxlen=32))
    flops_per_token: float | None = None
    gpu_model: str | None = None
    node_gpu_model: str | None = None
    last_step: float | None = None
    last_improvement: float | None = None
    finished: bool = False
    gpu_seconds: float = 0.0
    stalled_gpu_seconds: float = 0.0
    # GPU-seconds wasted by cause (exporter.goodput), and the non-pause total at the last
    # step advance: a pause is charged only for what no other cause took of its interval.
    wasted: dict[str, float] = field(default_factory=dict)
    wasted_at_step: float = 0.0
    stalled_at_step: float = 0.0
    # The highest step reached before the latest restart from a checkpoint (None: none).
    high_water: int | None = None
    gone_since: float | None = None
    last_structured: float = float("-inf")
    samples: Series[int] = field(default_factory=lambda: Series(512, "q"))
    # throughput() of the samples, cached until a new sample arrives (scrapes are frequent).
    # With it, the seconds per step the ETA charges (_per_step), None without a pace.
    tp_cache: tuple[tuple[int, float, int | None], Throughput | None, float | None] | None = None
    history: Series[float] = field(default_factory=lambda: Series(HISTORY_POINTS))
    # The run's whole life, downsampled (exporter.timeline): what the status page charts.
    timeline: Timeline = field(default_factory=Timeline)
    # (time, steps/s) every so often, for the run's typical pace.
    pace: Series[float] = field(default_factory=lambda: Series(PACE_POINTS))
    state: str | None = None
    state_since: float = 0.0
    # Restored from the state file and not yet seen again by any source or discovery.
    restored: bool = False
    # Attempts: the run's current one, when it began, and the reporter's own start time
    # (a new one is a new process: a new attempt).
    attempt: int = 1
    attempt_start: float | None = None
    reporter_start: float | None = None
    # The typical pace when the run turned degraded: it stays degraded until its pace is
    # back above the drop ratio of this (the typical pace must not follow it down).
    pace_reference: float | None = None
    # A new process reports under the name (a new start time) and has not given a step
    # yet: its first step decides between a resume and a re-run.
    new_process: bool = False
    # The total is a progress bar's length (states.done: its end alone finishes nothing).
    total_from_bar: bool = False
    # The estimator's forecasts this attempt (estimate.Forecast), its record of being wrong.
    forecasts: Triples = field(default_factory=lambda: Triples(FORECASTS_KEPT))
    # The recent pace's own forecasts at the same moments: what weighs it against the
    # run's mean pace (estimate.combined_seconds_per_step).
    pace_forecasts: Triples = field(default_factory=lambda: Triples(FORECASTS_KEPT))
    # estimate() of the last sample, cached like tp_cache: its band reads the whole record.
    est_cache: tuple[tuple[object, ...], Estimate | None] | None = None
    # Katib trial runs only (meta.trial): every observation, newest OBSERVATIONS_KEPT, and
    # how many there ever were (the next one's sequence number is this plus one).
    observed: deque[Observed] | None = None
    observed_count: int = 0
    # Its ranks' stacks, when they were asked for, and its stalls' cost by cause.
    stall: StallRecord = field(default_factory=StallRecord)
    # The exception a traceback at the end of its log named, and when it was read: the run
    # failed (states.classify), and this is why.
    failure: str | None = None
    failure_at: float | None = None

    @property
    def gpus(self) -> float:
        if self.meta.gpus is not None:
            return self.meta.gpus
        return self.report_gpus or 0.0


Problem = Callable[[str], None]


def _add_sample(samples: Series[int], t: float, step: int) -> None:
    """Add a sample read from a progress bar's own clock (a log chunk brings one a second),
    merged with the newest when they are close (estimate.coalesces). Reports themselves are
    always added: a run pushing every second still has its ETA after two reports."""
    if coalesces(samples, t):
        samples.replace_last(t, step)
    else:
        samples.append(t, step)


def productive(run: RunState) -> float:
    """GPU-seconds the run held that no cause of waste took (exporter.goodput), so far."""
    return run.gpu_seconds - sum(run.wasted.values())


def at_risk(run: RunState) -> float:
    """GPU-seconds of training since the last checkpoint (or the attempt's start): what a
    preemption now would lose."""
    return max(0.0, productive(run) - run.productive_mark)


TOKEN_POINT_SPACING = 2.0  # seconds between kept (time, tokens) points


def _merge_tokens(run: RunState, r: ProgressReport, now: float) -> None:
    """The run's token count (a lower one starts its rate over), FLOPs per token and GPU."""
    if r.flops_per_token is not None:
        run.flops_per_token = r.flops_per_token
    if r.gpu_model:
        run.gpu_model = r.gpu_model

    if r.tokens is None or r.tokens == run.tokens:
        return
    if run.tokens is not None and r.tokens < run.tokens:
        run.token_points.clear()  # a new attempt counts from its own start
    run.tokens = r.tokens
    points = run.token_points
    # A count closer than the spacing to the one before the newest replaces the newest (as
    # step samples do): a report a second keeps points two seconds apart.
    if len(points) >= 2 and now - points[-2][0] < TOKEN_POINT_SPACING:
        points[-1] = (now, r.tokens)
    else:
        points.append((now, r.tokens))


def tokens_per_second(run: RunState, window: float) -> float | None:
    """Tokens per second over the newest ``window`` seconds of token counts; None with
    fewer than two counts."""
    points = run.token_points
    if len(points) < 2:
        return None
    t1, n1 = points[-1]
    t0, n0 = next(((t, n) for t, n in points if t1 - t <= window), points[-2])
    if t1 <= t0:
        t0, n0 = points[-2]
    return (n1 - n0) / (t1 - t0) if t1 > t0 else None


# Custom metrics in which runs print their rate where they give no count (the run's own, or
# per GPU as torchtune prints it): they stay custom metrics too.
PRINTED_RATE = "tokens_per_second"
PRINTED_RATE_PER_GPU = "tokens_per_second_per_gpu"


def printed_tokens_per_second(run: RunState) -> float | None:
    """The rate the run prints, for the run (per GPU ones times its GPUs); None if none."""
    rate = run.metrics.get(PRINTED_RATE)
    if rate is not None and math.isfinite(rate) and rate >= 0:
        return rate
    per_gpu = run.metrics.get(PRINTED_RATE_PER_GPU)
    if per_gpu is not None and math.isfinite(per_gpu) and per_gpu >= 0 and run.gpus > 0:
        return per_gpu * run.gpus
    return None


# The utilisation a run prints (torchtitan's "mfu: 34.33%", verl's perf/mfu/actor), a ratio
# (exporter.logs.formats.vocabulary): what it is where the run gives no FLOPs per token.
PRINTED_MFU = "model_flops_utilization"


def _utilization(
    run: RunState, rate: float | None, peak: float | None, training: bool
) -> float | None:
    """The run's MFU: from its token rate and FLOPs per token where it gives both, else as
    its log states it (0 once it does not train, as its rate: a hung job uses nothing)."""
    computed = mfu(rate, run.flops_per_token, run.gpus, peak)
    if computed is not None or run.flops_per_token is not None:
        return computed
    printed = run.metrics.get(PRINTED_MFU)
    if printed is None or not 0 <= printed <= 1:
        return None
    return printed if training else 0.0


def _lost_since_checkpoint(run: RunState, step: int) -> bool:
    """At a restart to ``step``: when it resumes from the run's known last checkpoint (at or
    after its step, below where the run was), the work since that checkpoint is lost now and
    charged to ``restart`` at once (the goodput split), and the steps done again are not
    charged a second time. False (charge nothing) where the checkpoint is unknown or the run
    went back further: then the steps redone up to where it was are the restart's cost."""
    if run.checkpoint_step is None or run.step is None:
        return False
    if not run.checkpoint_step <= step < run.step:
        return False
    lost = at_risk(run)
    run.wasted[RESTART] = run.wasted.get(RESTART, 0.0) + lost
    run.wasted_at_step += lost  # taken by the restart, not by the next interval's pause
    return True


def _merge_checkpoint(run: RunState, r: ProgressReport, now: float) -> None:
    """A checkpoint newer than the last one known (by its time, else by its step) resets
    what is at risk. Reports restate the last checkpoint; only a new one counts. One
    stated as saved a while ago keeps the work since at risk, at most the run's GPUs times
    that while (it may have stalled since)."""
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


def _first(*values: float | None) -> float | None:
    return next((v for v in values if v is not None), None)


def new_attempt(run: RunState, now: float, keep_best: bool) -> None:
    """Start a new attempt of ``run``: its own finished flag, pace and typical pace, and,
    unless it resumes from a checkpoint (``keep_best``), its own best loss and plateau
    history. What the job spent (GPU-seconds, waste by cause) carries over."""
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


def _current_pace(run: RunState, tp: Throughput | None, now: float) -> float | None:
    """The run's steps/s now: its pace, or 0 once the step has not advanced for
    ``IDLE_INTERVALS`` of its own typical intervals (a hung job does not keep its pace)."""
    if tp is None or not run.samples:
        return None
    idle_after = max(IDLE_MIN_SECONDS, IDLE_INTERVALS * tp.interval_seconds)
    return 0.0 if now - run.samples[-1][0] > idle_after else tp.steps_per_second


def _keep_framework(new: RunMeta, old: RunMeta) -> RunMeta:
    """Discovery rarely knows the framework: keep the one a report told us. And a source
    that restates progress (model.SECONDARY_SOURCES) does not take the run's source name
    from one that reports it first-hand."""
    if not new.framework:
        new = replace(new, framework=old.framework)
    if new.source in SECONDARY_SOURCES and old.source and old.source not in SECONDARY_SOURCES:
        new = replace(new, source=old.source)
    return new


def thresholds_of(config: RunConfig, run: RunState) -> Thresholds:
    return effective(config.thresholds, run.threshold_overrides, dict(run.meta.thresholds))


def _observe(config: RunConfig, run: RunState, now: float, tp: Throughput | None) -> Observation:
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
        progress=_progress(run),
        loss=run.loss,
        eval_loss=run.eval_loss,
        best_train_loss=run.best_train_loss,
        gpus=run.gpus,
        gone_since=run.gone_since,
        alive=run.meta.alive,
        pod_failed=run.meta.pod_failed,
        steps_per_second=tp.steps_per_second if tp else None,
        typical_steps_per_second=_typical_pace(config, run, now) if tp is not None else None,
        bar_end_only=run.total_from_bar,
        failure=run.failure,
        failure_at=run.failure_at,
    )


def _typical_pace(config: RunConfig, run: RunState, now: float) -> float | None:
    """The run's typical pace: the 90th percentile of its recent pace, or, while it is
    degraded, the pace it had before the drop."""
    if run.pace_reference is not None:
        return run.pace_reference
    recent = [v for t, v in run.pace if now - t <= PACE_WINDOW]
    if len(recent) < PACE_MIN_POINTS:
        return None
    return quantile(recent, PACE_QUANTILE)


def accrue(config: RunConfig, run: RunState, now: float) -> None:
    """Integrate GPUs x time since the last accrual, and charge it to its cause of waste
    (exporter.goodput) by the state at its end; a state whose onset the classifier knows
    (stalled at last step + threshold) is charged from that onset only."""
    start = run.accrued_at
    end = now if run.gone_since is None else min(now, run.gone_since)
    if run.meta.gpu_end_timestamp is not None:  # the pod gave its GPUs back then
        end = min(end, run.meta.gpu_end_timestamp)
    gpus = run.gpus
    if end > start and gpus > 0:
        run.gpu_seconds += gpus * (end - start)
        verdict = classify(_observe(config, run, end, None), thresholds_of(config, run))
        stalled = verdict.state == "stalled"
        share = gpus * interval_share(start, end, verdict.onset if stalled else None)
        if stalled:
            run.stalled_gpu_seconds += share
        run.stall.charge(share, _stall_since(run, verdict.onset) if stalled else None)
        cause = cause_of(verdict.state, run.step, run.high_water)
        if cause is not None:
            run.wasted[cause] = run.wasted.get(cause, 0.0) + share
    run.accrued_at = max(run.accrued_at, now)


def _charge_pause(run: RunState) -> None:
    """At a step advance: charge the interval's time beyond the run's pace to ``pause``
    when it was one, less what another cause already took of it. An interval that went
    stalled was a hang from its start, not an evaluation: the time before the stall
    threshold is charged to ``stalled`` too (the state could not know it yet)."""
    stalled_before = run.wasted.get(STALLED, 0.0)
    others = sum(v for c, v in run.wasted.items() if c != PAUSE)
    excess = run.gpus * newest_pause_seconds(run.samples)
    taken = others - run.wasted_at_step
    if excess > taken:
        cause = STALLED if run.stalled_at_step < stalled_before else PAUSE
        run.wasted[cause] = run.wasted.get(cause, 0.0) + excess - taken
    run.wasted_at_step = sum(v for c, v in run.wasted.items() if c != PAUSE)
    run.stalled_at_step = run.wasted.get(STALLED, 0.0)


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
                if not _lost_since_checkpoint(run, r.step):
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
                    _add_sample(run.samples, at, step)
            if not run.samples or run.samples[-1][1] != r.step:
                run.samples.append(now, r.step)
        elif r.step < run.step:
            # The step went back: a new attempt. Back a little with the same total is a
            # resume from a checkpoint (it keeps its best loss); further is a re-run.
            problem("step_regressed")
            resume = _resumes(run, r)
            if not _lost_since_checkpoint(run, r.step):
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
    _merge_tokens(run, r, now)
    if advanced:
        run.last_step = now
        _record_pace(config, run, now)
        _charge_pause(run)
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


def _record_pace(config: RunConfig, run: RunState, now: float) -> None:
    """At a step advance: hold the typical pace while the run is below its drop ratio
    (degraded: it recovers only by reaching the ratio of the pace it had before, and
    the typical pace must not follow it down), else sample the pace now and then. At
    step advances, not at scrapes: the state must not depend on who looked when."""
    every = max(1.0, config.estimator.short_window * PACE_FRACTION)
    if run.pace_reference is None and run.pace and now - run.pace[-1][0] < every:
        return  # judged at the pace's own cadence (every advance while degraded)
    tp = _throughput(config, run)
    if tp is None:
        return
    typical = _typical_pace(config, run, now)
    if typical is not None:
        slow = tp.steps_per_second < thresholds_of(config, run).throughput_drop_ratio * typical
        run.pace_reference = typical if slow else None
    if run.pace_reference is None:
        run.pace.append(now, tp.steps_per_second)


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


def _progress(run: RunState) -> float | None:
    if run.finished:
        return 1.0
    if run.step is not None and run.max_steps:
        return min(1.0, run.step / run.max_steps)
    if run.reported_progress is not None:
        return run.reported_progress
    if run.epoch is not None and run.max_epochs:
        return min(1.0, run.epoch / run.max_epochs)
    return None


def _gpu_seconds(run: RunState, now: float) -> float:
    start = run.meta.gpu_start_timestamp
    if start is None:
        return run.gpu_seconds
    end = now if run.gone_since is None else run.gone_since
    if run.meta.gpu_end_timestamp is not None:  # the pod gave its GPUs back then
        end = min(end, run.meta.gpu_end_timestamp)
    return run.gpus * max(0.0, end - start)


def _wasted(run: RunState) -> tuple[tuple[str, float], ...]:
    """Every exported cause's GPU-seconds; in Kubernetes mode the time from the pod's
    start to the run's first report is waiting too (loading, downloading, compiling)."""
    before = 0.0
    start = run.meta.gpu_start_timestamp
    if start is not None:
        before = run.gpus * max(0.0, run.first_report - start)
    return tuple(
        (c, run.wasted.get(c, 0.0) + (before if c == WAITING else 0.0)) for c in EXPORTED_CAUSES
    )


def _throughput(config: RunConfig, run: RunState) -> Throughput | None:
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


def _estimate(run: RunState, tp: Throughput | None) -> Estimate | None:
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


def snapshot(
    config: RunConfig, key: RunKey, run: RunState, now: float, history: bool
) -> RunSnapshot:
    tp = _throughput(config, run)
    th = thresholds_of(config, run)
    observation = _observe(config, run, now, tp)
    verdict = classify(observation, th)
    run.state_since = entered(run.state, run.state_since, verdict, now)
    run.state = verdict.state
    # A stalled, diverged or finished run promises no completion time.
    # The completion time is predicted at the last step advance (or the run's own ETA
    # report) and the ETA counts down from it to ``now``: between two reports every
    # scrape gets a fresh value, not the one computed at the last report.
    eta: float | None = None
    lower: float | None = None
    upper: float | None = None
    completion: float | None = None
    if verdict.state not in NO_ETA:
        est = _estimate(run, tp)
        if est is not None and run.samples:
            at = run.samples[-1][0]
            completion = at + est.seconds
            lower = max(0.0, at + est.lower - now)
            upper = max(0.0, at + est.upper - now)
        elif run.reported_eta is not None and (run.step is None or run.max_steps is None):
            # The run's own ETA only where steps can never give one: with steps, a run
            # has none until it made a few reports (on a resume, the callback's own
            # elapsed / step says 28 s where 112 s are left).
            completion = run.reported_eta_at + run.reported_eta
        if completion is not None:
            eta = max(0.0, completion - now)
    # Tokens per second, 0 once the run does not train (a hung job keeps no rate).
    rate = tokens_per_second(run, config.estimator.short_window)
    if rate is None:
        rate = printed_tokens_per_second(run)
    if rate is not None and verdict.state not in TRAINING:
        rate = 0.0
    peak = peak_flops(run.gpu_model or run.node_gpu_model)
    snap = RunSnapshot(
        key=key,
        meta=run.meta,
        state=verdict.state,
        state_since=run.state_since,
        state_reason=reason(verdict.state, observation, th),
        step=run.step,
        max_steps=run.max_steps,
        epoch=run.epoch,
        max_epochs=run.max_epochs,
        progress=_progress(run),
        eta_seconds=eta,
        eta_timestamp=completion,
        eta_lower_seconds=lower,
        eta_upper_seconds=upper,
        steps_per_second=_current_pace(run, tp, now),
        typical_steps_per_second=observation.typical_steps_per_second,
        attempt=run.attempt,
        attempt_start=run.first_report if run.attempt_start is None else run.attempt_start,
        loss=run.loss,
        eval_loss=run.eval_loss,
        learning_rate=run.learning_rate,
        grad_norm=run.grad_norm,
        best_loss=run.best_loss,
        metrics=run.metrics_view,
        first_report_timestamp=run.first_report,
        last_report_timestamp=run.last_report,
        last_step_timestamp=run.last_step,
        last_improvement_timestamp=run.last_improvement,
        # Done by its own word or by its progress: what the classifier calls finished.
        finished=done(observation, th),
        gpus=run.gpus,
        gpu_seconds=_gpu_seconds(run, now),
        stalled_gpu_seconds=run.stalled_gpu_seconds,
        wasted_gpu_seconds=_wasted(run),
        # Annotations (meta) win over what the run reports about itself.
        deadline_timestamp=_first(run.meta.deadline_timestamp, run.deadline),
        gpu_seconds_budget=_first(run.meta.gpu_seconds_budget, run.budget_seconds),
        thresholds=th,
        gone=run.gone_since is not None,
        loss_history=tuple(run.history) if history else (),
        # A silent run with a dump in its log since its last step is as stuck as a
        # stalled one; no stacks, no claim.
        stall=(
            run.stall.current(_stall_since(run, verdict.onset))
            if verdict.state in ("stalled", "silent")
            else ()
        ),
        stall_gpu_seconds=run.stall.split_view(),
        last_checkpoint_step=run.checkpoint_step,
        last_checkpoint_timestamp=run.checkpoint_timestamp,
        at_risk_gpu_seconds=at_risk(run) if run.gpu_seconds > 0 else None,
        tokens=run.tokens,
        tokens_per_second=rate,
        flops_per_token=run.flops_per_token,
        gpu_peak_flops=peak,
        model_flops_utilization=_utilization(run, rate, peak, verdict.state in TRAINING),
        failure=run.failure if verdict.state == "failed" else None,
    )
    _sample(run.timeline, snap, now)
    return snap


def timeline_values(s: RunSnapshot) -> dict[str, float | int | None]:
    """The snapshot's values by timeline column (exporter.timeline.COLUMNS, but time): what
    a timeline row keeps, and what the charts end with at the present."""
    return {
        "attempt": s.attempt,
        "step": s.step,
        "loss": s.loss if s.loss is not None and math.isfinite(s.loss) else None,
        "progress": s.progress,
        "eta_seconds": s.eta_seconds,
        "eta_lower_seconds": s.eta_lower_seconds,
        "eta_upper_seconds": s.eta_upper_seconds,
        "steps_per_second": s.steps_per_second,
        "typical_steps_per_second": s.typical_steps_per_second,
    }


def _sample(timeline: Timeline, s: RunSnapshot, now: float) -> None:
    """Keep the snapshot in the run's timeline when a row is due (every snapshot tells
    the timeline the state, so no change of state is missed)."""
    timeline.state(now, s.state)
    if timeline.due(now):
        timeline.sample(now, timeline_values(s))


def new_run(config: RunConfig, meta: RunMeta | None, now: float) -> RunState:
    """A run whose first report arrives ``now``."""
    return RunState(
        meta=meta or RunMeta(),
        first_report=now,
        last_report=now,
        accrued_at=now,
        samples=Series(config.estimator.max_samples, "q"),
    )


def update_meta(run: RunState, meta: RunMeta, now: float) -> None:
    """What discovery now says about the run's pod; a recreated pod (a new UID) is a new
    attempt."""
    if meta.pod_uid and run.meta.pod_uid and meta.pod_uid != run.meta.pod_uid:
        new_attempt(run, now, keep_best=False)
    run.meta = _keep_framework(meta, run.meta)


def mark_gone(config: RunConfig, run: RunState, now: float) -> bool:
    """The run's pod (or file, or target) is gone from ``now``: frozen, its retention
    starts. False if it was gone already."""
    if run.gone_since is not None:
        return False
    accrue(config, run, now)
    run.gone_since = now
    return True


def _stall_since(run: RunState, onset: float | None) -> float:
    """Where the run's current stall began: its last step (stacks taken since then show
    the hang), else the classifier's onset."""
    if run.last_step is not None:
        return run.last_step
    return onset if onset is not None else run.first_report


def wants_stacks(config: RunConfig, run: RunState, rank: str, now: float) -> bool:
    """Whether ``rank`` of the run should send its stacks now (exporter.stall): the run is
    stalled, or a person asked with the stacks annotation, and this rank sent none since."""
    run.stall.requested(run.meta.stacks_request, now)
    verdict = classify(_observe(config, run, now, None), thresholds_of(config, run))
    since = _stall_since(run, verdict.onset) if verdict.state == "stalled" else None
    return run.stall.wants(rank, since, now)


def directives(
    config: RunConfig, key: RunKey, run: RunState, now: float, draining: bool
) -> tuple[str, ...]:
    """What the run should do now: ``checkpoint`` (each reason once) and ``stacks`` (its
    rank 0 should send its stacks, exporter.stall); for the answer to the run's own push.
    ``draining``: its node is cordoned."""
    deadline = _first(run.meta.deadline_timestamp, run.deadline)
    # A snapshot (state, ETA) only for a run with a deadline: this is on every push.
    lower = None if deadline is None else snapshot(config, key, run, now, False).eta_lower_seconds
    holding = reasons(
        Facts(
            eta_lower_timestamp=None if lower is None else now + lower,
            deadline_timestamp=deadline,
            deleting=run.meta.deleting,
            request=run.meta.checkpoint_request,
            job_request=run.job_checkpoint_request,
            draining=draining,
            # Only a run seen to checkpoint is told to (one that saves unseen is left alone).
            at_risk_gpu_seconds=at_risk(run) if run.checkpoint_timestamp is not None else 0.0,
            risk_threshold_gpu_seconds=thresholds_of(config, run).checkpoint_risk_gpu_seconds,
        )
    )
    fire = due(holding, run.directed)
    run.directed = holding
    stacks = wants_stacks(config, run, "0", now)
    return ((CHECKPOINT,) if fire else ()) + ((STACKS,) if stacks else ())
