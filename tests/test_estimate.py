"""The pace model and its ETA bounds (exporter/core/estimate.py), on synthetic sample sequences.

Each test stages one thing an ETA must survive: a lasting change of pace picked up within a few
reports, an evaluation pause and a resume jump that do not fool it, warm-up that is not
mistaken for recurring overhead, no ETA from under a few reports, and bounds that hold the
estimate and widen with the pace's own variation.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import deque
from collections.abc import Callable

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from exporter.core.estimate import (
    FORECAST_SPACING,
    FORECASTS_KEPT,
    MIN_ETA_INTERVALS,
    PAUSE,
    WARMUP,
    Forecast,
    Sample,
    classify_intervals,
    combined_seconds_per_step,
    error_band,
    estimate,
    forecast_due,
    lookback_seconds_per_step,
    prior_at,
    record_errors,
    seconds_per_remaining_step,
    throughput,
    weighed_in_logs,
    windows_judged,
)
from exporter.core.model import ProgressReport, RunKey
from exporter.core.tracker import Tracker

from .conftest import T0

KEY = RunKey("ns", "pod-0", "job")


def steady(n: int, every: float, rate: float, t0: float = T0, s0: int = 0) -> list[Sample]:
    """``n`` reports ``every`` seconds at ``rate`` steps/s, after (t0, s0)."""
    return [(t0 + i * every, s0 + round(i * every * rate)) for i in range(1, n + 1)]


def per_step(samples: list[Sample]) -> list[float]:
    return [(t1 - t0) / (s1 - s0) for (t0, s0), (t1, s1) in itertools.pairwise(samples)]


def test_a_lasting_change_of_pace_is_picked_up_within_a_few_reports() -> None:
    samples = [(T0, 0), *steady(60, 5.0, 4.0)]  # 5 minutes at 4 steps/s
    t, s = samples[-1]
    for rate, after in ((2.0, 8), (6.0, 8)):
        changed = samples + steady(after, 5.0, rate, t, s)
        tp = throughput(changed)
        assert tp is not None
        # 8 reports (40 s) after the change, the pace is within 10 % of the new one.
        assert tp.steps_per_second == pytest.approx(rate, rel=0.10)
    # One report after a change under PAUSE_FACTOR it has moved only part of the way: it
    # follows a lasting change, it does not jump at one interval.
    tp = throughput(samples + steady(1, 5.0, 3.0, t, s))
    assert tp is not None and 3.0 < tp.steps_per_second < 4.0
    # One report at half the pace could as well be an evaluation: the pace stays, and the
    # time lost is charged as pause overhead until more reports say it lasts.
    tp = throughput(samples + steady(1, 5.0, 2.0, t, s))
    assert tp is not None and tp.steps_per_second == pytest.approx(4.0)
    assert tp.pause_seconds_per_step > 0


def test_old_pace_fades_instead_of_lingering_for_the_rate_window() -> None:
    """A real run on a shared node: 4 steps/s, then 5; a 5-minute average stayed at ~4.1
    for minutes."""
    samples = [(T0, 0), *steady(36, 5.0, 4.0)]
    t, s = samples[-1]
    tp = throughput(samples + steady(12, 5.0, 5.0, t, s))
    assert tp is not None and tp.steps_per_second == pytest.approx(5.0, rel=0.03)


def test_an_evaluation_pause_is_overhead_not_pace() -> None:
    samples = [(T0, 0), *steady(20, 5.0, 4.0)]
    t, s = samples[-1]
    samples.append((t + 65.0, s + 20))  # 5 s of steps and a 60 s evaluation in one interval
    t, s = samples[-1]
    through_pause = s
    samples += steady(4, 5.0, 4.0, t, s)
    tp = throughput(samples)
    assert tp is not None
    assert tp.steps_per_second == pytest.approx(4.0)
    kinds, _ = classify_intervals(per_step(samples))
    assert kinds.count(PAUSE) == 1
    # The 60 s pause is paid for, spread over the steps it came after (pause_overhead).
    assert tp.pause_seconds_per_step == pytest.approx(60.0 / through_pause, rel=0.01)
    est = estimate(samples[-1][1], 2000, tp)
    assert est is not None
    remaining = 2000 - samples[-1][1]
    expected = remaining / 4.0 + remaining * 60.0 / through_pause
    assert est.seconds == pytest.approx(expected, rel=0.01)


def test_a_resume_jump_is_a_baseline_not_speed() -> None:
    samples = [(T0, 50_000), *[(T0 + i * 10, 50_000 + i * 10) for i in range(1, 6)]]
    tp = throughput(samples)
    assert tp is not None and tp.steps_per_second == pytest.approx(1.0)


def test_warm_up_fades_and_is_not_charged_as_recurring_pauses() -> None:
    # Two reports 4x slower (cold caches, compilation), then steady.
    samples = [(T0, 0), (T0 + 20, 20), (T0 + 40, 40)]
    t, s = samples[-1]
    samples += steady(30, 5.0, 4.0, t, s)
    kinds, _ = classify_intervals(per_step(samples))
    assert kinds[:2] == [WARMUP, WARMUP] and set(kinds[2:]) == {"normal"}
    tp = throughput(samples)
    assert tp is not None
    assert tp.pause_seconds_per_step == 0.0
    assert tp.steps_per_second == pytest.approx(4.0, rel=0.01)


def test_a_long_slow_stretch_is_a_change_of_pace_not_a_pause() -> None:
    samples = [(T0, 0), *steady(20, 5.0, 4.0)]
    t, s = samples[-1]
    # Two slow reports could still be an evaluation: pauses, for now.
    kinds, _ = classify_intervals(per_step(samples + steady(2, 5.0, 1.0, t, s)))
    assert kinds[-2:] == [PAUSE, PAUSE]
    # By the third, the slow pace is the median of the reports before it: the newest is the
    # pace itself, and it carries the most weight.
    kinds, _ = classify_intervals(per_step(samples + steady(3, 5.0, 1.0, t, s)))
    assert kinds[-1] == "normal"
    tp = throughput(samples + steady(3, 5.0, 1.0, t, s))
    assert tp is not None and tp.steps_per_second < 2.5
    samples += steady(6, 5.0, 1.0, t, s)  # 4x slower for six reports: a straggler
    kinds, _ = classify_intervals(per_step(samples))
    # Once the slow pace is the median around them, they are the normal pace: never pauses.
    assert PAUSE not in kinds
    tp = throughput(samples)
    assert tp is not None and tp.steps_per_second < 1.5 and tp.pause_seconds_per_step == 0.0


def test_no_eta_from_under_a_few_reports() -> None:
    samples: list[Sample] = [(T0, 100)]
    for i in range(1, MIN_ETA_INTERVALS + 1):
        tp = throughput(samples)
        assert estimate(samples[-1][1], 1000, tp) is None
        samples.append((T0 + i * 5, 100 + i * 20))
    tp = throughput(samples)
    assert tp is not None and tp.intervals == MIN_ETA_INTERVALS
    assert estimate(samples[-1][1], 1000, tp) is not None


def test_bounds_come_from_the_runs_own_record_of_being_wrong() -> None:
    """A run with no record gets the corpus' spread at the horizon asked; a steady run's
    record narrows it, a wandering pace widens it, and so does a run that kept running late:
    the size of its past errors says how far off it can be, either way (the neighbour that
    slowed it may leave)."""
    assert error_band(600.0, []) == prior_at(600.0)
    # An ETA of 0 s (a run at its last step) still reads every error it has: no NaN horizon.
    low, high = error_band(0.0, [(600.0, 0.5), (30.0, -0.2)])
    assert low < 0 < high and math.isfinite(low) and math.isfinite(high)
    # The prior never narrows as the horizon grows (a longer wait is never surer a priori)
    # and is symmetric, as the run's own part is.
    sizes = [prior_at(h)[1] for h in (0.0, 5.0, 30.0, 60.0, 61.0, 600.0, 5000.0, math.inf)]
    assert sizes == sorted(sizes) and all(prior_at(h)[0] == -prior_at(h)[1] for h in (5.0, 600.0))

    def band(pace: Callable[[float], float], horizon: float = 600.0) -> tuple[float, float]:
        """The band after 20 minutes of forecasts every 10 s that each predicted 1 s/step,
        while the steps took pace(t) seconds each."""
        forecasts: list[Forecast] = []
        t, step = T0, 0
        for _ in range(120):
            forecasts.append((t, step, 1.0))
            t += 10.0
            step += round(10.0 / pace(t))
        return error_band(horizon, record_errors(forecasts, t, step))

    rng = random.Random(5)
    steady_low, steady_high = band(lambda t: 1.0)
    wander_low, wander_high = band(lambda t: rng.choice((0.6, 1.0, 1.6)) if t % 300 < 150 else 1.4)
    late_low, late_high = band(lambda t: 1.5)
    prior_low, prior_high = prior_at(600.0)
    assert prior_low < steady_low <= 0 <= steady_high < prior_high
    assert wander_high - wander_low > steady_high - steady_low
    assert late_low < steady_low and late_high > steady_high
    assert late_low == pytest.approx(-late_high)
    # The ETA's bounds: a band around the ETA, never excluding it.
    tp = throughput(steady(60, 5.0, 2.0))
    est = estimate(600, 2000, tp, [(600.0, 0.5), (620.0, 0.6)] * 20)
    assert est is not None and est.lower < est.seconds < est.upper


def test_the_record_counts_as_the_independent_windows_it_judges_not_its_judgements() -> None:
    """Forecasts 10 s apart judged over ten minutes each share nearly all of those ten
    minutes: a steady first half of a run says once that the pace held that long, not a
    hundred times. So a steady record narrows the band at a horizon it has judged many times
    over (a minute: twenty windows in twenty minutes) much more than at one it has judged
    about twice (ten minutes), where the corpus' prior keeps most of its say."""
    assert windows_judged([], 600.0) == 0.0
    assert windows_judged([600.0] * 100, 600.0) == 1.0  # one window, however many forecasts
    assert windows_judged([600.0 + 5 * i for i in range(1000)], 600.0) == pytest.approx(
        1 + 4995 / 600
    )
    assert windows_judged([10.0, 20.0, 30.0], 1.0) == 3.0  # never more than there are
    assert windows_judged([10.0, 20.0], 0.0) == 2.0  # an ETA of 0 s: no NaN

    forecasts: list[Forecast] = [(T0 + 10.0 * i, 10 * i, 1.0) for i in range(120)]
    errors = record_errors(forecasts, T0 + 1200.0, 1200)  # all of them exactly right
    for horizon in (60.0, 600.0):
        assert windows_judged([h for h, _ in errors if h >= horizon / 2], horizon) < len(errors)
    short_low, short_high = error_band(60.0, errors)
    long_low, long_high = error_band(600.0, errors)
    assert short_high / prior_at(60.0)[1] < 0.15  # twenty windows: the record's say
    assert long_high / prior_at(600.0)[1] > 0.4  # two and a half: the prior's still counts
    assert short_low == pytest.approx(-short_high) and long_low == pytest.approx(-long_high)


