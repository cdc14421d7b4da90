"""Throughput and ETA estimation: pure functions over (time, step) samples.

Why not ``elapsed / step * remaining`` (what Transformers' ``KubeflowCallback`` sends)? It
is wrong in exactly the cases that matter on shared GPU clusters: a resume from checkpoint
(the steps done before the restart count as instant), a slow warm-up that is averaged into
the whole run, and a throughput drop midway that the long-run average hides for hours.

The estimate here splits time into *active* intervals (steps advancing at their usual pace)
and *pauses* (evaluation, checkpointing: an interval far slower per step than the median).
Throughput is the active rate over a short recent window, so it reacts to a drop within
minutes and never collapses to zero during an evaluation. The ETA divides the remaining
steps by that rate scaled by the duty cycle (active time / wall time) measured over a long
window, so pauses that recur are paid for without letting one pause swing the estimate.
The first sample of a run is only a baseline: a step jump at start (a resume) is never speed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from statistics import median

Sample = tuple[float, int]  # (unix time, global step)

# An interval slower per step than this many times the median is a pause, not training.
PAUSE_FACTOR = 3.0
# At most this many consecutive slow intervals make a pause; more are a change of pace.
MAX_PAUSE_INTERVALS = 2


@dataclass(frozen=True)
class EstimatorConfig:
    """Window sizes in seconds; each window always keeps at least ``min_intervals``."""

    short_window: float = 300.0
    long_window: float = 3600.0
    min_intervals: int = 4
    max_samples: int = 512


@dataclass(frozen=True)
class Throughput:
    """Recent active steps/s, and the fraction of wall time spent making steps."""

    steps_per_second: float
    duty_cycle: float


def _intervals(samples: Sequence[Sample]) -> list[tuple[float, int]]:
    out = []
    for (t0, s0), (t1, s1) in pairwise(samples):
        dt, ds = t1 - t0, s1 - s0
        if dt > 0 and ds > 0:
            out.append((dt, ds))
    return out


def _window(
    intervals: list[tuple[float, int]], seconds: float, keep: int
) -> list[tuple[float, int]]:
    """The most recent intervals covering ``seconds`` of wall time, at least ``keep`` of them."""
    total = 0.0
    start = len(intervals)
    while start > 0 and (total < seconds or len(intervals) - start < keep):
        start -= 1
        total += intervals[start][0]
    return intervals[start:]


def _pauses(intervals: list[tuple[float, int]], per_step: float) -> list[bool]:
    """Which intervals are pauses: slow ones (over PAUSE_FACTOR x the median time per step)
    standing alone or in pairs. A longer run of slow intervals is a slow *phase* (warm-up,
    a straggler), a change of pace rather than overhead that will recur."""
    slow = [dt / ds > PAUSE_FACTOR * per_step for dt, ds in intervals]
    pause = [False] * len(slow)
    i = 0
    while i < len(slow):
        if not slow[i]:
            i += 1
            continue
        j = i
        while j < len(slow) and slow[j]:
            j += 1
        if j - i <= MAX_PAUSE_INTERVALS:
            pause[i:j] = [True] * (j - i)
        i = j
    return pause


def throughput(
    samples: Sequence[Sample], cfg: EstimatorConfig = EstimatorConfig()
) -> Throughput | None:
    """Active steps/s over the short window and duty cycle over the long one; None if unknown.

    ``samples`` are the step-advancing observations of one run in time order, starting at
    the baseline (the first observation after start, resume or restart).
    """
    intervals = _intervals(samples)
    if not intervals:
        return None
    long = _window(intervals, cfg.long_window, cfg.min_intervals)
    per_step = median(dt / ds for dt, ds in long)
    pause = _pauses(long, per_step)
    slow_phase = [
        dt / ds > PAUSE_FACTOR * per_step and not p for (dt, ds), p in zip(long, pause, strict=True)
    ]

    short_n = len(_window(intervals, cfg.short_window, cfg.min_intervals))
    short = [iv for iv, p in zip(long[-short_n:], pause[-short_n:], strict=False) if not p]
    short = short or long[-short_n:]
    rate = sum(ds for _, ds in short) / sum(dt for dt, _ in short)
    # Duty cycle over the long window, from steady intervals and pauses only: a slow phase
    # says nothing about how much time future evaluations and checkpoints will take.
    active = [iv for iv, p, s in zip(long, pause, slow_phase, strict=True) if not p and not s]
    paused = [iv for iv, p in zip(long, pause, strict=True) if p]
    duty = 1.0
    if active and paused:
        active_rate = sum(ds for _, ds in active) / sum(dt for dt, _ in active)
        steps = sum(ds for _, ds in active + paused)
        wall = sum(dt for dt, _ in active + paused)
        duty = min(1.0, steps / active_rate / wall)
    return Throughput(steps_per_second=rate, duty_cycle=max(duty, 0.05))


def eta_seconds(step: int | None, max_steps: int | None, tp: Throughput | None) -> float | None:
    """Seconds to reach ``max_steps`` at the current effective rate; None when unknowable."""
    if step is None or max_steps is None or tp is None or tp.steps_per_second <= 0:
        return None
    remaining = max(0, max_steps - step)
    return remaining / (tp.steps_per_second * tp.duty_cycle)


def naive_eta_seconds(elapsed: float, step: int, max_steps: int) -> float | None:
    """The estimate Transformers' KubeflowCallback sends: elapsed / step * remaining."""
    if step <= 0:
        return None
    return elapsed / step * max(0, max_steps - step)


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q``-quantile of ``values`` (not empty), interpolated between ranks the way
    PromQL's ``quantile_over_time`` does."""
    ordered = sorted(values)
    rank = q * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def add_sample(
    samples: list[Sample], t: float, step: int, cfg: EstimatorConfig = EstimatorConfig()
) -> None:
    """Append an advancing observation, keeping the list bounded (drops the oldest)."""
    samples.append((t, step))
    if len(samples) > cfg.max_samples:
        del samples[: len(samples) - cfg.max_samples]
