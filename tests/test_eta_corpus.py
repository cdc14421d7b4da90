"""The ETA on real recorded runs (tests/fixtures/eta, replayed by bench/eta_accuracy.py).

The corpus is real training on this machine's CPU, recorded with ``record.py`` beside it:
Transformers' ``KubeflowCallback``, our reporter and container logs, with resumes,
evaluations, warm-up, and in fifty-one of the fifty-eight runs a CPU hog started or
stopped mid-run (in six a bursty one); forty-eight runs are held out (never tuned on), each
batch recorded once the change before it was final (record.py, docs/eta.md). These tests hold
the figures reached (docs/eta.md), say where issue 31's goals are met and where not, check
them against the perfect-past reference, and check that the replay really goes through the
exporter's push and log paths.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from statistics import mean, median
from typing import Any

import pytest

from bench import eta_accuracy
from bench.eta_accuracy import Instant, RunResult
from exporter.core.estimate import PRIOR
from exporter.core.run.snapshot import RunSnapshot

# What the estimate holds today (docs/eta.md). On the ten runs it was tuned on: 16.1 %
# against the naive 30.9 % (0.52); 19.1 % against 25.9 % (0.74) on the seven of them with a
# neighbour, 9.1 % against 42.7 % (0.21) on the three without. These bounds keep what was
# reached from slipping back.
HELD_RATIO = 0.6
HELD_MAPE = 0.18
HELD_NEIGHBOUR_RATIO = 0.82
HELD_STEADY_RATIO = 0.3
# On the forty-eight runs held out it is 19.0 % against the naive 26.3 % (the 52-minute
# run beside this project's test suite, a bursty neighbour, makes 54.4 % of it). Issue 31 is open
# on it. Held here so that it does not get worse unseen.
HELD_OUT_MAPE = 0.3
# Our error stays within this of the perfect-past reference's (bench/eta_accuracy.py), on
# average over the tuned runs (2.7 points).
HELD_GAP = 0.05
# The point estimate, run by run. Issue 31's goal is 5 points from the perfect-past
# reference on every run. What is held: the tuned runs within HELD_RUN_GAP of it, the goal
# itself (3.1 at most); where the reference given only what had reached the exporter
# (``same_input``) is itself more than 5 points from it (a tqdm bar reaches a container log
# 16 KiB at a time), within HELD_SAME_INPUT_GAP of that (6.7 at most).
HELD_RUN_GAP = eta_accuracy.POINT_GOAL
CHANNEL_GAP = eta_accuracy.POINT_GOAL
HELD_SAME_INPUT_GAP = 0.07
# The band (issue 31's goal): coverage over the corpus, on every run, and its median width
# as a fraction of the ETA. Met on the tuned runs; on the held-out ones it is 89 % on
# average and 55 % at worst (the bursty neighbour again), held at HELD_OUT_COVERAGE.
GOAL_COVERAGE, GOAL_RUN_COVERAGE, GOAL_WIDTH = 0.8, 0.75, 1.0
HELD_OUT_COVERAGE, HELD_OUT_RUN_COVERAGE = 0.8, 0.5
# Held out and recorded with nothing beside them but the planned hog, steady or bursty (no
# unplanned neighbour of note): "quiet-", "fresh-", "final-", "bursty-", "early-",
# "window-", "long-quiet-", "twin-", "onesize-", "lookback-", "ends-", "libs-" and "clock-".
QUIET = (
    "quiet-",
    "fresh-",
    "final-",
    "bursty-",
    "early-",
    "window-",
    "long-quiet-",
    "twin-",
    "onesize-",
    "lookback-",
    "ends-",
    "libs-",
    "clock-",
)
# The quiet held-out runs on which the band's goal was measured not met, each held at what
# was measured (issue 31 would be open on them). None. The 19-minute "early-" run that was
# one (74.7 %) prompted counting the record's independent windows (estimate.windows_judged)
# and the runs recorded after that ("window-") judge it; the two-minute tqdm loop recorded
# again on a quiet machine (quiet-tqdm-loop-resume-slowdown-heldout, 64.6 %: its ETA fell
# under a minute as the hog came, where the prior was 0.30 in logs) prompted the prior's
# one size at every horizon (0.42), and the six "onesize-" runs recorded after it judge
# that (76 % at worst; 89 % on the tqdm run now). Neither prompting run counts as held
# out from the change it prompted, and both are kept here, at the goal.
QUIET_BAND_MISSES: dict[str, float] = {}
# No quiet run's median band is wider than this (x the ETA): held where it is, 1.11 (a
# Lightning run whose first 40 batches read cold: its record of being wrong is wide, as it
# should be; the goal is on the median width).
QUIET_RUN_WIDTH = 1.12


@pytest.fixture(scope="module")
def corpus() -> list[dict[str, Any]]:
    return eta_accuracy.load_corpus()


@pytest.fixture(scope="module")
def replays(corpus: list[dict[str, Any]]) -> dict[str, list[Instant]]:
    return {run["name"]: eta_accuracy.replay(run) for run in corpus}


@pytest.fixture(scope="module")
def results(corpus: list[dict[str, Any]], replays: dict[str, list[Instant]]) -> list[RunResult]:
    return [eta_accuracy.score(run, replays[run["name"]]) for run in corpus]


def test_the_corpus_covers_every_channel_and_hard_case(corpus: list[dict[str, Any]]) -> None:
    assert {run["channel"] for run in corpus} == {"kubeflow", "reporter", "log"}
    assert any(run["resumed_from"] for run in corpus)
    # The pace changes both ways: a hog started mid-run, and one stopped mid-run.
    ends = {run["name"]: run["truth"]["steps"][-1][0] for run in corpus}
    assert any(run["hog_seconds"][0] > 10 for run in corpus if run["hog_seconds"])
    assert any(
        run["hog_seconds"][1] < ends[run["name"]] - 10 for run in corpus if run["hog_seconds"]
    )
    described = " ".join(run["description"] for run in corpus)
    for case in ("resumed", "evaluation", "cold", "hog"):
        assert case in described
    for run in corpus:
        steps = run["truth"]["steps"]
        assert steps[-1][1] == run["max_steps"]
        # Recorded at real pace: minutes of training, reports spread over all of it.
        assert steps[-1][0] - run["truth"]["begin"] > 60
        assert run["reports"][0][0] < run["truth"]["begin"] + 10
        assert run["reports"][-1][0] >= steps[-1][0] - 10


@pytest.mark.slow
def test_our_eta_beats_the_naive_one_on_real_runs(results: list[RunResult]) -> None:
    print("\n" + eta_accuracy.corpus_table(results))
    tuned = [r for r in results if not r.held_out]
    ours, naive = eta_accuracy.overall(tuned)
    assert ours <= HELD_RATIO * naive
    assert ours < HELD_MAPE
    with_neighbour = eta_accuracy.overall([r for r in tuned if r.neighbour])
    assert with_neighbour[0] <= HELD_NEIGHBOUR_RATIO * with_neighbour[1]
    steady = eta_accuracy.overall([r for r in tuned if not r.neighbour])
    assert steady[0] <= HELD_STEADY_RATIO * steady[1]
    held_out = eta_accuracy.overall([r for r in results if r.held_out])
    assert held_out[0] < HELD_OUT_MAPE
    # Where the naive estimate fails worst (a resume, warm-up), ours is far closer.
    by_name = {r.name: r for r in results}
    assert (
        by_name["reporter-resume-eval-warmup-hog"].ours
        < 0.7 * by_name["reporter-resume-eval-warmup-hog"].naive
    )


def test_once_there_is_an_estimate_it_stays_and_its_bounds_hold_it(
    replays: dict[str, list[Instant]],
) -> None:
    """No ETA before two step reports (or the first log chunk), then one at every instant,
    always between its bounds."""
    for name, instants in replays.items():
        assert len(instants) >= 48, name  # a second apart over 80 % of over a minute
        first = next(k for k, i in enumerate(instants) if i.ours is not None)
        assert first < len(instants) // 4, name
        for i in instants[first:]:
            assert i.ours is not None and i.lower is not None and i.upper is not None, (name, i)
            assert i.lower <= i.ours <= i.upper, (name, i)


@pytest.mark.slow
def test_the_replay_reads_what_the_exporter_would(corpus: list[dict[str, Any]]) -> None:
    """Pushes go through handle_push and logs through LogSource: the run ends at its last
    step, and the naive series of a KubeflowCallback run is what the callback posted."""
    for run in corpus:
        final = eta_accuracy.final_snapshot(run)
        assert final is not None, run["name"]
        if run["channel"] == "kubeflow":
            # The callback's last post before on_train_end is throttled; its final body
            # carries progress 100 and no step.
            assert final.finished and final.state == "finished"
            posted = [
                json.loads(body)["trainerStatus"].get("estimatedRemainingSeconds")
                for _, _, body in run["reports"]
            ]
            assert [eta for _, eta in eta_accuracy.callback_posts(run)] == [
                float(e) for e in posted if e is not None
            ]
        else:
            assert final.step == run["max_steps"], run["name"]


def _instants(run: dict[str, Any], times: list[float]) -> list[Instant]:
    end = run["truth"]["steps"][-1][0]
    return [Instant(t, end - t, None, None, None, None) for t in times]


def test_the_perfect_past_reference_knows_the_past_and_not_the_future() -> None:
    """The reference divides the remaining steps by the true pace of the past: exact on an
    even pace, and wrong by exactly the change still to come on a run that slows down."""
    even = {"max_steps": 1000, "truth": {"steps": [[t * 0.1, t] for t in range(1, 1001)]}}
    times = [float(t) for t in range(10, 90)]
    assert eta_accuracy.perfect_past(even, _instants(even, times)) == pytest.approx(0, abs=0.02)
    # 10 steps/s for the first 500 steps (50 s), then 5 steps/s: 100 s more.
    steps = [[s * 0.1, s] for s in range(1, 501)] + [[50 + k * 0.2, 500 + k] for k in range(1, 501)]
    slows = {"max_steps": 1000, "truth": {"steps": steps}}
    at_20 = _instants(slows, [20.0])
    # At 20 s, 800 steps are left; the past pace says 80 s, the truth is 30 + 100 = 130 s.
    assert eta_accuracy.perfect_past(slows, at_20) == pytest.approx(50 / 130, abs=0.01)


def test_our_eta_is_near_what_a_perfect_view_of_the_past_reaches(
    results: list[RunResult],
) -> None:
    """The ETA's goal is measured against the reference: following the pace perfectly
    still leaves the error of the pace changes to come (docs/eta.md)."""
    tuned = [r for r in results if not r.held_out]
    ours = mean(r.ours for r in tuned)
    reference = mean(r.perfect_past for r in tuned)
    assert reference <= ours <= reference + HELD_GAP
    # Over the whole corpus, held-out runs and all: within the goal's 5 points (4.96 as
    # measured when the corpus had 67 runs; a recorded run may tip it, and should fail here).
    everyone = mean(r.ours for r in results) - mean(r.perfect_past for r in results)
    assert 0 < everyone <= eta_accuracy.POINT_GOAL, everyone


def test_the_point_estimate_is_near_the_perfect_past_on_every_tuned_run(
    results: list[RunResult],
) -> None:
    """Issue 31's second goal, run by run (see HELD_RUN_GAP: what is reached is held)."""
    print("\n" + eta_accuracy.corpus_table(results))
    channel_bound = []
    for r in results:
        if r.held_out:
            continue
        if r.same_input - r.perfect_past > CHANNEL_GAP:
            channel_bound.append(r.name)
            assert r.ours - r.same_input <= HELD_SAME_INPUT_GAP, (r.name, r.ours, r.same_input)
        else:
            assert r.ours - r.perfect_past <= HELD_RUN_GAP, (r.name, r.ours, r.perfect_past)
    # The tqdm run's first 16 KiB chunk comes 41 s in: its reference with the same input is
    # 8 points off the perfect past.
    assert "tqdm-loop-warmup-eval-slowdown" in channel_bound


