"""ETA accuracy: our estimate against the naive one, on real recorded runs and on simulations.

**Real runs** (the first table) are the corpus in ``tests/fixtures/eta/``: training runs on
this machine's CPU recorded by ``tests/fixtures/eta/record.py`` (Transformers'
``KubeflowCallback``, our reporter, container logs; with resumes, evaluations, warm-up and a
CPU hog started and stopped mid-run), each kept as its reports with their real times and the
program's own ground truth (the time of every step). A replay feeds the reports, at their
recorded times, through the exporter's own path: the push handler (``handle_push``) for
pushes, the log source (``LogSource`` tailing a file the replay appends the CRI lines to,
polled every 0.5 s) for logs, into a ``Tracker``. The clock is injected, so a replay takes
about a second; ``--real-pace`` replays in real time instead (the same code with the wall
clock, as long as the runs took).

Every second from 10 % to 90 % of a run's training time (its ``begin`` to its last step),
the replay reads our ``training_eta_seconds`` (the snapshot at that instant) and compares it
with the true time left. The **naive** estimate is the one Transformers' ``KubeflowCallback``
sends: seconds since training began / global step x remaining steps, counted down between
its updates. Both sides get the same input: for the KubeflowCallback runs the naive estimate
is the ``estimatedRemainingSeconds`` the callback actually posted; for the other runs it is
the same formula applied whenever the exporter saw the step advance (a report, a log chunk),
with the training start taken from the ground truth. An instant without an estimate counts
as a 100 % error, for either side. Error is the mean absolute percentage
error (MAPE) per run, then averaged over the runs. ``in bounds`` is the share of instants
where the truth lay between ``training_eta_lower_seconds`` and
``training_eta_upper_seconds``.

**Perfect past** is a reference, not an estimator anyone can run: at each instant it knows
the true step of every moment so far (the ground truth, not the reports) and divides the
remaining steps by the true pace over the last 10, 20, 40 or 80 s, or since the first step;
of these five windows, each run gets the one that did best on it, chosen in hindsight. What
it cannot know is the future: a pace change that has not happened yet. Its error is what
following the pace, even perfectly, costs on a run; no estimate from the past alone is
expected to do much better.

**Simulated runs** (the second table) are synthetic step sequences with jitter: each
scenario isolates one effect (warm-up, evaluation pauses, a resume, a throughput drop),
reported every 10 steps, compared at each report from 5 % to 95 % progress.

Run: ``python -m bench.eta_accuracy [--run NAME] [--real-pace]`` (prints both tables and
JSON); ``--rules`` prints, run by run, whether ours and the whole-run mean on the same input
meet the point goal; ``--windows``, how many runs the reference's own rules that make no
choice in hindsight meet it on (``--where`` and ``--prior``: see ``main``).
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import random
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from statistics import mean, median
from typing import Any, NamedTuple

from exporter.core.estimate import naive_eta_seconds
from exporter.core.model import ProgressReport, RunKey
from exporter.core.run.snapshot import RunSnapshot
from exporter.core.tracker import Tracker
from exporter.logs.source import LogSource, standalone_targets
from exporter.plumbing.discovery import StandaloneResolver
from exporter.plumbing.ingest import Ingestor
from exporter.plumbing.stats import ExporterStats
from exporter.sources.push import PushRequest, handle_push

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "eta"
KUBEFLOW_PATH = re.compile(
    r"^/apis/trainer\.kubeflow\.org/v1alpha1/namespaces/([^/]+)/trainjobs/([^/]+)/status$"
)
NATIVE_PATH = re.compile(r"^/api/v1/namespaces/([^/]+)/runs/([^/]+)/report$")
LOG_POLL = 0.5  # the log source's poll interval
SAMPLE_EVERY = 1.0
WINDOW = (0.10, 0.90)
EPOCH = 1.8e9  # the replay's clock starts here (any fixed Unix time)


# -- real runs ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Instant:
    """One comparison: seconds since the run's start, the truth, and the estimates."""

    t: float
    true: float
    ours: float | None
    lower: float | None
    upper: float | None
    naive: float | None
    # When the newest step the exporter had by then was made (seconds into the run), None
    # before any: what the same-input reference may know (see perfect_past_same_input).
    known: float | None = None