@given(
    errors=st.lists(
        st.tuples(
            st.floats(min_value=1e-3, max_value=1e9),
            st.floats(min_value=-50.0, max_value=50.0),
        ),
        min_size=1,
        max_size=40,
    ),
    seconds=st.floats(min_value=0.0, max_value=1e12),
)
def test_any_record_gives_a_finite_band_around_the_eta(
    errors: list[tuple[float, float]], seconds: float
) -> None:
    """Whatever the record holds (horizons from a millisecond to decades, errors up to
    e^50), it counts as at least one window and no more than it has, and the band is finite
    and never excludes the ETA."""
    horizons = [h for h, _ in errors]
    assert 0.0 < windows_judged(horizons, seconds) <= len(horizons)
    low, high = error_band(seconds, errors)
    assert math.isfinite(low) and math.isfinite(high)
    assert low <= 0.0 <= high


def _record(pace: Callable[[float], float], said: Callable[[float], float], minutes: int = 20):
    """A run's pace record after ``minutes`` of forecasts every 10 s: at each, the recent
    pace said ``said(t)`` seconds a step while the steps took ``pace(t)`` each. Returns the
    record and the time and step at its end."""
    forecasts: list[Forecast] = []
    t, step, carry = T0, 0, 0.0
    for _ in range(minutes * 6):
        forecasts.append((t, step, said(t)))
        carry += 10.0 / pace(t)
        t += 10.0
        step, carry = step + int(carry), carry - int(carry)
    return forecasts, t, step


