"""The one normalized progress report, and pure parsers for every accepted JSON format.

Every source (push, file, HTTP, logs) ends in a :class:`ProgressReport`. Parsing is pure:
bytes or decoded JSON in, a :class:`Parsed` out (the report plus the reasons for every value
that was dropped or clamped), or a :class:`ReportError` carrying a machine-readable reason
that the exporter counts in ``training_exporter_drops_total``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from .thresholds import Overrides, Thresholds, parse_overrides

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
    # log says it (docs/report-format.md; exporter.run keeps the newest).
    checkpoint_step: int | None = None
    checkpoint_timestamp: float | None = None
    # Tokens the run has trained on so far (Transformers' num_input_tokens_seen), the model's
    # training FLOPs per token, and the GPU it runs on, as the run says (for MFU).
    tokens: int | None = None
    flops_per_token: float | None = None
    gpu_model: str | None = None
    # Logs only: the exception a Python traceback at the log's end names ("Type: message",
    # bounded): the run failed, and this is why (states.reason).
    failure: str | None = None

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
        return (
            *((k, float(v)) for k, v in named if v is not None),
            *self.metrics,
        )


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


# Names under which the well-known values arrive, per field, across formats and frameworks.
_ALIASES: dict[str, tuple[str, ...]] = {
    "step": ("current_step", "currentStep", "step", "global_step"),
    "max_steps": ("total_steps", "totalSteps", "max_steps", "maxSteps"),
    "epoch": ("current_epoch", "currentEpoch", "epoch"),
    "max_epochs": ("total_epochs", "totalEpochs", "max_epochs", "num_train_epochs"),
    "loss": ("loss", "train_loss_step"),
    "eval_loss": ("eval_loss", "val_loss", "validation_loss"),
    "learning_rate": ("learning_rate", "lr"),
    "grad_norm": ("grad_norm",),
    "checkpoint_step": ("last_checkpoint_step", "checkpoint_step"),
    "checkpoint_timestamp": ("last_checkpoint_timestamp", "last_checkpoint_time"),
    "tokens": ("num_input_tokens_seen", "tokens"),
    "flops_per_token": ("model_flops_per_token", "flops_per_token"),
}
_FIELD_OF: dict[str, str] = {name: fld for fld, names in _ALIASES.items() for name in names}
# Earlier aliases win when a report carries several (Kubeflow sends both epoch and
# current_epoch; current_epoch is the precise one).
_RANK: dict[str, int] = {name: i for names in _ALIASES.values() for i, name in enumerate(names)}
_LOSS_FIELDS = frozenset({"loss", "eval_loss", "grad_norm"})


class _Builder:
    """Collects fields and problems while one report is parsed; never outlives a parse."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self.values: dict[str, Any] = {}
        self.ranks: dict[str, int] = {}
        self.metrics: dict[str, float] = {}
        self.problems: list[str] = []

    def problem(self, reason: str) -> None:
        self.problems.append(reason)

    def known(self, fld: str, raw: Any, rank: int = 0) -> None:
        if raw is None:
            return
        if fld in self.ranks and self.ranks[fld] <= rank:
            return
        value = _convert(fld, raw, self.problem)
        if value is not None:
            self.values[fld] = value
            self.ranks[fld] = rank

    def metric(self, name: Any, raw: Any) -> None:
        """Route one named value to its dedicated field or to the custom metrics."""
        if not isinstance(name, str):
            self.problem("invalid_metric_name")
            return
        fld = _FIELD_OF.get(name)
        if fld is not None:
            self.known(fld, raw, _RANK[name])
            return
        if not METRIC_NAME_RE.match(name):
            self.problem("invalid_metric_name")
            return
        number = _to_float(raw)
        if number is None:
            self.problem("non_numeric_metric")
            return
        self.metrics[name] = number

    def build(self, **extra: Any) -> Parsed:
        values = dict(self.values)
        values.update({k: v for k, v in extra.items() if v is not None})
        report = ProgressReport(
            **values, metrics=tuple(sorted(self.metrics.items())), format=self.fmt
        )
        return Parsed(report=report, problems=tuple(self.problems))