@dataclass(frozen=True)
class RunResult:
    name: str
    description: str
    channel: str
    ours: float  # MAPE, a fraction
    naive: float
    in_bounds: float  # share of instants with lower <= truth <= upper
    missing: int  # instants without our estimate
    instants: int
    perfect_past: float  # MAPE of the reference (see the module docstring)
    neighbour: bool  # a CPU hog ran beside it for part of the run: a pace change from outside
    width: float = 0.0  # median of (upper - lower) / ours over the instants with bounds
    held_out: bool = False  # never used to tune the estimator (record.py's Run.held_out)
    minutes: float = 0.0  # training time, begin to last step
    # The reference given only what had reached the exporter: the truth up to the newest
    # step it had (a container log arrives 16 KiB at a time; a tqdm bar's first chunk may
    # come after 10 % of a short run, and its next ones 25 s apart).
    same_input: float = 0.0
    # The share in band of the instants that had an ETA: the band's own calibration, apart
    # from the instants before the channel delivered a step (in_bounds counts them out).
    in_bounds_with_eta: float = 0.0
    # The same-input reference held to its whole-run window: the run's mean pace since the
    # first step the exporter had, counting down from the newest. No hindsight: a rule any
    # exporter could follow, and the one the reference picks on most runs (see rules_table).
    whole_run_mean: float = 0.0


def load_corpus(directory: Path = CORPUS) -> list[dict[str, Any]]:
    """The recorded runs, sorted by name."""
    return [json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))]


def _error(estimate: float | None, true: float) -> float:
    return 1.0 if estimate is None else abs(estimate - true) / true


def callback_posts(run: dict[str, Any]) -> list[tuple[float, float]]:
    """(time, estimatedRemainingSeconds) of each post of a KubeflowCallback run."""
    posts = []
    for t, _, body in run["reports"]:
        eta = json.loads(body)["trainerStatus"].get("estimatedRemainingSeconds")
        if eta is not None:
            posts.append((t, float(eta)))
    return posts


def _naive(begin: float, t: float, step: int, total: int) -> float:
    """The callback's formula at ``t``: seconds since training began / step x remaining."""
    return float(int((t - begin) / step * (total - step)))


class _Replay:
    """Feeds one recorded run into a tracker through the exporter's push or log path."""

    def __init__(self, run: dict[str, Any], clock: Callable[[], float], workdir: Path) -> None:
        self.run = run
        self.clock = clock
        self.tracker = Tracker()
        self.ingestor = Ingestor(self.tracker, ExporterStats(), clock)
        self.resolver = StandaloneResolver()
        self.pending = list(run["reports"])
        self.log_path = workdir / f"{run['name']}.log"
        self.log_source: LogSource | None = None
        if run["channel"] == "log":
            self.log_path.write_bytes(b"")
            self.log_source = LogSource(
                standalone_targets([str(self.log_path)], "ml"), self.ingestor, files_are_runs=True
            )
        self.next_poll = 0.0

    def advance(self, t: float) -> None:
        """Deliver everything recorded up to ``t`` seconds into the run."""
        due = 0
        while due < len(self.pending) and self.pending[due][0] <= t:
            due += 1
        events, self.pending = self.pending[:due], self.pending[due:]
        if self.log_source is None:
            for event in events:
                self._push(event)
            return
        with self.log_path.open("a", encoding="utf-8") as f:
            for at, stream, tag, text in events:
                f.write(f"{_stamp(EPOCH + at)} {stream} {tag} {text}\n")
        while self.next_poll <= t:
            self.log_source.poll()
            self.next_poll += LOG_POLL

    def _push(self, event: list[Any]) -> None:
        _, path, body = event
        kubeflow = KUBEFLOW_PATH.match(path)
        match = kubeflow or NATIVE_PATH.match(path)
        if match is None:
            raise ValueError(f"unexpected push path {path!r}")
        request = PushRequest(
            namespace=match.group(1),
            name=match.group(2),
            body=body.encode(),
            client_ip="127.0.0.1",
            authorization="Bearer recorder",
            now=self.clock(),
        )
        answer = handle_push(request, kubeflow is not None, self.resolver, self.ingestor)
        if answer.status != 200:
            raise ValueError(f"the exporter refused a recorded push: {answer.body!r}")

    def snapshot(self) -> RunSnapshot | None:
        runs = self.tracker.snapshot(self.clock())
        return runs[0] if runs else None


def _stamp(unix: float) -> str:
    dt = datetime.fromtimestamp(unix, UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond * 1000:09d}Z"


def _sample_times(run: dict[str, Any]) -> Iterator[float]:
    begin = run["truth"]["begin"]
    end = _end(run)
    t = begin + WINDOW[0] * (end - begin)
    while t <= begin + WINDOW[1] * (end - begin):
        yield t
        t += SAMPLE_EVERY


def _end(run: dict[str, Any]) -> float:
    """When the run made its last step: the time the true ETA counts down to."""
    return float(run["truth"]["steps"][-1][0])


