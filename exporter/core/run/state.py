"""A run's mutable state (:class:`RunState`), the config that rules every run
(:class:`RunConfig`), its effective thresholds, and a new run."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from ..estimate import FORECASTS_KEPT, Estimate, EstimatorConfig, Throughput
from ..model import (
    CHECKPOINT_SECONDS,
    COUNT,
    EPOCHS,
    ETA_SECONDS,
    FLOPS_PER_TOKEN,
    FRACTION,
    GPUS,
    LOSS,
    MAX_GPU_HOURS_BUDGET,
    Bound,
    Observed,
    RunMeta,
)
from ..scaling import DEFAULT_LEVEL, RESTART_SECONDS
from ..series import Series, Triples
from ..stall import StallRecord
from ..thresholds import Thresholds, effective
from ..timeline import Timeline

# Loss points kept per run for the status page's recent curve (the timeline keeps its life).
HISTORY_POINTS = 120
# (time, steps/s) points kept for the run's typical pace (exporter.core.run.pace).
PACE_POINTS = 256


# -- what the state file keeps of a run ---------------------------------------------------
# A field declared with ``saved(bound)`` is written to the state file and checked against
# ``bound`` when it is read back (exporter/daemon/persist.py reads these declarations; it has no
# list of its own). A field added with it is saved and restored with no other edit; one
# missing from an older file takes its default.
SAVED = "saved"
# A time or an amount the run keeps: finite, any sign.
FINITE = Bound("number")
NON_NEGATIVE = Bound("number", 0.0)
FLAG = Bound("flag")
NAMES = Bound("names")  # metric names to numbers (custom metrics, threshold overrides)
# Before any structured report: -inf, which is a time no report has (finite or not).
SINCE = Bound("number", high=1e11, finite=False)
BUDGET_SECONDS = Bound("number", 0.0, MAX_GPU_HOURS_BUDGET * 3600)
ATTEMPT = Bound("count", 1, 10**9)


def saved(bound: Bound) -> dict[str, Bound]:
    """The field metadata that saves a field, held to ``bound`` on restore."""
    return {SAVED: bound}


@dataclass(frozen=True)
class RunConfig:
    """What rules every run: the default thresholds, the estimator, the custom-metric cap."""

    thresholds: Thresholds = field(default_factory=Thresholds)
    estimator: EstimatorConfig = field(default_factory=EstimatorConfig)
    max_custom_metrics: int = 32
    # The chance of making a deadline a size must give (exporter.core.scaling.fewest_units).
    deadline_probability: float = DEFAULT_LEVEL
    # What a resize costs: the seconds a restart at a new size takes (scaling.eta_at).
    resize_restart_seconds: float = RESTART_SECONDS


@dataclass
class RunState:
    """Mutable per-run state; never leaves the tracker (snapshots are copies) except to be
    saved to and restored from the state file (exporter/daemon/persist.py)."""

    meta: RunMeta
    first_report: float = field(metadata=saved(FINITE))
    last_report: float = field(metadata=saved(FINITE))
    accrued_at: float = field(metadata=saved(FINITE))
    step: int | None = field(default=None, metadata=saved(COUNT))
    max_steps: int | None = field(default=None, metadata=saved(COUNT))
    epoch: float | None = field(default=None, metadata=saved(EPOCHS))
    max_epochs: float | None = field(default=None, metadata=saved(EPOCHS))
    reported_progress: float | None = field(default=None, metadata=saved(FRACTION))
    reported_eta: float | None = field(default=None, metadata=saved(ETA_SECONDS))
    reported_eta_at: float = field(default=0.0, metadata=saved(FINITE))
    loss: float | None = field(default=None, metadata=saved(LOSS))
    eval_loss: float | None = field(default=None, metadata=saved(LOSS))
    learning_rate: float | None = field(default=None, metadata=saved(LOSS))
    grad_norm: float | None = field(default=None, metadata=saved(LOSS))
    best_loss: float | None = field(default=None, metadata=saved(LOSS))
    best_is_eval: bool = field(default=False, metadata=saved(FLAG))
    # What divergence holds the train loss to: its own smoothed best, not best_loss (the
    # eval loss's once any is reported). A train loss is not divergent for being 3x an eval
    # loss (Keras' epoch-running mean against its end-of-epoch validation).
    best_train_loss: float | None = field(default=None, metadata=saved(LOSS))
    loss_ema: float | None = field(default=None, metadata=saved(LOSS))
    loss_ema_at: float = field(default=0.0, metadata=saved(FINITE))
    report_gpus: float | None = field(default=None, metadata=saved(GPUS))
    metrics: dict[str, float] = field(default_factory=dict, metadata=saved(NAMES))
    # ``metrics`` sorted, rebuilt when it changes: every snapshot shares this one tuple
    # instead of copying 32 pairs per run per scrape.
    metrics_view: tuple[tuple[str, float], ...] = ()
    threshold_overrides: dict[str, float] = field(default_factory=dict, metadata=saved(NAMES))
    deadline: float | None = field(default=None, metadata=saved(FINITE))
    # Checkpoint reasons already delivered (exporter.core.directives), so each is told once.
    directed: frozenset[str] = frozenset()
    job_checkpoint_request: str | None = None  # the checkpoint annotation on its TrainJob
    budget_seconds: float | None = field(default=None, metadata=saved(BUDGET_SECONDS))
    # The run's last checkpoint (step, Unix time), and its productive GPU-seconds (held, less
    # every cause of waste) then, or at the attempt's start before any: what a preemption
    # would lose is what was productive since (at_risk).
    checkpoint_step: int | None = field(default=None, metadata=saved(COUNT))
    checkpoint_timestamp: float | None = field(default=None, metadata=saved(NON_NEGATIVE))
    # The longest save the run reported taking this attempt (seconds), None where it says none.
    checkpoint_seconds: float | None = field(default=None, metadata=saved(CHECKPOINT_SECONDS))
    productive_mark: float = field(default=0.0, metadata=saved(FINITE))
    # Tokens trained on so far, with (time, tokens) points for their rate; the model's
    # training FLOPs per token; the GPU model the run says it has, and its node's label.
    tokens: int | None = field(default=None, metadata=saved(COUNT))
    token_points: deque[tuple[float, int]] = field(default_factory=lambda: deque(maxlen=32))
    flops_per_token: float | None = field(default=None, metadata=saved(FLOPS_PER_TOKEN))
    gpu_model: str | None = None
    node_gpu_model: str | None = None
    last_step: float | None = field(default=None, metadata=saved(FINITE))
    last_improvement: float | None = field(default=None, metadata=saved(FINITE))
    finished: bool = field(default=False, metadata=saved(FLAG))
    gpu_seconds: float = field(default=0.0, metadata=saved(NON_NEGATIVE))
    stalled_gpu_seconds: float = field(default=0.0, metadata=saved(NON_NEGATIVE))
    # GPU-seconds wasted by cause (exporter.core.goodput), and the non-pause total at the last
    # step advance: a pause is charged only for what no other cause took of its interval.
    wasted: dict[str, float] = field(default_factory=dict)
    wasted_at_step: float = field(default=0.0, metadata=saved(NON_NEGATIVE))
    stalled_at_step: float = field(default=0.0, metadata=saved(NON_NEGATIVE))
    # The highest step reached before the latest restart from a checkpoint (None: none).
    high_water: int | None = field(default=None, metadata=saved(COUNT))
    gone_since: float | None = field(default=None, metadata=saved(FINITE))
    last_structured: float = field(default=float("-inf"), metadata=saved(SINCE))
    samples: Series[int] = field(default_factory=lambda: Series(512, "q"))
    # throughput() of the samples, cached until a new sample arrives (scrapes are frequent).
    # With it, the seconds per step the ETA charges (_per_step), None without a pace.
    tp_cache: tuple[tuple[int, float, int | None], Throughput | None, float | None] | None = None
    history: Series[float] = field(default_factory=lambda: Series(HISTORY_POINTS))
    # The run's whole life, downsampled (exporter.core.timeline): what the status page charts.
    timeline: Timeline = field(default_factory=Timeline)
    # (time, steps/s) every so often, for the run's typical pace.
    pace: Series[float] = field(default_factory=lambda: Series(PACE_POINTS))
    state: str | None = None
    state_since: float = field(default=0.0, metadata=saved(FINITE))
    # Restored from the state file and not yet seen again by any source or discovery.
    restored: bool = False
    # Attempts: the run's current one, when it began, and the reporter's own start time
    # (a new one is a new process: a new attempt).
    attempt: int = field(default=1, metadata=saved(ATTEMPT))
    attempt_start: float | None = field(default=None, metadata=saved(FINITE))
    reporter_start: float | None = field(default=None, metadata=saved(FINITE))
    # The typical pace when the run turned degraded: it stays degraded until its pace is
    # back above the drop ratio of this (the typical pace must not follow it down).
    pace_reference: float | None = field(default=None, metadata=saved(FINITE))
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
    # Its size this attempt (nodes, else GPUs: size_of) when its pace was first sampled, and
    # (size, steps/s) of its earlier attempts: the scaling it showed (exporter.core.scaling).
    attempt_size: float | None = field(default=None, metadata=saved(GPUS))
    sizes: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=8))

    @property
    def size(self) -> tuple[float, str] | None:
        """The run's size and its unit: its job's nodes, else its GPUs; None when neither
        is known."""
        if self.meta.nodes:
            return float(self.meta.nodes), "nodes"
        if self.gpus > 0:
            return self.gpus, "gpus"
        return None

    @property
    def gpus(self) -> float:
        if self.meta.gpus is not None:
            return self.meta.gpus
        return self.report_gpus or 0.0


Problem = Callable[[str], None]


def thresholds_of(config: RunConfig, run: RunState) -> Thresholds:
    return effective(config.thresholds, run.threshold_overrides, dict(run.meta.thresholds))


def first_of(*values: float | None) -> float | None:
    return next((v for v in values if v is not None), None)


def new_run(config: RunConfig, meta: RunMeta | None, now: float) -> RunState:
    """A run whose first report arrives ``now``."""
    return RunState(
        meta=meta or RunMeta(),
        first_report=now,
        last_report=now,
        accrued_at=now,
        samples=Series(config.estimator.max_samples, "q"),
    )
