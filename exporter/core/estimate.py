"""Throughput and ETA estimation: pure functions over (time, step) samples.

Why not ``elapsed / step * remaining`` (what Transformers' ``KubeflowCallback`` sends)? It
is wrong in exactly the cases that matter on shared GPU clusters: a resume from checkpoint
(the steps done before the restart count as instant), a slow warm-up that is averaged into
the whole run, and a change of pace midway that the long-run average hides for hours.

The model (docs/eta.md says why this one):

* Time between two reports is an *interval*. An interval far slower per step than the
  run's recent median (``PAUSE_FACTOR``) is a *pause* (evaluation, checkpointing) when it
  stands alone or in a pair, a *slow phase* (a real change of pace) when more follow, and
  *warm-up* when no normal interval came before it in this attempt.
* The *pace* is the active steps/s, every interval weighted by how recent it is: the weight
  halves every ``tau * ln 2`` seconds, where ``tau`` is a few report intervals
  (``TAU_INTERVALS``, at least ``TAU_MIN_SECONDS``, at most the configured rate window).
  A lasting change of pace carries most of the weight after a few reports; an old one
  fades; pauses and warm-up carry none.
* Pauses recur, so they are paid for as *overhead per step*: the excess time of the pause
  intervals over the long window divided by the steps they recur in (:func:`pause_overhead`).
* The seconds per step charged weigh that (1 / pace + overhead per step) against the run's
  mean pace since the oldest forecast kept, each by how wrong its forecasts have been on
  this run (``combined_seconds_per_step``): a run that keeps swinging leans on its mean.
  That choice is met halfway (in logs) by the pace over the stretch just past as long as
  the time left (``lookback_seconds_per_step``) where that was faster: no record tells a
  neighbour that will leave from one that stays, and this keeps either future's loss
  small (``seconds_per_remaining_step``).
* ETA = remaining steps x those seconds per step. Its 80 % band comes from the run's
  own record of being wrong: each forecast it made, judged by what happened since, at the
  horizon asked, weighed against the spread the corpus measured there by the independent
  windows of that horizon the record holds (``error_band``, ``windows_judged``).
* The first sample of a run is only a baseline: a step jump at start (a resume) is never
  speed. With fewer than ``MIN_ETA_INTERVALS`` intervals there is no ETA at all.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from statistics import median

Sample = tuple[float, int]  # (unix time, global step)

# An interval slower per step than this many times the recent median is not normal pace.
# Not 2: an evaluation that straddles two reports leaves two intervals each only partly
# paused, and their lost time must not pass for a slowdown.
PAUSE_FACTOR = 1.5
# At most this many consecutive slow intervals make a pause; more are a change of pace.
MAX_PAUSE_INTERVALS = 2
# The pause reference: the median time per step over this many intervals around one.
REFERENCE_INTERVALS = 9
# The pace's time constant: this many typical report intervals, within these bounds.
TAU_INTERVALS = 2.0
TAU_MIN_SECONDS = 10.0
# No ETA until the run has advanced over this many intervals after its baseline (two
# step-advancing reports in all): one measured interval is a pace, and the band is wide
# enough then (the corpus' prior). Not two: a run reporting every 5 s went 10 s longer
# without an ETA, 6 points of its MAPE on a two-minute run (hf-kubeflow-resume-eval-steady).
MIN_ETA_INTERVALS = 1


@dataclass(frozen=True)
class EstimatorConfig:
    """Window sizes in seconds; each window always keeps at least ``min_intervals``.

    ``short_window`` is the longest the pace remembers (its time constant's cap);
    ``long_window`` is how far back pauses and the pace's spread are measured.
    """

    short_window: float = 300.0
    long_window: float = 3600.0
    min_intervals: int = 4
    max_samples: int = 512


@dataclass(frozen=True)
class Throughput:
    """What the samples say about a run's speed; see the module docstring."""

    steps_per_second: float  # the recent active pace
    pause_seconds_per_step: float  # recurring pauses, spread over the steps
    intervals: int  # advancing intervals since the baseline (within the long window)
    interval_seconds: float = 0.0  # the median time between step advances (long window)
    # When the newest warm-up interval (long window) ended; 0 without one. The run's mean
    # pace counts from there: warm-up will not come again.
    warmup_end: float = 0.0


# -- the bounds: the run's own record of being wrong ---------------------------------------

Forecast = tuple[float, int, float]  # (time of the last sample, its step, seconds per step then)
# Forecasts kept per attempt, at least this far apart (and farther on a long attempt, so the
# record reaches back over all of it: one per 1/FORECASTS_SPAN of its time so far).
FORECASTS_KEPT = 256
FORECAST_SPACING = 5.0
FORECASTS_SPAN = 128
# Where the run has no record of its own at the horizon asked (early on, or asked far beyond
# what it has lived), the band is ln(truth / ETA) within these: for each horizon (the ETA, up
# to so many seconds), the largest 80th percentile of |ln(truth / ETA)| that a corpus run not
# held out showed there (``python -m bench.eta_accuracy --prior``; docs/eta.md). One size at
# every horizon: the tuned runs measure the same spread under a minute and beyond it (0.29
# and 0.29), and a neighbour that comes just after a forecast and stays moves it by its
# whole slowdown whatever the horizon; only the chance that one comes grows with it. The
# 0.30 once kept for ETAs under a minute left a held-out run's truth just outside its band
# while a neighbour arrived (quiet-tqdm-loop-resume-slowdown-heldout, 64.6 %).
PRIOR: tuple[tuple[float, float, float], ...] = ((math.inf, -0.42, 0.42),)
# The prior counts as this many of the run's independent windows (see windows_judged) in
# the band. Chosen on the runs not held out: 2 kept their median band width where it was
# (0.76 -> 0.77) when windows replaced the count of judgements (which the prior had weighed
# as 8).
PRIOR_WEIGHT = 2.0
# The quantile of the errors' size that makes the band (an 80 % band: one time in ten
# beyond each end).
ERROR_QUANTILE = 0.8


def seconds_per_step(tp: Throughput) -> float:
    """What an estimate charges per remaining step: the pace's inverse and the pauses."""
    return 1.0 / tp.steps_per_second + tp.pause_seconds_per_step


def forecast_due(forecasts: Sequence[Forecast], t: float, begin: float) -> bool:
    """Whether a forecast made at ``t`` joins the record (``begin``: the attempt's start)."""
    if not forecasts:
        return True
    spacing = max(FORECAST_SPACING, (t - begin) / FORECASTS_SPAN)
    return t - forecasts[-1][0] >= spacing


def record_errors(forecasts: Sequence[Forecast], t: float, step: int) -> list[tuple[float, float]]:
    """The run's record of being wrong, now that it is at ``step`` at time ``t``: for each
    earlier forecast, (horizon, error), the horizon being the seconds since it was made and
    the error ln(those seconds / the seconds it predicted for the steps made since)."""
    out = []
    for t0, s0, spp in forecasts:
        if t0 >= t or step <= s0 or spp <= 0:
            continue
        out.append((t - t0, math.log((t - t0) / ((step - s0) * spp))))
    return out


# The horizons that weigh the recent pace against the mean: up to this many times the ETA.
WEIGHING_REACH = 2.0
# The moments that judge the two: where they disagreed by more than this (ln of the ratio:
# 10 %). Where they agreed, both were right or both wrong together; that says nothing
# about which to trust, and a warm-up both got wrong would drown what came after it.
DISAGREEMENT = 0.1


def _near(
    judged: Sequence[tuple[float, ...]], seconds: float, within: float = math.inf
) -> list[tuple[float, ...]]:
    """The judgements (horizon first) at horizons of at least half of ``seconds`` (or of
    the longest the run has, while it is young) and at most ``within`` times ``seconds``:
    the ones that say how wrong an ETA of ``seconds`` may be."""
    if not judged:
        return []
    reach = min(seconds, max(j[0] for j in judged)) / 2
    # No upper bound unless asked (inf x 0 s, at a run's end, would be NaN).
    upper = math.inf if within == math.inf else max(reach, within * seconds)
    return [j for j in judged if reach <= j[0] <= upper]


def combined_seconds_per_step(
    recent: float,
    paces: Sequence[Forecast],
    t: float,
    step: int,
    remaining: int,
    since: float = 0.0,
) -> float:
    """Seconds per remaining step, the run now at ``step`` at ``t``: the recent pace's
    (``recent``, with its pauses) and the run's mean pace's (steps over time since the
    oldest forecast of ``paces`` from ``since`` on, pauses and all), each weighted by the
    inverse of its mean squared error at the moments of the record where the two disagreed
    (``paces``: what the recent pace forecast, each judged by what happened since), at
    horizons from half to ``WEIGHING_REACH`` times the one asked (``remaining`` steps at
    ``recent``).

    Why both: the recent pace follows a lasting change within a few reports, and the mean
    rides out a neighbour that comes and goes (a whole-run average is what a run whose pace
    swings up to 5x within minutes is best told). Which one a run is, its own record says;
    the inverse-variance weights lean on the one that has been less wrong, without jumping
    from one to the other; the two are mixed in logs, where their errors were measured.
    Until the record says anything: the recent pace. ``since`` is
    the end of warm-up: a mean with the warm-up in it charges the whole run for it (the
    naive estimate's mistake)."""
    kept = [f for f in paces if f[0] >= since]
    if len(kept) < 2:
        return recent
    t0, s0, _ = kept[0]
    if step <= s0 or t <= t0:
        return recent
    mean = (t - t0) / (step - s0)
    judged = []  # (horizon, the recent pace's error, the mean's), where they disagreed
    for tf, sf, said in kept[1:]:
        if tf >= t or step <= sf or sf <= s0 or said <= 0:
            continue
        then = (tf - t0) / (sf - s0)  # the mean at that moment
        if abs(math.log(then / said)) < DISAGREEMENT:
            continue
        taken = t - tf
        judged.append(
            (taken, math.log(taken / ((step - sf) * said)), math.log(taken / ((step - sf) * then)))
        )
    # Horizons up to twice the one asked: a forecast an hour old that straddles a change of
    # pace is wrong for either and would hide which of the two has been right since.
    near = _near(judged, remaining * recent, WEIGHING_REACH)
    if not near:
        return recent
    own_mse = sum(own * own for _, own, _ in near) / len(near)
    other_mse = sum(other * other for _, _, other in near) / len(near)
    return weighed_in_logs(recent, mean, own_mse, other_mse)


def lookback_seconds_per_step(
    paces: Sequence[Forecast], t: float, step: int, seconds: float, since: float = 0.0
) -> float | None:
    """Seconds per step, pauses and all, over the stretch just past as long as ``seconds``
    (the time left): from the oldest of ``paces`` made at or after ``t - seconds`` (and at
    or after ``since``, the end of warm-up) to ``step`` at ``t``; from the newest of them
    when none is that recent; None when there is none before ``t`` and ``step``.

    Why that stretch: it is the past at the scale of the future asked. A neighbour that was
    there for a tenth of the last hour counts for a tenth of an hour's forecast, where the
    recent pace charges it for all of the hour and the run's mean for a share that shrinks
    as the run ages."""
    kept = [f for f in paces if since <= f[0] < t and f[1] < step]
    if not kept:
        return None
    t0, s0, _ = next((f for f in kept if f[0] >= t - seconds), kept[-1])
    return (t - t0) / (step - s0)


def seconds_per_remaining_step(
    recent: float,
    paces: Sequence[Forecast],
    t: float,
    step: int,
    remaining: int,
    since: float = 0.0,
) -> float:
    """What an ETA charges per remaining step, the run now at ``step`` at ``t`` with
    ``remaining`` steps to go: the record's choice between the recent pace and the run's
    mean (:func:`combined_seconds_per_step`), met halfway, in logs, by the pace over the
    stretch just past as long as the time left (:func:`lookback_seconds_per_step`, the
    time left at ``recent``) where that pace was the faster one.

    Why halfway: the record leans on whichever pace has been less wrong, and nothing the
    run has shown tells a neighbour that will leave from one that stays; the record's
    choice is right in one of those futures and the past at the horizon's scale nearer in
    the other. Met halfway, the ETA loses a few points in either future instead of many in
    one (bench/eta_twins.py: both futures of one past; docs/eta.md gives the figures).
    Equal weights in logs, as :func:`weighed_in_logs` mixes two paces whose records say
    nothing to choose by.

    Why only towards a faster past: a run slows down when something starts (a neighbour,
    a straggler), and on a shared node what starts often ends; it speeds up when
    something ends (warm-up, cold caches, a neighbour gone), and that seldom comes back.
    Met halfway by a slower past, the ETA would charge a warm-up that ended to the rest of
    the run (the simulated 4x warm-up: 6.4 % to 19.7 %)."""
    chosen = combined_seconds_per_step(recent, paces, t, step, remaining, since)
    past = lookback_seconds_per_step(paces, t, step, remaining * recent, since)
    if past is None or not (0.0 < past < chosen < math.inf):
        return chosen
    return weighed_in_logs(chosen, past, 1.0, 1.0)


def weighed_in_logs(recent: float, mean: float, recent_mse: float, mean_mse: float) -> float:
    """The two seconds per step (both > 0) weighted by the inverse of their mean squared
    log errors, mixed in logs, where those errors were measured: a burst that makes the
    recent pace 5x the mean moves the ETA by its weight's share of the 5x as a factor
    (equal errors: the geometric mean, 2.2x), not by its share in seconds (3x). Two
    flawless records say nothing to choose by: the recent pace. A record infinitely wrong
    (an absurd pace in it) gives the other all the weight, never NaN."""
    if recent_mse <= 0 or not math.isfinite(mean_mse):
        return recent
    if mean_mse <= 0 or not math.isfinite(recent_mse):
        return mean
    # The mean's weight, 1/mean_mse over 1/recent_mse + 1/mean_mse, as one ratio: the sum of
    # two huge errors would overflow where their ratio does not.
    weight = 1.0 / (1.0 + mean_mse / recent_mse)
    return math.exp((1.0 - weight) * math.log(recent) + weight * math.log(mean))


def prior_at(horizon: float) -> tuple[float, float]:
    """The corpus' error quantiles at ``horizon`` seconds (PRIOR)."""
    return next((low, high) for upto, low, high in PRIOR if horizon <= upto)


def windows_judged(horizons: Sequence[float], seconds: float) -> float:
    """How many independent judgements of an ETA of ``seconds`` the record holds: the
    forecasts judged at ``horizons`` (seconds ago, each judged over its time since) span
    1 + (longest - shortest) / ``seconds`` windows that long, and never more than there are.

    Why not their count: forecasts made 5 s apart and judged over ten minutes each share
    nearly all of those ten minutes. The hundred of them that a steady first half of a run
    leaves say one thing once (the pace held for those ten minutes); counted as a hundred,
    they outweighed the corpus' prior and narrowed the band to ±0.2 in logs just before a
    neighbour arrived (a 19-minute held-out run, 74.7 % in band).
    """
    if not horizons:
        return 0.0
    if seconds <= 0:
        return float(len(horizons))
    return min(float(len(horizons)), 1.0 + (max(horizons) - min(horizons)) / seconds)


def error_band(seconds: float, errors: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """The (low, high) quantiles of ln(truth / estimate) for an ETA of ``seconds``.

    The run's own errors at horizons of at least half of what is asked (or of the longest
    it has, while it is young) weigh against the corpus' prior by how many independent
    windows of that horizon they judge (:func:`windows_judged`) and how far ahead they
    reach; a run whose pace wanders gets a wide band, a steady one a
    narrow one. The band is symmetric: a run that was late while a neighbour slowed it will
    be early once the neighbour leaves.
    """
    prior_low, prior_high = prior_at(seconds)
    if not errors:
        return prior_low, prior_high
    longest = max(h for h, _ in errors)
    judged = _near(errors, seconds)
    near = [e for _, e in judged]
    # Symmetric: a run that was late while a neighbour slowed it will be early when the
    # neighbour leaves; the size of its past errors says how far off it can be, either way.
    size = quantile([abs(e) for e in near], ERROR_QUANTILE)
    own_low, own_high = -size, size
    weight = min(1.0, longest / seconds) if seconds > 0 else 1.0
    evidence = windows_judged([h for h, _ in judged], seconds)
    weight *= evidence / (evidence + PRIOR_WEIGHT)
    return (
        weight * own_low + (1 - weight) * prior_low,
        weight * own_high + (1 - weight) * prior_high,
    )


@dataclass(frozen=True)
class Estimate:
    """Seconds to completion from the last step sample, with a lower and upper bound."""

    seconds: float
    lower: float
    upper: float


def _intervals(samples: Sequence[Sample]) -> list[tuple[float, float, int]]:
    """(end time, seconds, steps) of every advancing interval."""
    out = []
    for (t0, s0), (t1, s1) in pairwise(samples):
        dt, ds = t1 - t0, s1 - s0
        if dt > 0 and ds > 0:
            out.append((t1, dt, ds))
    return out


def _window(
    intervals: list[tuple[float, float, int]], seconds: float, keep: int
) -> list[tuple[float, float, int]]:
    """The most recent intervals covering ``seconds`` of wall time, at least ``keep`` of them."""
    total = 0.0
    start = len(intervals)
    while start > 0 and (total < seconds or len(intervals) - start < keep):
        start -= 1
        total += intervals[start][1]
    return intervals[start:]


NORMAL, PAUSE, SLOW, WARMUP = "normal", "pause", "slow", "warmup"


def classify_intervals(per_step: Sequence[float]) -> tuple[list[str], list[float]]:
    """Each interval's kind, and the reference time per step it was judged against.

    The reference is the median time per step of the ``REFERENCE_INTERVALS`` around the
    interval (only earlier ones for the newest), so a lasting change of pace becomes the
    new reference after a few reports, and warm-up is judged against the pace that followed.
    """
    half = REFERENCE_INTERVALS // 2
    refs = [median(per_step[max(0, i - half) : i + half + 1]) for i in range(len(per_step))]
    slow = [p > PAUSE_FACTOR * r for p, r in zip(per_step, refs, strict=True)]
    kinds = [NORMAL] * len(slow)
    seen_normal = False
    i = 0
    while i < len(slow):
        if not slow[i]:
            seen_normal = True
            i += 1
            continue
        j = i
        while j < len(slow) and slow[j]:
            j += 1
        kind = WARMUP if not seen_normal else PAUSE if j - i <= MAX_PAUSE_INTERVALS else SLOW
        kinds[i:j] = [kind] * (j - i)
        i = j
    return kinds, refs


def throughput(
    samples: Sequence[Sample], cfg: EstimatorConfig = EstimatorConfig()
) -> Throughput | None:
    """The run's pace and pause overhead; None before any step advanced.

    ``samples`` are the step-advancing observations of one run in time order, starting at
    the baseline (the first observation after start, resume or restart).
    """
    intervals = _intervals(samples)
    if not intervals:
        return None
    long = _window(intervals, cfg.long_window, cfg.min_intervals)
    per_step = [dt / ds for _, dt, ds in long]
    kinds, refs = classify_intervals(per_step)
    tau = min(
        cfg.short_window, max(TAU_MIN_SECONDS, TAU_INTERVALS * median(dt for _, dt, _ in long))
    )
    active = [iv for iv, k in zip(long, kinds, strict=True) if k in (NORMAL, SLOW)]
    if not active:  # only warm-up and pauses so far: their own pace is all there is
        active = long
    newest = long[-1][0]
    weights = [math.exp(-(newest - end) / tau) for end, _, _ in active]
    rate = sum(w * ds for w, (_, _, ds) in zip(weights, active, strict=True)) / sum(
        w * dt for w, (_, dt, _) in zip(weights, active, strict=True)
    )
    return Throughput(
        steps_per_second=rate,
        pause_seconds_per_step=pause_overhead(long, kinds, refs),
        intervals=len(intervals),
        interval_seconds=median(dt for _, dt, _ in long),
        warmup_end=max(
            (end for (end, _, _), k in zip(long, kinds, strict=True) if k == WARMUP),
            default=0.0,
        ),
    )


def pause_overhead(
    intervals: Sequence[tuple[float, float, int]], kinds: Sequence[str], refs: Sequence[float]
) -> float:
    """Seconds of pause per step: the pauses' time beyond their steps at the reference pace,
    over the steps they recur in.

    Those steps run from the first interval after warm-up to the end of the last pause, not
    to now: pauses come after their block of steps (an evaluation every 100 steps is seen at
    step 100, 200...), so between two of them the steps since the last one would dilute the
    overhead of the one about to come. Once the steps since the last pause exceed the
    typical spacing of the pauses, they count too (less one spacing): pauses that stop
    recurring fade out.
    """
    excess, pauses, steps, until_last = 0.0, 0, 0, 0
    for (_, dt, ds), kind, ref in zip(intervals, kinds, refs, strict=True):
        if kind == WARMUP:
            continue
        steps += ds
        if kind == PAUSE:
            excess += max(0.0, dt - ds * ref)
            pauses += 1
            until_last = steps
    if not pauses:
        return 0.0
    spacing = until_last / pauses
    return excess / max(until_last, steps - spacing)


def estimate(
    step: int | None,
    max_steps: int | None,
    tp: Throughput | None,
    errors: Sequence[tuple[float, float]] = (),
    per_step: float | None = None,
) -> Estimate | None:
    """Seconds from the last step sample to ``max_steps``, with an 80 % band from the run's
    record of being wrong (``errors``, :func:`record_errors`; :func:`error_band`); None
    when there is nothing to base it on (no target, or fewer than ``MIN_ETA_INTERVALS``
    intervals). ``per_step``: the seconds per step to charge (default: the recent pace's,
    :func:`seconds_per_step`; the run's :func:`seconds_per_remaining_step`)."""
    if step is None or max_steps is None or tp is None or tp.intervals < MIN_ETA_INTERVALS:
        return None
    if tp.steps_per_second <= 0:
        return None
    seconds = max(0, max_steps - step) * (seconds_per_step(tp) if per_step is None else per_step)
    low, high = error_band(seconds, errors)
    return Estimate(
        seconds=seconds,
        lower=seconds * math.exp(min(0.0, low)),
        upper=seconds * math.exp(max(0.0, high)),
    )


def newest_pause_seconds(samples: Sequence[Sample]) -> float:
    """Seconds the newest interval took beyond the run's pace when it is a pause (an
    evaluation or a checkpoint save), else 0: what the goodput split charges to pauses.

    Judged as :func:`classify_intervals` judges it, against the intervals around it, at the
    moment it ends (a pause that later reports turn into a change of pace stays charged).
    Called at every step advance, so it computes only the few medians the newest interval's
    kind depends on: its own, and those of the slow intervals just before it.
    """
    intervals = _intervals(samples[-(REFERENCE_INTERVALS + 2) :])
    n = len(intervals)
    if n < 2:
        return 0.0
    per_step = [dt / ds for _, dt, ds in intervals]
    half = REFERENCE_INTERVALS // 2

    def reference(i: int) -> float:
        return median(per_step[max(0, i - half) : i + half + 1])

    newest_ref = reference(n - 1)
    if per_step[-1] <= PAUSE_FACTOR * newest_ref:
        return 0.0  # not slow: a normal interval
    slow_run = 1  # slow intervals ending with the newest
    while n - 1 - slow_run >= 0 and per_step[n - 1 - slow_run] > PAUSE_FACTOR * reference(
        n - 1 - slow_run
    ):
        slow_run += 1
        if slow_run > MAX_PAUSE_INTERVALS:
            return 0.0  # a change of pace, not a pause
    if slow_run == n:
        return 0.0  # nothing faster came before: warm-up
    _, dt, ds = intervals[-1]
    return max(0.0, dt - ds * newest_ref)


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


# Bar-clock samples closer together than this are merged (see coalesces): a log chunk's
# frames give one a second, and more would only shorten the history max_samples keeps.
MIN_SAMPLE_SPACING = 2.5


def coalesces(samples: Sequence[Sample], t: float) -> bool:
    """Whether a new sample at ``t`` should replace the newest one instead of following it:
    when the one before the newest is under ``MIN_SAMPLE_SPACING`` before ``t``. Samples a
    second apart become two seconds apart: a pause of a few seconds still stands out in its
    interval, and 512 samples reach back some 17 minutes instead of 8.5."""
    return len(samples) >= 2 and t - samples[-2][0] < MIN_SAMPLE_SPACING