def replay(
    run: dict[str, Any], real_pace: bool = False, times: Sequence[float] | None = None
) -> list[Instant]:
    """Every sampled instant of one recorded run (or those at ``times``, in seconds into
    it, in order), replayed on an injected (or real) clock."""
    end = _end(run)
    # The naive estimate from the same input: the callback's own posts, or its formula each
    # time the exporter saw the step advance (a report, a log chunk).
    kubeflow = run["channel"] == "kubeflow"
    posts = callback_posts(run) if kubeflow else []
    seen_step = 0
    known_step, known_at = 0, None
    now = [EPOCH]
    started = time.monotonic()

    def clock() -> float:
        return now[0]

    def set_clock(t: float) -> float:
        """Set the clock to ``t`` seconds into the run (in real time: wait for it first)."""
        if real_pace:
            time.sleep(max(0.0, t - (time.monotonic() - started)))
            t = time.monotonic() - started
        now[0] = EPOCH + t
        return t

    out: list[Instant] = []
    with tempfile.TemporaryDirectory() as tmp:
        rp = _Replay(run, clock, Path(tmp))
        for t in _sample_times(run) if times is None else times:
            # Deliveries happen at their own times, then the scrape at ``t``.
            for step_t in _steps_until(rp, t):
                set_clock(step_t)
                rp.advance(step_t)
                if not kubeflow and (snap := rp.snapshot()) and (snap.step or 0) > seen_step:
                    seen_step = snap.step or 0
                    begin = run["truth"]["begin"]
                    posts.append((step_t, _naive(begin, step_t, seen_step, run["max_steps"])))
            set_clock(t)
            snap = rp.snapshot()
            if snap is not None and (snap.step or 0) > known_step:
                # The newest step's time, as the exporter saw it: not an epoch's advance
                # (Trainer's log dicts move last_step_timestamp before any step is known).
                known_step = snap.step or 0
                known_at = (
                    snap.last_step_timestamp - EPOCH
                    if snap.last_step_timestamp is not None
                    else None
                )
            naive = None
            for at, eta in posts:
                if at > t:
                    break
                naive = max(0.0, eta - (t - at))
            out.append(
                Instant(
                    t=t,
                    true=end - t,
                    ours=snap.eta_seconds if snap else None,
                    lower=snap.eta_lower_seconds if snap else None,
                    upper=snap.eta_upper_seconds if snap else None,
                    naive=naive,
                    known=known_at,
                )
            )
    return out


def final_snapshot(run: dict[str, Any]) -> RunSnapshot | None:
    """The run as the exporter sees it once every report was delivered."""
    now = [EPOCH]
    with tempfile.TemporaryDirectory() as tmp:
        rp = _Replay(run, lambda: now[0], Path(tmp))
        end = run["reports"][-1][0] + 2 * LOG_POLL
        for t in _steps_until(rp, end):
            now[0] = EPOCH + t
            rp.advance(t)
        now[0] = EPOCH + end
        return rp.snapshot()


def _steps_until(rp: _Replay, t: float) -> Iterator[float]:
    """The delivery times up to ``t``: each pending report's, and each log poll's."""
    while True:
        candidates = []
        if rp.pending and rp.pending[0][0] <= t and rp.log_source is None:
            candidates.append(rp.pending[0][0])
        if rp.log_source is not None and rp.next_poll <= t:
            candidates.append(rp.next_poll)
        if not candidates:
            return
        yield min(candidates)


PERFECT_PAST_WINDOWS: tuple[float | None, ...] = (10.0, 20.0, 40.0, 80.0, None)


class Truth(NamedTuple):
    """A run's ground truth, ready for lookups: every step's time, the steps, the total."""

    times: list[float]
    steps: list[int]
    max_steps: int

    @classmethod
    def of(cls, run: dict[str, Any]) -> Truth:
        truth = run["truth"]["steps"]
        times, steps = [float(s[0]) for s in truth], [int(s[1]) for s in truth]
        return cls(times, steps, int(run["max_steps"]))

    def step_at(self, t: float) -> int:
        """The step the run had reached at ``t`` (the one before its first, before that)."""
        i = bisect.bisect_right(self.times, t) - 1
        return self.steps[i] if i >= 0 else self.steps[0] - 1


def _seconds_per_step(truth: Truth, t: float, window: float | None) -> float | None:
    """The true pace at ``t`` over the last ``window`` seconds (None: since the first step);
    None when no step was made in the window."""
    since = truth.times[0] if window is None else max(truth.times[0], t - window)
    now_step, then_step = truth.step_at(t), truth.step_at(since)
    if now_step <= then_step or t <= since:
        return None
    return (t - since) / (now_step - then_step)


def perfect_past_eta(truth: Truth, t: float, window: float | None) -> float | None:
    """The reference's ETA at ``t``: remaining steps at the true pace of the last ``window``
    seconds (None: since the first step); None when no step was made in the window."""
    pace = _seconds_per_step(truth, t, window)
    return None if pace is None else (truth.max_steps - truth.step_at(t)) * pace


# How far back chosen_window_eta judges the reference's windows, in seconds (None: half the
# lesser of the time since the first step and the whole-run window's ETA, at least 10 s).
CHOSEN_HORIZONS: tuple[float | None, ...] = (30.0, 60.0, 120.0, None)