def test_the_mean_pace_weighs_in_where_the_runs_record_says_it_erred_less() -> None:
    """A pace swinging 1 <-> 3 s/step every two minutes (a neighbour that comes and goes):
    the recent pace, forecast from each moment's own speed, keeps being wrong; the mean
    (1.5 s/step: as many seconds at each pace) is right over the horizon asked, so the ETA
    leans on the mean. A run whose recent pace has been right since a lasting change (that
    the mean still averages away), or a warm-up that both got wrong, keeps the recent pace.
    With no record, the recent pace alone."""

    def swing(t: float) -> float:
        return 1.0 if (t - T0) % 240 < 120 else 3.0

    record, t, step = _record(swing, swing)
    mean = (t - record[0][0]) / (step - record[0][1])
    assert mean == pytest.approx(1.5, rel=0.05)
    remaining = 400  # 20 minutes at the recent 3 s/step: far beyond one swing
    combined = combined_seconds_per_step(3.0, record, t, step, remaining)
    assert 1.4 < combined < 1.9, combined  # mostly the mean (1.5), not the recent pace (3)

    def lasting(t: float) -> float:  # 1 s/step for 15 minutes, then 3 from there on
        return 1.0 if t - T0 < 900 else 3.0

    record, t, step = _record(lasting, lasting, minutes=25)
    mean = (t - record[0][0]) / (step - record[0][1])
    assert mean < 2.0  # the mean still half in the old pace
    combined = combined_seconds_per_step(3.0, record, t, step, 100)  # 5 minutes ahead
    assert combined > 2.6 and combined > mean + 0.8 * (3.0 - mean), combined

    def warmup(t: float) -> float:  # 4 s/step for 10 minutes, then 1 s/step
        return 4.0 if t - T0 < 600 else 1.0

    record, t, step = _record(warmup, warmup, minutes=30)
    mean = (t - record[0][0]) / (step - record[0][1])
    assert mean > 1.3  # the warm-up is in it
    combined = combined_seconds_per_step(1.0, record, t, step, 900)  # 15 minutes ahead
    assert combined < 1.0 + 0.2 * (mean - 1.0), (combined, mean)
    # The end of warm-up, where the pace model saw it, takes it out of the mean itself.
    assert combined_seconds_per_step(1.0, record, t, step, 900, since=T0 + 600) < combined + 1e-9
    assert combined_seconds_per_step(1.5, [], t, step, 100) == 1.5
    assert combined_seconds_per_step(1.5, record[:1], t, step, 100) == 1.5


