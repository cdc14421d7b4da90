"""Each polled source on its own thread and schedule, so one slow source delays no other.

node_exporter runs its collectors concurrently for the same reason: an HTTP target that
answers at one byte a second must not hold back the status files, the logs or the expiry of
gone runs. Every run of a job reports how long it took and whether it raised.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

log = logging.getLogger(__name__)
# A job that keeps failing is logged at most this often (its metrics count every failure).
LOG_EVERY_SECONDS = 60.0

Job = Callable[[], None]
# (job name, seconds it took, completed without an exception)
Done = Callable[[str, float, bool], None]


class Scheduler:
    """Runs every job every ``interval`` seconds, each on a thread of its own."""

    def __init__(
        self,
        jobs: Mapping[str, Job],
        interval: float,
        done: Done,
        intervals: Mapping[str, float] | None = None,
    ) -> None:
        """``intervals`` overrides ``interval`` for the jobs it names."""
        self.jobs = dict(jobs)
        self.interval = interval
        self.intervals = dict(intervals or {})
        self.done = done
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._ran: set[str] = set()
        self._logged: dict[str, float] = {}
        self._lock = threading.Lock()

    def run(self, name: str) -> bool:
        """Run one job now; a job that raises is reported, never propagated."""
        started = time.monotonic()
        ok = True
        try:
            self.jobs[name]()
        except Exception:  # a source bug must not stop its thread or any other
            ok = False
            if started - self._logged.get(name, -LOG_EVERY_SECONDS) >= LOG_EVERY_SECONDS:
                self._logged[name] = started
                log.exception("polling %s failed (logged at most once a minute)", name)
        self.done(name, time.monotonic() - started, ok)
        with self._lock:
            self._ran.add(name)
        return ok

    def run_all_once(self) -> None:
        """Every job once, one after another (tests drive time this way)."""
        for name in self.jobs:
            self.run(name)

    def all_ran(self) -> bool:
        """Whether every job has run at least once."""
        with self._lock:
            return self._ran >= set(self.jobs)

    def _loop(self, name: str) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            self.run(name)
            every = self.intervals.get(name, self.interval)
            self._stop.wait(max(0.05, every - (time.monotonic() - started)))

    def start(self) -> None:
        for name in self.jobs:
            thread = threading.Thread(target=self._loop, args=(name,), name=f"poll-{name}")
            thread.daemon = True
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop scheduling; wait up to ``timeout`` in all for running jobs to finish."""
        self._stop.set()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