def chosen_window_eta(truth: Truth, t: float, horizon: float | None) -> float | None:
    """The perfect past with its window chosen at ``t`` without hindsight: of its windows,
    the one whose pace ``h`` seconds ago best foretold how long the steps made since took
    (least |ln(foretold / h)|); its ETA at ``t``, the whole-run window's where none could
    be judged. None before the run's second step.

    Why it exists: the point goal's reference picks each run's window in hindsight. This is
    the same reference, given the truth up to ``t`` (more than any exporter has), choosing
    its window the way an estimator must: from how each did so far. How many runs it meets
    the goal on says how much of the goal is the choice made in hindsight (windows_table)."""
    whole = _seconds_per_step(truth, t, None)
    if whole is None:
        return None
    left = truth.max_steps - truth.step_at(t)
    h = horizon
    if h is None:
        h = max(10.0, min(left * whole, t - truth.times[0]) / 2)
    then = t - h
    made = truth.step_at(t) - truth.step_at(then)
    if made <= 0:  # no step in the stretch judged: nothing to choose by
        return left * whole
    foretold = {w: _seconds_per_step(truth, then, w) for w in PERFECT_PAST_WINDOWS}
    misses = {w: abs(math.log(made * p / h)) for w, p in foretold.items() if p is not None}
    if not misses:
        return left * whole
    pace = _seconds_per_step(truth, t, min(misses, key=misses.__getitem__))
    return left * (whole if pace is None else pace)


def perfect_past(run: dict[str, Any], instants: list[Instant], same_input: bool = False) -> float:
    """The reference's MAPE on ``instants``: the best of its windows for this run. With
    ``same_input``, at each instant it knows the truth only up to when the newest step the
    exporter had was made, and counts down from there (nothing before the exporter had
    any): the estimator's share of the error, apart from the channel's delay."""
    return perfect_past_of(Truth.of(run), instants, same_input)


def perfect_past_of(truth: Truth, instants: list[Instant], same_input: bool = False) -> float:
    """:func:`perfect_past` for a run given by its ``truth`` alone."""
    return min(perfect_past_by_window(truth, instants, same_input).values())


def perfect_past_by_window(
    truth: Truth, instants: list[Instant], same_input: bool = False
) -> dict[float | None, float]:
    """The reference's MAPE on ``instants`` with each of its windows (None: the whole-run
    mean): :func:`perfect_past_of` is the best of them, picked for the run in hindsight."""

    def eta(i: Instant, window: float | None) -> float | None:
        if not same_input:
            return perfect_past_eta(truth, i.t, window)
        if i.known is None:
            return None
        then = perfect_past_eta(truth, i.known, window)
        return None if then is None else max(0.0, then - (i.t - i.known))

    return {
        window: mean(_error(eta(i, window), i.true) for i in instants)
        for window in PERFECT_PAST_WINDOWS
    }


# The stretches of a run with one planned neighbour that excess_by_stretch splits it into.
STRETCHES = ("before the neighbour", "while it is there", "its first minute gone", "after")
AFTER_LEAVING = 60.0  # seconds: "its first minute gone", the lag of following the recovery


def excess_by_stretch(run: dict[str, Any], instants: list[Instant]) -> dict[str, float] | None:
    """Where our estimate's excess over the perfect past comes from, on a run with one
    planned neighbour (a hog started once; None for any other run): our error less the
    reference's (its best window for the run), summed over the instants of each of
    STRETCHES and divided by the run's count of instants, so that the four add up to the
    run's MAPE less the perfect past's.

    Why: a run can miss the point goal because the estimate followed a neighbour that then
    left (an excess while it is there: the future, which the twins measure), because it was
    slow to follow the recovery (its first minute gone: the estimator's own lag), or for
    want of input (before it: a log's first chunk). Only the second is the estimator's to
    fix without choosing between the two futures."""
    hog = run["hog_seconds"]
    if len(hog) != 2 or not instants:
        return None
    start, stop = float(hog[0]), float(hog[1])
    truth = Truth.of(run)
    by_window = perfect_past_by_window(truth, instants)
    best = min(by_window, key=lambda w: by_window[w])
    out = dict.fromkeys(STRETCHES, 0.0)
    ends = (start, stop, stop + AFTER_LEAVING)  # where each stretch but the last ends
    for i in instants:
        stretch = STRETCHES[bisect.bisect_right(ends, i.t)]
        reference = _error(perfect_past_eta(truth, i.t, best), i.true)
        out[stretch] += (_error(i.ours, i.true) - reference) / len(instants)
    return out