def test_the_lookback_reaches_back_as_far_as_the_time_left() -> None:
    """1 s/step for ten minutes, then 3 s/step for two: two minutes ahead, the pace over the
    two minutes just past (the new one); twelve minutes ahead, over all twelve (720 s for
    640 steps); further than the record goes, from its oldest forecast; with ``since`` (the
    end of warm-up), from there; nearer than the newest forecast, from the newest. None
    without a forecast before now."""

    def pace(t: float) -> float:
        return 1.0 if t - T0 < 600 else 3.0

    record, t, step = _record(pace, pace, minutes=12)
    assert (t - T0, step) == (720, 640)
    assert lookback_seconds_per_step(record, t, step, 120) == pytest.approx(3.0)
    assert lookback_seconds_per_step(record, t, step, 720) == pytest.approx(720 / 640)
    assert lookback_seconds_per_step(record, t, step, 1e9) == pytest.approx(720 / 640)
    assert lookback_seconds_per_step(record, t, step, 720, since=T0 + 300) == pytest.approx(
        420 / 340
    )
    newest_t, newest_step, _ = record[-1]
    assert lookback_seconds_per_step(record, t, step, 5) == pytest.approx(
        (t - newest_t) / (step - newest_step)
    )
    assert lookback_seconds_per_step([], t, step, 120) is None
    assert lookback_seconds_per_step(record, T0, 0, 120) is None


