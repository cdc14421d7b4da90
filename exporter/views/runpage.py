"""A run's own page: its progress, ETA, losses, throughput, deadlines, why it is stuck,
and the charts of its whole life (drawn by uPlot from
``api/v1/runs/{namespace}/{pod}/timeline``). Rendered from the run's JSON form, so the
exporter's page and the cluster page's page of a node's run are one rendering.
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

from ..core.humanize import duration
from ..core.model import json_safe
from ..core.run.merge import LOSS_SMOOTHING_FRACTION
from ..core.run.snapshot import RunSnapshot
from ..core.states import ENDED, STATES
from .api import run_to_dict
from .deadlineviews import deadlines_of
from .pagekit import (
    eta_text,
    html_page,
    mapping,
    num,
    number,
    progress_bar,
    run_path,
    stamp,
    state_badge,
)


def _best_loss(run: dict[str, Any]) -> tuple[str, str]:
    """The best loss's label and value. It follows the eval loss once there is one, else
    the train loss averaged over a time constant of a tenth of the run's plateau window
    (exporter.core.run.merge): the label says which and over how long, and a smoothed best
    above the latest loss says why (the average lags a loss that falls fast)."""
    best = number(run.get("best_loss"))
    if number(run.get("eval_loss")) is not None:
        return "Best eval loss", num(best)
    plateau = number(mapping(run.get("thresholds")).get("plateau_seconds"))
    over = f" over {duration(plateau * LOSS_SMOOTHING_FRACTION)}" if plateau else ""
    value = num(best)
    latest = number(run.get("loss"))
    if best is not None and latest is not None and best > latest:
        value += escape(f" (above the latest, {num(latest)}: the average lags a falling loss)")
    return f"Best loss (smoothed{over})", value


def _typical(run: dict[str, Any]) -> str:
    """The run's typical pace, or why there is none yet."""
    typical = number(run.get("typical_steps_per_second"))
    if typical is not None:
        return num(typical)
    if run.get("state") in ENDED:
        return "-"
    return escape(
        "- (not yet: it is the 90th percentile of its pace, sampled every tenth of the rate "
        "window once it steps, from the third sample on)"
    )


def _per_second(value: Any) -> str:
    """A rate with thousands grouped (tokens per second): ``327,680``."""
    rate = number(value)
    return "-" if rate is None else escape(f"{rate:,.0f}")


def _mfu(run: dict[str, Any]) -> str:
    """The run's MFU, or why it has none although its parts are known (the product of its
    token rate and FLOPs per token is above its GPUs' peak: one of them is wrong)."""
    value = number(run.get("model_flops_utilization"))
    if value is not None:
        return _percent(value)
    rate, fpt = number(run.get("tokens_per_second")), number(run.get("model_flops_per_token"))
    peak, gpus = number(run.get("gpu_peak_flops")), number(run.get("gpus"))
    if rate and fpt and peak and gpus and rate * fpt > gpus * peak:
        times = rate * fpt / (gpus * peak)
        return escape(
            f"- (dropped: {times:.3g}x its GPUs' peak; the FLOPs per token, the GPU count "
            "or the token count is wrong)"
        )
    return "-"


def _percent(value: Any) -> str:
    share = number(value)
    return "-" if share is None else escape(f"{100 * share:.1f} %")


def _charts(namespace: str, pod: str) -> str:
    """The chart section (drawn by web/charts.js from the run's timeline) and its assets,
    by relative paths from ``runs/{namespace}/{pod}``."""
    timeline = "../../api/v1/" + run_path(namespace, pod) + "/timeline"
    figures = "".join(
        f'<figure id="{name}"><figcaption>{escape(caption)}</figcaption></figure>'
        for name, caption in (
            ("chart-loss", "Loss and eval loss by step"),
            ("chart-progress", "Progress, and ETA with its bounds, over time"),
            ("chart-throughput", "Throughput against the run's typical pace"),
        )
    )
    legend = "".join(f'<span><i class="c-{d.name}"></i>{escape(d.name)}</span>' for d in STATES)
    return (
        '<link rel="stylesheet" href="../../static/uPlot.min.css">'
        f'<section id="charts" data-timeline="{escape(timeline)}">{figures}</section>'
        f'<p class="legend-states">State band under each time axis: {legend}</p>'
        '<p class="legend-states">Shaded: <span><i class="k-stall"></i>stalled, since its'
        ' last step</span><span><i class="k-eta"></i>the ETA\'s 80 % band</span>'
        " (eval losses are dots: measured at those steps only)</p>"
        '<script src="../../static/uPlot.iife.min.js"></script>'
        '<script src="../../static/charts.js"></script>'
    )