def stretch_table(rows: Sequence[tuple[str, dict[str, float]]]) -> str:
    """Per run, the excess over the perfect past and its share from each stretch, in
    points, as a Markdown table."""
    lines = [
        "| run | excess | " + " | ".join(STRETCHES) + " |",
        "| --- | ---: |" + " ---: |" * len(STRETCHES),
    ]
    for name, parts in rows:
        cells = " | ".join(f"{parts[k] * 100:+.1f}" for k in STRETCHES)
        lines.append(f"| {name} | {sum(parts.values()) * 100:+.1f} | {cells} |")
    return "\n".join(lines)


def score(run: dict[str, Any], instants: list[Instant]) -> RunResult:
    """One run's MAPE (ours, naive and the perfect-past reference), bound coverage, gaps."""
    inside = [
        i.lower is not None and i.upper is not None and i.lower <= i.true <= i.upper
        for i in instants
    ]
    widths = [
        (i.upper - i.lower) / i.ours
        for i in instants
        if i.lower is not None and i.upper is not None and i.ours
    ]
    same_input = perfect_past_by_window(Truth.of(run), instants, same_input=True)
    return RunResult(
        name=run["name"],
        description=run["description"],
        channel=run["channel"],
        ours=mean(_error(i.ours, i.true) for i in instants),
        naive=mean(_error(i.naive, i.true) for i in instants),
        in_bounds=mean(inside),
        missing=sum(i.ours is None for i in instants),
        instants=len(instants),
        perfect_past=perfect_past(run, instants),
        neighbour=bool(run["hog_seconds"]),
        width=median(widths) if widths else float("inf"),
        held_out=bool(run.get("held_out")),
        minutes=(_end(run) - run["truth"]["begin"]) / 60,
        same_input=min(same_input.values()),
        whole_run_mean=same_input[None],
        in_bounds_with_eta=mean(
            [float(hit) for hit, i in zip(inside, instants, strict=True) if i.ours is not None]
            or [0.0]
        ),
    )


def evaluate_corpus(
    real_pace: bool = False, directory: Path = CORPUS, names: Sequence[str] = ()
) -> list[RunResult]:
    """Every recorded run (or those named) replayed and scored, in name order."""
    return [score(run, replay(run, real_pace)) for run in corpus_runs(names, directory)]


def corpus_runs(names: Sequence[str] = (), directory: Path = CORPUS) -> list[dict[str, Any]]:
    """Every recorded run, or those named; exits naming the runs there are when a name is
    none of them (a typo must not print an empty table)."""
    everything = load_corpus(directory)
    runs = [run for run in everything if not names or run["name"] in names]
    if names and len(runs) != len(set(names)):
        raise SystemExit(f"no such run among {sorted(r['name'] for r in everything)}")
    return runs


def measured_prior(
    runs: Sequence[dict[str, Any]], replays: Sequence[list[Instant]]
) -> list[tuple[float, float, float, str]]:
    """What exporter.core.estimate.PRIOR holds, measured on the runs not held out: per horizon
    bucket of PRIOR (our ETA up to that many seconds), the 80th percentile of
    |ln(true time left / our ETA)| pooled over the runs, and the largest of it run by run
    (with that run's name): a prior at that size held the truth at four instants in five on
    every run it was measured on."""
    from exporter.core.estimate import PRIOR, quantile

    edges = [upto for upto, _, _ in PRIOR]
    pooled: list[list[float]] = [[] for _ in edges]
    worst: list[tuple[float, str]] = [(0.0, "") for _ in edges]
    for run, instants in zip(runs, replays, strict=True):
        if run.get("held_out"):
            continue
        own: list[list[float]] = [[] for _ in edges]
        for i in instants:
            if i.ours and i.true > 0:
                k = next(n for n, upto in enumerate(edges) if i.ours <= upto)
                own[k].append(abs(math.log(i.true / i.ours)))
        for k, errors in enumerate(own):
            pooled[k] += errors
            if errors and quantile(errors, 0.8) > worst[k][0]:
                worst[k] = (quantile(errors, 0.8), run["name"])
    return [
        (upto, quantile(errors, 0.8), worst[k][0], worst[k][1])
        for k, (upto, errors) in enumerate(zip(edges, pooled, strict=True))
        if errors
    ]