@pytest.mark.slow
def test_the_prior_is_at_least_what_the_tuned_runs_measure(
    corpus: list[dict[str, Any]], replays: dict[str, list[Instant]]
) -> None:
    """estimate.PRIOR is what docs/eta.md says it is: at every horizon, no narrower than the
    largest 80th percentile of |ln(truth / ETA)| that a tuned run shows there (python -m
    bench.eta_accuracy --prior; 0.30 with today's model, kept at the 0.42 measured
    before), so that on its own it would have held the truth at four instants in five on
    every run it was set from. The prior is one size: its one bucket covers every ETA."""
    assert PRIOR[-1][0] == float("inf")
    tuned = [run for run in corpus if not run.get("held_out")]
    measured = eta_accuracy.measured_prior(tuned, [replays[run["name"]] for run in tuned])
    assert len(measured) == len(PRIOR)
    for (upto, pooled, worst, name), (edge, low, high) in zip(measured, PRIOR, strict=True):
        assert upto == edge
        assert 0 < pooled <= worst <= high, (upto, worst, name, high)
        assert low == -high


def test_the_band_holds_the_truth_as_promised(results: list[RunResult]) -> None:
    """The ETA's 80 % band (docs/eta.md): the truth within it at four instants in five over
    the corpus, and at three in four or more on every run, held-out runs included; its
    median width no more than the ETA itself, so width cannot buy the coverage."""
    print("\n" + eta_accuracy.corpus_table(results))
    tuned = [r for r in results if not r.held_out]
    assert mean(r.in_bounds for r in tuned) >= GOAL_COVERAGE
    for r in tuned:
        assert r.in_bounds >= GOAL_RUN_COVERAGE, (r.name, r.in_bounds)
    assert median(r.width for r in results) <= GOAL_WIDTH
    held = [r for r in results if r.held_out]
    assert len(held) >= 3, "a few runs are measured that nothing was tuned on"
    assert mean(r.in_bounds for r in held) >= HELD_OUT_COVERAGE
    assert min(r.in_bounds for r in held) >= HELD_OUT_RUN_COVERAGE