def test_the_eta_meets_the_records_choice_halfway_by_the_past_as_long_as_the_future() -> None:
    """Twenty steady minutes at 1 s/step, then a neighbour for two (3 s/step), 300 steps
    left: 900 s if it stays, 300 s if it leaves now. The record chose the recent pace (it
    has been right since the neighbour came); the pace over the last 900 s is mostly the
    old, faster one. The ETA charges their geometric mean, and is off by less in its worse
    future than either pace alone (the recent pace by 3x if the neighbour leaves, the run's
    mean by nearly 3x if it stays). Without a record, the recent pace; where the past was
    slower (a warm-up that ended), the record's choice."""

    def pace(t: float) -> float:
        return 1.0 if t - T0 < 1200 else 3.0

    record, t, step = _record(pace, pace, minutes=22)
    remaining = 300
    chosen = combined_seconds_per_step(3.0, record, t, step, remaining)
    past = lookback_seconds_per_step(record, t, step, remaining * 3.0)
    assert chosen > 2.5 and past is not None and past < 1.2, (chosen, past)
    charged = seconds_per_remaining_step(3.0, record, t, step, remaining)
    assert charged == pytest.approx(math.sqrt(chosen * past))
    mean = (t - record[0][0]) / (step - record[0][1])

    def worse_future(spp: float) -> float:  # the larger of the two futures' ratios
        eta = remaining * spp
        return max(900.0 / eta, eta / 300.0)

    assert worse_future(charged) < 2.0
    assert worse_future(charged) < min(worse_future(3.0), worse_future(mean))
    assert seconds_per_remaining_step(1.5, [], t, step, 100) == 1.5

    # Never towards a slower past: ten minutes of warm-up at 4 s/step, then ten at 1 s/step,
    # 900 steps left. The last 900 s hold half the warm-up (1.33 s/step), which is over:
    # the ETA keeps the record's choice.
    def warmup(t: float) -> float:
        return 4.0 if t - T0 < 600 else 1.0

    record, t, step = _record(warmup, warmup, minutes=20)
    past = lookback_seconds_per_step(record, t, step, 900 * 1.0)
    chosen = combined_seconds_per_step(1.0, record, t, step, 900)
    assert past is not None and past > chosen, (past, chosen)
    assert seconds_per_remaining_step(1.0, record, t, step, 900) == chosen


@given(
    gaps=st.lists(
        st.tuples(
            st.floats(min_value=1e-3, max_value=1e7),
            st.integers(min_value=1, max_value=10**12),
            st.floats(min_value=1e-9, max_value=1e9),
        ),
        min_size=1,
        max_size=30,
    ),
    recent=st.floats(min_value=1e-9, max_value=1e9),
    remaining=st.integers(min_value=0, max_value=10**12),
)
def test_the_seconds_charged_are_finite_and_never_beyond_the_choice_or_the_lookback(
    gaps: list[tuple[float, int, float]], recent: float, remaining: int
) -> None:
    """Whatever the record (gaps of a millisecond to months, a step to a trillion, paces
    said from a nanosecond to decades), the seconds per step charged are finite, positive,
    never more than the record's choice and never less than the lookback."""
    record: list[Forecast] = []
    t, step = T0, 0
    for dt, ds, said in gaps:
        record.append((t, step, said))
        t, step = t + dt, step + ds
    charged = seconds_per_remaining_step(recent, record, t, step, remaining)
    chosen = combined_seconds_per_step(recent, record, t, step, remaining)
    past = lookback_seconds_per_step(record, t, step, remaining * recent)
    assert math.isfinite(charged) and charged > 0
    assert past is not None
    assert charged <= chosen * (1 + 1e-9)
    assert charged >= min(chosen, past) * (1 - 1e-9)