def corpus_table(results: list[RunResult]) -> str:
    lines = [
        "| run | channel | minutes | our MAPE | naive MAPE | ratio | perfect past | same input "
        "| in band | in band, with an ETA | width |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        name = f"{r.name} (held out)" if r.held_out else r.name
        lines.append(
            f"| {name} | {r.channel} | {r.minutes:.0f} | {r.ours:.1%} | {r.naive:.1%} | "
            f"{r.ours / r.naive:.2f} | {r.perfect_past:.1%} | {r.same_input:.1%} | "
            f"{r.in_bounds:.0%} | {r.in_bounds_with_eta:.0%} | {r.width:.2f} |"
        )
    groups = (
        ("with a neighbour", [r for r in results if r.neighbour]),
        ("without", [r for r in results if not r.neighbour]),
        ("tuned on", [r for r in results if not r.held_out]),
        ("held out", [r for r in results if r.held_out]),
    )
    for label, group in groups:
        if group and len(group) < len(results):
            lines.append(_summary_row(f"{label} ({len(group)} runs)", group, bold=False))
    runs = f"{len(results)} run" + ("s" if len(results) != 1 else "")
    lines.append(_summary_row(f"overall ({runs})", results, bold=True))
    return "\n".join(lines)


def _summary_row(label: str, results: list[RunResult], bold: bool) -> str:
    o, n = overall(results)
    inside = mean(r.in_bounds for r in results)
    ref = mean(r.perfect_past for r in results)
    width = median(r.width for r in results)
    b = "**" if bold else ""
    return (
        f"| {b}{label}{b} | | | {b}{o:.1%}{b} | {b}{n:.1%}{b} | {b}{o / n:.2f}{b} | "
        f"{ref:.1%} | {mean(r.same_input for r in results):.1%} | {inside:.0%} | "
        f"{mean(r.in_bounds_with_eta for r in results):.0%} | {width:.2f} |"
    )


# Issue 31's point goal: our MAPE within this of the perfect past's on every run; where the
# reference given only what reached the exporter (same_input) is itself farther than this
# from it (a container log's chunks), within this of that instead.
POINT_GOAL = 0.05


def meets_point_goal(ours: float, r: RunResult) -> bool:
    """Whether a MAPE of ``ours`` on run ``r`` meets the point goal (POINT_GOAL)."""
    return _meets(ours, r.perfect_past, r.same_input)


def _meets(mape: float, perfect: float, same_input: float) -> bool:
    """The point goal: within POINT_GOAL of the perfect past, or of the same-input
    reference where that is itself further than POINT_GOAL from it (the channel's delay)."""
    if mape - perfect <= POINT_GOAL:
        return True
    return same_input - perfect > POINT_GOAL and mape - same_input <= POINT_GOAL


def _goal_met(results: list[RunResult]) -> tuple[list[bool], list[bool]]:
    """For each run, whether ours and whether the whole-run mean meet the point goal."""
    return (
        [meets_point_goal(r.ours, r) for r in results],
        [meets_point_goal(r.whole_run_mean, r) for r in results],
    )


def rules_table(results: list[RunResult]) -> str:
    """Our estimate against the whole-run mean on the same input, run by run: which of the
    two meets the point goal, and the counts (``--rules``).

    Why: the reference picks its window for each run in hindsight, and on most runs where
    ours misses it picks the whole run's. The table says whether a miss is one any rule
    from the past would make (neither meets it) or one where another rule, chosen without
    hindsight, would have been right on that run and wrong on others."""
    lines = [
        "| run | ours | whole-run mean | perfect past | same input | ours meets | mean meets |",
        "| --- | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    ours, whole = _goal_met(results)
    for r, a, b in zip(results, ours, whole, strict=True):
        if a and b:
            continue
        lines.append(
            f"| {r.name} | {r.ours:.1%} | {r.whole_run_mean:.1%} | {r.perfect_past:.1%} | "
            f"{r.same_input:.1%} | {'yes' if a else 'no'} | {'yes' if b else 'no'} |"
        )
    lines.append("\n" + rules_summary(results))
    return "\n".join(lines)


def rules_summary(results: list[RunResult]) -> str:
    """How many runs meet the point goal with ours, with the whole-run mean on the same
    input, with one of the two and with neither (rules_table's last line)."""
    ours, whole = _goal_met(results)
    either = sum(a or b for a, b in zip(ours, whole, strict=True))
    return (
        f"The point goal is met by ours on {sum(ours)} of {len(results)} runs, by the "
        f"whole-run mean on {sum(whole)}, by one of the two on {either}, by neither on "
        f"{len(results) - either}. MAPE over the runs: ours {mean(r.ours for r in results):.1%}, "
        f"the whole-run mean {mean(r.whole_run_mean for r in results):.1%}."
    )


@dataclass(frozen=True)
class WindowRules:
    """One run's MAPE under each rule of the reference's that makes no choice in hindsight:
    each window held for the whole run (``full``: the true pace; ``same``: on the same input
    as ours), and the window chosen at each instant (``chosen``, by CHOSEN_HORIZONS)."""

    name: str
    full: dict[float | None, float]
    same: dict[float | None, float]
    chosen: dict[float | None, float]


def window_rules(run: dict[str, Any], instants: list[Instant]) -> WindowRules:
    """:class:`WindowRules` of one run, on the instants its replay sampled."""
    truth = Truth.of(run)
    return WindowRules(
        name=run["name"],
        full=perfect_past_by_window(truth, instants),
        same=perfect_past_by_window(truth, instants, same_input=True),
        chosen={
            h: mean(_error(chosen_window_eta(truth, i.t, h), i.true) for i in instants)
            for h in CHOSEN_HORIZONS
        },
    )


# The labels of window_rule_counts that are not rules without hindsight.
OURS_LABEL = "**ours**"
HINDSIGHT_LABEL = "the perfect past: its best window for each run, in hindsight"


def window_rule_counts(
    rules: list[WindowRules], results: list[RunResult]
) -> list[tuple[str, int, float]]:
    """(rule, how many runs meet the point goal with it, its MAPE over the runs) for each
    rule of the reference's own that makes no choice in hindsight, then ours (OURS_LABEL)
    and the reference itself (HINDSIGHT_LABEL).

    Why: the goal holds each run to the reference's best window for that run, picked once
    its future is known. Held to any one window, or choosing at each instant from how each
    window did so far, the same reference meets its own goal on fewer runs, given the same
    input as ours, and on no more than ours given the truth itself."""
    by_name = {r.name: r for r in results}
    if set(by_name) != {w.name for w in rules}:
        raise ValueError("the rules and the results are not of the same runs")

    def count(label: str, mapes: list[float]) -> tuple[str, int, float]:
        met = sum(
            _meets(m, by_name[w.name].perfect_past, by_name[w.name].same_input)
            for m, w in zip(mapes, rules, strict=True)
        )
        return label, met, mean(mapes)

    def seconds(window: float | None) -> str:
        return "since the first step" if window is None else f"over the last {window:g} s"

    out = [
        count(f"the true pace {seconds(window)}", [w.full[window] for w in rules])
        for window in PERFECT_PAST_WINDOWS
    ]
    out += [
        count(
            f"the pace {seconds(window)}, on the same input as ours",
            [w.same[window] for w in rules],
        )
        for window in PERFECT_PAST_WINDOWS
    ]
    for h in CHOSEN_HORIZONS:
        judged = "half the time left or run so far" if h is None else f"{h:g} s"
        out.append(
            count(
                f"the true pace, the window that foretold the last {judged} best",
                [w.chosen[h] for w in rules],
            )
        )
    out.append(count(OURS_LABEL, [by_name[w.name].ours for w in rules]))
    out.append(count(HINDSIGHT_LABEL, [by_name[w.name].perfect_past for w in rules]))
    return out


def windows_table(rules: list[WindowRules], results: list[RunResult]) -> str:
    """window_rule_counts as a Markdown table (``--windows``; docs/eta.md holds it)."""
    lines = [
        "| rule, without hindsight | meets the point goal | MAPE over the runs |",
        "| --- | ---: | ---: |",
    ]
    lines += [
        f"| {label} | {met} of {len(rules)} | {mape:.1%} |"
        for label, met, mape in window_rule_counts(rules, results)
    ]
    return "\n".join(lines)


def overall(results: list[RunResult]) -> tuple[float, float]:
    """(our, naive) MAPE averaged over the runs."""
    return mean(r.ours for r in results), mean(r.naive for r in results)


# -- simulated runs -----------------------------------------------------------------------

KEY = RunKey("bench", "run", "run")

# seconds per step at global step s (relative to the run's first step), before jitter
StepTime = Callable[[int], float]


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    total_steps: int
    start_step: int  # > 0: resumed from a checkpoint
    step_time: StepTime
    eval_every: int = 0  # steps between evaluation pauses (0: none)
    eval_seconds: float = 0.0
    log_every: int = 10


def _warmup(base: float, steps: int, factor: float) -> StepTime:
    return lambda s: base * (factor if s < steps else 1.0)


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "warm-up",
        "first 300 steps 4x slower (compilation, cache warm-up)",
        6000,
        0,
        _warmup(0.5, 300, 4.0),
    ),
    Scenario(
        "eval-pauses",
        "a 90 s evaluation every 500 steps",
        6000,
        0,
        lambda s: 0.5,
        eval_every=500,
        eval_seconds=90.0,
    ),
    Scenario(
        "resume", "resumed from a checkpoint at step 6000 of 10000", 10000, 6000, lambda s: 0.5
    ),
    Scenario(
        "throughput-drop",
        "throughput halves at step 3000 (straggler node)",
        6000,
        0,
        lambda s: 0.5 if s < 3000 else 1.0,
    ),
    Scenario(
        "everything",
        "warm-up, evaluations, resume at 30 %, and a drop at 70 %",
        10000,
        3000,
        lambda s: 2.0 if s < 3200 else 0.5 if s < 7000 else 0.8,
        eval_every=1000,
        eval_seconds=120.0,
    ),
    Scenario(
        "steady",
        "constant speed, no pauses (the naive estimate's best case)",
        6000,
        0,
        lambda s: 0.5,
    ),
)


