"""Per-run alert thresholds: documented defaults, overridable per run.

The exporter exports each run's effective thresholds as gauges, so one alert rule serves
every job: a job with hour-long evaluations raises its own stall threshold instead of
needing its own rule. Overrides come from the run's report (``thresholds`` in the native
format) and, in Kubernetes mode, from pod annotations; each is bounded.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any


@dataclass(frozen=True, slots=True)
class Thresholds:
    """What counts as stalled, plateaued, blind, lingering, diverged or degraded."""

    stall_seconds: float = 1800.0  # step not advancing this long while reports arrive
    plateau_seconds: float = 7200.0  # best loss not improving this long
    report_timeout_seconds: float = 1800.0  # no report at all this long
    finished_grace_seconds: float = 600.0  # finished but still holding GPUs this long
    divergence_ratio: float = 3.0  # loss above this multiple of the best loss
    throughput_drop_ratio: float = 0.6  # steps/s below this fraction of the run's typical


NAMES: tuple[str, ...] = tuple(f.name for f in fields(Thresholds))
# Bounds keep a hostile or mistyped override from disabling or flooding alerts.
BOUNDS: dict[str, tuple[float, float]] = {
    "stall_seconds": (10.0, 7 * 86400.0),
    "plateau_seconds": (10.0, 30 * 86400.0),
    "report_timeout_seconds": (10.0, 7 * 86400.0),
    "finished_grace_seconds": (0.0, 7 * 86400.0),
    "divergence_ratio": (1.01, 1e6),
    "throughput_drop_ratio": (0.01, 0.99),
}

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