def test_the_two_paces_are_mixed_in_logs_where_their_errors_were_measured() -> None:
    """Equal errors give the geometric mean (a 5x burst: 2.24x, not the 3x of seconds), the
    one that erred less carries the weight, and a record without errors keeps the recent
    pace. Never outside the two."""
    assert weighed_in_logs(5.0, 1.0, 0.2, 0.2) == pytest.approx(math.sqrt(5.0))
    assert weighed_in_logs(1.0, 5.0, 0.2, 0.2) == pytest.approx(math.sqrt(5.0))
    # The mean erred a ninth as much (squared): nine tenths of the weight, in logs.
    assert weighed_in_logs(5.0, 1.0, 0.9, 0.1) == pytest.approx(5.0**0.1)
    assert weighed_in_logs(5.0, 1.0, 0.1, 0.9) == pytest.approx(5.0**0.9)
    assert weighed_in_logs(5.0, 1.0, 0.0, 0.0) == 5.0
    # The recent pace was never wrong: all the weight; the mean never was: all of it.
    assert weighed_in_logs(5.0, 1.0, 0.0, 0.3) == pytest.approx(5.0)
    assert weighed_in_logs(5.0, 1.0, 0.3, 0.0) == pytest.approx(1.0)


@given(
    recent=st.floats(min_value=1e-300, max_value=1e300),
    mean=st.floats(min_value=1e-300, max_value=1e300),
    recent_mse=st.floats(min_value=0.0, allow_nan=False),
    mean_mse=st.floats(min_value=0.0, allow_nan=False),
)
def test_the_mix_is_never_outside_the_two_paces(
    recent: float, mean: float, recent_mse: float, mean_mse: float
) -> None:
    """Whatever the records (absurd paces make infinite errors), the seconds per step
    charged are finite and between the two: never NaN, never beyond either."""
    mixed = weighed_in_logs(recent, mean, recent_mse, mean_mse)
    assert math.isfinite(mixed)
    assert min(recent, mean) * (1 - 1e-9) <= mixed <= max(recent, mean) * (1 + 1e-9)


def test_forecasts_reach_back_over_a_long_attempt() -> None:
    """At least FORECAST_SPACING apart, and farther as the attempt grows, so the newest
    FORECASTS_KEPT of a long run reach back over most of it (to its first seventh)."""
    forecasts: deque[Forecast] = deque(maxlen=FORECASTS_KEPT)
    for i in range(20_000):  # a report a second for five and a half hours
        t = T0 + i
        if forecast_due(forecasts, t, T0):
            forecasts.append((t, i, 1.0))
    assert forecasts[1][0] - forecasts[0][0] >= FORECAST_SPACING
    assert forecasts[0][0] - T0 < 20_000 / 7


def test_tracker_exports_bounds_that_count_down_and_vanish_with_the_eta() -> None:
    tracker = Tracker()
    rng = random.Random(3)
    step = 0
    for i in range(40):
        step += rng.randint(15, 25)
        tracker.apply(KEY, ProgressReport(step=step, max_steps=5000), T0 + i * 5)
    at = T0 + 39 * 5
    s = next(iter(tracker.snapshot(at)))
    assert s.eta_seconds is not None and s.eta_lower_seconds is not None
    assert s.eta_upper_seconds is not None
    assert s.eta_lower_seconds <= s.eta_seconds <= s.eta_upper_seconds
    later = next(iter(tracker.snapshot(at + 10)))
    assert later.eta_lower_seconds == pytest.approx(s.eta_lower_seconds - 10)
    assert later.eta_upper_seconds == pytest.approx(s.eta_upper_seconds - 10)
    tracker.apply(KEY, ProgressReport(step=5000, final=True), at + 12)
    done = next(iter(tracker.snapshot(at + 12)))
    assert done.state == "finished"
    assert (done.eta_seconds, done.eta_lower_seconds, done.eta_upper_seconds) == (None, None, None)