def _to_float(raw: Any) -> float | None:
    """Parse a JSON number or a numeric string (Kubeflow sends strings). None if neither."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int | float):
        return float(raw)
    if isinstance(raw, str) and 0 < len(raw) <= KUBEFLOW_MAX_FIELD_CHARS:
        try:
            return float(raw.strip())
        except ValueError:
            return None
    return None


def _convert(fld: str, raw: Any, problem: Any) -> Any:
    """Validate one known field. Returns the clean value, or None after noting why."""
    number = _to_float(raw)
    if number is None:
        problem(f"invalid_{fld}")
        return None
    if fld in _LOSS_FIELDS or fld == "learning_rate":
        # NaN/inf loss is the divergence signal and must reach the metrics unchanged.
        return number
    if not math.isfinite(number) or number < 0:
        problem(f"invalid_{fld}")
        return None
    if fld == "checkpoint_timestamp":
        if not 0 < number < MAX_TIMESTAMP:
            problem(f"invalid_{fld}")
            return None
        return number
    if fld == "flops_per_token":
        if not 0 < number <= MAX_FLOPS_PER_TOKEN:
            problem(f"invalid_{fld}")
            return None
        return number
    if fld in ("step", "max_steps", "checkpoint_step", "tokens"):
        if number > MAX_STEP:
            problem(f"{fld}_out_of_range")
            return None
        if not number.is_integer():  # steps are counts: 1.5 is a mistake, not step 1
            problem(f"invalid_{fld}")
            return None
        return int(number)
    if number > MAX_EPOCHS:
        problem(f"{fld}_out_of_range")
        return None
    return number


def _progress_ratio(raw: Any, problem: Any, *, strict: bool) -> float | None:
    """Percent (0..100) to ratio. Over 100 is an error when strict (upstream), else clamped."""
    number = _to_float(raw)
    if number is None or not math.isfinite(number) or number < 0:
        if strict:
            raise ReportError("invalid_progress", "progressPercentage must be between 0 and 100")
        problem("invalid_progress")
        return None
    if number > 100:
        if strict:
            raise ReportError("invalid_progress", "progressPercentage must be between 0 and 100")
        problem("progress_clamped")
        number = 100.0
    return number / 100.0


def _eta(raw: Any, problem: Any, *, strict: bool) -> float | None:
    number = _to_float(raw)
    if number is None or not math.isfinite(number) or number < 0:
        if strict:
            raise ReportError("invalid_eta", "estimatedRemainingSeconds must be >= 0")
        problem("invalid_eta")
        return None
    if number > MAX_ETA_SECONDS:
        problem("eta_clamped")
        return MAX_ETA_SECONDS
    return number


def parse_timestamp(raw: Any, now: float, problem: Any) -> float | None:
    """RFC 3339 string or Unix seconds to Unix seconds; future times are clamped to ``now``."""
    if raw is None or raw == "":
        return None
    ts: float | None
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        ts = float(raw)
    elif isinstance(raw, str) and len(raw) <= 64:
        try:
            ts = datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
        except ValueError:
            ts = None
    else:
        ts = None
    if ts is None or not math.isfinite(ts):
        problem("invalid_timestamp")
        return None
    if ts > now + MAX_CLOCK_SKEW_SECONDS:
        problem("future_timestamp")
        return now
    return ts


def _deadline(raw: Any, problem: Any, name: str = "deadline") -> float | None:
    """A deadline (or another instant that identifies rather than dates a report, such as
    the reporter's start time) as Unix seconds or RFC 3339; unlike report timestamps it is
    never clamped to now: a clock apart from the exporter's must not change its value."""
    if raw is None:
        return None
    if (
        isinstance(raw, int | float)
        and not isinstance(raw, bool)
        and math.isfinite(raw)
        and raw > 0
    ):
        return float(raw)
    if isinstance(raw, str) and len(raw) <= 64:
        try:
            return datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    problem(f"invalid_{name}")
    return None


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


def decode_json(body: bytes, max_bytes: int = KUBEFLOW_MAX_BODY_BYTES) -> Any:
    """Decode a JSON body with a size bound. Raises ReportError(oversize|invalid_json)."""
    if len(body) > max_bytes:
        raise ReportError("oversize", f"body of {len(body)} bytes exceeds {max_bytes} bytes")
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ReportError("invalid_json", f"invalid JSON: {exc}") from None
    except ValueError as exc:  # an integer over Python's 4,300-digit conversion limit
        raise ReportError("invalid_json", f"invalid JSON: {str(exc)[:80]}") from None


def parse_kubeflow(obj: Any, now: float) -> Parsed:
    """Parse the upstream Kubeflow Trainer ``{"trainerStatus": {...}}`` body.

    Structural violations of the upstream schema (wrong types, over 256 metrics, names or
    values outside 1..64 chars, progress outside 0..100) raise ReportError, which the push
    endpoint answers with 422 like the upstream server. Values that are well-formed but not
    usable (a non-numeric metric, a negative step) are dropped and listed as problems.
    """
    if not isinstance(obj, Mapping):
        raise ReportError("invalid_type", "body must be a JSON object")
    status = obj.get("trainerStatus")
    if status is None:
        return Parsed(ProgressReport(format=FORMAT_KUBEFLOW))
    if not isinstance(status, Mapping):
        raise ReportError("invalid_type", "trainerStatus must be an object")
    b = _Builder(FORMAT_KUBEFLOW)
    progress = None
    if status.get("progressPercentage") is not None:
        raw = status["progressPercentage"]
        if not isinstance(raw, int) or isinstance(raw, bool):
            raise ReportError("invalid_progress", "progressPercentage must be an integer")
        progress = _progress_ratio(raw, b.problem, strict=True)
    eta = None
    if status.get("estimatedRemainingSeconds") is not None:
        raw = status["estimatedRemainingSeconds"]
        if not isinstance(raw, int) or isinstance(raw, bool):
            raise ReportError("invalid_eta", "estimatedRemainingSeconds must be an integer")
        eta = _eta(raw, b.problem, strict=True)
    metrics = status.get("metrics") or []
    if not isinstance(metrics, list):
        raise ReportError("invalid_type", "trainerStatus.metrics must be a list")
    if len(metrics) > KUBEFLOW_MAX_METRICS:
        raise ReportError(
            "too_many_metrics", f"{len(metrics)} metrics exceed the limit of {KUBEFLOW_MAX_METRICS}"
        )
    for item in metrics:
        if not isinstance(item, Mapping):
            raise ReportError("invalid_type", "each metric must be an object")
        name, value = item.get("name"), item.get("value")
        for what, text in (("name", name), ("value", value)):
            if not isinstance(text, str) or not 1 <= len(text) <= KUBEFLOW_MAX_FIELD_CHARS:
                raise ReportError(
                    f"invalid_metric_{what}",
                    f"metric {what} must be a string of 1..{KUBEFLOW_MAX_FIELD_CHARS} characters",
                )
        b.metric(name, value)
    timestamp = parse_timestamp(status.get("lastUpdatedTime"), now, b.problem)
    return b.build(
        progress=progress,
        eta_seconds=eta,
        timestamp=timestamp,
        final=progress is not None and progress >= 1.0,
    )


def _named_values(b: _Builder, values: Any, where: str, prefix: str = "") -> None:
    """Feed ``{"name": value}`` or ``[{"name": n, "value": v}]`` into the builder; names
    without ``prefix`` get it (an evaluation's ``accuracy`` is ``eval_accuracy``)."""
    if values is None:
        return
    if isinstance(values, Mapping):
        items = list(values.items())
    elif isinstance(values, list):
        items = [
            (m.get("name"), m.get("value")) if isinstance(m, Mapping) else (None, None)
            for m in values
        ]
    else:
        b.problem(f"invalid_{where}")
        return
    if len(items) > KUBEFLOW_MAX_METRICS:
        raise ReportError(
            "too_many_metrics", f"{len(items)} {where} exceed the limit of {KUBEFLOW_MAX_METRICS}"
        )
    for name, value in items:
        if prefix and isinstance(name, str) and not name.startswith(prefix):
            name = prefix + name
        b.metric(name, value)


# OpenShift AI's summary of a finished run (opendatahub-io/trainer progression.go).
ODH_COMPLETE = ("complete", "complete (early stopped)")


def parse_opendatahub(obj: Any, now: float) -> Parsed:
    """Parse OpenShift AI's progression JSON: what a tracked pod serves on :28080
    (``TrainerStatus``) and what its controller keeps in the TrainJob's annotation
    (``AnnotationStatus``, which adds ``estimatedRemainingTimeSummary`` and
    ``lastUpdatedTime``). A summary of "complete" means the run finished."""
    if not isinstance(obj, Mapping):
        raise ReportError("invalid_type", "body must be a JSON object")
    b = _Builder(FORMAT_OPENDATAHUB)
    for key in ("currentStep", "totalSteps", "currentEpoch", "totalEpochs"):
        if key in obj:
            b.metric(key, obj[key])
    _named_values(b, obj.get("trainMetrics"), "trainMetrics")
    _named_values(b, obj.get("evalMetrics"), "evalMetrics", prefix="eval_")
    progress = (
        _progress_ratio(obj["progressPercentage"], b.problem, strict=False)
        if obj.get("progressPercentage") is not None
        else None
    )
    eta = (
        _eta(obj["estimatedRemainingSeconds"], b.problem, strict=False)
        if obj.get("estimatedRemainingSeconds") is not None
        else None
    )
    final = progress is not None and progress >= 1.0
    if obj.get("estimatedRemainingTimeSummary") in ODH_COMPLETE:
        final = True
    if isinstance(obj.get("trainingState"), str) and obj["trainingState"].lower() in (
        "completed",
        "complete",
        "finished",
    ):
        final = True
    timestamp = parse_timestamp(obj.get("lastUpdatedTime", obj.get("timestamp")), now, b.problem)
    return b.build(progress=progress, eta_seconds=eta, timestamp=timestamp, final=final)


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
    "tokens",
    "model_flops_per_token",
)


