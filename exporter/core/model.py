"""The one normalized progress report, its bounds, and a run's identity.

Every source (push, file, HTTP, logs) ends in a :class:`ProgressReport`: the wire formats
are parsed into one by :mod:`exporter.core.wire`, log lines by :mod:`exporter.logs.formats`. A
parse gives a :class:`Parsed` (the report plus the reasons for every value dropped or
clamped) or raises a :class:`ReportError` carrying a machine-readable reason that the
exporter counts in ``training_exporter_drops_total``; :func:`within_bounds` holds every
report to the same bounds, whichever path it came by.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from .thresholds import Overrides, Thresholds

# Upstream Kubeflow Trainer limits for the trainerStatus body.
KUBEFLOW_MAX_BODY_BYTES = 64 * 1024
# The TrainJob source restates progress that another source (a push, a log) may report
# first-hand. A run keeps the name of its first-hand source: the status it restates must
# neither flip the run's training_run_info{source} series nor make the write-back take the
# run's progress for the TrainJob's own (exporter.sinks.writeback).
TRAINJOB_SOURCE = "trainjob"
SECONDARY_SOURCES = frozenset({TRAINJOB_SOURCE})
KUBEFLOW_MAX_METRICS = 256
KUBEFLOW_MAX_FIELD_CHARS = 64

# Our own bounds, applied to every format.
MAX_STEP = 10**15
MAX_EPOCHS = 1e9
MAX_ETA_SECONDS = 10 * 365 * 86400.0
MAX_GPUS = 4096.0
MAX_GPU_HOURS_BUDGET = 1e9
MAX_TIMESTAMP = 4102444800.0  # 2100-01-01: a time past it is a mistake
MAX_FLOPS_PER_TOKEN = 1e16  # 6 x a 1e15-parameter model
MAX_LABEL_CHARS = 128
# How far in the future a report's own timestamp may be before it is clamped to "now".
MAX_CLOCK_SKEW_SECONDS = 300.0

# A custom metric name becomes a label value; keep it to a safe, readable alphabet.
# \Z, not $: "$" also matches before a trailing newline, which would let "loss\n" through.
METRIC_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:/-]{0,63}\Z")
MAX_RUN_NAME_CHARS = 63
_RUN_NAME_UNSAFE_RE = re.compile(r"[^A-Za-z0-9._-]")
_LABEL_SAFE_RE = re.compile(r"[^\x20-\x7e]")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")
_DNS_SUBDOMAIN = re.compile(r"^(?=.{1,253}\Z)[a-z0-9]([-a-z0-9.]*[a-z0-9])?\Z")


def valid_kubernetes_names(namespace: str, name: str) -> bool:
    """Whether ``namespace`` is a valid namespace (a DNS label) and ``name`` a valid object
    name (a DNS subdomain), as the API server requires; anything else never reaches it."""
    return bool(_DNS_LABEL.match(namespace) and _DNS_SUBDOMAIN.match(name))


FORMAT_KUBEFLOW = "kubeflow"
FORMAT_OPENDATAHUB = "opendatahub"
FORMAT_NATIVE = "native"
FORMAT_LOG = "log"  # assembled from log lines by the log source


class ReportError(ValueError):
    """A report that cannot be used at all. ``reason`` is a short snake_case counter label."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class ProgressReport:
    """What one report said. ``None`` means "not carried": merging keeps the previous value.

    ``progress`` is a ratio in 0..1. ``metrics`` holds the numeric values that have no
    dedicated field, as sorted (name, value) pairs so the report stays hashable and frozen.
    Loss-like values may be NaN or infinite on purpose: divergence is a signal.
    """

    step: int | None = None
    max_steps: int | None = None
    epoch: float | None = None
    max_epochs: float | None = None
    progress: float | None = None
    eta_seconds: float | None = None
    loss: float | None = None
    eval_loss: float | None = None
    learning_rate: float | None = None
    grad_norm: float | None = None
    gpus: float | None = None
    final: bool = False
    timestamp: float | None = None
    framework: str | None = None
    metrics: tuple[tuple[str, float], ...] = ()
    thresholds: tuple[tuple[str, float], ...] = ()
    deadline_timestamp: float | None = None
    gpu_hours_budget: float | None = None
    format: str = FORMAT_NATIVE
    # Earlier (time, step) points this report witnessed, oldest first: a log chunk carries a
    # progress bar's older frames with their own elapsed times. Only the log source sets it.
    step_samples: tuple[tuple[float, int], ...] = ()
    # When the reporting process started (Unix seconds; the reporter sends it): a new value
    # under the same run name is a new attempt.
    start_time: float | None = None
    # Logs only: ``max_steps`` is a progress bar's length, and nothing else in the log said
    # the run ended. The bar reaching it does not by itself finish the run (states.done).
    total_from_bar: bool = False
    # Values this report witnessed one by one, each with its own time, oldest first: a log
    # chunk carries several logged dicts, each a value Katib must get. Only logs set it;
    # any other report is one such sample itself (ProgressReport.values).
    value_samples: tuple[tuple[float, tuple[tuple[str, float], ...]], ...] = ()
    # The run's last checkpoint: the step it saved and when (Unix seconds), as the run or its
    # log says it (docs/report-format.md; exporter.core.run keeps the newest).
    checkpoint_step: int | None = None
    checkpoint_timestamp: float | None = None
    # How long that save took (seconds), where the run measures it: what a checkpoint before
    # a kill deadline must leave time for (exporter.core.directives).
    checkpoint_seconds: float | None = None
    # Tokens the run has trained on so far (Transformers' num_input_tokens_seen), the model's
    # training FLOPs per token, and the GPU it runs on, as the run says (for MFU).
    tokens: int | None = None
    flops_per_token: float | None = None
    gpu_model: str | None = None
    # Logs only: the exception a Python traceback at the log's end names ("Type: message",
    # bounded): the run failed, and this is why (states.reason).
    failure: str | None = None
    # Logs only: the step read before is no longer the run's (the loop went on to steps the
    # log prints rounded, LeRobot's "step:23K", or to a count within an epoch it cannot
    # place): the run's step is unknown, not the last one read (exporter.core.run.merge).
    step_stale: bool = False

    def values(self) -> tuple[tuple[str, float], ...]:
        """The report's own numbers by name (step, epoch, loss, eval_loss, learning_rate,
        grad_norm, then its metrics): what one observation of the run says."""
        named = (
            ("step", self.step),
            ("epoch", self.epoch),
            ("loss", self.loss),
            ("eval_loss", self.eval_loss),
            ("learning_rate", self.learning_rate),
            ("grad_norm", self.grad_norm),
        )
        return (*[(k, float(v)) for k, v in named if v is not None], *self.metrics)


