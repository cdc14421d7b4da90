"""What to do about one alert: a pure function of the alert, the job's annotations, its
namespace and the cluster policy. Nothing happens unless the job or its namespace opted in.

A job opts in with an annotation on its owner object (TrainJob, JobSet, Job, PyTorchJob...)
or, for a bare pod, on the pod: ``training-progress.io/on-stalled: restart``. A namespace
opts in by being on the policy's allow-list, which gives its jobs the cluster defaults. A
job's own annotation wins over the defaults, ``none`` included.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..core.annotations import PREFIX

RESTART, SUSPEND, DELETE, NOTIFY, NONE = "restart", "suspend", "delete", "notify", "none"
# Resizing for a deadline (exporter.act.resize): scale where the API allows it, else say so.
SCALE, RECOMMEND = "scale", "recommend"
ACTIONS = (RESTART, SUSPEND, DELETE, NOTIFY, SCALE, RECOMMEND, NONE)


@dataclass(frozen=True)
class Rule:
    """How one alert may be acted on."""

    annotation: str  # without the prefix: "on-stalled"
    actions: tuple[str, ...]  # what the annotation may say
    event_reason: str  # Event reason prefix; the action is appended
    # Only the job's own annotation opts it in (no namespace default): resizing a job is
    # its owner's call alone.
    job_only: bool = False


RULES: dict[str, Rule] = {
    "TrainingJobStalled": Rule("on-stalled", (RESTART, SUSPEND, NONE), "TrainingProgressStalled"),
    "TrainingFinishedButRunning": Rule(
        "on-finished-but-running", (DELETE, SUSPEND, NONE), "TrainingProgressFinishedButRunning"
    ),
    "TrainingOverGPUBudget": Rule(
        "on-over-budget", (SUSPEND, NOTIFY, NONE), "TrainingProgressOverBudget"
    ),
    "TrainingWillMissDeadline": Rule(
        "on-deadline", (SUSPEND, NOTIFY, NONE), "TrainingProgressWillMissDeadline"
    ),
    "TrainingDeadlineNeedsResize": Rule(
        "on-deadline-resize",
        (SCALE, RECOMMEND, NONE),
        "TrainingProgressDeadlineResize",
        job_only=True,
    ),
}


# Suspending a job for a deadline needs more than its ETA passing it: the ETA's lower bound
# (the optimistic end of its 80 % band) must pass it too (the alert's deadline_passed_by).
DEADLINE_ALERT, DEADLINE_SURE = "TrainingWillMissDeadline", ("deadline_passed_by", "lower_bound")


def short_of_sure(alert_name: str, action: str, labels: Mapping[str, str]) -> str | None:
    """Why ``action`` is too strong for this alert (it becomes a notification), or None."""
    label, sure = DEADLINE_SURE
    if alert_name == DEADLINE_ALERT and action == SUSPEND and labels.get(label) != sure:
        return (
            "only the ETA passes the deadline, its lower bound does not: "
            "notified instead of suspended (act suspends when even the lower bound passes it)"
        )
    return None


@dataclass(frozen=True)
class Policy:
    """The cluster's side: which namespaces get the defaults, and the defaults."""

    namespaces: tuple[str, ...] = ()  # glob patterns; empty: no namespace opted in
    defaults: Mapping[str, str] = field(default_factory=dict)  # annotation name -> action


@dataclass(frozen=True)
class Decision:
    """The action to take (``none`` to leave the job alone) and why, for the Event and log."""

    action: str
    outcome: str  # "act", or why not: not_actionable, not_opted_in, invalid_policy
    why: str


def annotation_key(rule: Rule) -> str:
    return PREFIX + rule.annotation


def namespace_opted_in(namespace: str, policy: Policy) -> bool:
    return any(fnmatch.fnmatchcase(namespace, p) for p in policy.namespaces)


def decide(
    alert_name: str, namespace: str, annotations: Mapping[str, str], policy: Policy
) -> Decision:
    """The decision for one alert about a job in ``namespace`` with ``annotations``."""
    rule = RULES.get(alert_name)
    if rule is None:
        return Decision(NONE, "not_actionable", f"act does not act on {alert_name}")
    key = annotation_key(rule)
    raw = annotations.get(key)
    if raw is not None:
        value = raw.strip().lower()
        if value not in rule.actions:
            return Decision(
                NONE,
                "invalid_policy",
                f"{key}={raw!r} is not one of {', '.join(rule.actions)}",
            )
        outcome = "act" if value != NONE else "not_opted_in"
        return Decision(value, outcome, f"the job's annotation {key}={value}")
    if rule.job_only:
        return Decision(NONE, "not_opted_in", f"only the job's own annotation {key} opts it in")
    if namespace_opted_in(namespace, policy):
        value = policy.defaults.get(rule.annotation, NONE)
        if value not in rule.actions:
            value = NONE
        outcome = "act" if value != NONE else "not_opted_in"
        return Decision(value, outcome, f"the cluster default for {rule.annotation}: {value}")
    return Decision(NONE, "not_opted_in", "neither the job nor its namespace opted in")


def event_reason(alert_name: str, action: str) -> str:
    """``TrainingProgressStalledRestart`` and the like."""
    return RULES[alert_name].event_reason + action.capitalize()
