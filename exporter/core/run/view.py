"""A run seen at an instant: its :class:`~.snapshot.RunSnapshot` (state, ETA, costs) and
what it is told to do now (directives: checkpoint, stacks)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from ..deadlines import KILL, USER, miss_probabilities
from ..directives import CHECKPOINT, STACKS, Facts, due, reasons, remembered
from ..estimate import Throughput
from ..gpus import peak_flops
from ..model import RunKey
from ..scaling import DEFAULT, DEFAULT_EXPONENT, HISTORY, exponent_from_history, fewest_units
from ..states import ENDED, NO_ETA, TRAINING, Observation, Verdict, classify, done, entered, reason
from ..thresholds import Thresholds
from ..timeline import Timeline
from .accrual import at_risk, gpu_seconds_until, stall_since, wasted_by_cause
from .pace import (
    current_pace,
    observe,
    progress_of,
    run_estimate,
    run_throughput,
    typical_pace,
)
from .snapshot import RunSnapshot, timeline_values
from .state import RunConfig, RunState, first_of, thresholds_of
from .tokens import tokens_rate, utilization


@dataclass(frozen=True, slots=True)
class Judgement:
    """What the classifier said of a run at one instant, with what it judged it on: made
    once, then read by the snapshot, the directives and the stacks request alike."""

    throughput: Throughput | None
    thresholds: Thresholds
    observation: Observation
    verdict: Verdict


def judge(config: RunConfig, run: RunState, now: float) -> Judgement:
    """Classify ``run`` as of ``now`` (exporter.core.states), with its pace."""
    tp = run_throughput(config, run)
    th = thresholds_of(config, run)
    observation = observe(config, run, now, tp)
    return Judgement(tp, th, observation, classify(observation, th))


def snapshot(
    config: RunConfig,
    key: RunKey,
    run: RunState,
    now: float,
    history: bool,
    judged: Judgement | None = None,
) -> RunSnapshot:
    """The run as of ``now``; ``judged``: its judgement as of ``now``, where the caller made
    one already."""
    if judged is None:
        judged = judge(config, run, now)
    tp, th, observation, verdict = (
        judged.throughput,
        judged.thresholds,
        judged.observation,
        judged.verdict,
    )
    run.state_since = entered(run.state, run.state_since, verdict, now)
    run.state = verdict.state
    # A stalled, diverged or finished run promises no completion time.
    # The completion time is predicted at the last step advance (or the run's own ETA
    # report) and the ETA counts down from it to ``now``: between two reports every
    # scrape gets a fresh value, not the one computed at the last report.
    eta: float | None = None
    lower: float | None = None
    upper: float | None = None
    completion: float | None = None
    if verdict.state not in NO_ETA:
        est = run_estimate(run, tp)
        if est is not None and run.samples:
            at = run.samples[-1][0]
            completion = at + est.seconds
            lower = max(0.0, at + est.lower - now)
            upper = max(0.0, at + est.upper - now)
        elif run.reported_eta is not None and (run.step is None or run.max_steps is None):
            # The run's own ETA only where steps can never give one: with steps, a run
            # has none until it made a few reports (on a resume, the callback's own
            # elapsed / step says 28 s where 112 s are left).
            completion = run.reported_eta_at + run.reported_eta
        if completion is not None:
            eta = max(0.0, completion - now)
    # Tokens per second, 0 once the run does not train (a hung job keeps no rate).
    rate = tokens_rate(run, config.estimator.short_window)
    if rate is not None and verdict.state not in TRAINING:
        rate = 0.0
    peak = peak_flops(run.gpu_model or run.node_gpu_model)
    deadlines = (
        (USER, first_of(run.meta.deadline_timestamp, run.deadline)),
        (KILL, run.meta.kill_deadline_timestamp),
    )
    size = run.size
    needed, basis = sizes_needed(config, run, eta, lower, upper, now, deadlines)
    snap = RunSnapshot(
        key=key,
        meta=run.meta,
        state=verdict.state,
        state_since=run.state_since,
        state_reason=reason(verdict.state, observation, th),
        step=run.step,
        max_steps=run.max_steps,
        epoch=run.epoch,
        max_epochs=run.max_epochs,
        progress=progress_of(run),
        eta_seconds=eta,
        eta_timestamp=completion,
        eta_lower_seconds=lower,
        eta_upper_seconds=upper,
        steps_per_second=current_pace(run, tp, now),
        # The classifier skips it without a throughput; a person reads it whenever known,
        # but for a run that ended (no quantile for those at every scrape).
        typical_steps_per_second=(
            observation.typical_steps_per_second
            if observation.typical_steps_per_second is not None or verdict.state in ENDED
            else typical_pace(config, run, now)
        ),
        attempt=run.attempt,
        attempt_start=run.first_report if run.attempt_start is None else run.attempt_start,
        loss=run.loss,
        eval_loss=run.eval_loss,
        learning_rate=run.learning_rate,
        grad_norm=run.grad_norm,
        best_loss=run.best_loss,
        metrics=run.metrics_view,
        first_report_timestamp=run.first_report,
        last_report_timestamp=run.last_report,
        last_step_timestamp=run.last_step,
        last_improvement_timestamp=run.last_improvement,
        # Done by its own word or by its progress: what the classifier calls finished.
        finished=done(observation, th),
        gpus=run.gpus,
        gpu_seconds=gpu_seconds_until(run, now),
        stalled_gpu_seconds=run.stalled_gpu_seconds,
        wasted_gpu_seconds=wasted_by_cause(run),
        # Annotations (meta) win over what the run reports about itself.
        deadline_timestamp=first_of(run.meta.deadline_timestamp, run.deadline),
        gpu_seconds_budget=first_of(run.meta.gpu_seconds_budget, run.budget_seconds),
        thresholds=th,
        gone=run.gone_since is not None,
        loss_history=tuple(run.history) if history else (),
        # A silent run with a dump in its log since its last step is as stuck as a
        # stalled one; no stacks, no claim.
        stall=(
            run.stall.current(stall_since(run, verdict.onset))
            if verdict.state in ("stalled", "silent")
            else ()
        ),
        stall_gpu_seconds=run.stall.split_view(),
        last_checkpoint_step=run.checkpoint_step,
        last_checkpoint_timestamp=run.checkpoint_timestamp,
        at_risk_gpu_seconds=at_risk(run) if run.gpu_seconds > 0 else None,
        tokens=run.tokens,
        tokens_per_second=rate,
        flops_per_token=run.flops_per_token,
        gpu_peak_flops=peak,
        model_flops_utilization=utilization(run, rate, peak, verdict.state in TRAINING),
        failure=run.failure if verdict.state == "failed" else None,
        deadline_miss_probability=miss_probabilities(eta, lower, upper, now, deadlines),
        size=None if size is None else size[0],
        size_unit="" if size is None else size[1],
        deadline_size_needed=needed,
        scaling_basis=basis if needed else "",
    )
    _sample(run.timeline, snap, now)
    return snap


def sizes_needed(
    config: RunConfig,
    run: RunState,
    eta: float | None,
    lower: float | None,
    upper: float | None,
    now: float,
    deadlines: tuple[tuple[str, float | None], ...],
) -> tuple[tuple[tuple[str, int], ...], str]:
    """For each deadline the run has, the fewest nodes (or GPUs) that make it with the
    configured probability (exporter.core.scaling.fewest_units), and the basis of the
    scaling exponent: the run's own sizes ("history") or the default."""
    size = run.size
    if eta is None or lower is None or upper is None or size is None:
        return (), ""
    current = max(1, round(size[0]))
    paces = [v for _, v in run.pace]
    history = list(run.sizes)
    if run.attempt_size is not None and len(paces) >= 3:
        history.append((run.attempt_size, statistics.median(paces)))
    exponent = exponent_from_history(history)
    basis = HISTORY if exponent is not None else DEFAULT
    exponent = DEFAULT_EXPONENT if exponent is None else exponent
    out = []
    for kind, at in deadlines:
        if at is None:
            continue
        found = fewest_units(
            eta,
            lower,
            upper,
            at - now,
            current,
            exponent,
            config.deadline_probability,
            restart=config.resize_restart_seconds,
        )
        if found is not None:
            out.append((kind, found))
    return tuple(out), basis