def test_on_held_out_runs_from_a_quiet_machine_the_band_goal_holds_on_each(
    results: list[RunResult],
) -> None:
    """Fifty-three held-out runs recorded with nothing but the planned hog beside them (seven
    of them a bursty one), nothing tuned on them (QUIET): the band's goal holds on each
    (QUIET_BAND_MISSES is empty), the truth within it at three instants in four or more (76 %
    at worst, instants before a log's first chunk counted as misses), and at 80 % or more
    over them (93 %). Where there is an ETA: 80 % at worst. Their median width is 0.77 of
    the ETA; none buys its coverage with width (1.11 at most: a Lightning run whose cold
    start widened its record; 1.01 on a two-minute tqdm loop whose ETA is under a minute at
    most of its instants, where the prior alone spans 0.87).

    Two were misses, and each prompted a change judged on runs recorded after it. 19
    minutes of Trainer with a steady first half and then a hog (74.7 %: the steady record
    narrowed the band to about +-0.2 in logs) prompted counting independent windows rather
    than judgements; three "window-" runs recorded after judge it (96, 95, 93 %), as do
    the long-quiet- runs (100 %, 97 %) and the twin- run (95 %). A two-minute tqdm loop
    (64.6 %: its ETA fell under a minute as the hog came, where the prior narrowed to
    0.30) prompted one prior size at every horizon; six "onesize-" runs recorded after it
    judge it (89, 93, 96, 100, 76, 90 %; with the old prior they would have been 79, 77,
    81, 100, 76, 76 %); a 22-minute Trainer run recorded after those, its slowdown lasting,
    100 % (width 0.62). The six "lookback-" and five "ends-" runs judge the ETA met halfway
    by a faster past (95 % or more on six, 83 to 98 % on the rest). The five "libs-" runs,
    on loops and output we did not write (Lightning's Trainer driving our ProgressCallback,
    Keras 3's own bar in the container log), recorded with no change to the estimator:
    93 to 100 %; the two "clock-" Keras runs after them, 81 % and 95 %; two Keras runs of 21
    and 23 minutes ("libs-long-"), 100 %. Any miss measured is held in QUIET_BAND_MISSES, and
    each is asserted to be a miss still."""
    quiet = [r for r in results if r.held_out and r.name.startswith(QUIET)]
    assert len(quiet) == 53
    for r in quiet:
        floor = QUIET_BAND_MISSES.get(r.name, GOAL_RUN_COVERAGE)
        assert r.in_bounds >= floor, (r.name, r.in_bounds)
        assert r.in_bounds_with_eta >= min(floor, 0.8), (r.name, r.in_bounds_with_eta)
        assert r.width <= QUIET_RUN_WIDTH, (r.name, r.width)
    assert median(r.width for r in quiet) <= GOAL_WIDTH
    # Each miss is still one (else it belongs with the rest, at the goal).
    for name in QUIET_BAND_MISSES:
        assert next(r for r in quiet if r.name == name).in_bounds < GOAL_RUN_COVERAGE, name
    assert mean(r.in_bounds for r in quiet) >= GOAL_COVERAGE


