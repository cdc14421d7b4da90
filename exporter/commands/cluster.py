"""The cluster page: one URL for every run of every node, with no Prometheus.

Each exporter of the DaemonSet knows its own node. This small server (``training-progress-
exporter cluster``, a Deployment beside the DaemonSet) finds the exporters through their
Service's EndpointSlices (exporter/kubernetes/endpoints.py), asks each for
``/api/v1/runs`` at once, and merges what they answer. An exporter that does not answer, or
answers something that is not the runs document, is shown with the reason above the runs:
a node's runs are never left out in silence.

A run's detail page is rendered here, with this page's own template, from the JSON of the
exporter that holds the run (``nodes/{node}/runs/...``: no HTML an exporter sends is ever
served); its chart data and stacks are proxied (``nodes/{node}/api/v1/runs/.../timeline``,
``.../stacks``); only those paths, and only to an exporter the EndpointSlices list: this
server is no open proxy.

Everything read from an exporter is bounded (bytes, runs, the length of every string) and
reduced to plain values before it is rendered or served again.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import quote, unquote

from ..core.model import json_safe
from ..kubernetes.endpoints import Endpoint
from ..plumbing.fetch import FetchError, TooMuchJSON, bounded_json, get
from ..plumbing.httpd import POOL_INLINE, POOL_SCRAPE, HTTPServer
from ..plumbing.httpmessages import ConnectionLimits, Request, Response
from ..views import pagekit, runpage, statuspage
from ..views.assets import load_assets

JSON = "application/json"
HTML = "text/html; charset=utf-8"
PLAIN = "text/plain; charset=utf-8"
# Every page, proxied ones included, goes out with pagekit.page_headers(): inline code
# only by hash, so a page proxied from an exporter may reach nothing but this server and runs
# no script of its own; nothing proxied is taken for another type (nosniff).

# /api/v1/runs?history=0 of 10,000 runs is ~21 MB (2.1 KB a run; 66 MB with histories,
# which this page does not show and does not ask for).
MAX_BODY_BYTES = 32 * 1024 * 1024
MAX_PAGE_BYTES = 4 * 1024 * 1024  # a proxied detail page or timeline
MAX_RUNS_PER_EXPORTER = 10_000  # the exporter's own max_runs ceiling
# What parsing an answer may build, counted in its bytes before it is parsed: a run is 9
# arrays and objects and ~130 separators, so these allow MAX_RUNS_PER_EXPORTER runs with room
# to spare, and refuse an answer of millions of tiny values (60 MiB of "[]," took the
# page to 1.6 GB), whose parse would cost many times its bytes.
MAX_CONTAINERS = MAX_RUNS_PER_EXPORTER * 16
MAX_SEPARATORS = MAX_RUNS_PER_EXPORTER * 256
MAX_STRING = 1024
MAX_FIELDS = 128
IDENTITY = ("namespace", "pod", "job_name", "state")
FETCH_WORKERS = 16

Fetch = Callable[[str, float, int], bytes]


class ExporterError(Exception):
    """An exporter that could not be read, with why, in words."""


def fetch(url: str, timeout: float, max_bytes: int) -> bytes:
    """The body of ``GET url`` by the one bounded client (exporter.plumbing.fetch: the whole answer
    within ``timeout``, no proxy, no redirect followed). Raises ExporterError saying why
    not: refused, timed out, another status, too large."""
    try:
        return get(url, timeout, max_bytes, accept="application/json, text/html")
    except FetchError as exc:
        raise ExporterError(exc.detail) from None


def _plain(value: Any) -> tuple[bool, Any]:
    """(kept, value) for a value the cluster page serves again: short strings, finite
    numbers, booleans and nulls; anything else is dropped."""
    if value is None or isinstance(value, bool):
        return True, value
    if isinstance(value, int):
        return True, value
    if isinstance(value, float):
        return True, value if math.isfinite(value) else None
    if isinstance(value, str):
        return True, value[:MAX_STRING]
    return False, None


def clean_run(raw: Any) -> dict[str, Any] | None:
    """One run of an exporter's ``/api/v1/runs`` reduced to plain values (its top-level
    strings, numbers, booleans and nulls, and ``info``'s), or None when it lacks a string
    identity (namespace, pod, job name, state)."""
    if not isinstance(raw, dict) or not all(isinstance(raw.get(k), str) for k in IDENTITY):
        return None
    out: dict[str, Any] = {}
    for key, value in list(raw.items())[:MAX_FIELDS]:
        if not isinstance(key, str) or len(key) > 64:
            continue
        if key == "info" and isinstance(value, dict):
            info = {}
            for k, v in list(value.items())[:MAX_FIELDS]:
                kept, plain = _plain(v)
                if kept and isinstance(k, str) and len(k) <= 64:
                    info[k] = plain
            out["info"] = info
            continue
        kept, plain = _plain(value)
        if kept:
            out[key] = plain
    return out


MAX_STALL = 64  # ranks in a run's stall, as the exporter keeps them


def clean_detail(raw: Any) -> dict[str, Any] | None:
    """One run of a node's ``/api/v1/runs/{namespace}/{pod}`` reduced to what its page shows:
    :func:`clean_run`'s plain values, its custom metrics and the names of its non-finite
    values (name to number or string, bounded), and its stall (up to MAX_STALL ranks of
    plain values). None when it lacks a run's identity."""
    run = clean_run(raw)
    if run is None:
        return None
    for key in ("metrics", "non_finite"):
        found = raw.get(key)
        if isinstance(found, dict):
            run[key] = {
                k: v
                for k, v in list(found.items())[:256]
                if isinstance(k, str) and len(k) <= 64 and _plain(v)[0] and not isinstance(v, bool)
            }
    stall = raw.get("stall")
    if isinstance(stall, list):
        run["stall"] = [
            {k: _plain(v)[1] for k, v in list(d.items())[:MAX_FIELDS] if isinstance(k, str)}
            for d in stall[:MAX_STALL]
            if isinstance(d, dict)
        ]
    return run


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_runs(body: bytes) -> tuple[list[dict[str, Any]], int]:
    """The runs of an exporter's ``/api/v1/runs`` answer, cleaned, and how many were left
    out as malformed. Raises ExporterError when the answer is not that document, or would
    build more than a document of MAX_RUNS_PER_EXPORTER runs does (counted, not parsed)."""
    try:
        doc = bounded_json(
            body,
            MAX_CONTAINERS,
            MAX_SEPARATORS,
            f"{MAX_RUNS_PER_EXPORTER} runs' worth",
            parse_constant=_no_constant,
        )
    except TooMuchJSON as exc:
        raise ExporterError(str(exc)) from None
    except (ValueError, RecursionError) as exc:
        raise ExporterError(f"answer is not JSON: {str(exc)[:120]}") from None
    runs = doc.get("runs") if isinstance(doc, dict) else None
    if not isinstance(runs, list):
        raise ExporterError('answer has no "runs" list: not an exporter\'s /api/v1/runs')
    if len(runs) > MAX_RUNS_PER_EXPORTER:
        raise ExporterError(f"answer lists {len(runs)} runs, more than {MAX_RUNS_PER_EXPORTER}")
    cleaned = [c for c in (clean_run(r) for r in runs) if c is not None]
    return cleaned, len(runs) - len(cleaned)


