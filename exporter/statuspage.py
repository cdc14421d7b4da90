"""The built-in status page: every run with progress, ETA, state and a loss sparkline, and a
detail view per run. Server-rendered HTML, inline CSS and a few lines of vanilla JavaScript,
no external assets; every link is relative, so it works behind ``kubectl port-forward``.

Rendering is pure (snapshots in, HTML out). Every value that comes from a report or a pod is
escaped with :func:`html.escape`; a job named ``<script>`` is shown, never run.
"""

from __future__ import annotations

import math
import time
from html import escape
from urllib.parse import quote

from .humanize import duration
from .run import RunSnapshot
from .states import BY_NAME, severity

_UNKNOWN_COLOR = "#6e7781"
_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1f2328}
h1{font-size:1.3em;margin:0 0 .2em} .sub{color:#6e7781;margin:0 0 1em}
table{border-collapse:collapse;width:100%}
th,td{padding:.35em .6em;text-align:left;border-bottom:1px solid #d0d7de}
th{font-weight:600;background:#f6f8fa} td.num{text-align:right;font-variant-numeric:tabular-nums}
.state{color:#fff;border-radius:1em;padding:.1em .6em;font-size:.85em;white-space:nowrap}
.bar{background:#eaeef2;border-radius:3px;width:12em;height:.9em;display:inline-block;vertical-align:middle}
.fill{display:block;height:100%;border-radius:3px} svg{vertical-align:middle}
.why{color:#57606a;font-size:.85em}
td.progress{white-space:nowrap}
dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1.5em} dt{color:#6e7781}
a{color:#0969da;text-decoration:none}
"""
# Reload the data in place every 5 s, without losing the scroll position.
_SCRIPT = """
setInterval(async () => {
  try {
    const r = await fetch(location.href, {headers: {Accept: 'text/html'}});
    if (!r.ok) return;
    const doc = new DOMParser().parseFromString(await r.text(), 'text/html');
    document.querySelector('main').replaceWith(doc.querySelector('main'));
  } catch (e) { /* the exporter restarting: try again next time */ }
}, 5000);
"""


def sparkline(points: tuple[tuple[float, float], ...], width: int = 120, height: int = 24) -> str:
    """An inline SVG polyline of the loss history (empty with fewer than two points)."""
    values = [v for _, v in points if math.isfinite(v)]
    if len(values) < 2:
        return ""
    lo, hi = min(values), max(values)
    span = hi - lo or 1.0
    step = width / (len(values) - 1)
    coords = " ".join(
        f"{i * step:.1f},{height - 2 - (v - lo) / span * (height - 4):.1f}"
        for i, v in enumerate(values)
    )
    return (
        f'<svg width="{width}" height="{height}" role="img" aria-label="loss history">'
        f'<polyline fill="none" stroke="#0969da" stroke-width="1.5" points="{coords}"/></svg>'
    )


def _num(value: float | int | None, fmt: str = "{:.4g}") -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return fmt.format(value)


def _color(state: str) -> str:
    d = BY_NAME.get(state)
    return d.css_color if d else _UNKNOWN_COLOR


def _progress(p: float | None, state: str) -> str:
    """A bar in the state's color: a stalled run's bar is red, not a promising green."""
    if p is None:
        return "-"
    pct = min(1.0, max(0.0, p)) * 100
    return (
        f'<span class="bar" title="{pct:.1f}%"><span class="fill" '
        f'style="width:{pct:.1f}%;background:{_color(state)}"></span></span> {pct:.0f}%'
    )


def _state(state: str, why: str = "") -> str:
    badge = f'<span class="state" style="background:{_color(state)}">{escape(state)}</span>'
    return badge + (f' <span class="why">{escape(why)}</span>' if why else "")


def _why(s: RunSnapshot) -> str:
    return "" if s.state in ("running", "finished") else s.state_reason


def run_path(s: RunSnapshot) -> str:
    """Relative link from the index to a run's detail view."""
    return f"runs/{quote(s.key.namespace, safe='')}/{quote(s.key.pod, safe='')}"


def _page(title: str, body: str) -> str:
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<main>{body}</main><script>{_SCRIPT}</script></body></html>"
    )


def index(snapshots: list[RunSnapshot], now: float) -> str:
    """The status page listing every run."""
    rows = []
    for s in sorted(snapshots, key=lambda s: (severity(s.state), s.key)):
        step = "-" if s.step is None else f"{s.step}/{s.max_steps}" if s.max_steps else str(s.step)
        rows.append(
            "<tr>"
            f"<td>{escape(s.key.namespace)}</td>"
            f'<td><a href="{escape(run_path(s))}">{escape(s.key.job_name)}</a></td>'
            f"<td>{escape(s.key.pod)}</td>"
            f"<td>{_state(s.state, _why(s))}</td>"
            f'<td class="progress">{_progress(s.progress, s.state)}</td>'
            f'<td class="num">{escape(step)}</td>'
            f'<td class="num">{escape(duration(s.eta_seconds))}</td>'
            f'<td class="num">{_num(s.loss)}</td>'
            f"<td>{sparkline(s.loss_history)}</td>"
            f'<td class="num">{_num(s.gpus, "{:g}")}</td>'
            f'<td class="num">{s.gpu_seconds / 3600:.1f}</td>'
            "</tr>"
        )
    table = (
        "<table><thead><tr><th>Namespace</th><th>Job</th><th>Pod</th><th>State</th>"
        "<th>Progress</th><th>Step</th><th>ETA</th><th>Loss</th><th>Loss history</th>"
        "<th>GPUs</th><th>GPU-hours</th></tr></thead><tbody>"
        + ("".join(rows) or "<tr><td colspan=11>No training runs reported yet.</td></tr>")
        + "</tbody></table>"
    )
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(now))
    body = (
        f"<h1>Training runs</h1><p class=sub>{len(snapshots)} runs, as of {stamp} · "
        '<a href="metrics">metrics</a> · <a href="api/v1/runs">JSON</a></p>' + table
    )
    return _page("Training runs", body)


def _eta(s: RunSnapshot) -> str:
    """The ETA, with its bounds when the exporter has them: ``4m (3m to 6m)``."""
    text = duration(s.eta_seconds)
    if s.eta_lower_seconds is not None and s.eta_upper_seconds is not None:
        text += f" ({duration(s.eta_lower_seconds)} to {duration(s.eta_upper_seconds)})"
    return text


def detail(s: RunSnapshot, now: float) -> str:
    """One run's detail view."""
    fields = [
        ("State", _state(s.state, s.state_reason)),
        ("In this state since", escape(duration(now - s.state_since)) + " ago"),
        ("Progress", _progress(s.progress, s.state)),
        ("Step", escape(f"{s.step}/{s.max_steps}" if s.step is not None else "-")),
        ("Epoch", escape(f"{_num(s.epoch)} / {_num(s.max_epochs)}")),
        ("ETA", escape(_eta(s))),
        ("Steps per second", _num(s.steps_per_second)),
        ("Loss", _num(s.loss)),
        ("Eval loss", _num(s.eval_loss)),
        ("Best loss", _num(s.best_loss)),
        ("Learning rate", _num(s.learning_rate)),
        ("Grad norm", _num(s.grad_norm)),
        ("GPUs", _num(s.gpus, "{:g}")),
        ("GPU-hours", f"{s.gpu_seconds / 3600:.2f}"),
        ("GPU-hours stalled", f"{s.stalled_gpu_seconds / 3600:.2f}"),
        ("Last report", escape(duration(now - s.last_report_timestamp)) + " ago"),
        (
            "Last step",
            escape(duration(now - s.last_step_timestamp)) + " ago"
            if s.last_step_timestamp
            else "-",
        ),
        ("Source", escape(s.meta.source or "-")),
        ("Framework", escape(s.meta.framework or "-")),
    ]
    fields += [(escape(name), _num(value)) for name, value in s.metrics]
    items = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in fields)
    body = (
        f'<p class=sub><a href="../../">← all runs</a></p>'
        f"<h1>{escape(s.key.namespace)}/{escape(s.key.job_name)}</h1>"
        f"<p class=sub>pod {escape(s.key.pod)}</p>"
        f"<p>{sparkline(s.loss_history, width=480, height=80)}</p><dl>{items}</dl>"
    )
    return _page(f"{s.key.namespace}/{s.key.job_name}", body)
