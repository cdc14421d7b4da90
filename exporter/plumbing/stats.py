"""The exporter's own counters: reports by source and outcome, drops by reason, source health.

One instance per exporter, passed to whatever counts; read by the self-metrics collector.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass

OUTCOME_ACCEPTED = "accepted"
OUTCOME_REJECTED = "rejected"


@dataclass(frozen=True)
class StatsSnapshot:
    """A consistent copy of all counters at one instant."""

    reports: dict[tuple[str, str], int]
    drops: dict[tuple[str, str], int]
    source_up: dict[str, bool]
    log_matches: dict[str, int]
    # source -> (seconds the last poll took, whether it succeeded: completed without an
    # error, and the source up after it; so source_poll_success never says 1 beside a 0)
    polls: dict[str, tuple[float, bool]]
    unrenderable: int  # runs left out of the last render
    # The state file (None: no state file): failed saves, and when the last one succeeded
    # (None: none yet).
    state_save_failures: int | None = None
    state_last_save: float | None = None
    # Why each source that is down is down, in words (for /readyz).
    source_down_reasons: dict[str, str] | None = None


class ExporterStats:
    """Thread-safe counters. Label values are bounded: sources and reasons are code-defined."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reports: Counter[tuple[str, str]] = Counter()
        self._drops: Counter[tuple[str, str]] = Counter()
        self._up: dict[str, bool] = {}
        self._why: dict[str, str] = {}
        self._matches: Counter[str] = Counter()
        self._polls: dict[str, tuple[float, bool]] = {}
        self._unrenderable = 0
        self._state_failures: int | None = None
        self._state_last_save: float | None = None

    def report(self, source: str, outcome: str) -> None:
        with self._lock:
            self._reports[(source, outcome)] += 1

    def drop(self, source: str, reason: str) -> None:
        with self._lock:
            self._drops[(source, reason)] += 1

    def match(self, parser: str) -> None:
        with self._lock:
            self._matches[parser] += 1

    def set_up(self, source: str, up: bool, reason: str = "") -> None:
        with self._lock:
            self._up[source] = up
            if up:
                self._why.pop(source, None)
            else:
                self._why[source] = reason or "its last poll failed"

    def polled(self, source: str, seconds: float, ok: bool) -> None:
        with self._lock:
            self._polls[source] = (seconds, ok and self._up.get(source, True))

    def set_unrenderable(self, runs: int) -> None:
        with self._lock:
            self._unrenderable = runs

    def state_saved(self, ok: bool, at: float) -> None:
        """One attempt to write the state file, at ``at``."""
        with self._lock:
            self._state_failures = (self._state_failures or 0) + (0 if ok else 1)
            if ok:
                self._state_last_save = at

    def state_file_used(self) -> None:
        """A state file is configured: its counters are exported from now on."""
        with self._lock:
            if self._state_failures is None:
                self._state_failures = 0

    def snapshot(self) -> StatsSnapshot:
        with self._lock:
            return StatsSnapshot(
                dict(self._reports),
                dict(self._drops),
                dict(self._up),
                dict(self._matches),
                dict(self._polls),
                self._unrenderable,
                self._state_failures,
                self._state_last_save,
                dict(self._why),
            )
