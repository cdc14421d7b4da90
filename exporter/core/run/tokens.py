"""A run's tokens: the count and its rate (measured, or as the run prints it), and its MFU."""

from __future__ import annotations

import math
from collections.abc import Callable

from ..gpus import mfu, peak_flops
from ..model import ProgressReport
from .state import RunState

TOKEN_POINT_SPACING = 2.0  # seconds between kept (time, tokens) points
# No accelerator trains more tokens than this a second: its peak (H100: 1e15 FLOP/s dense)
# over the fewest FLOPs a token can take (6 x a 1.6 M-parameter model's). A rate above it
# per GPU (or per process, without GPUs) is a wrong count, not a fast run.
MAX_TOKENS_PER_SECOND_PER_GPU = 1e8
# Why a derived value is not exported (training_exporter_drops_total{reason}).
TOKENS_ABOVE_PEAK = "tokens_per_second_above_peak"
MFU_ABOVE_PEAK = "mfu_above_peak"
MFU_OUT_OF_RANGE = "mfu_out_of_range"


def physical(rate: float | None, gpus: float) -> float | None:
    """``rate`` (tokens/s) if a run on ``gpus`` GPUs could train that fast, else None."""
    if rate is None or rate > MAX_TOKENS_PER_SECOND_PER_GPU * max(1.0, gpus):
        return None
    return rate


def check_tokens(
    run: RunState, window: float, problem: Callable[[str], None] = lambda _: None
) -> None:
    """At a report: a token rate no hardware reaches, or one that with the run's FLOPs per
    token would put its GPUs above their peak (MFU over 1: the FLOPs per token, the GPU
    count or the count is wrong), is said once per report with its reason. The snapshot
    then exports neither (tokens_rate, utilization)."""
    rate = tokens_per_second(run, window)
    if rate is None:
        return
    if physical(rate, run.gpus) is None:
        problem(TOKENS_ABOVE_PEAK)
        return
    peak = peak_flops(run.gpu_model or run.node_gpu_model)
    fpt, gpus = run.flops_per_token, run.gpus
    if fpt is not None and peak is not None and gpus > 0 and rate * fpt > gpus * peak:
        problem(MFU_ABOVE_PEAK)


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
        return physical(rate, run.gpus)
    per_gpu = run.metrics.get(PRINTED_RATE_PER_GPU)
    if per_gpu is not None and math.isfinite(per_gpu) and per_gpu >= 0 and run.gpus > 0:
        return physical(per_gpu * run.gpus, run.gpus)
    return None


def tokens_rate(run: RunState, window: float) -> float | None:
    """The run's token rate as exported: counted over ``window``, else as it prints it;
    None where neither is, or where no hardware trains that fast (:func:`physical`)."""
    rate = physical(tokens_per_second(run, window), run.gpus)
    return rate if rate is not None else printed_tokens_per_second(run)


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
