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

from .humanize import duration, format_loss
from .states import BY_CODE, STATES, Observation, reason, severity, state_code_promql
from .thresholds import Thresholds

_BOLD, _RESET = "\x1b[1m", "\x1b[0m"
STATE_COLOR = {d.name: f"\x1b[{d.ansi}m" for d in STATES}
# States whose reason line would only repeat the state's name.
QUIET_STATES = ("running", "finished")
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
    reason: str = ""  # why the job is in its state: "stalled for 42m (threshold 30m)"


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
        worst = min(runs, key=lambda r: severity(r["state"]))
        state = worst["state"]
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
                reason=str(worst.get("state_reason") or ""),
            )
        )
    return sort_rows(rows)


PROMETHEUS_QUERIES = {
    "state": state_code_promql(""),
    "progress": "namespace_job_name:training_progress_ratio:min",
    "step": "min by (namespace, job_name) (training_step)",
    "max_steps": "max by (namespace, job_name) (training_max_steps)",
    "eta": "namespace_job_name:training_eta_seconds:max",
    "loss": "avg by (namespace, job_name) (training_loss)",
    "loss_deriv": "avg by (namespace, job_name) (deriv(training_loss[10m]))",
    "gpus": "namespace_job_name:training_gpus:sum",
    "gpu_hours": "sum by (namespace, job_name) (training_gpu_seconds_total) / 3600",
}


# Per run: what states.reason() needs, so that a job's reason reads exactly as the exporter
# would write it (from the same series the exporter exports).
REASON_QUERY = (
    '{__name__=~"training_(run_state|last_step_timestamp_seconds|last_report_timestamp_seconds'
    "|last_improvement_timestamp_seconds|start_timestamp_seconds|stall_threshold_seconds"
    "|plateau_window_seconds|report_timeout_seconds|finished_grace_seconds|divergence_ratio"
    '|throughput_drop_ratio|loss|eval_loss|best_loss|gpus|steps_per_second)"}'
)
TYPICAL_PACE_QUERY = "quantile_over_time(0.9, training_steps_per_second[2h])"
_THRESHOLD_SERIES = {
    "training_stall_threshold_seconds": "stall_seconds",
    "training_plateau_window_seconds": "plateau_seconds",
    "training_report_timeout_seconds": "report_timeout_seconds",
    "training_finished_grace_seconds": "finished_grace_seconds",
    "training_divergence_ratio": "divergence_ratio",
    "training_throughput_drop_ratio": "throughput_drop_ratio",
}


def reasons_from_prometheus(
    series: list[dict[str, Any]], typical: list[dict[str, Any]], now: float
) -> dict[tuple[str, str], str]:
    """(namespace, job_name) -> the reason of its most urgent run, from :data:`REASON_QUERY`
    and :data:`TYPICAL_PACE_QUERY` results."""
    runs: dict[tuple[str, str, str], dict[str, float]] = {}
    states: dict[tuple[str, str, str], str] = {}
    for s in series:
        m = s["metric"]
        key = (m.get("namespace", ""), m.get("job_name", ""), m.get("pod", ""))
        value = _num(s["value"][1])
        if value is None:
            continue
        if m.get("__name__") == "training_run_state":
            if value == 1:
                states[key] = m.get("state", "")
            continue
        runs.setdefault(key, {})[m.get("__name__", "")] = value
    for s in typical:
        m = s["metric"]
        key = (m.get("namespace", ""), m.get("job_name", ""), m.get("pod", ""))
        pace = _num(s["value"][1])
        if pace is not None:
            runs.setdefault(key, {})["typical"] = pace
    out: dict[tuple[str, str], tuple[int, str]] = {}
    for key, state in states.items():
        v = runs.get(key, {})
        th = Thresholds(**{f: v[name] for name, f in _THRESHOLD_SERIES.items() if name in v})
        obs = Observation(
            now=now,
            first_report=v.get("training_start_timestamp_seconds", now),
            last_report=v.get("training_last_report_timestamp_seconds", now),
            last_step=v.get("training_last_step_timestamp_seconds"),
            last_improvement=v.get("training_last_improvement_timestamp_seconds"),
            finished=state in ("finished", "finished-but-running"),
            progress=None,
            loss=v.get("training_loss"),
            eval_loss=v.get("training_eval_loss"),
            best_loss=v.get("training_best_loss"),
            gpus=v.get("training_gpus", 0.0),
            gone_since=None,
            steps_per_second=v.get("training_steps_per_second"),
            typical_steps_per_second=v.get("typical"),
        )
        rank = severity(state)
        job = key[:2]
        if job not in out or rank < out[job][0]:
            out[job] = (rank, reason(state, obs, th))
    return {job: text for job, (_, text) in out.items()}