@dataclass(frozen=True, slots=True)
class Observed:
    """One observation of a run's values: its sequence number in the run (1, 2, ...), when
    it was made (Unix seconds), and the values by name (ProgressReport.values)."""

    seq: int
    timestamp: float
    values: tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class Parsed:
    """A parsed report and the reasons for values that were dropped or clamped on the way."""

    report: ProgressReport
    problems: tuple[str, ...] = field(default=())


def clean_label(value: Any, limit: int = MAX_LABEL_CHARS) -> str | None:
    """A bounded, printable-ASCII label value, or None when nothing usable remains."""
    if not isinstance(value, str):
        return None
    cleaned = _LABEL_SAFE_RE.sub("_", value)[:limit]
    return cleaned or None


def run_name(text: str) -> str | None:
    """A run name (its ``pod`` and ``job_name`` labels) from a file's name: the characters
    of a Kubernetes name, ``[A-Za-z0-9._-]``, with anything else (spaces, quotes, control
    characters, bytes that are not UTF-8) replaced by ``_``, at most 63 characters; None when
    nothing but replacements would remain."""
    cleaned = _RUN_NAME_UNSAFE_RE.sub("_", text)[:MAX_RUN_NAME_CHARS]
    return cleaned if cleaned.strip("_") else None


def as_float(value: int | float) -> float:
    """A JSON number as a float. JSON integers have no bound, and ``float()`` of one past a
    float's range raises OverflowError (as ``math.isfinite`` does): such a number is taken
    as the infinity it is nearest to, which every bound then refuses or, for a loss, reads
    as divergence."""
    if isinstance(value, int) and abs(value) >= 2**1023:
        return math.inf if value > 0 else -math.inf
    return float(value)


