"""Where every source hands over what it read: count it, then merge it into the tracker.

Keeping this in one place means every source counts outcomes and drop reasons the same way,
and no source can touch a run other than the one its key names.
"""

from __future__ import annotations

from collections.abc import Callable

from .model import Parsed, ReportError
from .stats import OUTCOME_ACCEPTED, OUTCOME_REJECTED, ExporterStats
from .tracker import RunKey, RunMeta, Tracker

Clock = Callable[[], float]


class Ingestor:
    """Counts and applies parsed reports for all sources."""

    def __init__(self, tracker: Tracker, stats: ExporterStats, clock: Clock) -> None:
        self.tracker = tracker
        self.stats = stats
        self.clock = clock

    def accept(self, source: str, key: RunKey, parsed: Parsed, meta: RunMeta | None = None) -> bool:
        """Merge a parsed report; False if it was refused (run cap). Problems are counted."""

        def problem(reason: str) -> None:
            self.stats.drop(source, reason)

        for reason in parsed.problems:
            problem(reason)
        ok = self.tracker.apply(key, parsed.report, self.clock(), meta, problem)
        self.stats.report(source, OUTCOME_ACCEPTED if ok else OUTCOME_REJECTED)
        return ok

    def reject(self, source: str, error: ReportError) -> None:
        """Count a report that could not be used at all."""
        self.stats.drop(source, error.reason)
        self.stats.report(source, OUTCOME_REJECTED)
