"""The stuck rank of a multi-rank job: the one definition, shared by ``top`` and the
``TrainingRankStalled`` rule (alerts/, ``namespace_pod_job_name:training_rank_lag_seconds:
behind_newest`` above ``training_rank_lag_threshold_seconds``).

Every rank's pod is a run of its job. A rank whose last step is older than the newest step
of any other rank of the job by more than its rank lag threshold stopped while another went
on: either the others still advance without it, or they went on for a while and then waited
for it in a collective. Ranks that all stopped at once name no one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .humanize import duration

# A rank in one of these states is done, not stuck, however old its last step.
DONE_STATES = ("finished", "finished-but-running", "gone", "failed")


@dataclass(frozen=True, slots=True)
class RankView:
    """What the stuck-rank rule reads of one rank's run."""

    rank: str
    pod: str
    node: str
    last_step: float | None  # Unix time its step last advanced
    lag_threshold: float  # its rank_lag_seconds
    state: str


@dataclass(frozen=True, slots=True)
class Laggard:
    """The stuck rank and how long before the job's newest step it last advanced."""

    rank: str
    pod: str
    node: str
    behind_seconds: float

    def describe(self) -> str:
        """One line for a person: which rank, where, and by how much."""
        where = f"pod {self.pod}" + (f" on {self.node}" if self.node else "")
        return (
            f"{f'rank {self.rank}' if self.rank else 'a rank'} ({where}) stopped "
            f"{duration(self.behind_seconds)} before the newest rank"
        )

    def short(self) -> str:
        """For a table cell: the rank and its node."""
        return (self.rank or self.pod) + (f"@{self.node}" if self.node else "")


def stuck_rank(ranks: Sequence[RankView]) -> Laggard | None:
    """The rank ``TrainingRankStalled`` names for one job (the furthest behind, if several),
    or None. Only ranks with a last step count, and a job needs two of them."""
    stepped = [r for r in ranks if r.last_step is not None]
    if len(stepped) < 2:
        return None
    newest = max(r.last_step for r in stepped if r.last_step is not None)
    behind = [
        (newest - r.last_step, r)
        for r in stepped
        if r.last_step is not None
        and r.state not in DONE_STATES
        and newest - r.last_step > r.lag_threshold
    ]
    if not behind:
        return None
    lag, r = max(behind, key=lambda x: x[0])
    return Laggard(r.rank, r.pod, r.node, lag)