def simulate(sc: Scenario, seed: int) -> list[tuple[float, int]]:
    """Report times and steps of one run, from its start (t=0) to its last step."""
    rng = random.Random(seed)
    t = 0.0
    reports = [(0.0, sc.start_step)]
    for step in range(sc.start_step + 1, sc.total_steps + 1):
        t += sc.step_time(step) * rng.uniform(0.9, 1.1)
        if sc.eval_every and step % sc.eval_every == 0 and step < sc.total_steps:
            t += sc.eval_seconds * rng.uniform(0.95, 1.05)
        if step % sc.log_every == 0 or step == sc.total_steps:
            reports.append((t, step))
    return reports


def run_errors(sc: Scenario, seed: int) -> tuple[float, float]:
    """(our MAPE, naive MAPE) for one simulated run."""
    reports = simulate(sc, seed)
    t_end = reports[-1][0]
    tracker = Tracker()
    ours, naive = [], []
    for t, step in reports:
        now = 1e9 + t
        tracker.apply(KEY, ProgressReport(step=step, max_steps=sc.total_steps), now)
        progress = (step - sc.start_step) / (sc.total_steps - sc.start_step)
        if not 0.05 <= progress <= 0.95:
            continue
        true = t_end - t
        if true <= 0:
            continue
        ours.append(_error(tracker.snapshot(now)[0].eta_seconds, true))
        naive.append(_error(naive_eta_seconds(t, step, sc.total_steps), true))
    return mean(ours), mean(naive)


