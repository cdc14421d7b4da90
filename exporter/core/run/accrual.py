"""What a run costs: GPU-seconds integrated over time and charged to their cause of waste
(:mod:`exporter.core.goodput`), the work a preemption would lose, and where a stall began."""

from __future__ import annotations

from ..estimate import newest_pause_seconds
from ..goodput import EXPORTED_CAUSES, PAUSE, RESTART, STALLED, WAITING, cause_of, interval_share
from ..states import classify
from .pace import observe
from .state import RunConfig, RunState, thresholds_of


def productive(run: RunState) -> float:
    """GPU-seconds the run held that no cause of waste took (exporter.core.goodput), so far."""
    return run.gpu_seconds - sum(run.wasted.values())


def at_risk(run: RunState) -> float:
    """GPU-seconds of training since the last checkpoint (or the attempt's start): what a
    preemption now would lose."""
    return max(0.0, productive(run) - run.productive_mark)


def lost_since_checkpoint(run: RunState, step: int) -> bool:
    """At a restart to ``step``: when it resumes from the run's known last checkpoint (at or
    after its step, below where the run was), the work since that checkpoint is lost now and
    charged to ``restart`` at once (the goodput split), and the steps done again are not
    charged a second time. False (charge nothing) where the checkpoint is unknown or the run
    went back further: then the steps redone up to where it was are the restart's cost."""
    if run.checkpoint_step is None or run.step is None:
        return False
    if not run.checkpoint_step <= step < run.step:
        return False
    lost = at_risk(run)
    run.wasted[RESTART] = run.wasted.get(RESTART, 0.0) + lost
    run.wasted_at_step += lost  # taken by the restart, not by the next interval's pause
    return True


def accrue(config: RunConfig, run: RunState, now: float) -> None:
    """Integrate GPUs x time since the last accrual, and charge it to its cause of waste
    (exporter.core.goodput) by the state at its end; a state whose onset the classifier knows
    (stalled at last step + threshold) is charged from that onset only."""
    start = run.accrued_at
    end = now if run.gone_since is None else min(now, run.gone_since)
    if run.meta.gpu_end_timestamp is not None:  # the pod gave its GPUs back then
        end = min(end, run.meta.gpu_end_timestamp)
    gpus = run.gpus
    if end > start and gpus > 0:
        run.gpu_seconds += gpus * (end - start)
        verdict = classify(observe(config, run, end, None), thresholds_of(config, run))
        stalled = verdict.state == "stalled"
        share = gpus * interval_share(start, end, verdict.onset if stalled else None)
        if stalled:
            run.stalled_gpu_seconds += share
        run.stall.charge(share, stall_since(run, verdict.onset) if stalled else None)
        cause = cause_of(verdict.state, run.step, run.high_water)
        if cause is not None:
            run.wasted[cause] = run.wasted.get(cause, 0.0) + share
    run.accrued_at = max(run.accrued_at, now)


def charge_pause(run: RunState) -> None:
    """At a step advance: charge the interval's time beyond the run's pace to ``pause``
    when it was one, less what another cause already took of it. An interval that went
    stalled was a hang from its start, not an evaluation: the time before the stall
    threshold is charged to ``stalled`` too (the state could not know it yet)."""
    stalled_before = run.wasted.get(STALLED, 0.0)
    others = sum(v for c, v in run.wasted.items() if c != PAUSE)
    excess = run.gpus * newest_pause_seconds(run.samples)
    taken = others - run.wasted_at_step
    if excess > taken:
        cause = STALLED if run.stalled_at_step < stalled_before else PAUSE
        run.wasted[cause] = run.wasted.get(cause, 0.0) + excess - taken
    run.wasted_at_step = sum(v for c, v in run.wasted.items() if c != PAUSE)
    run.stalled_at_step = run.wasted.get(STALLED, 0.0)


def gpu_seconds_until(run: RunState, now: float) -> float:
    start = run.meta.gpu_start_timestamp
    if start is None:
        return run.gpu_seconds
    end = now if run.gone_since is None else run.gone_since
    if run.meta.gpu_end_timestamp is not None:  # the pod gave its GPUs back then
        end = min(end, run.meta.gpu_end_timestamp)
    return run.gpus * max(0.0, end - start)


def wasted_by_cause(run: RunState) -> tuple[tuple[str, float], ...]:
    """Every exported cause's GPU-seconds; in Kubernetes mode the time from the pod's
    start to the run's first report is waiting too (loading, downloading, compiling)."""
    before = 0.0
    start = run.meta.gpu_start_timestamp
    if start is not None:
        before = run.gpus * max(0.0, run.first_report - start)
    return tuple(
        (c, run.wasted.get(c, 0.0) + (before if c == WAITING else 0.0)) for c in EXPORTED_CAUSES
    )


def mark_gone(config: RunConfig, run: RunState, now: float) -> bool:
    """The run's pod (or file, or target) is gone from ``now``: frozen, its retention
    starts. False if it was gone already."""
    if run.gone_since is not None:
        return False
    accrue(config, run, now)
    run.gone_since = now
    return True


def stall_since(run: RunState, onset: float | None) -> float:
    """Where the run's current stall began: its last step (stacks taken since then show
    the hang), else the classifier's onset."""
    if run.last_step is not None:
        return run.last_step
    return onset if onset is not None else run.first_report