def test_the_runs_mean_pace_tames_a_bursty_neighbour(results: list[RunResult]) -> None:
    """The 52-minute run beside this project's test suite (its pace swung up to 5x within
    minutes): following the recent pace alone made 124 % there; weighing the run's mean
    pace in where its record says the mean erred less, 82.5 %; mixing the two in logs, 72.0 %;
    an ETA from the second report on, 71.4 %; met halfway by the pace over the stretch as
    long as the time left where that was faster, 54.4 % (the perfect past, whose best window
    there is the whole run's, 48.5 %). Runs with a
    steady pace or a lasting change keep the recent pace: the tuned runs stay where they
    were (HELD_MAPE). On the three short runs beside a planned bursty neighbour, held out,
    the whole-run average is what wins (the perfect past 4.7 to 9.4 %): ours is 7.1 to
    26.5 %, the record takes the first third of a five-minute run to lean on the mean
    (issue 31's point goal is not met there; held here so that it does not get worse). On
    a 26-minute run beside it, it is met."""
    by_name = {r.name: r for r in results}
    bursty = by_name["long-reporter-resume-eval-hog-heldout"]
    assert bursty.ours < 0.6, bursty.ours
    short = [r for r in results if r.name.startswith("bursty-") and r.minutes < 10]
    assert len(short) == 3
    for r in short:
        assert r.ours < 0.3, (r.name, r.ours)
        assert r.in_bounds >= GOAL_RUN_COVERAGE, (r.name, r.in_bounds)
    # Beside the same kind of neighbour for 26 minutes, the record has time to say so: the
    # point goal holds (2.5 % against the perfect past's 1.9 %), in a band 0.58 of the ETA.
    long = by_name["bursty-long-reporter-heldout"]
    assert long.minutes >= 20
    assert eta_accuracy.meets_point_goal(long.ours, long), (long.ours, long.perfect_past)
    assert long.in_bounds >= GOAL_COVERAGE, long.in_bounds


