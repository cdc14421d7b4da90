"""The brakes on acting: idempotence per alert, a cooldown per job, and a circuit breaker.

Alertmanager re-sends a firing alert every ``repeat_interval`` and after its own restarts,
and a job with eight stalled ranks fires eight alerts: an alert (fingerprint and start time)
is handled once, and a job is acted on at most once per ``cooldown`` for the same alert
name. The breaker allows at most so many actions per hour in one namespace and in all; past
that, alerts are skipped (and say so) until the hour has rolled on. ``now`` is passed; every
method is thread-safe (alerts of different jobs are handled at once), and :meth:`Guard.admit`
decides and records in one step, so two threads cannot both pass the breaker's last place.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from dataclasses import dataclass

HOUR = 3600.0


@dataclass(frozen=True)
class ActionLimits:
    per_namespace_per_hour: int = 5
    total_per_hour: int = 20
    cooldown_seconds: float = 900.0
    remember_seconds: float = 86400.0
    remember_max: int = 10_000


class Guard:
    """Decides whether an action may go ahead, and remembers the ones that did."""

    def __init__(self, limits: ActionLimits = ActionLimits()) -> None:
        self.limits = limits
        self._seen: OrderedDict[str, float] = OrderedDict()  # alert identity -> first seen
        self._acted: OrderedDict[tuple[str, str, str], float] = OrderedDict()  # job, alert
        self._times: dict[str, deque[float]] = {}  # namespace -> action times in the hour
        self._all: deque[float] = deque()
        self._lock = threading.Lock()

    def _forget(self, now: float) -> None:
        horizon = now - self.limits.remember_seconds
        while self._seen and (
            next(iter(self._seen.values())) < horizon or len(self._seen) > self.limits.remember_max
        ):
            self._seen.popitem(last=False)
        while self._acted and (
            next(iter(self._acted.values())) < now - self.limits.cooldown_seconds
            or len(self._acted) > self.limits.remember_max
        ):
            self._acted.popitem(last=False)
        for times in (self._all, *self._times.values()):
            while times and times[0] <= now - HOUR:
                times.popleft()
        for ns in [ns for ns, t in self._times.items() if not t]:
            del self._times[ns]

    def handled(self, identity: str, now: float) -> bool:
        """Whether an alert identity (fingerprint and start) was handled already."""
        with self._lock:
            self._forget(now)
            return identity in self._seen

    def remember(self, identity: str, now: float) -> None:
        """The alert was handled to its end (acted on, or decided not to be): a re-send is a
        duplicate. Never called when handling failed, so the re-send tries again."""
        with self._lock:
            self._seen[identity] = now
            self._seen.move_to_end(identity)

    def cooling(self, namespace: str, job: str, alert: str, now: float) -> bool:
        """Whether the job was acted on for this alert within the cooldown."""
        with self._lock:
            self._forget(now)
            return (namespace, job, alert) in self._acted

    def breaker_open(self, namespace: str, now: float) -> bool:
        """Whether another action now would pass a limit (namespace or total)."""
        with self._lock:
            self._forget(now)
            return self._full(namespace)

    def _full(self, namespace: str) -> bool:
        in_ns = len(self._times.get(namespace, ()))
        return (
            in_ns >= self.limits.per_namespace_per_hour
            or len(self._all) >= self.limits.total_per_hour
        )

    def admit(self, namespace: str, job: str, alert: str, now: float) -> str | None:
        """May the job be acted on for this alert now? None (and the action is recorded),
        or why not: ``cooldown`` or ``breaker_open``. One step under the lock."""
        with self._lock:
            self._forget(now)
            if (namespace, job, alert) in self._acted:
                return "cooldown"
            if self._full(namespace):
                return "breaker_open"
            self._record(namespace, job, alert, now)
            return None

    def undo(self, namespace: str, job: str, alert: str) -> None:
        """The admitted action failed: no cooldown for it (the re-send tries again); the
        breaker keeps counting the attempt."""
        with self._lock:
            self._acted.pop((namespace, job, alert), None)

    def restore(self, identity: str, namespace: str, job: str, alert: str, at: float) -> None:
        """An action a former leader took at ``at`` (oldest first): its alert is handled,
        and it counts toward the cooldown and the breaker for as long as it would have."""
        with self._lock:
            self._seen[identity] = at
            self._seen.move_to_end(identity)
            self._record(namespace, job, alert, at)

    def record(self, namespace: str, job: str, alert: str, now: float) -> None:
        """An action was taken (or would have been, in dry-run) on the job."""
        with self._lock:
            self._record(namespace, job, alert, now)

    def _record(self, namespace: str, job: str, alert: str, now: float) -> None:
        self._acted[(namespace, job, alert)] = now
        self._times.setdefault(namespace, deque()).append(now)
        self._all.append(now)