def rows_from_prometheus(
    results: dict[str, list[dict[str, Any]]], reasons: dict[tuple[str, str], str] | None = None
) -> list[Row]:
    """Rows from the instant-query results of :data:`PROMETHEUS_QUERIES`."""
    values: dict[tuple[str, str], dict[str, float | None]] = {}
    for name, series in results.items():
        for s in series:
            key = (s["metric"].get("namespace", ""), s["metric"].get("job_name", ""))
            values.setdefault(key, {})[name] = _num(s["value"][1])
    rows = []
    for (namespace, job), v in values.items():
        if "state" not in v:  # a job Prometheus no longer sees
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
                state=BY_CODE[code].name if code in BY_CODE else "running",
                progress=v.get("progress"),
                step=int(step) if step is not None else None,
                max_steps=int(total) if total is not None else None,
                eta_seconds=v.get("eta"),
                loss=v.get("loss"),
                loss_trend=loss_trend,
                gpus=v.get("gpus"),
                gpu_hours=v.get("gpu_hours"),
                reason=(reasons or {}).get((namespace, job), ""),
            )
        )
    return sort_rows(rows)


def sort_rows(rows: list[Row]) -> list[Row]:
    """What needs attention first (stalled, diverged, finished-but-running...), then by name."""

    def key(r: Row) -> tuple[int, str, str]:
        return severity(r.state), r.namespace, r.job_name

    return sorted(rows, key=key)


def fetch_json(url: str, timeout: float = 10.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as resp:  # the user's own URL
        return json.loads(resp.read())


def from_exporter(url: str) -> list[Row]:
    return rows_from_exporter(fetch_json(url.rstrip("/") + "/api/v1/runs"))


def _query(url: str, name: str, expr: str) -> list[dict[str, Any]]:
    doc = fetch_json(f"{url.rstrip('/')}/api/v1/query?{urllib.parse.urlencode({'query': expr})}")
    if doc.get("status") != "success":
        raise RuntimeError(f"Prometheus query {name} failed: {doc.get('error')}")
    return list(doc["data"]["result"])


def from_prometheus(url: str) -> list[Row]:
    results = {name: _query(url, name, expr) for name, expr in PROMETHEUS_QUERIES.items()}
    reasons = reasons_from_prometheus(
        _query(url, "reason", REASON_QUERY),
        _query(url, "typical pace", TYPICAL_PACE_QUERY),
        time.time(),
    )
    return rows_from_prometheus(results, reasons)


def bar(progress: float | None, width: int) -> str:
    """A progress bar with its percentage, exactly ``width`` characters wide."""
    if progress is None:
        return "-".ljust(width)
    p = min(1.0, max(0.0, progress))
    label = f"{p * 100:3.0f}%"
    cells = max(0, width - len(label) - 1)
    full = int(p * cells)
    return "█" * full + "░" * (cells - full) + " " + label


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
            if color and i in (2, 3):  # the state and its bar share the state's color
                text = STATE_COLOR.get(r.state, "") + text + _RESET
            parts.append(text)
        lines.append("  ".join(parts).rstrip())
        if r.reason and r.state not in QUIET_STATES:
            lines.append(fit("  └ " + r.reason, width))
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
