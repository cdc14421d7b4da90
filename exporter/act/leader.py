"""Leadership among ``act`` replicas: a loop that takes or renews a Lease
(:mod:`exporter.act.lease` decides what to write; this module reads and writes it).

Every replica answers Alertmanager's webhook; only the leader acts, and a follower hands the
notification to the leader's URL (read from the Lease). Becoming leader runs ``on_started``
first (``act`` reloads its journal there, so it knows what the last leader did); the replica
reports itself leader only once that succeeded.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

from .kube import ClusterError
from .lease import LeaseRecord, Timing, claim, decode, encode, released

log = logging.getLogger(__name__)


class LeaseOps(Protocol):
    """The Lease calls (:class:`exporter.act.kube.KubernetesOps`); each raises
    ClusterError on failure (a 409 Conflict too: someone else wrote first)."""

    def lease(self, namespace: str, name: str) -> dict[str, Any] | None: ...
    def create_lease(self, namespace: str, body: dict[str, Any]) -> None: ...
    def replace_lease(self, namespace: str, name: str, body: dict[str, Any]) -> None: ...


class Elector:
    """One candidate for one Lease. :meth:`run` loops until its stop event is set."""

    def __init__(
        self,
        ops: LeaseOps,
        namespace: str,
        name: str,
        identity: str,
        url: str,
        timing: Timing,
        clock: Callable[[], float],
        on_started: Callable[[], None] = lambda: None,
    ) -> None:
        timing.check()
        self.ops = ops
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.url = url
        self.timing = timing
        self.clock = clock
        self.on_started = on_started
        self._lock = threading.Lock()
        self._leader = False
        self._renewed = 0.0  # when this replica last wrote the lease as its holder
        self._observed: LeaseRecord | None = None
        self._observed_at = 0.0
        self.transitions = 0  # times this replica became leader

    def is_leader(self) -> bool:
        """Whether this replica may act now: it holds the lease and renewed it within the
        renew deadline (checked again at each call, not only at each loop)."""
        with self._lock:
            if self._leader and self.clock() - self._renewed > self.timing.renew_deadline:
                self._leader = False
                log.warning("act %s: leadership lost (lease not renewed in time)", self.identity)
            return self._leader

    def leader_url(self) -> str:
        """The current holder's webhook URL as the Lease states it ('' when unknown, or
        when the lease ran out without a new holder)."""
        with self._lock:
            record, seen = self._observed, self._observed_at
        if record is None or not record.holder or record.holder == self.identity:
            return ""
        if seen + record.lease_seconds < self.clock():
            return ""
        return record.url

    def _try(self) -> bool:
        """One read and, where the lease is ours to take or keep, one write: whether this
        replica holds the lease now."""
        now = self.clock()
        try:
            obj = self.ops.lease(self.namespace, self.name)
        except ClusterError as err:
            log.debug("act %s: reading lease: %s", self.identity, err)
            return False
        current = None if obj is None else decode(obj)
        with self._lock:
            if current != self._observed:
                self._observed, self._observed_at = current, now
            observed_at = self._observed_at
        record = claim(
            current, observed_at, self.identity, self.url, now, int(self.timing.lease_seconds)
        )
        if record is None:
            return False
        version = None if obj is None else (obj.get("metadata") or {}).get("resourceVersion")
        body = encode(record, self.name, self.namespace, version)
        try:
            if obj is None:
                self.ops.create_lease(self.namespace, body)
            else:
                self.ops.replace_lease(self.namespace, self.name, body)
        except ClusterError as err:
            log.debug("act %s: writing lease: %s", self.identity, err)
            return False
        with self._lock:
            self._observed, self._observed_at = record, now
        return True

    def step(self) -> None:
        """One round of the loop: renew (as leader) or try to take the lease."""
        held = self._try()
        now = self.clock()
        with self._lock:
            leader = self._leader
            if held and leader:
                self._renewed = now
        if not held or leader:
            self.is_leader()  # steps down once the renew deadline has passed
            return
        try:
            self.on_started()
        except Exception as err:  # not leader yet: the next round tries again
            log.warning("act %s: could not take over: %s", self.identity, err)
            return
        with self._lock:
            self._leader, self._renewed = True, now
            self.transitions += 1
        log.info("act %s: now the leader (lease %s/%s)", self.identity, self.namespace, self.name)

    def run(self, stop: threading.Event) -> None:
        """Loop until ``stop`` is set, then give the lease up if held."""
        while not stop.is_set():
            self.step()
            stop.wait(self.timing.retry_period)
        self.release()

    def release(self) -> None:
        """Step down and clear the lease so another replica takes over at once."""
        with self._lock:
            was, self._leader = self._leader, False
            record = self._observed
        if not was or record is None or record.holder != self.identity:
            return
        try:
            obj = self.ops.lease(self.namespace, self.name)
            if obj is None or decode(obj).holder != self.identity:
                return
            version = (obj.get("metadata") or {}).get("resourceVersion")
            body = encode(released(record, self.clock()), self.name, self.namespace, version)
            self.ops.replace_lease(self.namespace, self.name, body)
        except ClusterError as err:
            log.warning("act %s: releasing lease: %s", self.identity, err)
