"""A run's tokens: the count and its rate (measured, or as the run prints it), and its MFU."""

from __future__ import annotations

import math

from ..gpus import mfu
from ..model import ProgressReport
from .state import RunState

TOKEN_POINT_SPACING = 2.0  # seconds between kept (time, tokens) points


def merge_tokens(run: RunState, r: ProgressReport, now: float) -> None:
    """The run's token count (a lower one starts its rate over), FLOPs per token and GPU."""
    if r.flops_per_token is not None:
        run.flops_per_token = r.flops_per_token
    if r.gpu_model:
        run.gpu_model = r.gpu_model

    if r.tokens is None or r.tokens == run.tokens:
        return
    if run.tokens is not None and r.tokens < run.tokens:
        run.token_points.clear()  # a new attempt counts from its own start
    run.tokens = r.tokens
    points = run.token_points
    # A count closer than the spacing to the one before the newest replaces the newest (as
    # step samples do): a report a second keeps points two seconds apart.
    if len(points) >= 2 and now - points[-2][0] < TOKEN_POINT_SPACING:
        points[-1] = (now, r.tokens)
    else:
        points.append((now, r.tokens))


def tokens_per_second(run: RunState, window: float) -> float | None:
    """Tokens per second over the newest ``window`` seconds of token counts; None with
    fewer than two counts."""
    points = run.token_points
    if len(points) < 2:
        return None
    t1, n1 = points[-1]
    t0, n0 = next(((t, n) for t, n in points if t1 - t <= window), points[-2])
    if t1 <= t0:
        t0, n0 = points[-2]
    return (n1 - n0) / (t1 - t0) if t1 > t0 else None


# Custom metrics in which runs print their rate where they give no count (the run's own, or
# per GPU as torchtune prints it): they stay custom metrics too.
PRINTED_RATE = "tokens_per_second"
PRINTED_RATE_PER_GPU = "tokens_per_second_per_gpu"


def printed_tokens_per_second(run: RunState) -> float | None:
    """The rate the run prints, for the run (per GPU ones times its GPUs); None if none."""
    rate = run.metrics.get(PRINTED_RATE)
    if rate is not None and math.isfinite(rate) and rate >= 0:
        return rate
    per_gpu = run.metrics.get(PRINTED_RATE_PER_GPU)
    if per_gpu is not None and math.isfinite(per_gpu) and per_gpu >= 0 and run.gpus > 0:
        return per_gpu * run.gpus
    return None


# The utilisation a run prints (torchtitan's "mfu: 34.33%", verl's perf/mfu/actor), a ratio
# (exporter.logs.formats.vocabulary): what it is where the run gives no FLOPs per token.
PRINTED_MFU = "model_flops_utilization"


def utilization(
    run: RunState, rate: float | None, peak: float | None, training: bool
) -> float | None:
    """The run's MFU: from its token rate and FLOPs per token where it gives both, else as
    its log states it (0 once it does not train, as its rate: a hung job uses nothing)."""
    computed = mfu(rate, run.flops_per_token, run.gpus, peak)
    if computed is not None or run.flops_per_token is not None:
        return computed
    printed = run.metrics.get(PRINTED_MFU)
    if printed is None or not 0 <= printed <= 1:
        return None
    return printed if training else 0.0
