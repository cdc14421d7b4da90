"""The table of runs: every run this exporter knows, behind one lock, and their lifecycle
(a new run under the run cap, gone, expired after retention, saved and restored).

What happens to one run (a report merged, GPU-seconds accrued, a snapshot) is in
:mod:`exporter.core.run`. Every method takes ``now`` so tests drive time explicitly; nothing here
reads a clock or does I/O. Thread-safe: sources report from their own threads while scrapes
read snapshots.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import TypeVar

from .budgets import OBSERVATIONS_BUDGET, OBSERVED_BYTES, RUN_BYTES
from .estimate import EstimatorConfig
from .model import SECONDARY_SOURCES, Observed, ProgressReport, RunKey, RunMeta, within_bounds
from .run.accrual import accrue, mark_gone
from .run.merge import merge, observations, update_meta
from .run.snapshot import RunSnapshot
from .run.state import Problem, RunConfig, RunState, new_run
from .run.view import directives, judge, snapshot, wants_stacks
from .scaling import DEFAULT_LEVEL, RESTART_SECONDS
from .stacks import STACKS_BUDGET_BYTES, Diagnosis, RankStacks, stacks_bytes
from .thresholds import Thresholds
from .timeline import TimelineView

T = TypeVar("T")

# Runs snapshotted per hold of the tracker lock (see Tracker.snapshot).
SNAPSHOT_BATCH = 200


def _ignore(_reason: str) -> None:
    return None


@dataclass(frozen=True)
class TrackerConfig:
    """Thresholds and bounds; defaults are documented in docs/configuration.md."""

    thresholds: Thresholds = field(default_factory=Thresholds)
    retention: float = 600.0
    max_custom_metrics: int = 32
    max_runs: int = 2_000
    estimator: EstimatorConfig = field(default_factory=EstimatorConfig)
    deadline_probability: float = DEFAULT_LEVEL
    resize_restart_seconds: float = RESTART_SECONDS

    @cached_property
    def run(self) -> RunConfig:
        """What rules each run (exporter.core.run)."""
        return RunConfig(
            self.thresholds,
            self.estimator,
            self.max_custom_metrics,
            self.deadline_probability,
            self.resize_restart_seconds,
        )


class Tracker:
    """Holds every run this exporter knows, merges reports into them and snapshots them."""

    def __init__(self, config: TrackerConfig | None = None) -> None:
        self.config = config or TrackerConfig()
        self._runs: dict[RunKey, RunState] = {}
        self._cordoned: set[str] = set()  # nodes marked unschedulable (a drain begins)
        self._node_gpu: dict[str, str] = {}  # node -> its GPU model label (for MFU)
        self._lock = threading.Lock()
        self._changes = 0
        self._failed = 0  # runs the last snapshot pass could not snapshot

    def __len__(self) -> int:
        with self._lock:
            return len(self._runs)

    def apply(
        self,
        key: RunKey,
        report: ProgressReport,
        now: float,
        meta: RunMeta | None = None,
        problem: Problem = _ignore,
    ) -> bool:
        """:meth:`push` without directives: what sources that cannot answer the run use."""
        return self.push(key, report, now, meta, problem, answer=False)[0]

    def push(
        self,
        key: RunKey,
        report: ProgressReport,
        now: float,
        meta: RunMeta | None = None,
        problem: Problem = _ignore,
        answer: bool = True,
    ) -> tuple[bool, tuple[str, ...]]:
        """Merge one report into its run: whether it was taken (False: the run cap refused
        a new run), and, with ``answer``, what the run should be told in the answer to its
        push (exporter.core.directives). One hold of the lock, and after the merge one judgement
        of the run (exporter.core.run.view.judge) for its timeline, directives and stacks.

        ``problem`` is called with a reason for each value the merge discards or adjusts
        (a step that went backwards, a custom metric over the per-run cap).

        Every value is bounded here (``model.within_bounds``), whatever called: what a
        log's bars add up to is checked by no parser, and a run's own ETA of infinity
        must not reach /metrics from any path into the tracker.
        """
        with self._lock:
            run = self._runs.get(key)
            if run is None:
                if len(self._runs) >= self.config.max_runs:
                    problem("run_cap")
                    return False, ()
                run = new_run(self.config.run, meta, now)
                self._runs[key] = run
            elif meta is not None:
                update_meta(run, meta, now)
            try:
                bounded = within_bounds(report)
                for reason in bounded.problems:
                    problem(reason)
                accrue(self.config.run, run, now)
                run.gone_since = None
                run.restored = False
                restated = meta is not None and meta.source in SECONDARY_SOURCES
                merge(self.config.run, run, bounded.report, now, problem, restated)
                if run.observed:  # a Katib trial run: all trial runs' observations, bounded
                    for _ in range(self._within_observations_budget()):
                        problem("observations_budget")
                run.node_gpu_model = self._node_gpu.get(run.meta.node) if run.meta.node else None
                due_row = run.timeline.due(now)
                judged = judge(self.config.run, run, now) if due_row or answer else None
                if due_row:  # the run's life, sampled as reports come
                    snapshot(self.config.run, key, run, now, False, judged)
                told: tuple[str, ...] = ()
                if answer:
                    draining = bool(run.meta.node) and run.meta.node in self._cordoned
                    told = directives(self.config.run, key, run, now, draining, judged)
            except Exception:  # a bug must cost one report, never the run's other readers
                problem("merge_error")
                told = ()
            self._changes += 1
            return True, told

    def set_meta(self, key: RunKey, meta: RunMeta, now: float) -> None:
        """Update what discovery knows about a run that already reported."""
        with self._lock:
            run = self._runs.get(key)
            if run is not None:
                accrue(self.config.run, run, now)
                update_meta(run, meta, now)
                run.restored = False
                self._changes += 1

    def observations(self, key: RunKey, after: int) -> tuple[list[Observed], int]:
        """A Katib trial run's observations after sequence number ``after`` and how many of
        those were no longer kept (run.observations); nothing for an unknown run."""
        with self._lock:
            run = self._runs.get(key)
            return observations(run, after) if run is not None else ([], 0)

    def mark_gone(self, key: RunKey, now: float) -> None:
        """The run's pod (or file, or target) is gone: freeze it and start retention."""
        with self._lock:
            run = self._runs.get(key)
            if run is not None and mark_gone(self.config.run, run, now):
                self._changes += 1

    def structured_recently(self, key: RunKey, now: float, window: float = 300.0) -> bool:
        """Whether the run had a report from a structured source (not logs) within ``window``
        seconds: structured reports win over what the same run prints."""
        with self._lock:
            run = self._runs.get(key)
            return run is not None and now - run.last_structured <= window

    @property
    def failed_last_pass(self) -> int:
        """Runs the last snapshot (or save) pass left out because reading them raised; the
        views add them to the runs they could not render."""
        with self._lock:
            return self._failed

    def keys(self) -> list[RunKey]:
        with self._lock:
            return list(self._runs)

    def expire(self, now: float, idle_after: float | None = None) -> list[RunKey]:
        """Drop runs gone for longer than the retention; also mark runs with no report for
        ``idle_after`` seconds as gone (standalone pushes have no pod to watch)."""
        removed = []
        with self._lock:
            for key, run in list(self._runs.items()):
                idle = idle_after is not None and now - run.last_report > idle_after
                if idle:
                    mark_gone(self.config.run, run, now)
                if run.gone_since is not None and now - run.gone_since >= self.config.retention:
                    del self._runs[key]
                    removed.append(key)
            if removed:
                self._changes += 1
        return removed

    # -- restarts (exporter/daemon/persist.py) ----------------------------------------------------

    @property
    def changes(self) -> int:
        """A counter that moves whenever a run changes in a way time alone does not explain
        (GPU-seconds accrue with time, and are recomputed from the saved accrual time)."""
        with self._lock:
            return self._changes

    def save(self, now: float, encode: Callable[[RunKey, RunState], T]) -> Iterator[T]:
        """``encode`` applied to every run, yielded a batch at a time: the lock is held
        while a batch is encoded (``encode`` must copy what it keeps), not while the caller
        writes it out."""
        return self._each_run(now, encode)

    def restore(self, runs: Iterable[tuple[RunKey, RunState]]) -> int:
        """Add runs read back from the state file (the most recent first, up to the run cap)
        unless a source reported them already. Returns how many were added."""
        added = 0
        runs = sorted(runs, key=lambda kr: kr[1].last_report, reverse=True)
        with self._lock:
            for key, run in runs:
                if key in self._runs or len(self._runs) >= self.config.max_runs:
                    continue
                run.restored = True
                run.samples.maxlen = self.config.estimator.max_samples
                self._runs[key] = run
                added += 1
        return added

    def seen(self, keys: Iterable[RunKey]) -> None:
        """A source still sees these runs (their file, target or pod is there): a run
        restored after a restart is confirmed."""
        with self._lock:
            for key in keys:
                run = self._runs.get(key)
                if run is not None:
                    run.restored = False

    def settle_restored(self, now: float, keep: Callable[[RunMeta], bool]) -> list[RunKey]:
        """Once every source has looked: a restored run nobody saw again is gone (its pod
        or file went while the exporter was down), unless ``keep`` says it has no source
        that could see it (a standalone push: idle expiry decides). Returns those marked."""
        marked = []
        with self._lock:
            for key, run in self._runs.items():
                if run.restored:
                    run.restored = False
                    if not keep(run.meta) and mark_gone(self.config.run, run, now):
                        marked.append(key)
            if marked:
                self._changes += 1
        return marked

    def snapshot_one(self, key: RunKey, now: float) -> RunSnapshot | None:
        """One run as of ``now``, or None if it is not tracked."""
        with self._lock:
            run = self._runs.get(key)
            return None if run is None else snapshot(self.config.run, key, run, now, False)

    def timeline(self, key: RunKey, now: float) -> tuple[RunSnapshot, TimelineView] | None:
        """One run as of ``now`` with a copy of its life's timeline (the status page's
        charts), or None if it is not tracked."""
        with self._lock:
            run = self._runs.get(key)
            if run is None:
                return None
            accrue(self.config.run, run, now)
            snap = snapshot(self.config.run, key, run, now, False)
            return snap, run.timeline.view()

    def request_checkpoint(self, key: RunKey, value: str | None) -> None:
        """The checkpoint annotation of the run's TrainJob (None when it has none)."""
        with self._lock:
            run = self._runs.get(key)
            if run is not None:
                run.job_checkpoint_request = value

    def add_stacks(self, key: RunKey, stacks: RankStacks, now: float) -> int | None:
        """Keep one rank's stacks for its run; None when the run is not tracked, else how
        many stacks (of any run) made room for it under the stacks budget, oldest first."""
        with self._lock:
            run = self._runs.get(key)
            if run is None:
                return None
            accrue(self.config.run, run, now)  # the stall so far is charged as it was
            run.stall.add(stacks)
            return self._within_stacks_budget()

    def _within_stacks_budget(self) -> int:
        """Evict the oldest stacks of any run until all fit STACKS_BUDGET_BYTES; how many
        went. Under the lock. Stacks come when runs stall: this pass over the runs is rare."""
        held = sum(r.stall.bytes for r in self._runs.values())
        evicted = 0
        while held > STACKS_BUDGET_BYTES:
            oldest = min(
                ((o, r) for r in self._runs.values() if (o := r.stall.oldest()) is not None),
                key=lambda item: item[0][0],
                default=None,
            )
            if oldest is None:
                break
            (_, where), run = oldest
            held -= stacks_bytes(run.stall.stacks.pop(where)[0])
            evicted += 1
        return evicted

    def _within_observations_budget(self) -> int:
        """Evict the oldest Katib observations of any run until all runs' together fit
        OBSERVATIONS_BUDGET; how many went (the Katib reporter counts them lost, as it does
        those past a run's own bound). Under the lock; only after a trial run's report."""
        held = [r.observed for r in self._runs.values() if r.observed]
        total = sum(len(o) for o in held)
        evicted = 0
        while total > OBSERVATIONS_BUDGET:
            oldest = min((o for o in held if o), key=lambda o: o[0].timestamp)
            oldest.popleft()
            total -= 1
            evicted += 1
        return evicted

    def memory_used(self) -> dict[str, int]:
        """What each kind of thing held uses now, in bytes as exporter.core.budgets counts
        them: runs at RUN_BYTES each, timelines by their arrays and changes of state,
        observations at OBSERVED_BYTES each, stacks by stacks_bytes. One pass, one hold."""
        with self._lock:
            runs = list(self._runs.values())
            return {
                "runs": len(runs) * RUN_BYTES,
                "timelines": sum(r.timeline.nbytes() for r in runs),
                "observations": sum(len(r.observed or ()) for r in runs) * OBSERVED_BYTES,
                "stacks": sum(r.stall.bytes for r in runs),
            }

    def wants_stacks(self, key: RunKey, rank: str, now: float) -> bool:
        """Whether ``rank`` of the run should send its stacks now (exporter.core.stall)."""
        with self._lock:
            run = self._runs.get(key)
            return run is not None and wants_stacks(self.config.run, run, rank, now)

    def stacks(
        self, key: RunKey, now: float
    ) -> tuple[RunSnapshot, list[tuple[RankStacks, Diagnosis]]] | None:
        """One run as of ``now`` and the newest stacks of each rank from each source,
        newest first; None if it is not tracked."""
        with self._lock:
            run = self._runs.get(key)
            if run is None:
                return None
            snap = snapshot(self.config.run, key, run, now, False)
            held = sorted(run.stall.stacks.values(), key=lambda sd: -sd[0].taken)
            return snap, held

    def set_node_gpu_model(self, node: str, model: str | None) -> None:
        """The GPU model ``node``'s label names; its runs take it at their next report."""
        with self._lock:
            if model:
                self._node_gpu[node] = model
            else:
                self._node_gpu.pop(node, None)

    def set_cordoned(self, node: str, cordoned: bool) -> None:
        """Whether ``node`` is cordoned (unschedulable): its runs are asked to save once."""
        with self._lock:
            if cordoned:
                self._cordoned.add(node)
            else:
                self._cordoned.discard(node)

    def directives(self, key: RunKey, now: float) -> tuple[str, ...]:
        """What the run should do now (``("checkpoint",)`` or nothing), each reason once; for
        the answer to the run's own push."""
        with self._lock:
            run = self._runs.get(key)
            if run is None:
                return ()
            draining = bool(run.meta.node) and run.meta.node in self._cordoned
            return directives(self.config.run, key, run, now, draining)

    def snapshot(self, now: float, history: bool = False) -> list[RunSnapshot]:
        """Every run as of ``now``, GPU-seconds accrued up to ``now``, sorted by key.

        ``history`` includes each run's recent loss points (the JSON API shows them;
        /metrics does not need them, and copying them is most of a snapshot's cost).

        The lock is taken for :data:`SNAPSHOT_BATCH` runs at a time, not for the whole
        pass: each run is consistent on its own, and a push waits for one batch at most,
        however many runs there are (at 50,000 runs one pass takes seconds).
        """
        return list(self.iter_snapshots(now, history))

    def iter_snapshots(self, now: float, history: bool = False) -> Iterator[RunSnapshot]:
        """:meth:`snapshot`, a batch at a time: a view that streams holds one batch of
        snapshots, not every run's (with loss histories, 60 MB at 10,000 runs)."""
        return self._each_run(
            now, lambda key, run: snapshot(self.config.run, key, run, now, history), True
        )

    def _each_run(
        self, now: float, fn: Callable[[RunKey, RunState], T], by_key: bool = False
    ) -> Iterator[T]:
        """``fn`` of every run (GPU-seconds accrued to ``now``), computed under the lock
        :data:`SNAPSHOT_BATCH` runs at a time and yielded outside it."""
        with self._lock:
            keys = sorted(self._runs) if by_key else list(self._runs)
        failed = 0
        for lo in range(0, len(keys), SNAPSHOT_BATCH):
            batch = []
            with self._lock:
                for key in keys[lo : lo + SNAPSHOT_BATCH]:
                    run = self._runs.get(key)
                    if run is None:  # expired since the keys were listed
                        continue
                    try:
                        accrue(self.config.run, run, now)
                        batch.append(fn(key, run))
                    except Exception:  # one run that cannot be read is left out, not all
                        failed += 1
            yield from batch
        with self._lock:
            self._failed = failed