def test_the_corpus_has_long_runs_and_runs_held_out(corpus: list[dict[str, Any]]) -> None:
    """Runs of 20 minutes or more beside the short ones: evaluations, a pace change and a
    resume within one; and runs recorded after tuning, never tuned on (record.py held_out)."""

    def minutes(run: dict[str, Any]) -> float:
        return (run["truth"]["steps"][-1][0] - run["truth"]["begin"]) / 60

    long = [run for run in corpus if minutes(run) >= 20]
    assert len(long) >= 2
    assert any(
        run["resumed_from"] and run["hog_seconds"] and "evaluation" in run["description"]
        for run in long
    )
    assert any(run.get("held_out") for run in long)


def _each_second(run: dict[str, Any]) -> Iterator[tuple[float, RunSnapshot | None]]:
    """(seconds into the run, the exporter's snapshot then) each second of the run, its
    reports or log replayed through the exporter's own paths up to that second."""
    now = [eta_accuracy.EPOCH]
    end = eta_accuracy.Truth.of(run).times[-1]
    with tempfile.TemporaryDirectory() as tmp:
        rp = eta_accuracy._Replay(run, lambda: now[0], Path(tmp))
        t = 0.0
        while t < end:
            t += 1.0
            for due in eta_accuracy._steps_until(rp, t):
                now[0] = eta_accuracy.EPOCH + due
                rp.advance(due)
            now[0] = eta_accuracy.EPOCH + t
            yield t, rp.snapshot()


def _step_lag(run: dict[str, Any]) -> list[int]:
    """Each second of the run, once the exporter has a step: how many steps the truth is
    ahead of the exporter's step (a log replayed through the exporter's own LogSource)."""
    truth = eta_accuracy.Truth.of(run)
    return [
        truth.step_at(t) - snap.step
        for t, snap in _each_second(run)
        if snap is not None and snap.step
    ]


def test_trainer_log_dicts_move_the_step_between_the_bars_chunks(
    corpus: list[dict[str, Any]],
) -> None:
    """Trainer's tqdm bar reaches a container log a chunk at a time (a minute apart and
    more), its log dicts every few seconds: once a chunk has shown the step at a dict's
    time, each dict's epoch gives the step. Real Transformers 5 logs (the corpus'): the
    exporter's step was up to 97 steps behind the truth, a median of 37, on
    hf-log-resume-eval-steady when it took steps from the bar alone; with the dicts, at
    most 23 (one logging interval of 10 steps and the time to the next one)."""
    by_name = {run["name"]: run for run in corpus}
    for name in ("hf-log-resume-eval-steady", "hf-log-eval-slowdown"):
        lags = _step_lag(by_name[name])
        assert len(lags) > 60, name
        assert max(lags) <= 30, (name, max(lags))
        assert median(lags) <= 15, (name, median(lags))


