"""One run's record of why it is stuck: the newest stacks of each rank, when they were
asked for, and what its stalls cost by cause (the goodput ``stalled`` split).

Owned by the run (``RunState.stall``) and changed only under the tracker's lock; the
decisions are the pure functions of exporter.core.stacks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from .stacks import (
    FROM_REPORTER,
    FROM_WATCHDOG,
    MAX_RANKS,
    SOURCES,
    STALL_CAUSES,
    UNEXPLAINED,
    Diagnosis,
    RankStacks,
    diagnose,
    job_cause,
    stacks_bytes,
)

# A rank told to send stacks is told again after this long if none came (a lost answer, a
# reporter that could not post): never on every heartbeat.
RETELL_SECONDS = 60.0
# Which source's stacks describe a rank when several did since the stall began: the process
# itself, then its dumps, then its traceback, then the watchdog's line.
_PRECEDENCE = {source: i for i, source in enumerate(SOURCES)}


@dataclass
class StallRecord:
    """See the module docstring."""

    # (rank, source) -> the newest stacks from that source and their diagnosis
    stacks: dict[tuple[str, str], tuple[RankStacks, Diagnosis]] = field(default_factory=dict)
    told: dict[str, float] = field(default_factory=dict)  # rank -> when last told to send
    request: str | None = None  # the stacks annotation's value, as last seen
    asked_at: float | None = None  # when a person last asked (a new annotation value)
    # GPU-seconds stalled, by stall cause (exporter.core.stacks.STALL_CAUSES); ``pending``: those
    # of the current stall while nothing explains it yet.
    split: dict[str, float] = field(default_factory=dict)
    pending: float = 0.0

    def add(self, stacks: RankStacks) -> None:
        """Keep ``stacks`` as its rank's newest from its source. Bounded at MAX_RANKS ranks
        (each with one stack per source): beyond, every stack of the rank heard from longest
        ago goes."""
        self.stacks[(stacks.rank, stacks.source)] = (stacks, diagnose(stacks))
        newest: dict[str, float] = {}
        for (rank, _), (held, _) in self.stacks.items():
            newest[rank] = max(newest.get(rank, -math.inf), held.taken)
        while len(newest) > MAX_RANKS:
            gone = min(newest, key=newest.__getitem__)
            del newest[gone]
            for key in [k for k in self.stacks if k[0] == gone]:
                del self.stacks[key]

    @property
    def bytes(self) -> int:
        """What the stacks held cost (exporter.core.stacks.stacks_bytes)."""
        return sum(stacks_bytes(s) for s, _ in self.stacks.values())

    def oldest(self) -> tuple[float, tuple[str, str]] | None:
        """When the oldest stack held was taken, and its (rank, source); None if none."""
        if not self.stacks:
            return None
        key = min(self.stacks, key=lambda k: self.stacks[k][0].taken)
        return self.stacks[key][0].taken, key

    def current(self, since: float) -> tuple[Diagnosis, ...]:
        """Each rank's diagnosis from stacks taken at or after ``since`` (the stall's last
        step), from the best source; a collective named by a stack gets the watchdog's
        sequence number when the watchdog spoke too."""
        best: dict[str, Diagnosis] = {}
        seq: dict[str, int | None] = {}
        for (rank, source), (stacks, diagnosis) in self.stacks.items():
            if stacks.taken < since:
                continue
            if source == FROM_WATCHDOG:
                seq[rank] = diagnosis.seq
            held = best.get(rank)
            if held is None or _PRECEDENCE[source] < _PRECEDENCE[held.source]:
                best[rank] = diagnosis
        out = []
        for rank, d in best.items():
            if d.op and d.seq is None and seq.get(rank) is not None:
                d = replace(d, seq=seq[rank])
            out.append(d)
        return tuple(
            sorted(
                out,
                key=lambda d: (
                    not d.rank.isdigit(),
                    int(d.rank) if d.rank.isdigit() else 0,
                    d.rank,
                ),
            )
        )

    def requested(self, value: str | None, now: float) -> None:
        """The run's stacks annotation is ``value``: a new non-empty value asks anew."""
        if value != self.request:
            self.request = value
            if value:
                self.asked_at = now

    def wants(self, rank: str, stall_since: float | None, now: float) -> bool:
        """Whether ``rank`` should be told to send its stacks now: the run stalled since
        ``stall_since`` (None: it is not stalled) or a person asked, and this rank's process
        has sent none since; told at most once per RETELL_SECONDS."""
        asked = max(
            -math.inf if stall_since is None else stall_since,
            -math.inf if self.asked_at is None else self.asked_at,
        )
        if asked == -math.inf:
            return False
        own = self.stacks.get((rank, FROM_REPORTER))
        if own is not None and own[0].taken >= asked:
            return False
        told = self.told.get(rank)
        if told is not None and told >= asked and now - told < RETELL_SECONDS:
            return False
        self.told[rank] = now
        if len(self.told) > MAX_RANKS:
            del self.told[min(self.told, key=self.told.__getitem__)]
        return True

    def charge(self, seconds: float, since: float | None) -> None:
        """Charge stalled GPU-seconds to the stall's cause, or hold them until one is
        known (``since``: the stall's last step; None while the run is not stalled, which
        settles what no stack explained)."""
        if since is None:
            if self.pending:
                self._add(UNEXPLAINED, self.pending)
                self.pending = 0.0
            return
        cause = job_cause(self.current(since))
        if cause is None:
            self.pending += seconds
        else:
            self._add(cause, self.pending + seconds)
            self.pending = 0.0

    def _add(self, cause: str, seconds: float) -> None:
        self.split[cause] = self.split.get(cause, 0.0) + seconds

    def split_view(self) -> tuple[tuple[str, float], ...]:
        """Every stall cause with its GPU-seconds so far (0 for those never charged)."""
        return tuple((c, self.split.get(c, 0.0)) for c in STALL_CAUSES)