def test_pause_overhead_is_counted_over_the_steps_pauses_recur_in() -> None:
    """Evaluations come after their block of steps: just before the second one, one was
    seen in 199 steps, yet one comes every 100. The overhead is the pause over the steps up
    to the last pause, and fades once pauses stop coming at their spacing."""
    steps_per_report, every = 10, 5.0  # 2 steps/s

    def run(blocks: list[int]) -> list[Sample]:
        """Reports every 10 steps; a 30 s evaluation after each block of the given sizes."""
        samples: list[Sample] = [(T0, 0)]
        t, s = T0, 0
        for i, block in enumerate(blocks):
            for _ in range(block // steps_per_report):
                t += every
                s += steps_per_report
                if i < len(blocks) - 1 and s == sum(blocks[: i + 1]):
                    t += 30.0  # the evaluation ends this block's last interval
                samples.append((t, s))
        return samples

    # Two blocks of 100 then 90 steps: one evaluation seen, at step 100; the next is due.
    tp = throughput(run([100, 90]))
    assert tp is not None and tp.pause_seconds_per_step == pytest.approx(30.0 / 100, rel=0.02)
    # A single evaluation at step 100, then 400 steps without: it is spread over them
    # (less one spacing), no longer charged as if it came every 100 steps.
    tp = throughput(run([100, 400]))
    assert tp is not None and tp.pause_seconds_per_step == pytest.approx(30.0 / 400, rel=0.02)
    # No pause at all: no overhead.
    tp = throughput(run([300]))
    assert tp is not None and tp.pause_seconds_per_step == 0.0


# A report 5 s after the one before, 20 steps on: a steady run.
_STEADY = (5.0, ("on", 20), None, None)
# A report a second after the one before, one step on.
_STEP = (1.0, ("on", 1), None, None)


@given(
    total=st.one_of(st.none(), st.integers(min_value=0, max_value=2**40)),
    reports=st.lists(
        st.tuples(
            st.one_of(  # seconds since the previous report: mostly a few, at times days
                st.floats(min_value=1.0, max_value=30.0),
                st.floats(min_value=1.0, max_value=30.0),
                st.floats(min_value=0.0, max_value=1e6),
            ),
            st.one_of(  # the step: on from the last one mostly, sometimes back or anywhere
                st.integers(min_value=1, max_value=500).map(lambda d: ("on", d)),
                st.integers(min_value=-5, max_value=2**40).map(lambda s: ("at", s)),
            ),
            # its own ETA and its timestamp, each left out two times in three
            st.one_of(st.none(), st.none(), st.floats(allow_nan=True, allow_infinity=True)),
            st.one_of(st.none(), st.none(), st.floats(min_value=-1e12, max_value=1e12)),
        ),
        min_size=1,
        max_size=40,
    ),
    later=st.floats(min_value=0.0, max_value=1e7),
)
@example(total=5000, reports=[_STEADY] * 30, later=0.0)  # a band
@example(total=5000, reports=[_STEADY] * 30 + [(5.0, ("at", 2**40), None, None)], later=1e7)
# Found by CI: a run with no total that states its own ETA as infinity once it made steps.
@example(total=None, reports=[_STEP] * 3 + [(1.0, ("on", 1), math.inf, None)], later=0.0)
def test_any_report_sequence_exports_a_band_that_holds_the_eta(
    total: int | None,
    reports: list[tuple[float, tuple[str, int], float | None, float | None]],
    later: float,
) -> None:
    """Whatever a run reports (steps that go back or leap to 2^40, a total below the step,
    its own ETA NaN or infinite, timestamps anywhere, reports a second or eleven days
    apart), the exported ETA is finite and not negative, and its band is finite and holds
    it: 0 <= lower <= ETA <= upper, now and at any later scrape."""
    tracker = Tracker()
    now, step = T0, 0
    for gap, (how, value), eta, stamp in reports:
        now += gap
        step = step + value if how == "on" else value
        report = ProgressReport(
            step=step,
            max_steps=total,
            eta_seconds=eta,
            timestamp=None if stamp is None else T0 + stamp,
        )
        tracker.apply(KEY, report, now)
    for at in (now, now + later):
        for s in tracker.snapshot(at):
            if s.eta_seconds is None:
                assert s.eta_lower_seconds is None and s.eta_upper_seconds is None
                continue
            assert math.isfinite(s.eta_seconds) and s.eta_seconds >= 0
            if s.eta_lower_seconds is None or s.eta_upper_seconds is None:
                assert s.eta_lower_seconds is None and s.eta_upper_seconds is None
                continue
            assert math.isfinite(s.eta_lower_seconds) and math.isfinite(s.eta_upper_seconds)
            assert 0 <= s.eta_lower_seconds <= s.eta_seconds <= s.eta_upper_seconds