@dataclass(frozen=True)
class ExporterResult:
    """What one exporter answered: its runs, or why there are none."""

    endpoint: Endpoint
    runs: tuple[dict[str, Any], ...] = ()
    error: str | None = None
    malformed: int = 0
    seconds: float = 0.0

    @property
    def status(self) -> str:
        if self.error is not None:
            return "error"
        return "ok" if self.endpoint.ready else "not ready"


@dataclass(frozen=True)
class Gathered:
    """Every exporter's answer at one time, and what stopped finding them (if anything); or,
    from Prometheus (exporter/commands/cluster_prometheus.py), the runs ``listed`` whole and
    what stopped reading them."""

    time: float
    exporters: tuple[ExporterResult, ...]
    discovery_error: str | None = None
    listed: tuple[dict[str, Any], ...] | None = None
    # From Prometheus: what the listed runs are shown without, and why (a query after the
    # runs' own that failed or was refused).
    missing: tuple[str, ...] = ()

    def runs(self) -> list[dict[str, Any]]:
        """Every run of every exporter that answered, each with ``exporter_node``."""
        if self.listed is not None:
            return list(self.listed)
        return [
            {**run, "exporter_node": result.endpoint.name}
            for result in self.exporters
            for run in result.runs
        ]

    def problems(self) -> list[str]:
        """Why runs may be missing, one line per cause."""
        out = []
        if self.listed is not None and self.discovery_error:
            return [f"reading the runs failed: {self.discovery_error}"]
        if self.listed is not None:
            return [f"the runs are shown without {what}" for what in self.missing]
        if self.discovery_error:
            out.append(f"finding the exporters failed: {self.discovery_error}")
        for r in self.exporters:
            if r.error is not None:
                out.append(f"node {r.endpoint.name} ({r.endpoint.url}): {r.error}")
            elif not r.endpoint.ready:
                out.append(f"node {r.endpoint.name} ({r.endpoint.url}): exporter not ready")
            if r.malformed:
                out.append(f"node {r.endpoint.name}: {r.malformed} malformed runs left out")
        return out