def _stuck(run: dict[str, Any], now: float) -> str:
    """Why a stalled run is stuck: its summary, then each rank's cause and frame, and a
    link to every rank's stacks. Empty unless it is stalled and stacks explain it."""
    if run["state"] not in ("stalled", "silent"):
        return ""
    stacks = "../../api/v1/" + run_path(run["namespace"], run["pod"]) + "/stacks"
    stall = [d for d in run.get("stall") or [] if isinstance(d, dict)]
    if not stall:
        if run["state"] == "silent":
            return ""  # it may have exited; only a dump since its last step says it hangs
        return (
            "<div class=stuck><strong>Why it is stuck:</strong> no stacks yet (the exporter "
            "asks the run's reporter for them; a faulthandler dump in its log also counts). "
            f'<a href="{stacks}">stacks</a></div>'
        )

    def text(d: dict[str, Any], key: str) -> str:
        value = d.get(key)
        return value if isinstance(value, str) else ""

    rows = []
    for d in stall:
        seq = d.get("seq")
        taken = number(d.get("taken_timestamp_seconds"))
        op = text(d, "op") + (f" #{seq}" if isinstance(seq, int) else "")
        rows.append(
            f"<tr><td>{escape(text(d, 'rank') or '?')}</td><td>{escape(text(d, 'cause'))}</td>"
            f"<td>{escape(op)}</td>"
            f"<td><code>{escape(text(d, 'frame') or text(d, 'call'))}</code></td>"
            f"<td><code>{escape(text(d, 'code'))}</code></td>"
            f"<td>{escape(text(d, 'source'))}, "
            f"{escape(duration(None if taken is None else now - taken))} ago</td></tr>"
        )
    summary_text = run.get("stall_summary")
    return (
        "<div class=stuck><strong>Why it is stuck:</strong> "
        f"{escape(summary_text if isinstance(summary_text, str) else '')}"
        "<table><tr><th>Rank</th><th>Cause</th><th>Collective</th><th>Frame</th>"
        f"<th>Code</th><th>From</th></tr>{''.join(rows)}</table>"
        f'<a href="{stacks}">every rank\'s stacks (JSON)</a></div>'
    )


def _ago(now: float, then: Any) -> str:
    then = number(then)
    return "-" if then is None else escape(duration(now - then)) + " ago"


def _hours(seconds: Any) -> str:
    seconds = number(seconds)
    return "-" if seconds is None else f"{seconds / 3600:.2f}"


def detail(run: dict[str, Any], now: float) -> str:
    """One run's detail view, from its JSON form (``/api/v1/runs/{namespace}/{pod}``, what
    :func:`~exporter.views.api.run_to_dict` gives): its values, and charts of its whole
    life. The exporter renders its own runs with it, and the cluster page renders a node's
    runs with it from that node's JSON, never serving a node's HTML."""
    state = str(run["state"])
    stalled = state == "stalled" and number(run.get("last_step_timestamp_seconds"))
    since = "Stalled since its last step" if stalled else "Entered this state"
    entered = (
        run.get("last_step_timestamp_seconds")
        if stalled
        else run.get("state_since_timestamp_seconds")
    )
    step, total = number(run.get("step")), number(run.get("max_steps"))
    checkpoint = number(run.get("last_checkpoint_timestamp_seconds"))
    info = mapping(run.get("info"))
    fields = [
        ("State", state_badge(state, str(run.get("state_reason") or ""))),
        (since, _ago(now, entered)),
        ("Progress", progress_bar(run.get("progress_ratio"), state)),
        ("Step", escape(f"{step}/{total}" if step is not None else "-")),
        ("Epoch", escape(f"{num(run.get('epoch'))} / {num(run.get('max_epochs'))}")),
        ("ETA", escape(eta_text(run))),
        ("Steps per second", num(run.get("steps_per_second"))),
        ("Typical steps per second", _typical(run)),
        ("Loss", num(_finite_or_named(run, "loss"))),
        ("Eval loss", num(_finite_or_named(run, "eval_loss"))),
        _best_loss(run),
        ("Learning rate", num(run.get("learning_rate"))),
        ("Grad norm", num(run.get("grad_norm"))),
        ("Tokens per second", _per_second(run.get("tokens_per_second"))),
        ("Model FLOPs utilization (MFU)", _mfu(run)),
        ("GPUs", num(run.get("gpus"), "{:g}")),
        ("Nodes", num(run.get("nodes"), "{:g}")),
        ("Deadlines", escape("; ".join(d.text(now) for d in deadlines_of(run)) or "-")),
        ("GPU-hours", _hours(run.get("gpu_seconds"))),
        ("GPU-hours stalled", _hours(run.get("stalled_gpu_seconds"))),
        (
            "Last checkpoint",
            escape(f"step {run.get('last_checkpoint_step')}, {duration(now - checkpoint)} ago")
            if checkpoint is not None
            else "none seen",
        ),
        ("GPU-hours at risk (since it)", _hours(run.get("progress_at_risk_gpu_seconds"))),
        ("Last report", _ago(now, run.get("last_report_timestamp_seconds"))),
        ("Last step", _ago(now, run.get("last_step_timestamp_seconds"))),
        ("Attempt", num(run.get("attempt"), "{:g}")),
        ("Source", escape(str(info.get("source") or "-"))),
        ("Framework", escape(str(info.get("framework") or "-"))),
    ]
    metrics = mapping(run.get("metrics"))
    fields += [(escape(str(name)), num(value)) for name, value in metrics.items()]
    items = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in fields)
    namespace, pod, job = str(run["namespace"]), str(run["pod"]), str(run["job_name"])
    body = (
        f'<p class=sub><a href="../../">← all runs</a></p>'
        f"<h1>{escape(namespace)}/{escape(job)}</h1>"
        f"<p class=sub>pod {escape(pod)} · as of {stamp(now)}</p>"
        f"{_stuck(run, now)}<dl>{items}</dl>"
    )
    return html_page(f"{namespace}/{job}", body, _charts(namespace, pod))


def run_detail(s: RunSnapshot, now: float) -> str:
    """:func:`detail` of one of this exporter's own runs."""
    return detail(json_safe(run_to_dict(s)), now)


def _finite_or_named(run: dict[str, Any], key: str) -> float | None:
    """A value the JSON form writes as null when it is not finite, with its name in
    ``non_finite`` (``"NaN"``, ``"+Inf"``): NaN and infinities shown as such."""
    value = number(run.get(key))
    if value is not None:
        return value
    named = str(mapping(run.get("non_finite")).get(key)).lower()
    return {"nan": math.nan, "+inf": math.inf, "-inf": -math.inf}.get(named)