def rfc3339_seconds(value: Any) -> float | None:
    """An RFC 3339 time as the API server and the reporters write it (``Z`` or an offset)
    in Unix seconds; None for anything else."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def non_finite_name(value: float) -> str:
    """How Prometheus writes a non-finite float: ``NaN``, ``+Inf`` or ``-Inf``."""
    if math.isnan(value):
        return "NaN"
    return "+Inf" if value > 0 else "-Inf"


def json_number(value: float | int | None) -> float | int | None:
    """A number JSON can hold: a non-finite float becomes null (JSON has no NaN, and a
    strict parser, JavaScript's ``JSON.parse`` among them, rejects the bare word)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def json_safe(value: Any) -> Any:
    """``value`` with every non-finite float, at any depth of dicts, lists and tuples, made
    null: what every JSON answer and ``-o json`` passes through before ``json.dumps(...,
    allow_nan=False)``."""
    if isinstance(value, float):
        return json_number(value)
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def non_finite_fields(values: dict[str, Any]) -> dict[str, str]:
    """Which of ``values`` are non-finite floats, each with its name (``{"loss": "NaN"}``):
    a JSON answer carries null for them and says here what they were."""
    return {
        k: non_finite_name(v)
        for k, v in values.items()
        if isinstance(v, float) and not math.isfinite(v)
    }


# The report's numbers that have fields of their own (native keys; parsers of other formats
# map onto them). VALUE_FIELDS adds the two a report may state about the run as a whole.
NATIVE_FIELDS = (
    "step",
    "max_steps",
    "epoch",
    "max_epochs",
    "loss",
    "eval_loss",
    "learning_rate",
    "grad_norm",
)
VALUE_FIELDS = (*NATIVE_FIELDS, "progress", "eta_seconds")
# Native keys read like named values (docs/report-format.md): the run's last checkpoint (its
# step and time), the tokens it trained on and its model's FLOPs per token.
CHECKPOINT_FIELDS = (
    "last_checkpoint_step",
    "last_checkpoint_timestamp",
    "last_checkpoint_seconds",
    "tokens",
    "model_flops_per_token",
)


@dataclass(frozen=True, slots=True)
class Bound:
    """What one value may be, wherever it comes from (a report, the state file): a count
    (a whole number in ``low..high``), a number (``low..high``, finite unless ``finite`` is
    False), a loss (any float, NaN and infinities included: divergence is a signal), a
    flag (a boolean), or names (metric names to numbers: a run's custom metrics)."""

    kind: str  # "count", "number", "loss", "flag", "names"
    low: float = -math.inf
    high: float = math.inf
    finite: bool = True

    def holds(self, value: Any) -> bool:
        """Whether ``value`` is one this bound allows (never a bool for a number)."""
        if self.kind == "flag":
            return isinstance(value, bool)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if self.kind == "count":
            return isinstance(value, int) and self.low <= value <= self.high
        if self.kind == "loss":
            return isinstance(value, float) or abs(value) <= MAX_STEP
        if self.finite and not math.isfinite(value):
            return False
        return self.low <= value <= self.high  # NaN is in no range


# The bounds by name: each stated once, read by within_bounds and by the run's saved fields
# (exporter.core.run.state), so that a restored run meets what a live report meets.
COUNT = Bound("count", 0, MAX_STEP)
EPOCHS = Bound("number", 0.0, MAX_EPOCHS)
FRACTION = Bound("number", 0.0, 1.0)
ETA_SECONDS = Bound("number", 0.0, MAX_ETA_SECONDS)
GPUS = Bound("number", 0.0, MAX_GPUS)
GPU_HOURS_BUDGET = Bound("number", 1e-9, MAX_GPU_HOURS_BUDGET)
TIMESTAMP = Bound("number", 0.0, 1e11)
FLOPS_PER_TOKEN = Bound("number", 0.0, MAX_FLOPS_PER_TOKEN)
# A save that takes more than a day is a mistake, not a checkpoint.
MAX_CHECKPOINT_SECONDS = 86_400.0
CHECKPOINT_SECONDS = Bound("number", 0.0, MAX_CHECKPOINT_SECONDS)
LOSS = Bound("loss")
# What a report's fields may be, and the reason a value outside is dropped under.
REPORT_BOUNDS: dict[str, tuple[Bound, str]] = {
    "step": (COUNT, "step_out_of_range"),
    "max_steps": (COUNT, "max_steps_out_of_range"),
    "epoch": (EPOCHS, "epoch_out_of_range"),
    "max_epochs": (EPOCHS, "max_epochs_out_of_range"),
    "progress": (FRACTION, "invalid_progress"),
    "eta_seconds": (ETA_SECONDS, "invalid_eta"),
    "gpus": (GPUS, "invalid_gpus"),
    "gpu_hours_budget": (GPU_HOURS_BUDGET, "invalid_gpu_hours_budget"),
    "timestamp": (TIMESTAMP, "invalid_timestamp"),
    "deadline_timestamp": (TIMESTAMP, "invalid_deadline_timestamp"),
    "start_time": (TIMESTAMP, "invalid_start_time"),
    "loss": (LOSS, "invalid_loss"),
    "eval_loss": (LOSS, "invalid_eval_loss"),
    "learning_rate": (LOSS, "invalid_learning_rate"),
    "grad_norm": (LOSS, "invalid_grad_norm"),
    "checkpoint_seconds": (CHECKPOINT_SECONDS, "invalid_checkpoint_seconds"),
}


def within_bounds(report: ProgressReport) -> Parsed:
    """``report`` with every value outside what a parser accepts dropped, and why.

    Parsers of pushes, files and HTTP bodies bound what they read; the log accumulator adds
    up bar counts and the state file brings back whatever was saved, so every report passes
    here once more on its way into the tracker: a count beyond :data:`MAX_STEP` (under
    2^53, where a float still counts exactly), a non-finite time, a negative GPU count. One
    absurd number is one dropped value, never a run (or a scrape) that cannot be rendered.
    """
    problems: list[str] = []
    changes: dict[str, Any] = {}

    for name in ("max_steps", "max_epochs"):
        if getattr(report, name) == 0:
            # A length of 0 is no length ("totalSteps": 0 before a trainer knows its own, a
            # log's "step 0 / 0"): not carried, whichever source said it, and no error.
            changes[name] = None
    for name, (bound, reason) in REPORT_BOUNDS.items():
        value = getattr(report, name)
        if value is not None and not bound.holds(value):
            changes[name] = None
            problems.append(reason)
    samples = tuple((t, n) for t, n in report.step_samples if TIMESTAMP.holds(t) and COUNT.holds(n))
    if len(samples) != len(report.step_samples):
        changes["step_samples"] = samples
        problems.append("step_out_of_range")
    metrics = tuple((k, v) for k, v in report.metrics if LOSS.holds(v))
    if len(metrics) != len(report.metrics):
        changes["metrics"] = metrics
        problems.append("invalid_metric_value")
    if not changes:
        return Parsed(report)
    return Parsed(replace(report, **changes), tuple(problems))


# -- naming a run ---------------------------------------------------------------------

Clock = Callable[[], float]  # Unix seconds now; injected everywhere time is read


class RunKey(NamedTuple):
    """The identity of a run, and the labels stamped on every per-run series."""

    namespace: str
    pod: str
    job_name: str


@dataclass(frozen=True, slots=True)
class RunMeta:
    """What discovery (not the report) knows about a run: the ``training_run_info`` labels,
    allocated GPUs and the deadline and budget annotations."""

    job_kind: str = ""
    framework: str = ""
    source: str = ""
    node: str = ""
    rank: str = ""
    container: str = ""
    # Katib (Kubernetes mode): the trial and experiment the pod runs, from Katib's labels
    trial: str = ""
    experiment: str = ""
    gpus: float | None = None
    deadline_timestamp: float | None = None
    gpu_seconds_budget: float | None = None
    thresholds: Overrides = ()  # from annotations; beat the report's own overrides
    # When Kubernetes kills the job (the earliest activeDeadlineSeconds of the pod and its
    # owners, exporter.core.deadlines) and the kind whose field it is; None where none is set.
    kill_deadline_timestamp: float | None = None
    kill_deadline_kind: str = ""
    # The nodes the run's job runs on, as its spec states (exporter.core.scaling.node_count);
    # None where nothing says (standalone, a bare pod): sizes are then counted in GPUs.
    nodes: int | None = None
    # When the pod got its GPUs (Kubernetes mode): GPU-seconds are then derived from it, so
    # they survive an exporter restart without double counting.
    gpu_start_timestamp: float | None = None
    gpu_end_timestamp: float | None = None  # when a finished pod gave its GPUs back
    # Whether the run's pod is known to be running (Kubernetes mode: it exists on this node
    # and has not terminated); None where nobody knows (standalone). A silent run whose pod
    # runs is stalled, not merely silent.
    alive: bool | None = None
    pod_failed: bool = False  # the pod ended in phase Failed
    deleting: bool = False  # the pod is being deleted (evicted, drained): time to save
    checkpoint_request: str | None = None  # the checkpoint annotation's value, if any
    stacks_request: str | None = None  # the stacks annotation's value, if any
    pod_uid: str = ""  # Kubernetes mode: a new UID under the same pod name is a new attempt
    log_format: str = ""  # the pod's log-format annotation: a configured format tried first


class RunView(Protocol):
    """A run's snapshot (``tracker.RunSnapshot``) as the modules outside the core read it:
    the TrainJob write-back and Katib reporting. Read-only; they need not import the
    tracker."""

    @property
    def meta(self) -> RunMeta: ...
    @property
    def progress(self) -> float | None: ...
    @property
    def finished(self) -> bool: ...
    @property
    def eta_seconds(self) -> float | None: ...
    @property
    def loss(self) -> float | None: ...
    @property
    def eval_loss(self) -> float | None: ...
    @property
    def learning_rate(self) -> float | None: ...
    @property
    def grad_norm(self) -> float | None: ...
    @property
    def step(self) -> int | None: ...
    @property
    def max_steps(self) -> int | None: ...
    @property
    def epoch(self) -> float | None: ...
    @property
    def max_epochs(self) -> float | None: ...
    @property
    def metrics(self) -> tuple[tuple[str, float], ...]: ...
    @property
    def last_checkpoint_step(self) -> int | None: ...
    @property
    def last_checkpoint_timestamp(self) -> float | None: ...
    @property
    def last_report_timestamp(self) -> float: ...
    @property
    def thresholds(self) -> Thresholds: ...