def _ask(endpoint: Endpoint, timeout: float, get: Fetch) -> ExporterResult:
    if not endpoint.ready:  # terminating or failing its probe: not asked, shown as such
        return ExporterResult(endpoint)
    started = time.monotonic()
    try:
        body = get(endpoint.url + "/api/v1/runs?history=0", timeout, MAX_BODY_BYTES)
        runs, malformed = parse_runs(body)
    except ExporterError as exc:
        return ExporterResult(endpoint, error=str(exc), seconds=time.monotonic() - started)
    return ExporterResult(endpoint, tuple(runs), None, malformed, time.monotonic() - started)


@dataclass
class ClusterView:
    """The merged runs, gathered at most every ``max_age`` seconds however many people
    look (a viewer who comes while a gather runs waits for it and shares it)."""

    endpoints: Callable[[], list[Endpoint]]
    timeout: float = 5.0
    max_age: float = 4.0
    get: Fetch = fetch
    clock: Callable[[], float] = time.time
    # The static files the proxied pages load (exporter/views/assets.py), read once.
    assets: Mapping[str, tuple[bytes, str]] = field(default_factory=load_assets)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _last: Gathered | None = None

    def gather(self) -> Gathered:
        """Every exporter's runs, no older than ``max_age``."""
        with self._lock:
            now = self.clock()
            if self._last is not None and now - self._last.time < self.max_age:
                return self._last
            try:
                endpoints, error = self.endpoints(), None
            except Exception as exc:  # the API down: show what is known, and why not more
                endpoints, error = [], str(exc)
            with ThreadPoolExecutor(max(1, min(FETCH_WORKERS, len(endpoints)))) as pool:
                results = tuple(pool.map(lambda e: _ask(e, self.timeout, self.get), endpoints))
            self._last = Gathered(self.clock(), results, error)
            return self._last

    def endpoint(self, name: str) -> Endpoint | None:
        """The exporter named ``name`` in the last gather (the proxy goes only there)."""
        last = self._last or self.gather()
        return next((r.endpoint for r in last.exporters if r.endpoint.name == name), None)


class RunsView(Protocol):
    """What the page's server needs of where the runs come from: the exporters
    (:class:`ClusterView`) or Prometheus (``cluster_prometheus.PrometheusView``, which also
    has ``source``, the words the page says the runs come from, and ``run``, a run's page
    data)."""

    assets: Mapping[str, tuple[bytes, str]]

    def gather(self) -> Gathered: ...


def merged_document(g: Gathered) -> dict[str, Any]:
    """The cluster's ``/api/v1/runs``: the node documents' runs, each with
    ``exporter_node``, and every exporter asked, with its status and error."""
    return {
        "time": g.time,
        "runs": g.runs(),
        "exporters": [
            {
                "node": r.endpoint.name,
                "url": r.endpoint.url,
                "status": r.status,
                "error": r.error,
                "runs": len(r.runs),
                "malformed_runs": r.malformed,
                "seconds": round(r.seconds, 3),
            }
            for r in g.exporters
        ],
        "discovery_error": g.discovery_error,
    }


def _json(doc: Any, status: int = 200) -> Response:
    return Response(status, json.dumps(json_safe(doc), allow_nan=False).encode(), JSON)


def _not_found(why: str) -> Response:
    return _json({"error": why}, 404)


def _proxy(view: ClusterView, node: str, rest: list[str]) -> Response:
    """``nodes/{node}/...``: a run's page, timeline or stacks from its exporter, the static files
    from here, the node's root back to the cluster page."""
    if not rest or rest == [""]:
        return Response(302, b"", PLAIN, {"Location": "../../"})
    if rest[0] == "static" and len(rest) == 2:
        return _static(view.assets, rest[1])
    endpoint = view.endpoint(node)
    if endpoint is None:
        return _not_found(f"no exporter named {node}")
    names = [unquote(p) for p in rest]
    if len(names) == 3 and names[0] == "runs" and all(names[1:]):
        return _run_page(view, node, endpoint, names[1], names[2])
    if not (
        len(names) == 6
        and names[:3] == ["api", "v1", "runs"]
        and names[5] in ("timeline", "stacks")
        and all(names[3:5])
    ):
        return _not_found("only a run's page, its timeline and its stacks are proxied")
    path = "/api/v1/runs/" + "/".join(quote(n, safe="") for n in names[3:5]) + "/" + names[5]
    kind = JSON
    try:
        body = view.get(endpoint.url + path, view.timeout, MAX_PAGE_BYTES)
    except ExporterError as exc:
        return _unread(node, endpoint, exc)
    return Response(200, body, kind, pagekit.page_headers())


def _unread(node: str, endpoint: Endpoint, exc: ExporterError) -> Response:
    status = 404 if "answered 404" in str(exc) else 502
    body = f"node {node} ({endpoint.url}): {exc}\n".encode()
    return Response(status, body, PLAIN, pagekit.page_headers())


