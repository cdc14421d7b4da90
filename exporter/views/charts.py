"""What a run's charts draw, as JSON: ``GET /api/v1/runs/{namespace}/{pod}/timeline``.

Pure: a snapshot and a copy of the run's timeline in, a JSON-safe dict out. The status
page's script (exporter/views/web/charts.js) draws it with uPlot; anything else may read it too
(docs/cli.md#charts). Everything a chart needs to be honest is decided here, where it is tested,
not in the browser: the loss axis's range (noise is not magnified), where each state began
and ended (the band under the time axis), and what a chart says instead of a line when
there is nothing to draw (a stalled run, a run with one report).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from ..core.humanize import duration
from ..core.model import json_number
from ..core.run.snapshot import RunSnapshot, timeline_values
from ..core.states import BY_NAME
from ..core.timeline import COLUMNS, EVAL_COLUMNS, TimelineView
from .api import document_head

# A loss axis spans at least this fraction of the loss's size: a loss wandering between
# 1.02 and 1.04 is drawn as the near-flat line it is, not as a zigzag filling the chart.
MIN_RELATIVE_SPAN = 0.1
PAD = 0.05  # of the span, above and below the data
UNKNOWN_COLOR = "#6e7781"


def sensible_range(values: Iterable[float | None]) -> tuple[float, float] | None:
    """The y-axis range for ``values`` (None without a finite one): the data's range
    padded by :data:`PAD`, widened around its middle to :data:`MIN_RELATIVE_SPAN` of the
    largest magnitude, and never below zero for data that is not."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if not finite:
        return None
    lo, hi = min(finite), max(finite)
    span = hi - lo
    floor = MIN_RELATIVE_SPAN * max(abs(lo), abs(hi)) or 1.0
    if span < floor:
        middle = (lo + hi) / 2
        lo, hi = middle - floor / 2, middle + floor / 2
    else:
        lo, hi = lo - span * PAD, hi + span * PAD
    if lo < 0 <= min(finite):
        lo = 0.0  # a loss is not drawn below zero
    return lo, hi


def state_segments(
    states: Iterable[tuple[float, str]], start: float, now: float
) -> list[dict[str, Any]]:
    """The state band: each state from when it began to when the next did (the last one
    until ``now``), clipped to start at ``start``, with its color and label."""
    changes = sorted(states)
    out: list[dict[str, Any]] = []
    for i, (t, state) in enumerate(changes):
        end = changes[i + 1][0] if i + 1 < len(changes) else now
        begin = max(t, start)
        if end <= begin and i + 1 < len(changes):
            continue
        d = BY_NAME.get(state)
        out.append(
            {
                "state": state,
                "from": begin,
                "to": max(begin, end),
                "color": d.css_color if d else UNKNOWN_COLOR,
                "label": d.label if d else state,
            }
        )
    return out


def _notice(s: RunSnapshot, points: int, now: float) -> str:
    """What the time charts say over their plot: why the lines stop, or why there are
    none. Empty when the lines speak for themselves."""
    if s.state == "stalled":
        since = s.last_step_timestamp or s.last_report_timestamp
        limit = duration(s.thresholds.stall_seconds)
        return f"Stalled: no step for {duration(now - since)} (threshold {limit})."
    if s.state in ("finished", "finished-but-running"):
        return f"Finished: {s.state_reason}" if s.state_reason else "Finished"
    if points < 2:
        return "Not enough reports yet to draw a line: the chart fills in as the run reports."
    return ""


def _column(name: str, values: list[float]) -> list[float | int | None]:
    """A column for JSON: NaN is null; steps and attempts are whole numbers."""
    if name in _WHOLE:
        return [int(v) if math.isfinite(v) else None for v in values]
    return [json_number(v) for v in values]


_WHOLE = frozenset({"attempt", "step"})


def chart_document(s: RunSnapshot, view: TimelineView, now: float) -> dict[str, Any]:
    """The timeline document: the run's rows by column (each sampled instant; the last one
    is ``now``), its evaluations, the state band, the loss axis's range and the notice.

    Times are Unix seconds. ``step`` is null before the first step; a row of a new
    attempt follows its last row, so a chart can break the line there (``attempt``).
    """
    rows = {name: _column(name, col) for name, col in zip(COLUMNS, view.rows, strict=True)}
    if not rows["time"] or (rows["time"][-1] or 0) < now:
        # The charts end at the present, not at the last sampled row.
        current = {"time": now, **timeline_values(s)}
        for name in COLUMNS:
            value = current[name]
            rows[name].append(_column(name, [math.nan if value is None else float(value)])[0])
    evals = {n: _column(n, col) for n, col in zip(EVAL_COLUMNS, view.evals, strict=True)}
    start = rows["time"][0] or now
    loss_range = sensible_range([*rows["loss"], *evals["eval_loss"]])
    return {
        **document_head(s, now),
        "last_step_timestamp_seconds": json_number(s.last_step_timestamp),
        "max_steps": s.max_steps,
        "rows": rows,
        "evals": evals,
        "states": state_segments(view.states, start, now),
        "loss_range": list(loss_range) if loss_range else None,
        "notice": _notice(s, len(rows["time"]), now),
    }
