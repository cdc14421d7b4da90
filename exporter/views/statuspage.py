"""The built-in status page: every run with progress, ETA and state, a page at a time,
sortable, with the totals of all; and the cluster page's index of every node's runs. A run's
own page is :mod:`exporter.views.runpage`; what both are made of, :mod:`exporter.views.pagekit`.
Every link is relative, so the pages work behind ``kubectl port-forward`` and behind the
cluster page's proxy.

Rendering is pure (snapshots in, HTML out). Every value that comes from a report or a pod is
escaped with :func:`html.escape`; a job named ``<script>`` is shown, never run.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from typing import Any
from urllib.parse import parse_qsl, quote

from ..core.run.snapshot import RunSnapshot
from ..core.states import STATES, severity
from .api import run_to_dict
from .pagekit import (
    checkpoint_age,
    eta_text,
    html_page,
    num,
    number,
    progress_bar,
    run_path,
    stamp,
    state_badge,
)


def _why(run: dict[str, Any]) -> str:
    """The state's reason, and for a stalled run why it is stuck (its stacks' summary)."""
    if run["state"] in ("running", "finished"):
        return ""
    stuck = run.get("stall_summary")
    reason = str(run.get("state_reason") or "")
    return f"{reason}: {stuck}" if isinstance(stuck, str) and stuck else reason


def _step(run: dict[str, Any]) -> str:
    step, total = number(run.get("step")), number(run.get("max_steps"))
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
            + f"<td>{state_badge(str(r['state']), _why(r))}</td>"
            f'<td class="progress">{progress_bar(r.get("progress_ratio"), r["state"])}</td>'
            f'<td class="num">{escape(_step(r))}</td>'
            f'<td class="num">{escape(eta_text(r, short=True))}</td>'
            f'<td class="num">{escape(checkpoint_age(r, now))}</td>'
            f'<td class="num">{num(r.get("loss"))}</td>'
            f'<td class="num">{num(gpus, "{:g}")}</td>'
            f'<td class="num">{(number(r.get("gpu_seconds")) or 0.0) / 3600:.1f}</td>'
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
    return number(run.get("last_checkpoint_timestamp_seconds"))


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
        lambda r: number(r.get("progress_ratio")), descending=True,
    ),
    Order("step", "Step", lambda s: s.step, lambda r: number(r.get("step")), descending=True),
    Order("eta", "ETA", lambda s: s.eta_seconds, lambda r: number(r.get("eta_seconds"))),
    # The oldest checkpoint first: the run with the most to lose.
    Order(
        "checkpoint", "Last checkpoint", lambda s: s.last_checkpoint_timestamp, _checkpoint_of
    ),
    Order("loss", "Loss", lambda s: _finite(s.loss), lambda r: _finite(number(r.get("loss")))),
    Order("gpus", "GPUs", lambda s: s.gpus, lambda r: number(r.get("gpus")), descending=True),
    Order(
        "gpu_hours", "GPU-hours", lambda s: s.gpu_seconds,
        lambda r: number(r.get("gpu_seconds")), descending=True,
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
    return html_page("Training runs", body)


def _header(order: Order, page: Page | None) -> str:
    """A column's header: a link to the index sorted by it (the current order marked)."""
    if page is None:
        return f"<th>{escape(order.header)}</th>"
    mark = " &#9662;" if order.name == page.sort else ""  # an entity: the page stays Latin-1
    target = escape(Page(1, page.size, order.name).link(1))
    return f'<th><a href="{target}">{escape(order.header)}</a>{mark}</th>'


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
            ("The runs could not be read:" if not runs else "Not everything could be read:")
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
    return html_page("Training runs in the cluster", body)
