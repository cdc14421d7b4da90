"""Per-run alert thresholds: documented defaults, overridable per run.

The exporter exports each run's effective thresholds as gauges, so one alert rule serves
every job: a job with hour-long evaluations raises its own stall threshold instead of
needing its own rule. Overrides come from the run's report (``thresholds`` in the native
format) and, in Kubernetes mode, from pod annotations; each is bounded.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

# GPU-seconds in a GPU-hour: checkpoint_risk_gpu_hours is set in hours, exported in seconds.
GPU_HOUR = 3600.0


@dataclass(frozen=True, slots=True)
class Thresholds:
    """What counts as stalled, plateaued, blind, lingering, diverged or degraded."""

    stall_seconds: float = 1800.0  # step not advancing this long while reports arrive
    plateau_seconds: float = 7200.0  # best loss not improving this long
    report_timeout_seconds: float = 1800.0  # no report at all this long
    finished_grace_seconds: float = 600.0  # finished but still holding GPUs this long
    divergence_ratio: float = 3.0  # loss above this multiple of the best loss
    throughput_drop_ratio: float = 0.6  # steps/s below this fraction of the run's typical
    gpu_idle_seconds: float = 1800.0  # GPUs below gpu_idle_utilization this long: idle
    gpu_idle_utilization: float = 0.05  # GPU utilization (0..1) at or below which is idle
    rank_lag_seconds: float = (
        120.0  # a rank whose last step is this much older than its job's newest
    )
    # GPU-hours of training done since the last checkpoint (what a preemption would lose)
    checkpoint_risk_gpu_hours: float = 64.0
    checkpoint_age_seconds: float = 21600.0  # training this long with no checkpoint

    @property
    def checkpoint_risk_gpu_seconds(self) -> float:
        """checkpoint_risk_gpu_hours in GPU-seconds, the unit at_risk is counted in."""
        return self.checkpoint_risk_gpu_hours * GPU_HOUR


@dataclass(frozen=True, slots=True)
class Spec:
    """Everything one threshold is called, in one place.

    ``name`` is the threshold's one name: the :class:`Thresholds` field, the config key (and
    ``TPE_<NAME>``, ``--<name>``), the key in a report's ``thresholds`` and the suffix of the
    pod annotation ``training-progress.io/threshold.<name>``. ``metric`` is the per-run gauge
    the exporter exports it as (the alert rules read it). ``alias`` is the config key it had
    before (still accepted).
    """

    name: str
    metric: str
    kind: str  # "duration" (seconds), "ratio", or "number" (GPU-hours)
    bounds: tuple[float, float]  # a hostile or mistyped override cannot disable or flood alerts
    alias: str
    help: str
    scale: float = 1.0  # the exported gauge is the threshold times this (its base unit)


SPECS: tuple[Spec, ...] = (
    Spec("stall_seconds", "training_stall_threshold_seconds", "duration", (10.0, 7 * 86400.0),
         "stall_threshold",
         "Step not advancing this long (while the run reports or its pod runs) means stalled."),
    Spec("plateau_seconds", "training_plateau_window_seconds", "duration", (10.0, 30 * 86400.0),
         "plateau_window", "Best loss not improving this long means plateaued."),
    Spec("report_timeout_seconds", "training_report_timeout_seconds", "duration",
         (10.0, 7 * 86400.0), "report_timeout",
         "No report of any kind this long (and no pod to watch) means silent."),
    Spec("finished_grace_seconds", "training_finished_grace_seconds", "duration",
         (0.0, 7 * 86400.0), "finished_grace",
         "A finished run still holding GPUs after this long is finished-but-running."),
    Spec("divergence_ratio", "training_divergence_ratio", "ratio", (1.01, 1e6),
         "divergence_ratio", "Loss above this multiple of the best loss means diverged."),
    Spec("throughput_drop_ratio", "training_throughput_drop_ratio", "ratio", (0.01, 0.99),
         "throughput_drop_ratio",
         "Steps/s below this fraction of the run's typical rate means degraded."),
    Spec("gpu_idle_seconds", "training_gpu_idle_threshold_seconds", "duration",
         (10.0, 86400.0), "gpu_idle_seconds",  # the rules look back one day
         "GPUs at or below the idle utilization this long (dcgm-exporter) means idle."),
    Spec("gpu_idle_utilization", "training_gpu_idle_utilization_ratio", "ratio", (0.0, 0.99),
         "gpu_idle_utilization",
         "GPU utilization (0..1, dcgm-exporter) at or below which the run's GPUs are idle."),
    Spec("rank_lag_seconds", "training_rank_lag_threshold_seconds", "duration",
         (1.0, 7 * 86400.0), "rank_lag_seconds",
         "A rank whose last step is this much older than the newest of its job is stuck."),
    # Set in GPU-hours (a person's unit), exported in GPU-seconds (Prometheus' base unit,
    # beside training_progress_at_risk_gpu_seconds).
    Spec("checkpoint_risk_gpu_hours", "training_checkpoint_risk_threshold_gpu_seconds", "number",
         (0.001, 1e6), "checkpoint_risk_gpu_hours",
         "GPU-seconds of training since the last checkpoint past which the run should save "
         "(its checkpoint_risk_gpu_hours x 3600).", GPU_HOUR),
    Spec("checkpoint_age_seconds", "training_checkpoint_age_threshold_seconds", "duration",
         (10.0, 30 * 86400.0), "checkpoint_age_seconds",
         "Training this long since the last checkpoint is too long (runs seen to checkpoint)."),
)  # fmt: skip

BOUNDS: dict[str, tuple[float, float]] = {s.name: s.bounds for s in SPECS}
BY_ALIAS: dict[str, Spec] = {s.alias: s for s in SPECS}

Overrides = tuple[tuple[str, float], ...]


def parse_overrides(obj: Any, problem: Callable[[str], None]) -> Overrides:
    """Validated (name, value) pairs from a mapping; unknown or out-of-bounds ones dropped."""
    if not isinstance(obj, Mapping):
        problem("invalid_thresholds")
        return ()
    out = []
    for name, raw in obj.items():
        if name not in BOUNDS:
            problem("unknown_threshold")
            continue
        value = raw if isinstance(raw, int | float) and not isinstance(raw, bool) else None
        if isinstance(raw, str):
            try:
                value = float(raw)
            except ValueError:
                value = None
        lo, hi = BOUNDS[name]
        if value is None or not math.isfinite(value) or not lo <= value <= hi:
            problem("invalid_threshold")
            continue
        out.append((name, float(value)))
    return tuple(sorted(out))


def effective(defaults: Thresholds, *layers: Mapping[str, float]) -> Thresholds:
    """Defaults with each layer of overrides applied in order (later layers win)."""
    merged: dict[str, float] = {}
    for layer in layers:
        merged.update(layer)
    return replace(defaults, **merged) if merged else defaults


def default_value(metric: str) -> float:
    """The built-in default of the threshold exported as ``metric``, in that gauge's unit:
    what a rule or view falls back to when a run does not export it (``lean_series``
    exports a threshold only where the run's differs from this)."""
    spec = next(s for s in SPECS if s.metric == metric)
    value = float(getattr(Thresholds(), spec.name) * spec.scale)
    return value


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def promql_beyond(
    left: str,
    op: str,
    metric: str,
    labels: str = "namespace, pod, job_name",
    group_left: bool = False,
) -> str:
    """``left``'s series where they are beyond (``op``: ``>``, ``<=``...) their run's
    threshold ``metric``, or its built-in default for a run that exports none: the one way
    every rule and view compares with a threshold (tests/test_lean_series.py checks the rule
    files use exactly this). ``group_left``: ``left`` has more labels than the run's
    (a rank's ``rank`` and ``node``).

    The default applies to ``left``'s own series that have no threshold (``unless``), a
    comparison with a number: a rule costs what ``left`` and the few overriding runs cost,
    not a pass over every run of the fleet (the form before, ``max by (...)
    (training_run_active) * 0 + default``, was the slowest part of the slowest alert at
    20,000 runs: docs/metrics.md#cardinality-budget)."""
    join = f"on ({labels}) group_left ()" if group_left else f"on ({labels})"
    return (
        f"(({left}) {op} {join} max by ({labels}) ({metric}) "
        f"or (({left}) unless on ({labels}) {metric}) {op} {_number(default_value(metric))})"
    )


def promql_default(metric: str) -> str:
    """``vector(<built-in default>)``: the fallback of a template's or a panel's one-value
    query of ``metric``."""
    return f"vector({_number(default_value(metric))})"
