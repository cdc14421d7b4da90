"""Where a run's GPU-seconds went: the one definition of each cause of waste.

Every GPU-second a run holds is either productive (its step advancing) or wasted for exactly
one cause. The exporter splits what it can see itself, from the run's state and its step
history, into ``training_wasted_gpu_seconds_total{cause=...}``; the recording rules add the
one cause only Prometheus can see (``idle``: dcgm-exporter says the GPUs do nothing while the
steps advance) and derive productive = allocated - wasted (docs/promql.md).

Pure functions over a state name and step numbers; the tracker does the bookkeeping.
"""

from __future__ import annotations

# Causes the exporter attributes, in the order of precedence: an interval in one of these
# states is that cause whatever else holds; a step-advancing interval is a restart while it
# redoes steps done before, else a pause for its time beyond the run's pace.
WAITING = "waiting"  # reported or started, no step yet: loading, compiling, downloading
STALLED = "stalled"
SILENT = "silent"
DIVERGED = "diverged"
FINISHED = "finished_but_running"  # held after training finished (grace included)
# The work a restart lost: the training since the last checkpoint where it is known (charged
# at the restart, exporter.core.run), else the time spent redoing steps done before.
RESTART = "restart"
PAUSE = "pause"  # evaluation and checkpoint pauses beyond the run's pace
# Only Prometheus sees this one (the GPUs' own utilization): the recording rules add it.
IDLE = "idle"

EXPORTED_CAUSES: tuple[str, ...] = (WAITING, STALLED, SILENT, DIVERGED, FINISHED, RESTART, PAUSE)
ALL_CAUSES: tuple[str, ...] = (*EXPORTED_CAUSES, IDLE)

_BY_STATE: dict[str, str] = {
    "waiting": WAITING,
    "stalled": STALLED,
    "silent": SILENT,
    "diverged": DIVERGED,
    "finished": FINISHED,
    "finished-but-running": FINISHED,
}


def cause_of(state: str, step: int | None, high_water: int | None) -> str | None:
    """The cause of waste for time spent in ``state``, or None when it was productive.

    ``high_water`` is the highest step the run reached before its latest restart: until the
    step passes it again, the run is redoing work it had done (the steps since its last
    checkpoint), which is waste even though the step advances.
    """
    by_state = _BY_STATE.get(state)
    if by_state is not None:
        return by_state
    if step is not None and high_water is not None and step < high_water:
        return RESTART
    return None


def interval_share(start: float, end: float, onset: float | None) -> float:
    """Seconds of [start, end] at or after ``onset`` (all of it when the onset is unknown):
    a state entered at a known time is charged from that time, not from the last accrual."""
    if end <= start:
        return 0.0
    if onset is None:
        return end - start
    return max(0.0, end - max(start, onset))
