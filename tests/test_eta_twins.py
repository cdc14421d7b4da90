"""bench/eta_twins.py: the least any estimator must be beyond the perfect past on a pair of
runs that share their past (issue 31's point goal, on runs that part at a cut).

The bound is checked against estimators drawn at random (no ETA may beat it), worked by
hand on a small case, and its twins are checked to be their run up to the cut.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from statistics import mean

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench import eta_accuracy, eta_twins
from bench.eta_accuracy import Truth, load_corpus

positive = st.floats(min_value=1.0, max_value=1e4, allow_nan=False)


@given(
    shared=st.lists(st.tuples(positive, positive), min_size=1, max_size=12),
    extra_a=st.integers(min_value=0, max_value=10),
    extra_b=st.integers(min_value=0, max_value=10),
    ref_a=st.floats(min_value=0.0, max_value=0.5),
    ref_b=st.floats(min_value=0.0, max_value=0.5),
    etas=st.lists(st.floats(min_value=0.0, max_value=2e4, allow_nan=False), min_size=12),
)
def test_no_estimator_beats_the_bound(
    shared: list[tuple[float, float]],
    extra_a: int,
    extra_b: int,
    ref_a: float,
    ref_b: float,
    etas: list[float],
) -> None:
    """Whatever one ETA an estimator says at each shared instant (and perfect elsewhere),
    the worse of its two runs is at least the bound beyond its reference."""
    n_a, n_b = len(shared) + extra_a, len(shared) + extra_b
    bound = eta_twins.least_excess(shared, n_a, n_b, ref_a, ref_b)
    mape_a = sum(abs(e - ta) / ta for e, (ta, _) in zip(etas, shared, strict=False)) / n_a
    mape_b = sum(abs(e - tb) / tb for e, (_, tb) in zip(etas, shared, strict=False)) / n_b
    assert max(mape_a - ref_a, mape_b - ref_b) >= bound - 1e-9
    # Saying either truth everywhere is one such estimator; the bound is never above both.
    assert (
        bound
        <= max(
            sum(abs(ta - tb) / tb for ta, tb in shared) / n_b - ref_b,
            sum(abs(ta - tb) / ta for ta, tb in shared) / n_a - ref_a,
        )
        + 1e-9
    )


def test_the_bound_by_hand() -> None:
    """One shared instant, 100 s left in one run and 200 s in the other, each run scored at
    one instant, references 0: an ETA e costs |e - 100| / 100 and |e - 200| / 200; the
    worse of the two is least where they are equal, e = 400 / 3, at 1 / 3."""
    assert math.isclose(
        eta_twins.least_excess([(100.0, 200.0)], 1, 1, 0.0, 0.0), 1 / 3, abs_tol=1e-3
    )
    # With references of 0.1 each, 0.1 less.
    assert math.isclose(
        eta_twins.least_excess([(100.0, 200.0)], 1, 1, 0.1, 0.1), 1 / 3 - 0.1, abs_tol=1e-3
    )
    # Two runs that agree at every shared instant leave nothing to lose.
    assert eta_twins.least_excess([(100.0, 100.0)], 1, 1, 0.0, 0.0) == 0.0


windows = st.sampled_from(eta_accuracy.PERFECT_PAST_WINDOWS)
mapes = st.dictionaries(windows, st.floats(min_value=0.0, max_value=2.0), min_size=1)


@given(by_a=mapes, by_b=mapes)
def test_one_window_for_both_futures_is_the_least_sum_and_never_beats_hindsight(
    by_a: dict[float | None, float], by_b: dict[float | None, float]
) -> None:
    """The reference without hindsight takes one window for both runs of a pair: the one
    whose two MAPEs sum least. On each run it is never better than that run's own perfect
    past (its best window in hindsight), and on the two together never worse than any
    other window they share."""
    shared = {w: by_a[w] for w in by_a if w in by_b}
    if not shared:
        return
    window, a, b = eta_twins.one_window({w: by_a[w] for w in shared}, {w: by_b[w] for w in shared})
    assert a >= min(by_a.values()) and b >= min(by_b.values())
    assert all(a + b <= by_a[w] + by_b[w] + 1e-12 for w in shared)
    assert (a, b) == (by_a[window], by_b[window])


def test_one_window_by_hand() -> None:
    """The mean (None) makes 30 % on one run and 20 % on its twin; 10 s makes 10 % and 50 %:
    hindsight picks 10 s for the first and the mean for the twin; one window for both is
    the mean (50 % together, not 60 %)."""
    assert eta_twins.one_window({10.0: 0.1, None: 0.3}, {10.0: 0.5, None: 0.2}) == (
        None,
        0.3,
        0.2,
    )


def test_a_twin_is_its_run_up_to_the_cut_and_then_the_pattern() -> None:
    truth = Truth([0.0, 1.0, 2.0, 3.0, 4.0], [1, 2, 3, 4, 5], 9)
    twin = eta_twins.continue_with(truth, 2.5, [(2.0, 1), (1.0, 2)])
    assert twin.times[:3] == [0.0, 1.0, 2.0] and twin.steps[:3] == [1, 2, 3]
    assert twin.times[3:] == [4.0, 5.0, 7.0, 8.0] and twin.steps[3:] == [4, 6, 7, 9]
    assert twin.max_steps == 9


def test_every_corpus_twin_shares_its_runs_past() -> None:
    """Each twin the bench builds is its corpus run's truth up to the cut, then differs;
    every run with one planned neighbour gets one."""
    runs = [r for r in load_corpus() if len(r["hog_seconds"]) == 2]
    assert runs
    for run in runs:
        truth = Truth.of(run)
        twins = eta_twins.twins_of(run)
        if (
            float(run["hog_seconds"][0]) <= truth.times[0]
            and run["hog_seconds"][1] >= truth.times[-1]
        ):
            continue
        assert len(twins) == 1, run["name"]
        _, cut, twin = twins[0]
        kept = sum(t <= cut for t in truth.times)
        assert twin.times[:kept] == truth.times[:kept], run["name"]
        assert twin.steps[-1] == truth.max_steps
        assert twin.times[-1] != truth.times[-1], run["name"]


def test_a_twin_replays_as_its_run_until_the_cut() -> None:
    """The exporter cannot tell a run from its twin before the cut: the same reports reach
    it, and it says the same ETA at every instant up to the cut; after it, the twin's
    reports follow the twin's truth, in the run's own shape."""
    run = next(r for r in load_corpus() if r["name"] == "window-hf-kubeflow-resume-hog-heldout")
    [(kind, cut, twin)] = eta_twins.twins_of(run)
    made = eta_twins.twin_run(run, kind, cut, twin)
    assert made is not None
    before = [r for r in run["reports"] if r[0] <= cut]
    assert made["reports"][: len(before)] == before
    after = made["reports"][len(before) :]
    assert after and all(a[0] > cut for a in after)
    for at, path, body in after:
        status = json.loads(body)["trainerStatus"]
        step = next(int(m["value"]) for m in status["metrics"] if m["name"] == "current_step")
        assert step == twin.step_at(at) and path == before[-1][1]
    seconds = [float(t) for t in range(10, int(cut) + 1)]
    assert len(seconds) > 400
    ours = [i.ours for i in eta_accuracy.replay(run, times=seconds)]
    assert ours == [i.ours for i in eta_accuracy.replay(made, times=seconds)]
    assert all(eta is not None for eta in ours[-100:])


@pytest.mark.slow
def test_on_the_twins_the_band_holds_and_the_point_is_near_the_perfect_past() -> None:
    """Each corpus run with one planned hog has a twin that shares its past and whose
    neighbour did the other thing (stayed where it left, left where it stayed): a run
    nothing was tuned on, by construction. Replayed through the exporter (30 pairs; logs'
    twins are not made up), the band holds the truth at 87 % of instants or more on every
    twin but the 52-minute run's (69 %: beside the test suite's bursts); the point estimate
    is at most 5.1 points beyond the perfect past on a twin (the lasting reporter run's,
    where the neighbour leaves halfway through its stay), and within the goal's 5 points on
    both runs of 26 of the 30 pairs (19 of 28 before the ETA looked back as far as it looks
    ahead, estimate.seconds_per_remaining_step). Held here; docs/eta.md gives the table
    (python -m bench.eta_twins)."""
    pairs = eta_twins.evaluate()
    results = [r for r in pairs if r.twin_excess is not None]
    print("\n" + eta_twins.table(results))
    assert len(results) == 30
    # docs/eta.md's table is this one, as measured today.
    doc = (Path(__file__).resolve().parents[1] / "docs" / "eta.md").read_text()
    assert eta_twins.table(results).strip() in doc
    beside_the_suite = "long-reporter-resume-eval-hog-heldout"
    for r in results:
        floor = 0.65 if r.run == beside_the_suite else 0.85
        assert r.twin_in_band is not None and r.twin_in_band >= floor, (r.run, r.twin_in_band)
    assert mean(r.twin_in_band or 0.0 for r in results) >= 0.9
    assert max(r.twin_excess or 0.0 for r in results) <= 0.055
    both = [r for r in results if max(r.excess or 0.0, r.twin_excess or 0.0) <= eta_twins.GOAL]
    assert len(both) >= 26, [r.run for r in results if r not in both]
    # The bound: no pair of the corpus' rules the point goal out for every estimator.
    assert all(r.least_excess <= eta_twins.GOAL for r in pairs)
    # Without the perfect past's hindsight (one window for both futures of a past), ours
    # is within the goal's 5 points on both runs of 27 of the 30 pairs; the other three as
    # measured: the whole-run mean is the one window, and does better than ours by more
    # than 5 points on one side: a two-minute run whose hog passed (6.2), a three-minute
    # one whose hog stayed on the twin where it leaves (5.1), and the 52-minute run beside
    # the test suite (5.9). Held so that it cannot slip.
    fair = [r for r in results if eta_twins.within_one_window(r)]
    assert len(fair) >= 27, [r.run for r in results if r not in fair]
    assert all(r.one_window for r in results)