def _run_page(
    view: ClusterView, node: str, endpoint: Endpoint, namespace: str, pod: str
) -> Response:
    """A run's page, rendered here from its node's JSON (``/api/v1/runs/{ns}/{pod}``) with
    the page's own template: no HTML a node sends is ever served (#56 F6), and every value
    in it is bounded and escaped like the cluster page's own."""
    path = "/api/v1/runs/" + quote(namespace, safe="") + "/" + quote(pod, safe="")
    try:
        body = view.get(endpoint.url + path, view.timeout, MAX_PAGE_BYTES)
        run = clean_detail(json.loads(body, parse_constant=_no_constant))
    except ExporterError as exc:
        return _unread(node, endpoint, exc)
    except (ValueError, RecursionError):
        run = None
    if run is None or (run["namespace"], run["pod"]) != (namespace, pod):
        return _unread(node, endpoint, ExporterError("answer is not that run's document"))
    page = runpage.detail(run, view.clock())
    return Response(200, page.encode(), HTML, pagekit.page_headers())


def _static(assets: Mapping[str, tuple[bytes, str]], name: str) -> Response:
    asset = assets.get(name)
    if asset is None:
        return _not_found(f"no static file {name}")
    return Response(200, asset[0], asset[1], {"Cache-Control": "public, max-age=3600"})


def _prometheus_run(view: Any, rest: str) -> Response:
    """``runs/{namespace}/{pod}`` from Prometheus: the run's page, rendered here from its
    series (one query)."""
    names = [unquote(p) for p in rest.split("/")]
    if len(names) != 2 or not all(names):
        return _not_found("a run's page is runs/{namespace}/{pod}")
    try:
        run = view.run(names[0], names[1])
    except RuntimeError as exc:
        return Response(502, f"{exc}\n".encode(), PLAIN, pagekit.page_headers())
    if run is None:
        return _not_found(f"Prometheus has no run {names[0]}/{names[1]}")
    page = runpage.detail(run, view.clock())
    return Response(200, page.encode(), HTML, pagekit.page_headers())


def route(view: RunsView, request: Request) -> Response:
    """The answer to one request to the cluster page's server."""
    if request.method not in ("GET", "HEAD"):
        return Response(405, b"only GET\n", PLAIN, {"Allow": "GET, HEAD"})
    path = request.path
    if path == "/healthz":
        return Response(200, b"ok\n", PLAIN)
    source = getattr(view, "source", None)  # the Prometheus the runs come from, if any
    if path == "/readyz":
        g = view.gather()
        ok = g.discovery_error is None
        detail = "ok" if ok else "; ".join(g.problems())
        return Response(200 if ok else 503, f"{detail}; exporters={len(g.exporters)}\n".encode())
    if path == "/":
        g = view.gather()
        exporters = [(r.endpoint.name, r.status) for r in g.exporters]
        shown = statuspage.Page.of(request.target.partition("?")[2])
        page = statuspage.cluster_index(
            g.runs(), exporters, g.time, g.problems(), shown, source=source
        )
        return Response(200, page.encode(), HTML, pagekit.page_headers())
    if source is not None and path.startswith("/runs/"):
        return _prometheus_run(view, path[len("/runs/") :])
    if path == "/api/v1/runs":
        return _json(merged_document(view.gather()))
    if path.startswith("/static/"):
        return _static(view.assets, path[len("/static/") :])
    if path.startswith("/nodes/") and isinstance(view, ClusterView):
        node, _, rest = path[len("/nodes/") :].partition("/")
        return _proxy(view, unquote(node), rest.split("/") if rest else [])
    return _not_found(f"no route for {path}")


def _pool(request: Request) -> str:
    return POOL_INLINE if request.path == "/healthz" else POOL_SCRAPE


def make_server(host: str, port: int, view: RunsView) -> HTTPServer:
    """The cluster page's server, bound (port 0 picks one); serve it with
    :func:`exporter.plumbing.httpd.serve_in_thread`."""
    return HTTPServer(
        host,
        port,
        lambda r: route(view, r),
        _pool,
        ConnectionLimits(max_body_bytes=0),
        server_name="training-progress-exporter-cluster",
    )


def static_endpoints(specs: list[str]) -> list[Endpoint]:
    """``--exporter`` values: ``URL`` or ``NAME=URL`` (the name shown as the node)."""
    out = []
    for spec in specs:
        name, sep, url = spec.partition("=")
        if not sep:
            name, url = spec.removeprefix("http://").rstrip("/"), spec
        if not url.startswith("http://"):
            raise ValueError(f"--exporter {spec}: not an http:// URL")
        out.append(Endpoint(name=name, url=url.rstrip("/")))
    return out
