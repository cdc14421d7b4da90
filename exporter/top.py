"""``training-progress-exporter top``: a live table of training jobs in the terminal.

Data comes from one exporter's ``/api/v1/runs`` (one node, or standalone) or from Prometheus
(the whole cluster, through the recording rules). Collecting rows is I/O; turning them into
a table is pure (:func:`render`), so tests check widths and colors without a terminal.
"""

from __future__ import annotations

import json
import math
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, TextIO

from .states import ATTENTION, STATE_BY_CODE, state_promql

_GREEN, _YELLOW, _RED, _BLUE, _MAGENTA = "\x1b[32m", "\x1b[33m", "\x1b[31m", "\x1b[34m", "\x1b[35m"
_BOLD, _DIM, _RESET = "\x1b[1m", "\x1b[2m", "\x1b[0m"
STATE_COLOR = {
    "running": _GREEN,
    "plateaued": _YELLOW,
    "stalled": _RED + _BOLD,
    "diverged": _RED + _BOLD,
    "finished": _BLUE,
    "finished-but-running": _MAGENTA + _BOLD,
    "waiting": _DIM,
}
ARROWS = {"down": "↓", "up": "↑", "flat": "→", None: " "}
SHORT_STATES = {"finished-but-running": "fin-running"}


@dataclass(frozen=True)
class Row:
    """One training job."""

    namespace: str
    job_name: str
    state: str
    progress: float | None
    step: int | None
    max_steps: int | None
    eta_seconds: float | None
    loss: float | None
    loss_trend: str | None  # down (improving), up, flat
    gpus: float | None
    gpu_hours: float | None


def _num(value: Any) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number


def trend(points: list[float], tolerance: float = 0.01) -> str | None:
    """Direction of a loss series: mean of its last third against the third before."""
    if len(points) < 6:
        return None
    third = len(points) // 3
    before = sum(points[-2 * third : -third]) / third
    after = sum(points[-third:]) / third
    if abs(after - before) <= tolerance * abs(before):
        return "flat"
    return "down" if after < before else "up"


def rows_from_exporter(doc: dict[str, Any]) -> list[Row]:
    """Rows from an exporter's ``/api/v1/runs``; ranks of one job merged (slowest wins)."""
    jobs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for run in doc.get("runs", []):
        jobs.setdefault((run["namespace"], run["job_name"]), []).append(run)
    rows = []
    for (namespace, job), runs in jobs.items():
        lead = min(runs, key=lambda r: _num(r.get("progress_ratio")) or 0.0)
        states = [r["state"] for r in runs]
        state = min(states, key=lambda s: ATTENTION.index(s) if s in ATTENTION else len(ATTENTION))
        losses = [v for _, v in lead.get("loss_history", [])]
        rows.append(
            Row(
                namespace=namespace,
                job_name=job,
                state=state,
                progress=_num(lead.get("progress_ratio")),
                step=lead.get("step"),
                max_steps=lead.get("max_steps"),
                eta_seconds=_num(lead.get("eta_seconds")),
                loss=_num(lead.get("loss")),
                loss_trend=trend(losses),
                gpus=sum(_num(r.get("gpus")) or 0.0 for r in runs),
                gpu_hours=sum(_num(r.get("gpu_seconds")) or 0.0 for r in runs) / 3600,
            )
        )
    return sort_rows(rows)


PROMETHEUS_QUERIES = {
    "state": state_promql(""),
    "progress": "namespace_job_name:training_progress_ratio:min",
    "step": "min by (namespace, job_name) (training_step)",
    "max_steps": "max by (namespace, job_name) (training_max_steps)",
    "eta": "namespace_job_name:training_eta_seconds:max",
    "loss": "avg by (namespace, job_name) (training_loss)",
    "loss_deriv": "avg by (namespace, job_name) (deriv(training_loss[10m]))",
    "gpus": "namespace_job_name:training_gpus:sum",
    "gpu_hours": "sum by (namespace, job_name) (training_gpu_seconds_total) / 3600",
}


def rows_from_prometheus(results: dict[str, list[dict[str, Any]]]) -> list[Row]:
    """Rows from the instant-query results of :data:`PROMETHEUS_QUERIES`."""
    values: dict[tuple[str, str], dict[str, float | None]] = {}
    for name, series in results.items():
        for s in series:
            key = (s["metric"].get("namespace", ""), s["metric"].get("job_name", ""))
            values.setdefault(key, {})[name] = _num(s["value"][1])
    rows = []
    for (namespace, job), v in values.items():
        if "state" not in v:  # a job Prometheus no longer sees as active
            continue
        code = int(v["state"] or 0)
        deriv = v.get("loss_deriv")
        loss_trend = (
            None
            if deriv is None or math.isnan(deriv)
            else ("flat" if abs(deriv) < 1e-9 else "down" if deriv < 0 else "up")
        )
        step, total = v.get("step"), v.get("max_steps")
        rows.append(
            Row(
                namespace=namespace,
                job_name=job,
                state=STATE_BY_CODE.get(code, "running"),
                progress=v.get("progress"),
                step=int(step) if step is not None else None,
                max_steps=int(total) if total is not None else None,
                eta_seconds=v.get("eta"),
                loss=v.get("loss"),
                loss_trend=loss_trend,
                gpus=v.get("gpus"),
                gpu_hours=v.get("gpu_hours"),
            )
        )
    return sort_rows(rows)