def test_the_point_goals_misses_sit_while_the_neighbour_is_there(
    corpus: list[dict[str, Any]], replays: dict[str, list[Instant]], results: list[RunResult]
) -> None:
    """Where the excess over the perfect past comes from (bench.eta_accuracy
    excess_by_stretch; ``python -m bench.eta_accuracy --where``): the four stretches of a run
    with one planned neighbour add up to its excess. On the runs of a pushed channel that
    miss the point goal (a hog that passed each time: early-hf-kubeflow-resume-hog 6.2
    points, lookback-hf-kubeflow-resume-hog-passes 5.8, and the 52-minute run 5.9), at
    least half of it comes while the neighbour is there, when nothing could say it would
    leave; following the recovery in the minute after costs at most 0.7 points (1.1 on the
    52-minute run, beside the test suite's bursts). Before the ETA was met halfway by a
    faster past, four missed (window-hf-kubeflow-resume-hog 5.9 and
    fresh-reporter-hog-passes 5.2 now 1.9 and 2.5; the 52-minute run 22.9)."""
    by_name = {r.name: r for r in results}
    missed = []
    for run in corpus:
        parts = eta_accuracy.excess_by_stretch(run, replays[run["name"]])
        if parts is None:
            assert len(run["hog_seconds"]) != 2
            continue
        r = by_name[run["name"]]
        assert sum(parts.values()) == pytest.approx(r.ours - r.perfect_past, abs=1e-9)
        if run["channel"] != "log" and r.ours - r.perfect_past > eta_accuracy.POINT_GOAL:
            missed.append(run["name"])
            while_there = parts["while it is there"]
            assert while_there >= 0.5 * (r.ours - r.perfect_past), (run["name"], parts)
            lag = 0.025 if run["name"].startswith("long-reporter-") else 0.01
            assert parts["its first minute gone"] <= lag, (run["name"], parts)
    assert sorted(missed) == [
        "early-hf-kubeflow-resume-hog-heldout",
        "long-reporter-resume-eval-hog-heldout",
        "lookback-hf-kubeflow-resume-hog-passes-heldout",
    ]


def test_the_docs_per_run_table_is_what_the_bench_prints(results: list[RunResult]) -> None:
    """docs/eta.md's per-run table is python -m bench.eta_accuracy's, as it prints today: a
    change to the estimator or the corpus that moves a figure moves the docs with it."""
    doc = (Path(__file__).resolve().parents[1] / "docs" / "eta.md").read_text()
    assert eta_accuracy.corpus_table(results).strip() in doc


def test_the_point_goals_misses_are_runs_the_whole_run_mean_meets(
    results: list[RunResult],
) -> None:
    """Issue 31's point goal run by run (bench.eta_accuracy.meets_point_goal): met by ours on
    54 of the 67 runs. On nine of the thirteen it misses, the whole-run mean on the same
    input (the window the perfect past picks there in hindsight, a rule with no hindsight of
    its own) meets it; that rule misses twenty-one: seventeen that ours meets and the
    other four, missed by both, are held-out Keras runs whose bar reaches the log 16 KiB at
    a time, a chunk every 10 to 20 s: three short ones whose hog comes within a minute or so
    of the start (libs-keras-log-hog-lasting, 7.9 points from its same-input reference;
    clock-keras-log-eval-hog-lasting, 6.6 from the perfect past;
    clock-keras-log-long-epochs-hog-passes, 7.1) and a 21-minute one whose hog comes 9
    minutes in and stays (libs-long-keras-log-hog-lasting, 5.8). Held: no more misses than
    thirteen, and none but those four that the whole-run mean misses too. docs/eta.md's table is
    ``python -m bench.eta_accuracy --rules``."""
    ours_misses = [r for r in results if not eta_accuracy.meets_point_goal(r.ours, r)]
    mean_misses = [r for r in results if not eta_accuracy.meets_point_goal(r.whole_run_mean, r)]
    assert len(ours_misses) <= 13, [r.name for r in ours_misses]
    neither = [r.name for r in ours_misses if r in mean_misses]
    assert neither == [
        "clock-keras-log-eval-hog-lasting-heldout",
        "clock-keras-log-long-epochs-hog-passes-heldout",
        "libs-keras-log-hog-lasting-heldout",
        "libs-long-keras-log-hog-lasting-heldout",
    ], neither
    assert len(mean_misses) > len(ours_misses)
    assert mean(r.ours for r in results) < mean(r.whole_run_mean for r in results)
    doc = (Path(__file__).resolve().parents[1] / "docs" / "eta.md").read_text()
    assert eta_accuracy.rules_table(results).strip() in doc


