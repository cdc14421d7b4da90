"""The JSON view of runs served at ``GET /api/v1/runs`` (for the CLI and automation).

Pure: snapshots in, JSON-safe dicts out. JSON has no NaN: a non-finite number is null, and
``non_finite`` names it with what it was (``{"loss": "NaN"}``); the run's state says what it
means (a NaN loss is ``diverged``, with the reason).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict
from typing import Any

from ..core.model import json_number, json_safe, non_finite_fields
from ..core.run.snapshot import RunSnapshot
from ..core.stacks import Diagnosis, RankStacks
from .stackviews import stacks_to_dict, summary


def run_to_dict(s: RunSnapshot) -> dict[str, Any]:
    """One run's latest values and state."""
    numbers = {
        "step": s.step,
        "max_steps": s.max_steps,
        "epoch": s.epoch,
        "max_epochs": s.max_epochs,
        "progress_ratio": s.progress,
        "eta_seconds": s.eta_seconds,
        "eta_timestamp_seconds": s.eta_timestamp,
        "eta_lower_seconds": s.eta_lower_seconds,
        "eta_upper_seconds": s.eta_upper_seconds,
        "steps_per_second": s.steps_per_second,
        "typical_steps_per_second": s.typical_steps_per_second,
        "attempt": s.attempt,
        "attempt_start_timestamp": s.attempt_start,
        "loss": s.loss,
        "eval_loss": s.eval_loss,
        "learning_rate": s.learning_rate,
        "grad_norm": s.grad_norm,
        "best_loss": s.best_loss,
        "first_report_timestamp_seconds": s.first_report_timestamp,
        "last_report_timestamp_seconds": s.last_report_timestamp,
        "last_step_timestamp_seconds": s.last_step_timestamp,
        "last_improvement_timestamp_seconds": s.last_improvement_timestamp,
        "gpus": s.gpus,
        "gpu_seconds": s.gpu_seconds,
        "stalled_gpu_seconds": s.stalled_gpu_seconds,
        "deadline_timestamp_seconds": s.deadline_timestamp,
        "kill_deadline_timestamp_seconds": s.meta.kill_deadline_timestamp,
        "gpu_seconds_budget": s.gpu_seconds_budget,
        "last_checkpoint_step": s.last_checkpoint_step,
        "last_checkpoint_timestamp_seconds": s.last_checkpoint_timestamp,
        "progress_at_risk_gpu_seconds": s.at_risk_gpu_seconds,
        "tokens": s.tokens,
        "tokens_per_second": s.tokens_per_second,
        "model_flops_per_token": s.flops_per_token,
        "gpu_peak_flops": s.gpu_peak_flops,
        "model_flops_utilization": s.model_flops_utilization,
    }
    return {
        "namespace": s.key.namespace,
        "pod": s.key.pod,
        "job_name": s.key.job_name,
        "state": s.state,
        "state_since_timestamp_seconds": s.state_since,
        "state_reason": s.state_reason,
        "finished": s.finished,
        "gone": s.gone,
        "info": {
            "job_kind": s.meta.job_kind,
            "framework": s.meta.framework,
            "source": s.meta.source,
            "node": s.meta.node,
            "rank": s.meta.rank,
            "container": s.meta.container,
            "trial": s.meta.trial,
            "experiment": s.meta.experiment,
        },
        **{k: json_number(v) for k, v in numbers.items()},
        "non_finite": non_finite_fields(numbers),
        "metrics": {name: json_number(v) for name, v in s.metrics},
        "wasted_gpu_seconds": {cause: json_number(v) for cause, v in s.wasted_gpu_seconds},
        # The run's effective thresholds (defaults, its own overrides, annotations).
        "thresholds": json_safe(asdict(s.thresholds)),
        "loss_history": [[t, json_number(v)] for t, v in s.loss_history],
        # Why a stalled run is stuck (docs/cli.md#kubectl-progress-stacks): each rank's cause
        # and frame.
        "stall": [stall_to_dict(d) for d in s.stall],
        "stall_summary": summary(s.stall),
        "stall_gpu_seconds": {cause: json_number(v) for cause, v in s.stall_gpu_seconds},
        # The kind whose activeDeadlineSeconds kills first, and the chance of missing each
        # deadline (docs/kubernetes.md#kill-deadlines).
        "kill_deadline_kind": s.meta.kill_deadline_kind or None,
        "deadline_miss_probability": {
            kind: json_number(p) for kind, p in s.deadline_miss_probability
        },
        # Its size (nodes, else GPUs) and what each deadline needs
        # (docs/kubernetes.md#nodes-needed).
        "nodes": s.meta.nodes,
        "size_unit": s.size_unit or None,
        "deadline_size_needed": dict(s.deadline_size_needed),
        "scaling_basis": s.scaling_basis or None,
    }


def stall_to_dict(d: Diagnosis) -> dict[str, Any]:
    """One rank's cause and frame, as ``training_stall_info`` carries them."""
    return {
        "rank": d.rank,
        "cause": d.cause,
        "op": d.op,
        "seq": d.seq,
        "completed": d.completed,
        "frame": d.frame,
        "code": d.code,
        "call": d.call,
        "source": d.source,
        "taken_timestamp_seconds": d.taken,
    }


def document_head(s: RunSnapshot, now: float) -> dict[str, Any]:
    """What every per-run document starts with: when it was made, whose run, in which
    state (the stacks and the charts documents name the run alike)."""
    return {
        "time": now,
        "namespace": s.key.namespace,
        "pod": s.key.pod,
        "job_name": s.key.job_name,
        "state": s.state,
        "state_reason": s.state_reason,
    }


def stacks_document(
    s: RunSnapshot, held: list[tuple[RankStacks, Diagnosis]], now: float
) -> dict[str, Any]:
    """``GET /api/v1/runs/{namespace}/{pod}/stacks``: the run's state, why it is stuck
    (its current stall, if any) and every rank's newest stacks from each source."""
    return {
        **document_head(s, now),
        "stall": [stall_to_dict(d) for d in s.stall],
        "stall_summary": summary(s.stall),
        "stacks": [stacks_to_dict(st, d) for st, d in held],
    }


def runs_document(snapshots: list[RunSnapshot], now: float) -> dict[str, Any]:
    """The whole ``/api/v1/runs`` response."""
    return {"time": now, "runs": [run_to_dict(s) for s in snapshots]}


def iter_runs_json(snapshots: Iterable[RunSnapshot], now: float) -> Iterator[str]:
    """:func:`runs_document` as JSON text, one run at a time: the same document, never
    held whole (at 10,000 runs with their loss histories it is 60 MB of Python objects)."""
    yield json.dumps({"time": now}, allow_nan=False)[:-1] + ', "runs": ['
    first = True
    for s in snapshots:
        yield ("" if first else ", ") + json.dumps(json_safe(run_to_dict(s)), allow_nan=False)
        first = False
    yield "]}"