def sort_rows(rows: list[Row]) -> list[Row]:
    """What needs attention first (stalled, diverged, finished-but-running...), then by name."""

    def key(r: Row) -> tuple[int, str, str]:
        rank = ATTENTION.index(r.state) if r.state in ATTENTION else len(ATTENTION)
        return rank, r.namespace, r.job_name

    return sorted(rows, key=key)


def fetch_json(url: str, timeout: float = 10.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as resp:  # the user's own URL
        return json.loads(resp.read())


def from_exporter(url: str) -> list[Row]:
    return rows_from_exporter(fetch_json(url.rstrip("/") + "/api/v1/runs"))


def from_prometheus(url: str) -> list[Row]:
    results = {}
    for name, expr in PROMETHEUS_QUERIES.items():
        doc = fetch_json(
            f"{url.rstrip('/')}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
        )
        if doc.get("status") != "success":
            raise RuntimeError(f"Prometheus query {name} failed: {doc.get('error')}")
        results[name] = doc["data"]["result"]
    return rows_from_prometheus(results)


def duration(seconds: float | None) -> str:
    """A short human duration: 45s, 12m, 3h05m, 2d04h."""
    if seconds is None or math.isnan(seconds):
        return "-"
    s = int(max(0.0, seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def bar(progress: float | None, width: int) -> str:
    """A progress bar with its percentage, exactly ``width`` characters wide."""
    if progress is None:
        return "-".ljust(width)
    p = min(1.0, max(0.0, progress))
    label = f"{p * 100:3.0f}%"
    cells = max(0, width - len(label) - 1)
    full = int(p * cells)
    return "█" * full + "░" * (cells - full) + " " + label


def format_loss(loss: float | None) -> str:
    """A loss for a table cell: four significant digits, NaN as NaN, none as a dash."""
    if loss is None:
        return "-"
    if math.isnan(loss):
        return "NaN"
    return f"{loss:.4g}"


COLUMNS = ("NAMESPACE", "JOB", "STATE", "PROGRESS", "STEP", "ETA", "LOSS", "GPUS", "GPU-H")


def render(rows: list[Row], width: int = 120, color: bool = False) -> str:
    """The table as text fitting ``width`` columns (the progress bar takes what is left)."""
    cells = []
    for r in rows:
        step = "-" if r.step is None else f"{r.step}/{r.max_steps}" if r.max_steps else str(r.step)
        cells.append(
            [
                r.namespace,
                r.job_name,
                r.state,
                r.progress,
                step,
                duration(r.eta_seconds),
                f"{format_loss(r.loss)} {ARROWS[r.loss_trend]}",
                "-" if r.gpus is None else f"{r.gpus:g}",
                "-" if r.gpu_hours is None else f"{r.gpu_hours:.1f}",
            ]
        )
    if width < 100:  # the one long state name takes a short form on narrow terminals
        for c in cells:
            c[2] = SHORT_STATES.get(str(c[2]), c[2])
    widths = [len(c) for c in COLUMNS]
    for row in cells:
        for i, value in enumerate(row):
            if i != 3:
                widths[i] = max(widths[i], len(str(value)))
    # Names give way first when the terminal is narrow; the bar gets the rest (8..30).
    fixed = sum(w for i, w in enumerate(widths) if i != 3) + 2 * (len(COLUMNS) - 1)
    bar_width = max(10, min(30, width - fixed))
    overflow = fixed + bar_width - width
    for i in (1, 0):
        if overflow > 0:
            cut = min(overflow, widths[i] - 8)
            if cut > 0:
                widths[i] -= cut
                overflow -= cut
    widths[3] = bar_width

    def fit(text: str, w: int) -> str:
        return text if len(text) <= w else text[: w - 1] + "…"

    lines = ["  ".join(fit(c, widths[i]).ljust(widths[i]) for i, c in enumerate(COLUMNS)).rstrip()]
    if color:
        lines[0] = _BOLD + lines[0] + _RESET
    for r, row in zip(rows, cells, strict=True):
        parts = []
        for i, value in enumerate(row):
            text = (
                bar(r.progress, widths[3])
                if i == 3
                else fit(str(value), widths[i]).ljust(widths[i])
            )
            if color and i == 2:
                text = STATE_COLOR.get(r.state, "") + text + _RESET
            parts.append(text)
        lines.append("  ".join(parts).rstrip())
    if not rows:
        lines.append("(no training jobs)")
    return "\n".join(lines) + "\n"


def as_json(rows: list[Row]) -> str:
    return json.dumps([asdict(r) for r in rows], indent=2, default=lambda v: None) + "\n"


def run(
    source: Callable[[], list[Row]],
    out: TextIO,
    *,
    once: bool,
    output: str,
    interval: float,
    width: Callable[[], int],
    tty: bool,
) -> int:
    """Print the table once, or redraw it every ``interval`` seconds until interrupted."""
    while True:
        try:
            rows = source()
            text = as_json(rows) if output == "json" else render(rows, width(), color=tty)
        except (OSError, RuntimeError, ValueError) as exc:
            if once:
                print(f"training-progress-exporter top: {exc}", file=sys.stderr)
                return 1
            text = f"error: {exc}\n"
        if tty and not once:
            out.write("\x1b[H\x1b[2J" + time.strftime("%H:%M:%S ") + "training jobs\n\n" + text)
        else:
            out.write(text)
        out.flush()
        if once:
            return 0
        time.sleep(interval)
