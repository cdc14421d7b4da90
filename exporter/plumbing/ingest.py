"""The only port from sources (and discovery) into the tracker: count, then merge.

Keeping this in one place means every source counts outcomes and drop reasons the same way,
no source can touch a run other than the one its key names, and no source reaches into the
tracker or the counters itself.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..core.model import Clock, Observed, Parsed, ReportError, RunKey, RunMeta
from ..core.run.snapshot import RunSnapshot
from ..core.stacks import RankStacks
from ..core.tracker import Tracker
from .stats import OUTCOME_ACCEPTED, OUTCOME_REJECTED, ExporterStats


class Ingestor:
    """Counts and applies what sources read, for all sources."""

    def __init__(self, tracker: Tracker, stats: ExporterStats, clock: Clock) -> None:
        self._tracker = tracker
        self._stats = stats
        self.clock = clock

    def accept(self, source: str, key: RunKey, parsed: Parsed, meta: RunMeta | None = None) -> bool:
        """Merge a parsed report; False if it was refused (run cap). Problems are counted,
        the parser's here and those of the tracker's own bounds (``Tracker.apply``)."""
        return self.push(source, key, parsed, meta, answer=False)[0]

    def push(
        self,
        source: str,
        key: RunKey,
        parsed: Parsed,
        meta: RunMeta | None = None,
        answer: bool = True,
    ) -> tuple[bool, tuple[str, ...]]:
        """:meth:`accept`, and with ``answer`` what the run should be told in the answer to
        its push (exporter.core.directives), in one hold of the tracker (``Tracker.push``)."""

        def problem(reason: str) -> None:
            self._stats.drop(source, reason)

        for reason in parsed.problems:
            problem(reason)
        ok, told = self._tracker.push(key, parsed.report, self.clock(), meta, problem, answer)
        self._stats.report(source, OUTCOME_ACCEPTED if ok else OUTCOME_REJECTED)
        return ok, told

    def run(self, key: RunKey) -> RunSnapshot | None:
        """One run as of now (for writing it back where its job is), or None."""
        return self._tracker.snapshot_one(key, self.clock())

    def observations(self, key: RunKey, after: int) -> tuple[list[Observed], int]:
        """Each value a Katib trial run reported since observation ``after``, with its own
        time, and how many of those were lost to the per-run bound (Tracker.observations)."""
        return self._tracker.observations(key, after)

    def stacks(self, source: str, key: RunKey, stacks: RankStacks) -> bool:
        """Keep one rank's stacks (from a reporter or a log) for its run; False, counted,
        when the run is not tracked. Stacks evicted to make room under the stacks budget
        are counted too (``stacks_budget``)."""
        evicted = self._tracker.add_stacks(key, stacks, self.clock())
        if evicted is None:
            self._stats.drop(source, "stacks_unknown_run")
            return False
        for _ in range(evicted):
            self._stats.drop(source, "stacks_budget")
        return True

    def wants_stacks(self, key: RunKey, rank: str) -> bool:
        """Whether ``rank`` of the run should be told to send its stacks now."""
        return self._tracker.wants_stacks(key, rank, self.clock())

    def checkpoint_requested(self, key: RunKey, value: str | None) -> None:
        """The run's job carries this checkpoint annotation value (None: none)."""
        self._tracker.request_checkpoint(key, value)

    def node_gpu_model(self, node: str, model: str | None) -> None:
        """The GPU model ``node``'s label names (None: none), for its runs' MFU."""
        self._tracker.set_node_gpu_model(node, model)

    def node_cordoned(self, node: str, cordoned: bool) -> None:
        """Whether ``node`` is cordoned; its runs are asked to checkpoint once."""
        self._tracker.set_cordoned(node, cordoned)

    def reject(self, source: str, error: ReportError) -> None:
        """Count a report that could not be used at all."""
        self._stats.drop(source, error.reason)
        self._stats.report(source, OUTCOME_REJECTED)

    def drop(self, source: str, reason: str) -> None:
        """Count something a source discarded that was not a whole report."""
        self._stats.drop(source, reason)

    def matched(self, parser: str) -> None:
        """Count a log line a parser recognized."""
        self._stats.match(parser)

    def source_up(self, source: str, up: bool, reason: str = "") -> None:
        """Whether the source's last poll (or serve loop) succeeded; if not, why (one line,
        shown on /readyz)."""
        self._stats.set_up(source, up, reason)

    def polled(self, source: str, seconds: float, ok: bool) -> None:
        """One poll of a source: how long it took and whether it succeeded."""
        self._stats.polled(source, seconds, ok)

    def structured_recently(self, key: RunKey) -> bool:
        """Whether the run had a push, file or HTTP report lately (those beat its log)."""
        return self._tracker.structured_recently(key, self.clock())

    def set_meta(self, key: RunKey, meta: RunMeta) -> None:
        """What discovery knows about a run that already reported (its pod changed)."""
        self._tracker.set_meta(key, meta, self.clock())

    def gone(self, keys: Iterable[RunKey]) -> None:
        """These runs' pods, files or targets are gone: freeze them, start their retention."""
        now = self.clock()
        for key in keys:
            self._tracker.mark_gone(key, now)

    def seen(self, keys: Iterable[RunKey]) -> None:
        """A source still sees these runs (a run restored after a restart is confirmed)."""
        self._tracker.seen(keys)

    def presence(self) -> Presence:
        """A tracker of the runs one source sees, for the source to call each poll."""
        return Presence(self)


class Presence:
    """The runs a source saw at its last poll: those it no longer sees are gone.

    The one place that turns "this file, target or pod disappeared" into a gone run.
    """

    def __init__(self, ingestor: Ingestor) -> None:
        self._ingestor = ingestor
        self._keys: set[RunKey] = set()

    def seen(self, keys: Iterable[RunKey]) -> set[RunKey]:
        """The keys seen this poll: the newly seen confirmed, the vanished ones marked gone
        (and returned)."""
        current = set(keys)
        if current - self._keys:
            self._ingestor.seen(current - self._keys)
        vanished = self._keys - current
        if vanished:
            self._ingestor.gone(vanished)
        self._keys = current
        return vanished
