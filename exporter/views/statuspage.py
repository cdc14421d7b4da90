"""The built-in status page: every run with progress, ETA and state, and a detail view per
run with charts of its whole life. Server-rendered HTML with one inline style sheet and one
inline script, allowed by their hashes (CONTENT_SECURITY_POLICY); the charts are drawn
by uPlot (vendored in exporter/views/web with its license, served by the exporter itself: clusters
are often offline) from ``api/v1/runs/{namespace}/{pod}/timeline``. Every link is relative,
so the pages work behind ``kubectl port-forward`` and behind the cluster page's proxy.

Rendering is pure (snapshots in, HTML out). Every value that comes from a report or a pod is
escaped with :func:`html.escape`; a job named ``<script>`` is shown, never run.
"""

from __future__ import annotations

import base64
import hashlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from typing import Any
from urllib.parse import parse_qsl, quote

from ..core.humanize import duration
from ..core.model import json_safe
from ..core.run.merge import LOSS_SMOOTHING_FRACTION
from ..core.run.snapshot import RunSnapshot
from ..core.states import BY_NAME, ENDED, STATES, severity
from .api import run_to_dict
from .deadlineviews import deadlines_of

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
.stuck{border-left:4px solid #d1242f;background:#fff5f5;padding:.5em .8em;margin:.8em 0}
.stuck table{margin:.4em 0}
td.progress{white-space:nowrap}
dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1.5em} dt{color:#6e7781}
a{color:#0969da;text-decoration:none}
.failures{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;
 padding:.5em 1em;margin:0 0 1em}
.failures li{margin:.2em 0}
#charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(560px,1fr));gap:1em;margin:1em 0}
#charts figure{margin:0;position:relative;border:1px solid #d0d7de;border-radius:6px;padding:.5em}
#charts figcaption{font-weight:600;margin:0 0 .3em}
.notice{margin:0 0 .4em;color:#1f2328;background:#fff8c5;border:1px solid #d4a72c;
 border-radius:4px;padding:.3em .6em;font-size:.9em}
.k-stall{background:rgba(207,34,46,.25)} .k-eta{background:rgba(130,80,223,.25)}
.legend-states span{display:inline-block;margin-right:1em;font-size:.85em}
.legend-states i{display:inline-block;width:.8em;height:.8em;border-radius:2px;
 margin-right:.3em;vertical-align:middle}
"""
# Colours and bar widths are classes, never style attributes: the pages' policy allows no
# inline style but the one <style> element, by its hash.
_CSS += "".join(f".c-{d.name}{{background:{d.css_color}}}" for d in STATES)
_CSS += f".c-unknown{{background:{_UNKNOWN_COLOR}}}\n"
_CSS += "".join(f".w{n}{{width:{n}%}}" for n in range(101)) + "\n"
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


def _number(value: Any) -> float | int | None:
    """``value`` if it is a number, else None: the cluster page renders what other
    exporters sent, and a string where a number belongs is shown as unknown."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def _num(value: Any, fmt: str = "{:.4g}") -> str:
    value = _number(value)
    if value is None:
        return "-"
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return fmt.format(value)


def _hash_source(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


# What the pages may load and run: their own files, and of inline code only the one <style>
# and the one <script> above, by their hashes. No 'unsafe-inline': a page an exporter sends
# through the cluster page's proxy runs no script of its own (#56 F6).
CONTENT_SECURITY_POLICY = (
    f"default-src 'self'; script-src 'self' {_hash_source(_SCRIPT)}; "
    f"style-src 'self' {_hash_source(_CSS)}; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def page_headers() -> dict[str, str]:
    """The headers every page goes out with (the exporter's and the cluster page's)."""
    return {
        "Content-Security-Policy": CONTENT_SECURITY_POLICY,
        "X-Content-Type-Options": "nosniff",
    }


def _color(state: str) -> str:
    """The CSS class of ``state``'s colour (an unknown state, from another exporter: grey)."""
    return f"c-{state}" if state in BY_NAME else "c-unknown"


def _progress(p: Any, state: str) -> str:
    """A bar in the state's color: a stalled run's bar is red, not a promising green."""
    p = _number(p)
    if p is None or math.isnan(p):
        return "-"
    pct = min(1.0, max(0.0, p)) * 100
    return (
        f'<span class="bar" title="{pct:.1f}%">'
        f'<span class="fill w{round(pct)} {_color(state)}"></span></span> {pct:.0f}%'
    )


def _state(state: str, why: str = "") -> str:
    badge = f'<span class="state {_color(state)}">{escape(state)}</span>'
    return badge + (f' <span class="why">{escape(why)}</span>' if why else "")


def _why(run: dict[str, Any]) -> str:
    """The state's reason, and for a stalled run why it is stuck (its stacks' summary)."""
    if run["state"] in ("running", "finished"):
        return ""
    stuck = run.get("stall_summary")
    reason = str(run.get("state_reason") or "")
    return f"{reason}: {stuck}" if isinstance(stuck, str) and stuck else reason


def run_path(namespace: str, pod: str) -> str:
    """Relative link from the index to a run's detail view."""
    return f"runs/{quote(namespace, safe='')}/{quote(pod, safe='')}"


def _page(title: str, body: str, tail: str = "") -> str:
    """A whole page: ``body`` goes in ``<main>``, which the refresh script replaces every
    5 s; ``tail`` (the charts) stays outside it and refreshes itself."""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<main>{body}</main>{tail}<script>{_SCRIPT}</script></body></html>"
    )


def _step(run: dict[str, Any]) -> str:
    step, total = _number(run.get("step")), _number(run.get("max_steps"))
    return "-" if step is None else f"{step}/{total}" if total else str(step)


def runs_table(
    runs: list[dict[str, Any]],
    link: Callable[[dict[str, Any]], str],
    node_column: bool = False,
    ordered: bool = False,
    page: Page | None = None,
    now: float | None = None,
) -> str:
    """The table of runs (the ``/api/v1/runs`` form of each), most urgent first (or in the
    order given, ``ordered``): the node page's and the cluster page's one definition. With
    ``page``, each column's header links to the index sorted by it."""
    now = time.time() if now is None else now
    rows = []
    if not ordered:
        runs = sorted(
            runs, key=lambda r: (severity(r["state"]), r["namespace"], r["pod"], r["job_name"])
        )
    for r in runs:
        gpus = r.get("gpus")
        node = r.get("exporter_node") or (r.get("info") or {}).get("node") or "-"
        rows.append(
            "<tr>"
            f"<td>{escape(r['namespace'])}</td>"
            f'<td><a href="{escape(link(r))}">{escape(r["job_name"])}</a></td>'
            f"<td>{escape(r['pod'])}</td>"
            + (f"<td>{escape(str(node))}</td>" if node_column else "")
            + f"<td>{_state(str(r['state']), _why(r))}</td>"
            f'<td class="progress">{_progress(r.get("progress_ratio"), r["state"])}</td>'
            f'<td class="num">{escape(_step(r))}</td>'
            f'<td class="num">{escape(_eta(r, short=True))}</td>'
            f'<td class="num">{escape(_checkpoint_age(r, now))}</td>'
            f'<td class="num">{_num(r.get("loss"))}</td>'
            f'<td class="num">{_num(gpus, "{:g}")}</td>'
            f'<td class="num">{(_number(r.get("gpu_seconds")) or 0.0) / 3600:.1f}</td>'
            "</tr>"
        )
    names = ["namespace", "name", "pod", *(["node"] if node_column else [])]
    names += ["urgency", "progress", "step", "eta", "checkpoint", "loss", "gpus", "gpu_hours"]
    head = "".join(_header(BY_ORDER[n], page) for n in names)
    columns = len(names)
    return (
        f"<table><thead><tr>{head}</tr></thead><tbody>"
        + ("".join(rows) or f"<tr><td colspan={columns}>No training runs reported yet.</td></tr>")
        + "</tbody></table>"
    )


def stamp(now: float) -> str:
    """``now`` as the pages print it."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(now))


def index(snapshots: list[RunSnapshot], now: float) -> str:
    """The status page listing every run of ``snapshots`` on one page (most urgent first)."""
    ordered = sorted(snapshots, key=lambda s: sort_key(s, SORTS[0]))
    return index_page(ordered, now, Page(1, max(1, len(ordered)), SORTS[0]), len(ordered), {})


@dataclass(frozen=True)
class Order:
    """One way the index may be ordered (``?sort=name``), by one of its columns: the value
    a run sorts by, from its snapshot (the node page sorts thousands before it renders a
    page) and from its JSON form (the cluster page's runs), and which way. A run without
    the value goes last either way; ties go by namespace, pod and job."""

    name: str
    header: str
    of_snapshot: Callable[[RunSnapshot], Any]
    of_dict: Callable[[dict[str, Any]], Any]
    descending: bool = False


def _checkpoint_of(run: dict[str, Any]) -> Any:
    return _number(run.get("last_checkpoint_timestamp_seconds"))


# Every column of the index, in its order; the first is the default (what needs attention
# first). The Node column (the cluster page's) sorts by the node.
ORDERS: tuple[Order, ...] = (
    Order("urgency", "State", lambda s: severity(s.state), lambda r: severity(str(r["state"]))),
    Order("namespace", "Namespace", lambda s: s.key.namespace, lambda r: str(r["namespace"])),
    Order("name", "Job", lambda s: s.key.job_name, lambda r: str(r["job_name"])),
    Order("pod", "Pod", lambda s: s.key.pod, lambda r: str(r["pod"])),
    Order(
        "node",
        "Node",
        lambda s: s.meta.node or None,
        lambda r: r.get("exporter_node") or (r.get("info") or {}).get("node") or None,
    ),
    Order(
        "progress", "Progress", lambda s: s.progress,
        lambda r: _number(r.get("progress_ratio")), descending=True,
    ),
    Order("step", "Step", lambda s: s.step, lambda r: _number(r.get("step")), descending=True),
    Order("eta", "ETA", lambda s: s.eta_seconds, lambda r: _number(r.get("eta_seconds"))),
    # The oldest checkpoint first: the run with the most to lose.
    Order(
        "checkpoint", "Last checkpoint", lambda s: s.last_checkpoint_timestamp, _checkpoint_of
    ),
    Order("loss", "Loss", lambda s: _finite(s.loss), lambda r: _finite(_number(r.get("loss")))),
    Order("gpus", "GPUs", lambda s: s.gpus, lambda r: _number(r.get("gpus")), descending=True),
    Order(
        "gpu_hours", "GPU-hours", lambda s: s.gpu_seconds,
        lambda r: _number(r.get("gpu_seconds")), descending=True,
    ),
)  # fmt: skip
BY_ORDER: dict[str, Order] = {o.name: o for o in ORDERS}
SORTS: tuple[str, ...] = tuple(BY_ORDER)


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _place(value: Any, descending: bool, name: tuple[str, ...]) -> tuple[Any, ...]:
    if value is None:
        return (1, 0, *name)
    if descending and not isinstance(value, str):
        value = -value
    return (0, value, *name)


PER_PAGE = 200
MAX_PER_PAGE = 1000


@dataclass(frozen=True)
class Page:
    """Which runs of the index one answer shows: ``number`` (1-based) of ``size`` runs,
    ordered by ``sort``."""

    number: int
    size: int
    sort: str

    @classmethod
    def of(cls, query: str) -> Page:
        """The page a request's query string asks for (``page``, ``per_page``, ``sort``),
        anything unusable read as its default."""
        asked = dict(parse_qsl(query))
        sort = asked.get("sort", SORTS[0])

        def whole(name: str, default: int, high: int) -> int:
            raw = asked.get(name, "")
            return min(high, max(1, int(raw))) if raw.isdigit() else default

        return cls(
            whole("page", 1, 1_000_000),
            whole("per_page", PER_PAGE, MAX_PER_PAGE),
            sort if sort in SORTS else SORTS[0],
        )

    def link(self, number: int) -> str:
        return f"?page={number}&per_page={self.size}&sort={self.sort}"


def sort_key(s: RunSnapshot, sort: str) -> tuple[Any, ...]:
    """Where ``s`` goes on the index sorted by ``sort`` (one of SORTS)."""
    order = BY_ORDER.get(sort, ORDERS[0])
    name = (s.key.namespace, s.key.pod, s.key.job_name)
    return _place(order.of_snapshot(s), order.descending, name)


def _nav(page: Page, total: int) -> str:
    """Which page of how many, links to the pages beside it and to the other orders."""
    pages = max(1, -(-total // page.size))
    nav = [f"page {page.number} of {pages}"]
    if page.number > 1:
        nav.append(f'<a href="{escape(page.link(page.number - 1))}">previous</a>')
    if page.number < pages:
        nav.append(f'<a href="{escape(page.link(page.number + 1))}">next</a>')
    header = BY_ORDER[page.sort].header if page.sort in BY_ORDER else ORDERS[0].header
    return f"<p class=sub>{' · '.join(nav)} · sorted by {escape(header)} (click a column)</p>"


def dict_sort_key(run: dict[str, Any], sort: str) -> tuple[Any, ...]:
    """:func:`sort_key` for a run in its JSON form (the cluster page's runs)."""
    order = BY_ORDER.get(sort, ORDERS[0])
    name = (str(run["namespace"]), str(run["pod"]), str(run["job_name"]))
    return _place(order.of_dict(run), order.descending, name)


def index_page(
    snapshots: list[RunSnapshot], now: float, page: Page, total: int, states: dict[str, int]
) -> str:
    """The status page: one ``page`` of the runs (``snapshots``, in order), with the totals
    of all ``total`` runs (``states``: how many are in each state) and links to the other
    pages and orders. A page holds at most MAX_PER_PAGE runs, whatever the exporter
    tracks: four views of 10,000 runs cost four pages, not four copies of every run."""
    runs = [run_to_dict(s) for s in snapshots]
    table = runs_table(
        runs, lambda r: run_path(r["namespace"], r["pod"]), ordered=True, page=page, now=now
    )
    counts = ", ".join(f"{states[d.name]} {escape(d.name)}" for d in STATES if states.get(d.name))
    body = (
        f"<h1>Training runs</h1><p class=sub>{total} runs"
        + (f" ({counts})" if counts else "")
        + f", as of {stamp(now)} · "
        '<a href="metrics">metrics</a> · <a href="api/v1/runs">JSON</a></p>'
        + _nav(page, total)
        + table
    )
    return _page("Training runs", body)


def _eta(run: dict[str, Any], short: bool = False) -> str:
    """The ETA, with its bounds when the exporter has them: ``4m (3m to 6m)``, or in a
    table cell (``short``) ``4m (3m-6m)``, as ``top`` shows it."""
    eta = _number(run.get("eta_seconds"))
    text = duration(eta)
    lower, upper = _number(run.get("eta_lower_seconds")), _number(run.get("eta_upper_seconds"))
    if eta is not None and lower is not None and upper is not None:
        text += (
            f" ({duration(lower)}-{duration(upper)})"
            if short
            else (f" ({duration(lower)} to {duration(upper)})")
        )
    return text


def _checkpoint_age(run: dict[str, Any], now: float) -> str:
    """How long ago the run's last checkpoint was (``-`` where none was seen)."""
    at = _number(run.get("last_checkpoint_timestamp_seconds"))
    return "-" if at is None else f"{duration(now - at)} ago"


def _header(order: Order, page: Page | None) -> str:
    """A column's header: a link to the index sorted by it (the current order marked)."""
    if page is None:
        return f"<th>{escape(order.header)}</th>"
    mark = " &#9662;" if order.name == page.sort else ""  # an entity: the page stays Latin-1
    target = escape(Page(1, page.size, order.name).link(1))
    return f'<th><a href="{target}">{escape(order.header)}</a>{mark}</th>'


def _best_loss(run: dict[str, Any]) -> tuple[str, str]:
    """The best loss's label and value. It follows the eval loss once there is one, else
    the train loss averaged over a time constant of a tenth of the run's plateau window
    (exporter.core.run.merge): the label says which and over how long, and a smoothed best
    above the latest loss says why (the average lags a loss that falls fast)."""
    best = _number(run.get("best_loss"))
    if _number(run.get("eval_loss")) is not None:
        return "Best eval loss", _num(best)
    plateau = _number(_mapping(run.get("thresholds")).get("plateau_seconds"))
    over = f" over {duration(plateau * LOSS_SMOOTHING_FRACTION)}" if plateau else ""
    value = _num(best)
    latest = _number(run.get("loss"))
    if best is not None and latest is not None and best > latest:
        value += escape(f" (above the latest, {_num(latest)}: the average lags a falling loss)")
    return f"Best loss (smoothed{over})", value


def _typical(run: dict[str, Any]) -> str:
    """The run's typical pace, or why there is none yet."""
    typical = _number(run.get("typical_steps_per_second"))
    if typical is not None:
        return _num(typical)
    if run.get("state") in ENDED:
        return "-"
    return escape(
        "- (not yet: it is the 90th percentile of its pace, sampled every tenth of the rate "
        "window once it steps, from the third sample on)"
    )


def _per_second(value: Any) -> str:
    """A rate with thousands grouped (tokens per second): ``327,680``."""
    number = _number(value)
    return "-" if number is None else escape(f"{number:,.0f}")


def _mfu(run: dict[str, Any]) -> str:
    """The run's MFU, or why it has none although its parts are known (the product of its
    token rate and FLOPs per token is above its GPUs' peak: one of them is wrong)."""
    value = _number(run.get("model_flops_utilization"))
    if value is not None:
        return _percent(value)
    rate, fpt = _number(run.get("tokens_per_second")), _number(run.get("model_flops_per_token"))
    peak, gpus = _number(run.get("gpu_peak_flops")), _number(run.get("gpus"))
    if rate and fpt and peak and gpus and rate * fpt > gpus * peak:
        times = rate * fpt / (gpus * peak)
        return escape(
            f"- (dropped: {times:.3g}x its GPUs' peak; the FLOPs per token, the GPU count "
            "or the token count is wrong)"
        )
    return "-"


def _percent(value: Any) -> str:
    number = _number(value)
    return "-" if number is None else escape(f"{100 * number:.1f} %")


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
        taken = _number(d.get("taken_timestamp_seconds"))
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
    then = _number(then)
    return "-" if then is None else escape(duration(now - then)) + " ago"


def _hours(seconds: Any) -> str:
    seconds = _number(seconds)
    return "-" if seconds is None else f"{seconds / 3600:.2f}"


def detail(run: dict[str, Any], now: float) -> str:
    """One run's detail view, from its JSON form (``/api/v1/runs/{namespace}/{pod}``, what
    :func:`~exporter.views.api.run_to_dict` gives): its values, and charts of its whole
    life. The exporter renders its own runs with it, and the cluster page renders a node's
    runs with it from that node's JSON, never serving a node's HTML."""
    state = str(run["state"])
    stalled = state == "stalled" and _number(run.get("last_step_timestamp_seconds"))
    since = "Stalled since its last step" if stalled else "Entered this state"
    entered = (
        run.get("last_step_timestamp_seconds")
        if stalled
        else run.get("state_since_timestamp_seconds")
    )
    step, total = _number(run.get("step")), _number(run.get("max_steps"))
    checkpoint = _number(run.get("last_checkpoint_timestamp_seconds"))
    info = _mapping(run.get("info"))
    fields = [
        ("State", _state(state, str(run.get("state_reason") or ""))),
        (since, _ago(now, entered)),
        ("Progress", _progress(run.get("progress_ratio"), state)),
        ("Step", escape(f"{step}/{total}" if step is not None else "-")),
        ("Epoch", escape(f"{_num(run.get('epoch'))} / {_num(run.get('max_epochs'))}")),
        ("ETA", escape(_eta(run))),
        ("Steps per second", _num(run.get("steps_per_second"))),
        ("Typical steps per second", _typical(run)),
        ("Loss", _num(_finite_or_named(run, "loss"))),
        ("Eval loss", _num(_finite_or_named(run, "eval_loss"))),
        _best_loss(run),
        ("Learning rate", _num(run.get("learning_rate"))),
        ("Grad norm", _num(run.get("grad_norm"))),
        ("Tokens per second", _per_second(run.get("tokens_per_second"))),
        ("Model FLOPs utilization (MFU)", _mfu(run)),
        ("GPUs", _num(run.get("gpus"), "{:g}")),
        ("Nodes", _num(run.get("nodes"), "{:g}")),
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
        ("Attempt", _num(run.get("attempt"), "{:g}")),
        ("Source", escape(str(info.get("source") or "-"))),
        ("Framework", escape(str(info.get("framework") or "-"))),
    ]
    metrics = _mapping(run.get("metrics"))
    fields += [(escape(str(name)), _num(value)) for name, value in metrics.items()]
    items = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in fields)
    namespace, pod, job = str(run["namespace"]), str(run["pod"]), str(run["job_name"])
    body = (
        f'<p class=sub><a href="../../">← all runs</a></p>'
        f"<h1>{escape(namespace)}/{escape(job)}</h1>"
        f"<p class=sub>pod {escape(pod)} · as of {stamp(now)}</p>"
        f"{_stuck(run, now)}<dl>{items}</dl>"
    )
    return _page(f"{namespace}/{job}", body, _charts(namespace, pod))


def run_detail(s: RunSnapshot, now: float) -> str:
    """:func:`detail` of one of this exporter's own runs."""
    return detail(json_safe(run_to_dict(s)), now)


def _finite_or_named(run: dict[str, Any], key: str) -> float | None:
    """A value the JSON form writes as null when it is not finite, with its name in
    ``non_finite`` (``"NaN"``, ``"+Inf"``): NaN and infinities shown as such."""
    value = _number(run.get(key))
    if value is not None:
        return value
    named = str(_mapping(run.get("non_finite")).get(key)).lower()
    return {"nan": math.nan, "+inf": math.inf, "-inf": -math.inf}.get(named)


def _mapping(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one (a node's answer may lie)."""
    return value if isinstance(value, dict) else {}


def node_run_path(node: str, namespace: str, pod: str) -> str:
    """Relative link from the cluster page to a run's detail view on its node's exporter
    (the cluster page proxies it)."""
    return f"nodes/{quote(node, safe='')}/" + run_path(namespace, pod)


def cluster_index(
    runs: list[dict[str, Any]],
    exporters: list[tuple[str, str]],
    now: float,
    problems: list[str],
    page: Page | None = None,
    source: str | None = None,
) -> str:
    """The cluster page: a ``page`` of every node's runs (all of them when None), as the node
    page lists them, with a Node column; above them, every exporter that could not be read
    and why (``problems``), so a missing node is seen, never silently left out.
    ``exporters`` is (name, status) of each exporter asked; ``source``, when the runs were
    read from Prometheus instead, says which (a run's link is then this server's own page of
    it, not its node's)."""
    page = page or Page(1, max(1, len(runs)), SORTS[0])
    ordered = sorted(runs, key=lambda r: dict_sort_key(r, page.sort))
    shown = ordered[(page.number - 1) * page.size : page.number * page.size]
    table = runs_table(
        shown,
        (lambda r: run_path(r["namespace"], r["pod"]))
        if source is not None
        else (lambda r: node_run_path(r["exporter_node"], r["namespace"], r["pod"])),
        True,
        ordered=True,
        page=page,
        now=now,
    )
    failing = (
        "<div class=failures><strong>"
        + (
            "The runs could not be read:"
            if source is not None
            else "Not every exporter could be read; runs on these are missing below:"
        )
        + "</strong><ul>"
        + "".join(f"<li>{escape(p)}</li>" for p in problems)
        + "</ul></div>"
        if problems
        else ""
    )
    answered = sum(1 for _, status in exporters if status == "ok")
    origin = escape(source) if source is not None else f"{answered} of {len(exporters)} exporters"
    body = (
        f"<h1>Training runs in the cluster</h1><p class=sub>{len(runs)} runs from "
        f"{origin}, as of {stamp(now)} · "
        '<a href="api/v1/runs">JSON</a></p>' + failing + _nav(page, len(runs)) + table
    )
    return _page("Training runs in the cluster", body)