def evaluate(runs_per_scenario: int = 5) -> dict[str, dict[str, float]]:
    """Per scenario and overall: mean of per-run MAPE, ours and naive, as fractions."""
    out: dict[str, dict[str, float]] = {}
    all_ours, all_naive = [], []
    for sc in SCENARIOS:
        pairs = [run_errors(sc, seed) for seed in range(runs_per_scenario)]
        o, n = mean(p[0] for p in pairs), mean(p[1] for p in pairs)
        all_ours += [p[0] for p in pairs]
        all_naive += [p[1] for p in pairs]
        out[sc.name] = {"ours": o, "naive": n}
    out["overall"] = {"ours": mean(all_ours), "naive": mean(all_naive)}
    return out


def table(results: dict[str, dict[str, float]]) -> str:
    lines = ["| scenario | our MAPE | naive MAPE | ratio |", "| --- | ---: | ---: | ---: |"]
    for name, r in results.items():
        ratio = r["ours"] / r["naive"] if r["naive"] else float("inf")
        lines.append(f"| {name} | {r['ours']:.1%} | {r['naive']:.1%} | {ratio:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--real-pace", action="store_true", help="replay in real time")
    p.add_argument("--run", action="append", default=[], help="only this run (repeatable)")
    p.add_argument(
        "--prior", action="store_true", help="print the error spread by horizon (PRIOR) only"
    )
    p.add_argument(
        "--where",
        action="store_true",
        help="print where each run with one planned neighbour gets its excess over the "
        "perfect past (before it, while it is there, its first minute gone, after) only",
    )
    p.add_argument(
        "--rules",
        action="store_true",
        help="print, run by run, whether ours and the whole-run mean (same input) meet the "
        "point goal, where either misses, and the counts only",
    )
    p.add_argument(
        "--windows",
        action="store_true",
        help="print how many runs meet the point goal under each rule of the perfect past "
        "that makes no choice in hindsight, beside ours, only",
    )
    a = p.parse_args(argv)
    runs = corpus_runs(a.run)
    if a.where:
        rows = [(r["name"], excess_by_stretch(r, replay(r))) for r in runs]
        print(stretch_table([(name, parts) for name, parts in rows if parts is not None]))
        return 0
    if a.prior:
        tuned = [r for r in runs if not r.get("held_out")]  # what measured_prior reads
        for upto, pooled, worst, name in measured_prior(tuned, [replay(r) for r in tuned]):
            print(
                f"ETA <= {upto:g} s: 80th percentile of |ln(true / ETA)| {pooled:.3f} pooled, "
                f"{worst:.3f} on the worst run ({name})"
            )
        return 0
    if a.windows:
        replays = [replay(r) for r in runs]
        scored = [score(r, i) for r, i in zip(runs, replays, strict=True)]
        rules = [window_rules(r, i) for r, i in zip(runs, replays, strict=True)]
        print(windows_table(rules, scored))
        return 0
    real = evaluate_corpus(a.real_pace, names=a.run)
    if a.rules:
        print(rules_table(real))
        return 0
    simulated = evaluate()
    print("Real runs (tests/fixtures/eta):\n" + corpus_table(real))
    print("\n" + rules_summary(real))
    print("\nSimulated runs:\n" + table(simulated))
    o, n = overall(real)
    print(
        json.dumps(
            {
                "real": {r.name: r.__dict__ for r in real}
                | {
                    "overall": {
                        "ours": o,
                        "naive": n,
                        "perfect_past": mean(r.perfect_past for r in real),
                    }
                },
                "simulated": simulated,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
