"""The wire formats of pushed and pulled bodies: Kubeflow's ``trainerStatus``, OpenShift AI's
(Open Data Hub) TrainJob annotation, and the native report (docs/report-format.md), parsed
into a :class:`~exporter.core.model.ProgressReport`, the way exporter.logs.formats parse log lines.

Pure: bytes or decoded JSON in, a :class:`~exporter.core.model.Parsed` out (the report and the
reason for every value dropped or clamped), or a :class:`~exporter.core.model.ReportError` whose
reason the exporter counts in ``training_exporter_drops_total``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from .model import (
    CHECKPOINT_FIELDS,
    FORMAT_KUBEFLOW,
    FORMAT_NATIVE,
    FORMAT_OPENDATAHUB,
    KUBEFLOW_MAX_BODY_BYTES,
    KUBEFLOW_MAX_FIELD_CHARS,
    KUBEFLOW_MAX_METRICS,
    MAX_CHECKPOINT_SECONDS,
    MAX_CLOCK_SKEW_SECONDS,
    MAX_EPOCHS,
    MAX_ETA_SECONDS,
    MAX_FLOPS_PER_TOKEN,
    MAX_GPU_HOURS_BUDGET,
    MAX_GPUS,
    MAX_STEP,
    MAX_TIMESTAMP,
    METRIC_NAME_RE,
    NATIVE_FIELDS,
    Parsed,
    ProgressReport,
    ReportError,
    as_float,
    clean_label,
)
from .stacks import (
    FROM_REPORTER,
    MAX_FRAMES,
    MAX_RANK,
    MAX_TEXT,
    MAX_THREADS,
    Collective,
    Frame,
    RankStacks,
    ThreadStack,
    collective_op,
)
from .thresholds import parse_overrides

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
    "checkpoint_seconds": ("last_checkpoint_seconds", "checkpoint_seconds"),
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
        if extra:
            values.update({k: v for k, v in extra.items() if v is not None})
        report = ProgressReport(
            **values, metrics=tuple(sorted(self.metrics.items())), format=self.fmt
        )
        return Parsed(report=report, problems=tuple(self.problems))


def _to_float(raw: Any) -> float | None:
    """Parse a JSON number or a numeric string (Kubeflow sends strings). None if neither."""
    if isinstance(raw, str):  # first: what logs and Kubeflow send
        if 0 < len(raw) <= KUBEFLOW_MAX_FIELD_CHARS:
            try:
                return float(raw.strip())
            except ValueError:
                return None
        return None
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int | float):
        return as_float(raw)
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
    if fld == "checkpoint_seconds":
        if not 0 < number <= MAX_CHECKPOINT_SECONDS:
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
        ts = as_float(raw)
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
    number = as_float(raw) if isinstance(raw, int | float) and not isinstance(raw, bool) else None
    if number is not None and math.isfinite(number) and number > 0:
        return number
    if isinstance(raw, str) and len(raw) <= 64:
        try:
            return datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    problem(f"invalid_{name}")
    return None


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


# The native keys read after the values and metrics (parse_native).
_NATIVE_REST = frozenset(
    {"progress", "eta_seconds", "gpus", "final", "framework", "gpu_model", "timestamp"}
    | {"start_time", "thresholds", "deadline", "gpu_hours_budget"}
)


def parse_native(obj: Any, now: float) -> Parsed:
    """Parse our native report (docs/report-format.md). Unknown top-level keys are ignored."""
    if not isinstance(obj, Mapping):
        raise ReportError("invalid_type", "body must be a JSON object")
    b = _Builder(FORMAT_NATIVE)
    for key in NATIVE_FIELDS:
        if (value := obj.get(key)) is not None:
            b.known(key, value)
    for key in CHECKPOINT_FIELDS:
        if (value := obj.get(key)) is not None:
            b.metric(key, value)
    for key in ("metrics", "eval_metrics"):
        if (values := obj.get(key)) is not None:
            _named_values(b, values, key)
    if _NATIVE_REST.isdisjoint(obj):
        return b.build()  # values and metrics only: every line a log format reads
    progress = (
        _progress_ratio(as_float(obj["progress"]) * 100, b.problem, strict=False)
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


# -- the reporter's stacks body (docs/report-format.md#stacks) ----------------------------


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ReportError("invalid_stacks", f"{what}: not a string")
    # JSON may carry lone surrogates; a label value must encode as UTF-8.
    return value[:MAX_TEXT].encode("utf-8", "replace").decode("utf-8")


def parse_rank(value: Any) -> str:
    """A rank as the body states it (an integer, 0 to 2^20)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_RANK:
        raise ReportError("invalid_stacks", "rank: not an integer from 0 to 1048576")
    return str(value)


def parse_stacks(doc: Mapping[str, Any], now: float) -> RankStacks:
    """A reporter's stacks body (docs/report-format.md#stacks) as RankStacks; raises
    ReportError with the reason for anything else. ``taken`` is the exporter's ``now``: a
    process's own clock says nothing the exporter can check."""
    rank = parse_rank(doc.get("rank"))
    threads_doc = doc.get("threads")
    if not isinstance(threads_doc, list):
        raise ReportError("invalid_stacks", "threads: not a list")
    if len(threads_doc) > MAX_THREADS:
        raise ReportError("invalid_stacks", f"threads: more than {MAX_THREADS}")
    threads = []
    for t in threads_doc:
        if not isinstance(t, dict):
            raise ReportError("invalid_stacks", "a thread: not an object")
        frames_doc = t.get("frames")
        if not isinstance(frames_doc, list):
            raise ReportError("invalid_stacks", "frames: not a list")
        frames = []
        for f in frames_doc[-MAX_FRAMES:]:
            if not isinstance(f, dict):
                raise ReportError("invalid_stacks", "a frame: not an object")
            line = f.get("line")
            if isinstance(line, bool) or not isinstance(line, int) or not 0 <= line < 1 << 31:
                raise ReportError("invalid_stacks", "a frame's line: not a line number")
            frames.append(
                Frame(
                    file=_text(f.get("file"), "a frame's file"),
                    line=line,
                    function=_text(f.get("function"), "a frame's function"),
                    code=_text(f.get("code", ""), "a frame's code").strip(),
                )
            )
        threads.append(
            ThreadStack(name=_text(t.get("name", ""), "a thread's name"), frames=tuple(frames))
        )
    return RankStacks(
        rank=rank,
        taken=now,
        source=FROM_REPORTER,
        threads=tuple(threads),
        collective=_recorded(doc.get("collective")),
    )


def _seq(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 53:
        raise ReportError("invalid_stacks", f"collective.{what}: not a sequence number")
    return value


def _recorded(doc: Any) -> Collective | None:
    """The Flight Recorder's summary the reporter sends (``collective``: the op in flight
    and its sequence number, the last one finished); None when absent."""
    if doc is None:
        return None
    if not isinstance(doc, dict):
        raise ReportError("invalid_stacks", "collective: not an object")
    op = doc.get("op", "")
    if not isinstance(op, str):
        raise ReportError("invalid_stacks", "collective.op: not a string")
    return Collective(
        op=collective_op(op),
        seq=_seq(doc.get("seq"), "seq"),
        completed=_seq(doc.get("completed"), "completed"),
    )
