"""The one classifier of a run's state, and the one table every view reads.

Every view of a run, whether the status page, ``/api/v1/runs``, ``top``, ``kubectl progress``,
Grafana or the alert rules, shows the state computed here. The exporter exports it as
``training_run_state{state=...}`` (1 for the current state, 0 for the others, the way
kube-state-metrics exports ``kube_pod_status_phase``), and the rules and dashboards read that
series instead of recomputing it in PromQL, so no two views can disagree.

:func:`classify` is pure: an :class:`Observation` and the run's :class:`Thresholds` in, a
:class:`Verdict` out. It reads the same per-run thresholds the exporter exports as
``training_*_threshold_seconds`` and friends. The core imports nothing else of the package.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .humanize import duration
from .thresholds import Thresholds


@dataclass(frozen=True, slots=True)
class StateDef:
    """One state: its name, how to show it, and what it promises.

    ``code`` orders states by urgency for PromQL's ``max`` (highest code = needs attention
    first); sorting by ``-code`` is the one sort order of every view.
    """

    name: str
    label: str
    code: int
    grafana_color: str  # a Grafana named color
    css_color: str  # the status page's badge and bar color
    ansi: str  # SGR codes for ``top``
    has_eta: bool  # an ETA means something (it counts toward "GPUs free within ...")
    alert: str  # the alert that pages on this state ("" for none)
    meaning: str


_RED, _GREEN, _YELLOW, _BLUE, _MAGENTA = "31", "32", "33", "34", "35"
_BOLD, _DIM = "1", "2"

# Most urgent first. The codes follow this order (a test checks it).
STATES: tuple[StateDef, ...] = (
    StateDef(
        "stalled",
        "Stalled",
        11,
        "red",
        "#cf222e",
        f"{_RED};{_BOLD}",
        has_eta=False,
        alert="TrainingJobStalled",
        meaning="the step has not advanced for the stall threshold while the run still reports, "
        "or while its pod still runs",
    ),
    StateDef(
        "diverged",
        "Diverged",
        10,
        "dark-red",
        "#82071e",
        f"{_RED};{_BOLD}",
        has_eta=False,
        alert="TrainingLossDiverged",
        meaning=(
            "loss is NaN or infinite, or the train loss above the divergence ratio times its"
            " own best"
        ),
    ),
    StateDef(
        "finished-but-running",
        "Finished but running",
        9,
        "orange",
        "#bc4c00",
        f"{_MAGENTA};{_BOLD}",
        has_eta=False,
        alert="TrainingFinishedButRunning",
        meaning="finished longer ago than the grace period, yet its pod still runs (or, "
        "standalone, it still reports) and holds GPUs",
    ),
    StateDef(
        "silent",
        "Silent",
        8,
        "purple",
        "#8250df",
        _MAGENTA,
        has_eta=False,
        alert="TrainingReportsStopped",
        meaning="no report for the report timeout, and nothing says whether the process lives",
    ),
    StateDef(
        "failed",
        "Failed",
        7,
        "dark-purple",
        "#512a97",
        _RED,
        has_eta=False,
        alert="TrainingJobFailed",
        meaning="the run's pod failed, or its log ended in a Python traceback, before it finished",
    ),
    StateDef(
        "plateaued",
        "Plateaued",
        6,
        "yellow",
        "#9a6700",
        _YELLOW,
        has_eta=True,
        alert="TrainingLossPlateau",
        meaning="steps advance but the best loss has not improved for the plateau window",
    ),
    StateDef(
        "degraded",
        "Degraded",
        5,
        "light-orange",
        "#d1750f",
        _YELLOW,
        has_eta=True,
        alert="TrainingThroughputDegraded",
        meaning="steps/s below the throughput-drop ratio of the run's own typical pace",
    ),
    StateDef(
        "waiting",
        "Waiting",
        4,
        "light-blue",
        "#6e7781",
        _DIM,
        has_eta=True,
        alert="",
        meaning="reported, but no step or progress yet",
    ),
    StateDef(
        "running",
        "Running",
        3,
        "green",
        "#1a7f37",
        _GREEN,
        has_eta=True,
        alert="",
        meaning="steps advance and the loss improves",
    ),
    StateDef(
        "finished",
        "Finished",
        2,
        "blue",
        "#0969da",
        _BLUE,
        has_eta=False,
        alert="",
        meaning="reported completion (the final flag, or progress reached 1)",
    ),
    StateDef(
        "gone",
        "Gone",
        1,
        "#8c959f",
        "#8c959f",
        _DIM,
        has_eta=False,
        alert="",
        meaning="its pod, file or target disappeared before it finished; kept for the retention",
    ),
)

BY_NAME: dict[str, StateDef] = {s.name: s for s in STATES}
BY_CODE: dict[int, StateDef] = {s.code: s for s in STATES}
NAMES: tuple[str, ...] = tuple(s.name for s in STATES)
# States in which a run still holds GPUs doing nothing useful: its ETA is no promise.
NO_ETA: tuple[str, ...] = tuple(s.name for s in STATES if not s.has_eta)
# A job with a run in one of these states will not finish by itself: no ETA counts for it.
BLOCKS_COMPLETION: tuple[str, ...] = tuple(n for n in NO_ETA if n not in ("finished", "gone"))
# States of a run whose training is over, one way or another: no pace to speak of.
ENDED: tuple[str, ...] = ("finished", "failed", "gone")
# States of a run that is training (or about to): the "running jobs" count.
TRAINING: tuple[str, ...] = tuple(s.name for s in STATES if s.has_eta)


def severity(state: str) -> int:
    """Sort key: 0 for the most urgent state; unknown states last."""
    d = BY_NAME.get(state)
    return len(STATES) if d is None else len(STATES) - d.code


@dataclass(frozen=True, slots=True)
class Observation:
    """What the classifier needs to know about one run at one instant (unix seconds)."""

    now: float
    first_report: float
    last_report: float
    last_step: float | None  # when the step (or progress) last advanced
    last_improvement: float | None  # when the best loss last improved
    finished: bool  # the run said so (final flag)
    progress: float | None
    loss: float | None
    eval_loss: float | None
    best_train_loss: float | None  # the train loss's best (smoothed), what loss is held to
    gpus: float
    gone_since: float | None  # its pod, file or target disappeared
    # Whether the run's pod is known to run (Kubernetes mode); None where nobody knows.
    alive: bool | None = None
    pod_failed: bool = False
    steps_per_second: float | None = None
    # The run's own typical pace (the 90th percentile of its recent pace; while degraded,
    # the pace it had before the drop): the one every view and rule reads.
    typical_steps_per_second: float | None = None
    # The run's total is a progress bar's length and nothing else said it ended (see done).
    bar_end_only: bool = False
    # The exception a traceback at the end of its log named, and since when (logs only).
    failure: str | None = None
    failure_at: float | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    """A state, and when the run entered it where the predicates tell (else None)."""

    state: str
    onset: float | None


def done(o: Observation, th: Thresholds) -> bool:
    """Finished by its own word or by its progress (step == max_steps counts). A progress
    bar at its end is not evidence enough on its own (the same bar at the end of its first
    epoch looks the same): it counts once the process ended (its pod) or the log has been
    quiet since for the report timeout."""
    if o.finished:
        return True
    if o.progress is None or o.progress < 1.0:
        return False
    if not o.bar_end_only:
        return True
    return o.alive is False or o.now - o.last_report >= th.report_timeout_seconds


def _loss_not_finite(o: Observation) -> bool:
    """Whether the train or eval loss is NaN or infinite."""
    return any(v is not None and not math.isfinite(v) for v in (o.loss, o.eval_loss))


def diverged(o: Observation, th: Thresholds) -> bool:
    """NaN or infinite loss (train or eval), or a train loss above ``divergence_ratio`` x
    the train loss's own positive best (smoothed). Not x the eval loss's best, which is
    what ``training_best_loss`` follows once a run reports one: a train loss runs above its
    eval loss wherever the train figure is a running mean over an epoch that began higher
    (Keras) or carries dropout, and near zero that gap is many times over."""
    if _loss_not_finite(o):
        return True
    best = o.best_train_loss
    return (
        o.loss is not None and best is not None and best > 0 and o.loss > th.divergence_ratio * best
    )


# Standalone, a finished run "still reports" while its newest report is at most this old
# (twice the reporter's heartbeat period), or half the finished grace if that is longer.
HEARTBEAT_EVIDENCE_SECONDS = 120.0


def still_running(o: Observation, done_at: float, th: Thresholds) -> bool:
    """Whether anything shows that a finished run's process still lives: its pod runs
    (Kubernetes mode), or, where nobody watches a pod, it kept reporting after it finished
    (the reporter's heartbeat) and has not gone quiet since. A process that sent its final
    report and exited sends nothing more: it is finished, not lingering."""
    if o.alive is not None:
        return o.alive
    quiet = max(HEARTBEAT_EVIDENCE_SECONDS, th.finished_grace_seconds / 2)
    return o.last_report > done_at and o.now - o.last_report < quiet


def degraded(o: Observation, th: Thresholds) -> bool:
    """Throughput below ``throughput_drop_ratio`` of the run's own typical pace."""
    return (
        o.steps_per_second is not None
        and o.typical_steps_per_second is not None
        and o.steps_per_second < th.throughput_drop_ratio * o.typical_steps_per_second
    )


def classify(o: Observation, th: Thresholds) -> Verdict:
    """The run's one state. Checked in this order, the first that holds wins:

    finished / finished-but-running, gone / failed, stalled, silent, diverged, waiting,
    plateaued, degraded, running.

    *Stalled* needs evidence that the process still lives: reports that keep arriving with
    a frozen step (a heartbeat), or, in Kubernetes mode, its pod still running. Without
    either, a run that went quiet is *silent*: hung, or alive with a broken reporter.
    """
    now = o.now
    if done(o, th):
        done_at = o.last_step if o.last_step is not None else o.last_report
        lingering = (
            o.gone_since is None
            and still_running(o, done_at, th)
            and o.gpus > 0
            and now - done_at > th.finished_grace_seconds
        )
        if lingering:
            return Verdict("finished-but-running", done_at + th.finished_grace_seconds)
        return Verdict("finished", done_at)
    if o.failure is not None:
        # Its log ends in a traceback: the process died of it, whatever its pod does next.
        return Verdict("failed", o.failure_at)
    if o.gone_since is not None or o.alive is False:
        return Verdict("failed" if o.pod_failed else "gone", o.gone_since)
    reporting = now - o.last_report < th.report_timeout_seconds
    if (
        o.last_step is not None
        and now - o.last_step >= th.stall_seconds
        and (reporting or o.alive is True)
    ):
        return Verdict("stalled", o.last_step + th.stall_seconds)
    if not reporting and o.alive is not True:
        return Verdict("silent", o.last_report + th.report_timeout_seconds)
    if diverged(o, th):
        return Verdict("diverged", None)
    if o.last_step is None:
        return Verdict("waiting", o.first_report)
    if o.last_improvement is not None and now - o.last_improvement >= th.plateau_seconds:
        return Verdict("plateaued", o.last_improvement + th.plateau_seconds)
    if degraded(o, th):
        return Verdict("degraded", None)
    return Verdict("running", None)


def entered(previous: str | None, previous_since: float, verdict: Verdict, now: float) -> float:
    """When the run entered ``verdict.state``, given the state seen before and since when.

    The predicates give the exact onset of time-based states (stalled at last step + stall
    threshold); a state that cannot have begun before the previous one was seen starts no
    earlier than that; the others start when first seen.
    """
    if previous == verdict.state:
        return previous_since
    if verdict.onset is None:
        return now
    return min(now, max(verdict.onset, previous_since if previous is not None else -math.inf))


def reason(
    state: str,
    o: Observation,
    th: Thresholds,
) -> str:
    """Why the run is in ``state``, in the words a person reads on a page:
    "stalled for 42m (threshold 30m)"."""
    now = o.now
    if state == "stalled" and o.last_step is not None:
        return f"stalled for {duration(now - o.last_step)} (threshold {duration(th.stall_seconds)})"
    if state == "silent":
        return (
            f"silent for {duration(now - o.last_report)} "
            f"(timeout {duration(th.report_timeout_seconds)})"
        )
    if state == "plateaued" and o.last_improvement is not None:
        return (
            f"no improvement for {duration(now - o.last_improvement)} "
            f"(window {duration(th.plateau_seconds)})"
        )
    if state == "diverged":
        if _loss_not_finite(o):
            return "loss is not finite"
        if o.loss is not None and o.best_train_loss is not None:
            return f"loss {o.loss:.4g} > {th.divergence_ratio:g}x best {o.best_train_loss:.4g}"
        return f"loss above {th.divergence_ratio:g}x its best"  # top reading Prometheus
    if state == "degraded" and o.steps_per_second and o.typical_steps_per_second:
        share = o.steps_per_second / o.typical_steps_per_second * 100
        return (
            f"{o.steps_per_second:.3g} steps/s, {share:.0f}% of its typical "
            f"{o.typical_steps_per_second:.3g} (threshold {th.throughput_drop_ratio * 100:.0f}%)"
        )
    if state == "finished-but-running":
        done_at = o.last_step if o.last_step is not None else o.last_report
        return (
            f"finished {duration(now - done_at)} ago, still holds {o.gpus:g} GPUs "
            f"(grace {duration(th.finished_grace_seconds)})"
        )
    if state == "waiting":
        return f"no step yet, {duration(now - o.first_report)} after its first report"
    if state == "failed" and o.failure is not None:
        return f"failed: {o.failure}"
    if state in ("gone", "failed") and o.gone_since is not None:
        return f"{state} {duration(now - o.gone_since)} ago"
    return BY_NAME[state].meaning if state in BY_NAME else state


def state_code_promql(selector: str) -> str:
    """One state code per (namespace, job_name): the most urgent state of any of its runs.

    Reads ``training_run_state`` only; each state's series is multiplied by its code, so
    ``max`` picks the most urgent current state (the others are 0). ``selector`` is a label
    matcher list such as ``namespace=~"$namespace"`` (may be empty).
    """
    sep = ", " if selector else ""
    terms = "\n  or ".join(
        f'training_run_state{{state="{s.name}"{sep}{selector}}} * {s.code}' for s in STATES
    )
    return f"max by (namespace, job_name) (\n  {terms}\n)"