def _sample(timeline: Timeline, s: RunSnapshot, now: float) -> None:
    """Keep the snapshot in the run's timeline when a row is due (every snapshot tells
    the timeline the state, so no change of state is missed)."""
    timeline.state(now, s.state)
    if timeline.due(now):
        timeline.sample(now, timeline_values(s))


def wants_stacks(
    config: RunConfig, run: RunState, rank: str, now: float, verdict: Verdict | None = None
) -> bool:
    """Whether ``rank`` of the run should send its stacks now (exporter.core.stall): the run is
    stalled, or a person asked with the stacks annotation, and this rank sent none since.
    ``verdict``: the run's as of ``now``, where the caller classified it already."""
    run.stall.requested(run.meta.stacks_request, now)
    if verdict is None:
        verdict = classify(observe(config, run, now, None), thresholds_of(config, run))
    since = stall_since(run, verdict.onset) if verdict.state == "stalled" else None
    return run.stall.wants(rank, since, now)


def directives(
    config: RunConfig,
    key: RunKey,
    run: RunState,
    now: float,
    draining: bool,
    judged: Judgement | None = None,
) -> tuple[str, ...]:
    """What the run should do now: ``checkpoint`` (each reason once) and ``stacks`` (its
    rank 0 should send its stacks, exporter.core.stall); for the answer to the run's own push.
    ``draining``: its node is cordoned; ``judged``: the run's judgement as of ``now``, made
    once for the whole push (the snapshot and the stacks request read it too)."""
    deadline = first_of(run.meta.deadline_timestamp, run.deadline)
    kill = run.meta.kill_deadline_timestamp
    # A snapshot (state, ETA) only for a run with a deadline: this is on every push.
    snap = (
        None
        if deadline is None and kill is None
        else snapshot(config, key, run, now, False, judged)
    )
    lower = None if snap is None else snap.eta_lower_seconds
    upper = None if snap is None else snap.eta_upper_seconds
    facts = Facts(
        eta_lower_timestamp=None if lower is None or deadline is None else now + lower,
        deadline_timestamp=deadline,
        deleting=run.meta.deleting,
        request=run.meta.checkpoint_request,
        job_request=run.job_checkpoint_request,
        draining=draining,
        # Only a run seen to checkpoint is told to (one that saves unseen is left alone).
        at_risk_gpu_seconds=at_risk(run) if run.checkpoint_timestamp is not None else 0.0,
        risk_threshold_gpu_seconds=thresholds_of(config, run).checkpoint_risk_gpu_seconds,
        # A finished run has no ETA and is not saved for a kill (nothing is left to lose).
        kill_deadline_timestamp=kill if snap is not None and not snap.finished else None,
        eta_upper_timestamp=None if upper is None else now + upper,
        save_seconds=run.checkpoint_seconds,
        now=now,
    )
    holding = reasons(facts)
    fire = due(holding, run.directed)
    run.directed = remembered(holding, run.directed, facts)
    stacks = wants_stacks(config, run, "0", now, judged.verdict if judged else None)
    return ((CHECKPOINT,) if fire else ()) + ((STACKS,) if stacks else ())
