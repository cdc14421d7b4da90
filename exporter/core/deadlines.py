"""Deadlines: the kill deadlines Kubernetes already states, and the chance of missing one.

Two kinds of deadline (the ``deadline`` label of ``training_deadline_miss_probability``):

- ``user``: the run's own (its ``deadline`` report field or the pod's deadline annotation),
  a wish: passing it costs nothing but the wait;
- ``kill``: an ``activeDeadlineSeconds`` on the pod or on an owner the pod's controller
  chain walks (:func:`exporter.core.workloads.chain`). Passing it ends the job: every step
  since its last checkpoint is lost.

:data:`KILL_FIELDS` says which field of which kind, and from which instant it counts, as
each kind's API reference states it (tests/fixtures/deadlines/ keeps those objects as data);
:func:`kill_deadline` reads one object. :func:`miss_probability` turns the ETA and its 80 %
band into the probability of finishing after a deadline (docs/eta.md, "The chance of
missing a deadline").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .model import rfc3339_seconds

USER = "user"
KILL = "kill"
DEADLINE_KINDS = (USER, KILL)
# activeDeadlineSeconds is an int64; past ~100 years it says "never" more than it dates.
MAX_ACTIVE_SECONDS = 100 * 365 * 86_400


@dataclass(frozen=True)
class KillField:
    """Where a kind states its kill deadline: the path of ``activeDeadlineSeconds`` and of
    the instant it counts from, and the reference that says so."""

    seconds: tuple[str, ...]
    start: tuple[str, ...]
    reference: str


# kind -> its field. A kind absent here states none of its own (a JobSet's deadline is its
# Jobs', which the chain reads below it).
KILL_FIELDS: Mapping[str, KillField] = {
    # core/v1 PodSpec: "relative to the StartTime" (status.startTime), Kubernetes 1.31.
    "Pod": KillField(
        ("spec", "activeDeadlineSeconds"),
        ("status", "startTime"),
        "Kubernetes 1.31 core/v1 PodSpec",
    ),
    # batch/v1 JobSpec: "relative to the startTime"; a suspended Job's startTime is reset
    # when it resumes, so the deadline moves with it.
    "Job": KillField(
        ("spec", "activeDeadlineSeconds"),
        ("status", "startTime"),
        "Kubernetes 1.31 batch/v1 JobSpec",
    ),
    # Kubeflow Trainer v2.2 (KEP-2899): "relative to the TrainJob creation time".
    "TrainJob": KillField(
        ("spec", "activeDeadlineSeconds"),
        ("metadata", "creationTimestamp"),
        "Kubeflow Trainer KEP-2899 TrainJobSpec",
    ),
    # KubeRay v1 RayJobSpec: "the duration in seconds that the RayJob may be active before
    # KubeRay actively tries to terminate the RayJob", from its status.startTime.
    "RayJob": KillField(
        ("spec", "activeDeadlineSeconds"), ("status", "startTime"), "KubeRay v1.1 RayJobSpec"
    ),
    # Kubeflow Training Operator v1 RunPolicy: "the duration (in seconds) since startTime".
    **{
        kind: KillField(
            ("spec", "runPolicy", "activeDeadlineSeconds"),
            ("status", "startTime"),
            "Kubeflow Training Operator v1 RunPolicy",
        )
        for kind in ("PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob")
    },
}


def _at(obj: Mapping[str, Any], path: Sequence[str]) -> Any:
    found: Any = obj
    for part in path:
        if not isinstance(found, Mapping):
            return None
        found = found.get(part)
    return found


def kill_deadline(kind: str, obj: Mapping[str, Any]) -> float | None:
    """When ``obj`` (a ``kind`` as the API server serves it) is killed by its own
    ``activeDeadlineSeconds``: its start plus those seconds. None when the kind states
    none, the field is unset or invalid, or the clock has not started (a Job not started
    yet, or suspended: its startTime is unset until it resumes)."""
    field = KILL_FIELDS.get(kind)
    if field is None:
        return None
    seconds = _at(obj, field.seconds)
    start = rfc3339_seconds(_at(obj, field.start))
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int)
        or not 0 < seconds <= MAX_ACTIVE_SECONDS
        or start is None
    ):
        return None
    return start + seconds


def kept(kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
    """What of ``obj`` :func:`kill_deadline` reads, and nothing else (an owner cache keeps
    this, not the whole object)."""
    field = KILL_FIELDS.get(kind)
    out: dict[str, Any] = {}
    if field is None:
        return out
    for path in (field.seconds, field.start):
        value = _at(obj, path)
        if value is None or isinstance(value, Mapping):
            continue
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return out


def earliest(*deadlines: tuple[float | None, str]) -> tuple[float | None, str]:
    """The earliest of (deadline, kind) pairs that have one: the one that kills first."""
    found = [(d, k) for d, k in deadlines if d is not None]
    return min(found) if found else (None, "")


# How many standard deviations (in log space) each end of the band is from the ETA.
# Below the ETA, as the band states it: its low end is the 10th percentile, the standard
# normal's 1.2816 (the cautious side: a deadline before the ETA is not called safer than the
# band says). Above it, as the band holds: over every run of the ETA corpus the truth came
# after the band's high end at 1.44 % of 227,691 instants (bench.deadline_calibration
# --tails, 2026-12-05), the standard normal's 98.56th percentile; taken as the stated 10 %
# the chance of missing a deadline past the ETA was overstated by up to 10 points.
Z_LOWER_END = 1.2815515655446004
Z_UPPER_END = 2.19


def miss_probability(eta: float, lower: float, upper: float, seconds_left: float) -> float:
    """The probability that a run due in ``eta`` seconds (its 80 % band ``lower`` ..
    ``upper``) finishes more than ``seconds_left`` seconds from now.

    The model behind the band (exporter.core.estimate.error_band): ln(truth / ETA) is spread
    about 0, the band's low end its 10th percentile and its high end (as measured, see
    Z_UPPER_END) its 98.56th. Taken as normal on each side (a two-piece normal, each side's
    spread from its own end), the chance of finishing after the deadline is
    1 - Phi(ln(seconds_left / eta) / sigma): 0.5 at the ETA, 0.0144 at the upper bound, 0.9
    at the lower bound. A deadline already passed is 1; a band of no width is a step at the
    ETA.
    """
    if seconds_left <= 0:
        return 1.0
    if eta <= 0:
        return 0.0
    x = math.log(seconds_left / eta)
    end, z = (upper, Z_UPPER_END) if x >= 0 else (lower, Z_LOWER_END)
    if end <= 0:
        return 1.0 if x < 0 else 0.0
    spread = abs(math.log(end / eta)) / z
    if spread == 0:
        return 1.0 if x < 0 else (0.5 if x == 0 else 0.0)
    return 0.5 * math.erfc(x / (spread * math.sqrt(2)))


def miss_probabilities(
    eta: float | None,
    lower: float | None,
    upper: float | None,
    now: float,
    deadlines: Sequence[tuple[str, float | None]],
) -> tuple[tuple[str, float], ...]:
    """(kind, probability of missing it) for each of ``deadlines`` (kind, Unix time) that
    is set, from the ETA and its band at ``now``; none without an ETA and its band (a run
    stalled, finished or not yet paced promises no completion time to judge)."""
    if eta is None or lower is None or upper is None:
        return ()
    return tuple(
        (kind, miss_probability(eta, lower, upper, at - now))
        for kind, at in deadlines
        if at is not None
    )