def parse_native(obj: Any, now: float) -> Parsed:
    """Parse our native report (docs/report-format.md). Unknown top-level keys are ignored."""
    if not isinstance(obj, Mapping):
        raise ReportError("invalid_type", "body must be a JSON object")
    b = _Builder(FORMAT_NATIVE)
    for key in NATIVE_FIELDS:
        if obj.get(key) is not None:
            b.known(key, obj[key])
    for key in CHECKPOINT_FIELDS:
        if obj.get(key) is not None:
            b.metric(key, obj[key])
    _named_values(b, obj.get("metrics"), "metrics")
    _named_values(b, obj.get("eval_metrics"), "eval_metrics")
    progress = (
        _progress_ratio(float(obj["progress"]) * 100, b.problem, strict=False)
        if isinstance(obj.get("progress"), int | float) and not isinstance(obj["progress"], bool)
        else None
    )
    if (
        obj.get("progress") is not None
        and progress is None
        and "invalid_progress" not in b.problems
    ):
        b.problem("invalid_progress")
    eta = (
        _eta(obj["eta_seconds"], b.problem, strict=False)
        if obj.get("eta_seconds") is not None
        else None
    )
    gpus = None
    if obj.get("gpus") is not None:
        g = _to_float(obj["gpus"])
        if g is None or not math.isfinite(g) or not 0 <= g <= MAX_GPUS:
            b.problem("invalid_gpus")
        else:
            gpus = g
    final = obj.get("final")
    if final is not None and not isinstance(final, bool):
        b.problem("invalid_final")
        final = None
    framework = clean_label(obj.get("framework"), 32) if obj.get("framework") is not None else None
    gpu_model = clean_label(obj.get("gpu_model"), 64) if obj.get("gpu_model") is not None else None
    timestamp = parse_timestamp(obj.get("timestamp"), now, b.problem)
    start_time = _deadline(obj.get("start_time"), b.problem, "start_time")
    thresholds = (
        parse_overrides(obj["thresholds"], b.problem) if obj.get("thresholds") is not None else ()
    )
    deadline = _deadline(obj.get("deadline"), b.problem)
    budget = None
    if obj.get("gpu_hours_budget") is not None:
        budget = _to_float(obj["gpu_hours_budget"])
        if budget is None or not math.isfinite(budget) or not 0 < budget <= MAX_GPU_HOURS_BUDGET:
            b.problem("invalid_gpu_hours_budget")
            budget = None
    return b.build(
        progress=progress,
        eta_seconds=eta,
        thresholds=thresholds or None,
        deadline_timestamp=deadline,
        gpu_hours_budget=budget,
        gpus=gpus,
        final=bool(final),
        framework=framework,
        timestamp=timestamp,
        start_time=start_time,
        gpu_model=gpu_model or None,
    )