def test_a_healthy_keras_run_with_validation_is_never_diverged(
    corpus: list[dict[str, Any]],
) -> None:
    """A real Keras 3 run (libs-keras-log-eval-hog-passes-heldout: its bar in the container
    log, a validation pass at each epoch's end) converges toward zero: its epoch-running
    train loss sat at 3 to 12 times its validation loss's best (0.0088 against 0.00075).
    Held to the eval loss's best, that read as diverged at half of its instants, and a
    diverged run has no ETA (57 % MAPE, 48 % in band as first measured). The train loss is
    held to its own best: never diverged, an ETA from its first epoch on."""
    run = next(r for r in corpus if r["name"] == "libs-keras-log-eval-hog-passes-heldout")
    states = [snap.state for _, snap in _each_second(run) if snap is not None and snap.step]
    assert len(states) > 120
    assert "diverged" not in states
    assert set(states) <= {"running", "degraded", "finished"}, set(states)


def test_recorded_runs_read_degraded_only_beside_a_neighbour(
    corpus: list[dict[str, Any]],
) -> None:
    """Every run of the corpus is a healthy one, recorded for real (Trainer, Lightning, Keras
    3, tqdm loops, the reporter; evaluations, resumes, cold starts, one run of 52 minutes
    beside a test suite). Replayed second by second through the exporter's own push and log
    paths with the default thresholds, each reads "running", and "degraded" (a pace below
    its own typical one) only on the runs beside a CPU hog, which is what it is for: never
    on an evaluation pause, a resume or a cold start. "finished" only once the truth has
    its last step. (Their losses, small models on random tokens, move by under 1 %: the
    divergence check is held on real loss curves by test_real_scripts.py.)"""
    seen: dict[str, set[str]] = {}
    for run in corpus:
        last = eta_accuracy.Truth.of(run).times[-1]
        states = {
            snap.state
            for t, snap in _each_second(run)
            if snap is not None and snap.step and (snap.state != "finished" or t < last)
        }
        assert states, run["name"]
        seen[run["name"]] = states
        allowed = {"running", "degraded"} if run["hog_seconds"] else {"running"}
        assert states <= allowed, (run["name"], states)
    assert len(seen) == len(corpus) >= 67
    assert any("degraded" in states for states in seen.values())


def test_no_rule_of_the_reference_without_hindsight_meets_the_point_goal_everywhere(
    corpus: list[dict[str, Any]],
    replays: dict[str, list[Instant]],
    results: list[RunResult],
) -> None:
    """The point goal holds each run to the perfect past's best window for that run, picked
    in hindsight. The same reference without that pick (any one of its windows for every
    run, or the window that foretold the recent past best, chosen at each instant) meets
    its own goal on fewer runs than ours when given the same input, and on every run
    never, even given the truth itself: 55 of 67 at most (the true pace over 80 s), where
    ours meets it on 54. docs/eta.md's table is ``python -m bench.eta_accuracy --windows``."""
    rules = [eta_accuracy.window_rules(run, replays[run["name"]]) for run in corpus]
    counts = {label: met for label, met, _ in eta_accuracy.window_rule_counts(rules, results)}
    ours = counts.pop(eta_accuracy.OURS_LABEL)
    assert counts.pop(eta_accuracy.HINDSIGHT_LABEL) == len(corpus)
    assert len(counts) == 14, counts
    assert max(counts.values()) < len(corpus), counts
    given_our_input = {k: v for k, v in counts.items() if "on the same input" in k}
    chosen = {k: v for k, v in counts.items() if "foretold" in k}
    assert len(given_our_input) == 5 and len(chosen) == 4
    assert max(given_our_input.values()) < ours, (ours, given_our_input)
    assert max(chosen.values()) < ours, (ours, chosen)
    assert max(counts.values()) <= ours + 1, (ours, counts)
    doc = (Path(__file__).resolve().parents[1] / "docs" / "eta.md").read_text()
    assert eta_accuracy.windows_table(rules, results).strip() in doc
