"""When a training process should save a checkpoint, and telling it once.

Why the exporter and not the job: it sees what the job cannot, that even the optimistic end
of its ETA (the lower bound of its 80 % band) has passed its deadline, that its pod is being
deleted (an eviction, a node drain) or its node cordoned (the start of a drain), that
Kubernetes will kill it at its activeDeadlineSeconds before it finishes (and no later than
its save takes, plus a margin), that more
GPU-hours of training than its threshold would be lost to a preemption now, or that
someone asked (``kubectl annotate trainjob/X`` or ``pod/X training-progress.io/checkpoint=<any
new value>``). A directive is edge-triggered: each reason is delivered once when it starts to
hold (a new annotation value is a new reason), on the next native push's answer, so a run is
never told to save on every report. A reason about one event (a deadline, a kill deadline, a
deletion, an annotation's value) is told once per event, however the forecast behind it
wavers: an ETA band computed from two pushes a hundredth of a second apart may dip under the
deadline for one push, and a run told twice saves twice. Pure: the run's facts go in, the
reasons come out.
"""

from __future__ import annotations

from dataclasses import dataclass

CHECKPOINT = "checkpoint"
# Send every thread's stack (exporter.core.stall decides when: a stall, or a person asked).
STACKS = "stacks"
# Before a kill deadline: what a save takes where the run never said (it reports each save's
# seconds as last_checkpoint_seconds), and the margin on top, for the directive to reach the
# run (its next push) and the save to start (the end of the step under way).
DEFAULT_SAVE_SECONDS = 300.0
KILL_MARGIN_SECONDS = 120.0


@dataclass(frozen=True)
class Facts:
    """What the exporter knows about one run that may call for a checkpoint."""

    # The earliest completion the ETA's band allows (its lower bound): a deadline it passes
    # will be missed whatever the pace does within the band.
    eta_lower_timestamp: float | None
    deadline_timestamp: float | None
    deleting: bool  # its pod has a deletionTimestamp
    request: str | None  # the value of the pod's checkpoint annotation, if any
    job_request: str | None = None  # the same annotation on its TrainJob
    draining: bool = False  # its node is cordoned (spec.unschedulable)
    # GPU-seconds of training since its last checkpoint, and how many it may risk
    at_risk_gpu_seconds: float = 0.0
    risk_threshold_gpu_seconds: float = float("inf")
    # When Kubernetes kills it (its activeDeadlineSeconds), the latest completion its band
    # allows (the upper bound: a run sure to finish first is left alone), how long its saves
    # take (None: DEFAULT_SAVE_SECONDS), and the time now.
    kill_deadline_timestamp: float | None = None
    eta_upper_timestamp: float | None = None
    save_seconds: float | None = None
    now: float = 0.0


def save_before_kill(f: Facts) -> bool:
    """Whether the kill deadline is now within the run's save time plus the margin, with the
    run not sure to finish before it: a save started later would not end before the kill."""
    if f.kill_deadline_timestamp is None or f.now >= f.kill_deadline_timestamp:
        return False
    if f.eta_upper_timestamp is not None and f.eta_upper_timestamp < f.kill_deadline_timestamp:
        return False
    save = DEFAULT_SAVE_SECONDS if f.save_seconds is None else f.save_seconds
    return f.now >= f.kill_deadline_timestamp - save - KILL_MARGIN_SECONDS


def _deadline(timestamp: float) -> str:
    return f"deadline:{timestamp!r}"


def _kill_deadline(timestamp: float) -> str:
    return f"kill_deadline:{timestamp!r}"


def _requested(where: str, value: str) -> str:
    return f"requested:{where}:{value}"


def reasons(f: Facts) -> frozenset[str]:
    """Every reason to checkpoint that holds now."""
    out = set()
    if (
        f.eta_lower_timestamp is not None
        and f.deadline_timestamp is not None
        and f.eta_lower_timestamp > f.deadline_timestamp
    ):
        out.add(_deadline(f.deadline_timestamp))
    if f.kill_deadline_timestamp is not None and save_before_kill(f):
        out.add(_kill_deadline(f.kill_deadline_timestamp))
    if f.deleting:
        out.add("deleting")
    if f.draining:
        out.add("draining")
    if f.at_risk_gpu_seconds > f.risk_threshold_gpu_seconds:
        out.add("at_risk")  # holds until a checkpoint resets the risk
    if f.request:
        out.add(_requested("pod", f.request))
    if f.job_request:
        out.add(_requested("job", f.job_request))
    return frozenset(out)


def events(f: Facts) -> frozenset[str]:
    """The reasons the run's current events could give (its deadline, its kill deadline, its
    deletion, its annotations' values): what a delivery is remembered against. The cordon
    and the GPU-hours at risk are not among them: an uncordon or a checkpoint ends them, and
    the next cordon or risk is a new reason."""
    out = {"deleting"} if f.deleting else set()
    if f.deadline_timestamp is not None:
        out.add(_deadline(f.deadline_timestamp))
    if f.kill_deadline_timestamp is not None:
        out.add(_kill_deadline(f.kill_deadline_timestamp))
    if f.request:
        out.add(_requested("pod", f.request))
    if f.job_request:
        out.add(_requested("job", f.job_request))
    return frozenset(out)


def due(now_holding: frozenset[str], delivered: frozenset[str]) -> bool:
    """Whether a reason started to hold since the last delivery."""
    return bool(now_holding - delivered)


def remembered(now_holding: frozenset[str], delivered: frozenset[str], f: Facts) -> frozenset[str]:
    """What counts as delivered after this answer: what holds now, and what was delivered
    about an event the run still has (so a forecast wavering across its deadline tells it
    once). Bounded by the run's current events: a report sending a new deadline on every
    push does not grow it."""
    return now_holding | (delivered & events(f))