def _bounded_count(value: Any, limit: float = MAX_STEP) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= limit


def _bounded_number(value: Any, low: float, high: float) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and low <= value <= high
    )


def _float_or_none(value: Any) -> bool:
    """A loss-like value: any float, NaN and infinities included (divergence is a signal)."""
    return isinstance(value, float) or (isinstance(value, int) and abs(value) <= MAX_STEP)


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

    def check(name: str, ok: bool, reason: str) -> None:
        if getattr(report, name) is not None and not ok:
            changes[name] = None
            problems.append(reason)

    check("step", _bounded_count(report.step), "step_out_of_range")
    check("max_steps", _bounded_count(report.max_steps), "max_steps_out_of_range")
    check("epoch", _bounded_number(report.epoch, 0.0, MAX_EPOCHS), "epoch_out_of_range")
    check(
        "max_epochs", _bounded_number(report.max_epochs, 0.0, MAX_EPOCHS), "max_epochs_out_of_range"
    )
    check("progress", _bounded_number(report.progress, 0.0, 1.0), "invalid_progress")
    check("eta_seconds", _bounded_number(report.eta_seconds, 0.0, MAX_ETA_SECONDS), "invalid_eta")
    check("gpus", _bounded_number(report.gpus, 0.0, MAX_GPUS), "invalid_gpus")
    check(
        "gpu_hours_budget",
        _bounded_number(report.gpu_hours_budget, 1e-9, MAX_GPU_HOURS_BUDGET),
        "invalid_gpu_hours_budget",
    )
    for name in ("timestamp", "deadline_timestamp", "start_time"):
        check(name, _bounded_number(getattr(report, name), 0.0, 1e11), f"invalid_{name}")
    for name in ("loss", "eval_loss", "learning_rate", "grad_norm"):
        check(name, _float_or_none(getattr(report, name)), f"invalid_{name}")
    samples = tuple(
        (t, n)
        for t, n in report.step_samples
        if _bounded_number(t, 0.0, 1e11) and _bounded_count(n)
    )
    if len(samples) != len(report.step_samples):
        changes["step_samples"] = samples
        problems.append("step_out_of_range")
    metrics = tuple((k, v) for k, v in report.metrics if _float_or_none(v))
    if len(metrics) != len(report.metrics):
        changes["metrics"] = metrics
        problems.append("invalid_metric_value")
    if not changes:
        return Parsed(report)
    return Parsed(replace(report, **changes), tuple(problems))


def detect_format(obj: Any) -> str:
    """Which parser a decoded JSON document belongs to, by its distinguishing keys."""
    if isinstance(obj, Mapping):
        if "trainerStatus" in obj:
            return FORMAT_KUBEFLOW
        if any(
            k in obj
            for k in (
                "progressPercentage",
                "currentStep",
                "totalSteps",
                "trainMetrics",
                "evalMetrics",
            )
        ):
            return FORMAT_OPENDATAHUB
    return FORMAT_NATIVE


PARSERS = {
    FORMAT_KUBEFLOW: parse_kubeflow,
    FORMAT_OPENDATAHUB: parse_opendatahub,
    FORMAT_NATIVE: parse_native,
}


def parse_any(obj: Any, now: float) -> Parsed:
    """Parse a decoded JSON document in whichever accepted format it is."""
    return PARSERS[detect_format(obj)](obj, now)


def parse_bytes(body: bytes, now: float, max_bytes: int = KUBEFLOW_MAX_BODY_BYTES) -> Parsed:
    """Decode and parse a JSON body of any accepted format. Raises ReportError."""
    return parse_any(decode_json(body, max_bytes), now)


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
