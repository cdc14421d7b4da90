"""What one run looks like at one instant (:class:`RunSnapshot`): what the collector, the API,
the status page and the charts render, importable without the merge code."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..model import RunKey, RunMeta
from ..stacks import Diagnosis
from ..thresholds import Thresholds


@dataclass(frozen=True, slots=True)
class RunSnapshot:
    """Everything known about one run at one instant; what the collector and API render."""

    key: RunKey
    meta: RunMeta
    state: str
    state_since: float  # when the run entered ``state``
    state_reason: str  # why, in words: "stalled for 42m (threshold 30m)"
    step: int | None
    max_steps: int | None
    epoch: float | None
    max_epochs: float | None
    progress: float | None
    eta_seconds: float | None
    eta_timestamp: float | None  # predicted completion (Unix seconds)
    eta_lower_seconds: float | None  # the ETA's bounds, counted down like it
    eta_upper_seconds: float | None
    steps_per_second: float | None
    typical_steps_per_second: float | None  # the pace the degraded state is judged against
    attempt: int  # 1 for the first attempt; +1 at each re-run, restart or resume
    attempt_start: float  # when the current attempt began
    loss: float | None
    eval_loss: float | None
    learning_rate: float | None
    grad_norm: float | None
    best_loss: float | None
    metrics: tuple[tuple[str, float], ...]
    first_report_timestamp: float
    last_report_timestamp: float
    last_step_timestamp: float | None
    last_improvement_timestamp: float | None
    finished: bool
    gpus: float
    gpu_seconds: float
    stalled_gpu_seconds: float
    # GPU-seconds wasted, by cause (exporter.core.goodput.EXPORTED_CAUSES, every cause present)
    wasted_gpu_seconds: tuple[tuple[str, float], ...]
    deadline_timestamp: float | None
    gpu_seconds_budget: float | None
    thresholds: Thresholds
    gone: bool
    loss_history: tuple[tuple[float, float], ...]
    # Why it is stuck: each rank's cause and frame, from stacks taken since its last step
    # (exporter.core.stacks; empty unless stalled or silent, and explained).
    stall: tuple[Diagnosis, ...] = ()
    # GPU-seconds stalled, by stall cause (exporter.core.stacks.STALL_CAUSES, every one present)
    stall_gpu_seconds: tuple[tuple[str, float], ...] = ()
    last_checkpoint_step: int | None = None
    last_checkpoint_timestamp: float | None = None
    # GPU-seconds of training since the last checkpoint (or the attempt's start): what a
    # preemption now would lose (None before any GPU-second)
    at_risk_gpu_seconds: float | None = None
    tokens: int | None = None  # trained on so far
    tokens_per_second: float | None = None  # 0 while it does not train
    flops_per_token: float | None = None
    gpu_peak_flops: float | None = None  # one GPU's dense BF16 peak (exporter.core.gpus)
    model_flops_utilization: float | None = None
    # What ended it, where its log ended in a traceback: "Type: message" (bounded).
    failure: str | None = None
    # The chance of finishing after each deadline it has, by kind (exporter.core.deadlines:
    # "user", "kill"), while it has an ETA and its band.
    deadline_miss_probability: tuple[tuple[str, float], ...] = ()
    # Its size (its job's nodes, else its GPUs: size_unit says which) and, for each deadline
    # it has, the fewest of that unit that make it at the configured probability
    # (exporter.core.scaling; a deadline out of reach by scaling has none), the scaling
    # exponent being the run's own ("history") or the default.
    size: float | None = None
    size_unit: str = ""
    deadline_size_needed: tuple[tuple[str, int], ...] = ()
    scaling_basis: str = ""

    @property
    def kill_deadline_timestamp(self) -> float | None:
        """When Kubernetes kills the run's job (its meta, from discovery)."""
        return self.meta.kill_deadline_timestamp


def timeline_values(s: RunSnapshot) -> dict[str, float | int | None]:
    """The snapshot's values by timeline column (exporter.core.timeline.COLUMNS, but time): what
    a timeline row keeps, and what the charts end with at the present."""
    return {
        "attempt": s.attempt,
        "step": s.step,
        "loss": s.loss if s.loss is not None and math.isfinite(s.loss) else None,
        "progress": s.progress,
        "eta_seconds": s.eta_seconds,
        "eta_lower_seconds": s.eta_lower_seconds,
        "eta_upper_seconds": s.eta_upper_seconds,
        "steps_per_second": s.steps_per_second,
        "typical_steps_per_second": s.typical_steps_per_second,
    }
