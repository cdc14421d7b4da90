"""What to tell Katib about a trial, and when: pure functions over a run's snapshot.

A trial's objective (``spec.objective.objectiveMetricName``) and additional metrics
(``additionalMetricNames``) are looked up by name in what the run reported: ``loss``,
``eval_loss``, ``learning_rate``, ``grad_norm``, ``epoch``, ``step``, then its other metrics
(``train_loss``, ``eval_accuracy`` and whatever a log or callback named them). Every value
the exporter reads, from any source, is queued once, in order, stamped with its own time
(RFC 3339, as Katib's DB manager parses it): the tracker keeps each trial run's observations
(exporter.core.model.Observed, kept by exporter.core.run.merge: every logged dict of a log,
every push) until they are read here, so
four losses printed between two polls are four observations, as Katib's own StdOut collector
would send them. The queue goes to Katib in one ``ReportObservationLog`` at most every
``min_interval`` seconds per trial, and at once when the run finishes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ...core.model import Observed

PUSH = "Push"  # the collector kind with no sidecar: the trial reports itself (or we do)
MAX_METRICS = 16  # objective + additional metric names taken from one Trial
MAX_NAME = 128


class TrialError(ValueError):
    """A Trial object that does not say what to report."""


@dataclass(frozen=True, slots=True)
class TrialSpec:
    """What the exporter needs of a Katib Trial."""

    namespace: str
    name: str
    metric_names: tuple[str, ...]  # the objective first, then the additional ones
    collector: str  # spec.metricsCollector.collector.kind ("Push", "StdOut", ...)

    @property
    def pushed(self) -> bool:
        """Whether nothing else reports this trial's metrics (no sidecar collector)."""
        return self.collector == PUSH


def _mapping(value: Any) -> Mapping[str, Any]:
    """``value`` if it is an object, else an empty one: a field of the wrong type says nothing."""
    return value if isinstance(value, Mapping) else {}


def parse_trial(obj: Mapping[str, Any]) -> TrialSpec:
    """The :class:`TrialSpec` of a Trial object as the API returns it (a dict).

    Raises :class:`TrialError` with a reason when it names no objective metric.
    """
    meta = _mapping(obj.get("metadata"))
    spec = _mapping(obj.get("spec"))
    objective = _mapping(spec.get("objective"))
    additional = objective.get("additionalMetricNames")
    names: list[str] = []
    for raw in [
        objective.get("objectiveMetricName"),
        *(additional if isinstance(additional, list) else []),
    ]:
        if isinstance(raw, str) and 0 < len(raw) <= MAX_NAME and raw not in names:
            names.append(raw)
    if not names:
        raise TrialError("the Trial names no objective metric")
    collector = _mapping(_mapping(spec.get("metricsCollector")).get("collector")).get("kind")
    return TrialSpec(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        metric_names=tuple(names[:MAX_METRICS]),
        # Katib defaults the collector to StdOut when the Experiment names none.
        collector=collector if isinstance(collector, str) else "StdOut",
    )


@dataclass(frozen=True, slots=True)
class MetricLog:
    """One of Katib's ``MetricLog``s: a metric's value at the time of the report that
    carried it."""

    name: str
    value: float
    time_stamp: str


MAX_PENDING = 1_000  # observations kept for one trial while the DB manager is unreachable


@dataclass
class TrialLog:
    """One trial's observations: the last observation read (its sequence number), those not
    yet sent, when the last batch went (monotonic seconds), and whether the final one did."""

    cursor: int = 0
    pending: list[MetricLog] = field(default_factory=list)
    sent_at: float = float("-inf")
    final: bool = False
    dropped: int = 0  # observations lost: past MAX_PENDING (oldest first), or never read


def rfc3339(unix: float) -> str:
    """Katib's time format (Go's RFC3339Nano parses it), microseconds, UTC."""
    return datetime.fromtimestamp(unix, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_BUILTIN = ("loss", "eval_loss", "learning_rate", "grad_norm", "epoch", "step")


def observe(spec: TrialSpec, observed: list[Observed], lost: int, log: TrialLog) -> int:
    """Queue each value of ``spec``'s metrics in ``observed`` (in order, each with its own
    time) and advance the cursor; ``lost`` observations were no longer kept when read.
    Returns how many metric values were dropped (lost, or past MAX_PENDING)."""
    dropped = lost
    for obs in observed:
        log.cursor = obs.seq
        if log.final:
            continue
        values = dict(obs.values)
        stamp = rfc3339(obs.timestamp)
        for name in spec.metric_names:
            value = values.get(name)
            if value is not None and math.isfinite(value):
                log.pending.append(MetricLog(name, value, stamp))
    if len(log.pending) > MAX_PENDING:
        dropped += len(log.pending) - MAX_PENDING
        del log.pending[: len(log.pending) - MAX_PENDING]
    log.dropped += dropped
    return dropped


def due(log: TrialLog, now: float, min_interval: float, finished: bool) -> list[MetricLog]:
    """The batch to send now: everything pending, once ``min_interval`` (monotonic seconds)
    passed since the last batch, or at once when the run finished. Empty: nothing, or not
    yet."""
    if not log.pending or log.final:
        return []
    if not finished and now - log.sent_at < min_interval:
        return []
    return list(log.pending)


def sent(log: TrialLog, batch: list[MetricLog], now: float, finished: bool) -> None:
    """Record a batch the DB manager accepted."""
    del log.pending[: len(batch)]
    log.sent_at = now
    log.final = finished and not log.pending
