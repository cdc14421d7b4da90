"""HTTP routes: ``/metrics``, ``/healthz``, ``/readyz``, ``/api/v1/runs``, pages and pushes.

The framing (connections, deadlines, worker pools, streaming) is :mod:`exporter.plumbing.httpd`;
what each route answers is decided by the push source, the collectors and the API module.
This module only maps one to the other.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import unquote

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import choose_encoder
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest

from ..core.model import KUBEFLOW_MAX_BODY_BYTES, Clock, RunKey, json_safe
from ..core.run.snapshot import RunSnapshot
from ..core.stacks import Diagnosis, RankStacks
from ..core.tracker import Tracker
from ..plumbing.discovery import PUSH, CodeReader, PushResolver, StandaloneCodeReader
from ..plumbing.httpd import (
    POOL_FORWARD,
    POOL_INLINE,
    POOL_PUSH,
    POOL_SCRAPE,
    HTTPServer,
    HTTPStats,
    serve_in_thread,
)
from ..plumbing.httpmessages import ConnectionLimits, Request, Response, status_body
from ..plumbing.ingest import Ingestor
from ..plumbing.stats import ExporterStats
from ..sources.forward import Forwarder
from ..sources.push import KUBEFLOW_PATH, NATIVE_PATH, PushRequest, handle_push
from ..sources.stack_push import STACKS_PATH, handle_stacks
from ..views import pagekit, runpage, statuspage
from ..views.api import iter_runs_json, run_to_dict, stacks_document
from ..views.assets import load_assets
from ..views.catalog import RUN_FAMILIES, Family
from ..views.charts import chart_document
from ..views.collector import can_render, iter_runs_text, renderable
from ..views.stackviews import stacks_without_code, without_code

TEXT_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
JSON = "application/json"
HTML = "text/html; charset=utf-8"
PLAIN = "text/plain; charset=utf-8"
# Paths answered on the event loop itself: they must stay up whatever the workers do.
PROBES = ("/healthz", "/readyz")


def wants_openmetrics(accept: str) -> bool:
    """True only when the client cannot take the text format. Prometheus offers both and
    gets text, which this exporter renders on its fast, streamed path."""
    accept = accept.lower()
    return "application/openmetrics-text" in accept and not (
        "text/plain" in accept or "*/*" in accept
    )


@dataclass
class ServerContext:
    """What the routes need; one per exporter, no globals."""

    registry: CollectorRegistry  # every collector: for encoders other than plain text
    self_registry: CollectorRegistry  # the exporter's own metrics only
    tracker: Tracker
    ingestor: Ingestor
    resolver: PushResolver
    clock: Clock
    ready: Callable[[], tuple[bool, str]]
    stats: ExporterStats
    forwarder: Forwarder | None = None  # Kubeflow pushes go on upstream (kubeflow_forward_url)
    # read_authorization: (path, client IP, Authorization) -> a refusal's status, or None.
    read_guard: Callable[[str, str, str | None], int | None] | None = None
    # Who may read a run's source lines (its stacks' code); standalone: this machine only.
    reader: CodeReader = field(default_factory=StandaloneCodeReader)
    # The status page's static files (exporter/views/assets.py), read once.
    assets: Mapping[str, tuple[bytes, str]] = field(default_factory=load_assets)
    # The per-run families as exported (collector.families: lean_series trims three).
    catalog: tuple[Family, ...] = RUN_FAMILIES


def pool_of(
    request: Request, pushes_block: bool = True, forwarding: bool = False, reads_block: bool = False
) -> str:
    """Which worker pool answers ``request``: probes and 404s on the loop, views in their
    own pool, pushes in theirs, or on the loop when nothing in them waits on the network
    (standalone: a thread handoff would cost more than the push itself). Kubeflow pushes
    that go on upstream have a pool of their own: a slow upstream holds only those."""
    if request.method in ("POST", "PUT"):
        if forwarding and KUBEFLOW_PATH.match(request.path):
            return POOL_FORWARD
        return POOL_PUSH if pushes_block else POOL_INLINE
    path = request.path
    if reads_block and path not in PROBES:  # its read guard may ask the API server
        return POOL_SCRAPE
    if path in PROBES or not (
        path in ("/", "/metrics", "/api/v1/runs") or path.startswith(("/runs/", "/api/v1/runs/"))
    ):
        return POOL_INLINE
    return POOL_SCRAPE


def _runs(ctx: ServerContext, now: float) -> list[RunSnapshot]:
    """Every run a view can render (one that cannot is left out and counted)."""
    snapshots, skipped = renderable(ctx.tracker.snapshot(now))
    ctx.stats.set_unrenderable(skipped + ctx.tracker.failed_last_pass)
    return snapshots


# Chunks of a streamed /metrics are gathered up to this size: each costs a thread handoff.
STREAM_CHUNK_BYTES = 256 * 1024


def _chunks(parts: Iterator[str]) -> Iterator[bytes]:
    """``parts`` gathered into chunks of about :data:`STREAM_CHUNK_BYTES`."""
    pending: list[str] = []
    size = 0
    for part in parts:
        pending.append(part)
        size += len(part)
        if size >= STREAM_CHUNK_BYTES:
            yield "".join(pending).encode()
            pending, size = [], 0
    if pending:
        yield "".join(pending).encode()


def _metrics_text(ctx: ServerContext, openmetrics: bool = False) -> Iterator[bytes]:
    """The exposition (text 0.0.4, or OpenMetrics) in chunks of about
    :data:`STREAM_CHUNK_BYTES`; the snapshot is taken on the first ``next``."""
    runs = _runs(ctx, ctx.clock())
    yield from _chunks(iter_runs_text(runs, openmetrics=openmetrics, catalog=ctx.catalog))
    if openmetrics:
        yield openmetrics_latest(ctx.self_registry)  # type: ignore[no-untyped-call]
    else:
        yield generate_latest(ctx.self_registry)


def _runs_json(ctx: ServerContext, history: bool = True) -> Iterator[bytes]:
    """``/api/v1/runs``, streamed: snapshots a batch at a time, one run's JSON at a time.
    ``history`` False (``?history=0``): without each run's loss history, what the cluster
    page asks for (a tenth of the bytes)."""
    now = ctx.clock()
    skipped = 0

    def runs() -> Iterator[RunSnapshot]:
        nonlocal skipped
        for s in ctx.tracker.iter_snapshots(now, history=history):
            if can_render(s):
                yield without_code(s)  # a list view carries no source line
            else:
                skipped += 1

    yield from _chunks(iter_runs_json(runs(), now))
    ctx.stats.set_unrenderable(skipped + ctx.tracker.failed_last_pass)


def _index(ctx: ServerContext, request: Request) -> Response:
    """``/``: one page of the runs in the order asked (``?page=&per_page=&sort=``), with the
    totals of all. The runs are walked a batch of snapshots at a time and only each one's
    place in the order is kept; the page's runs alone are rendered. One view of 10,000 runs
    took 745 MiB when every run was rendered (#56 F7)."""
    now = ctx.clock()
    page = statuspage.Page.of(request.target.partition("?")[2])
    places: list[tuple[tuple[Any, ...], RunKey]] = []
    states: dict[str, int] = {}
    skipped = 0
    for s in ctx.tracker.iter_snapshots(now):
        if not can_render(s):
            skipped += 1
            continue
        places.append((statuspage.sort_key(s, page.sort), s.key))
        states[s.state] = states.get(s.state, 0) + 1
    ctx.stats.set_unrenderable(skipped + ctx.tracker.failed_last_pass)
    places.sort()
    start = (page.number - 1) * page.size
    shown = [
        without_code(snap)
        for _, key in places[start : start + page.size]
        if (snap := ctx.tracker.snapshot_one(key, now)) is not None and can_render(snap)
    ]
    body = statuspage.index_page(shown, now, page, len(places), states)
    return Response(200, body.encode(), HTML, pagekit.page_headers())


def _find(ctx: ServerContext, namespace: str, pod: str) -> RunKey | None:
    """The run of ``pod`` (the last by job name, should a pod have reported under two)."""
    every = ctx.tracker.keys()
    keys = [k for k in every if (k.namespace, k.pod) == (namespace, pod)]
    return max(keys, default=None)


def _run_parts(path: str, prefix: str, suffix: str = "") -> tuple[str, str] | None:
    """``(namespace, pod)`` of ``{prefix}{namespace}/{pod}{suffix}``, or None."""
    if not path.startswith(prefix) or not path.endswith(suffix):
        return None
    rest = path[len(prefix) : len(path) - len(suffix)]
    parts = rest.split("/")
    if len(parts) != 2 or not all(parts):
        return None
    return unquote(parts[0]), unquote(parts[1])


def _may_read_code(ctx: ServerContext, request: Request, key: RunKey) -> bool:
    """Whether the caller of ``request`` may see ``key``'s source lines (CodeReader)."""
    return ctx.reader.may_read(
        key.namespace, key.pod, request.client_ip, request.headers.get("authorization")
    )


def _run_page(ctx: ServerContext, request: Request) -> Response:
    parts = _run_parts(request.path, "/runs/")
    key = _find(ctx, *parts) if parts else None
    now = ctx.clock()
    snap = ctx.tracker.snapshot_one(key, now) if key else None
    if key is not None and snap is not None and can_render(snap):
        if not _may_read_code(ctx, request, key):
            snap = without_code(snap)
        page = runpage.run_detail(snap, now)
        return Response(200, page.encode(), HTML, pagekit.page_headers())
    return Response(
        404,
        b'<!doctype html><p>No such run. <a href="../../">All runs</a>',
        HTML,
        pagekit.page_headers(),
    )


_Found = TypeVar("_Found")


def _run_json(
    ctx: ServerContext,
    path: str,
    suffix: str,
    read: Callable[[RunKey, float], _Found | None],
    render: Callable[[_Found, float], Any],
) -> Response:
    """``/api/v1/runs/{namespace}/{pod}{suffix}``: ``render`` of what ``read`` gives for the
    run, as JSON; 404 for a run that is not tracked."""
    parts = _run_parts(path, "/api/v1/runs/", suffix)
    key = _find(ctx, *parts) if parts else None
    now = ctx.clock()
    found = read(key, now) if key else None
    if found is None:
        return Response(404, status_body(404, "NotFound", "no such run"), JSON)
    doc = json_safe(render(found, now))
    return Response(200, json.dumps(doc, allow_nan=False).encode(), JSON)


def _timeline(ctx: ServerContext, path: str) -> Response:
    """``/api/v1/runs/{namespace}/{pod}/timeline``: what the run's charts draw."""
    return _run_json(
        ctx, path, "/timeline", ctx.tracker.timeline, lambda f, now: chart_document(*f, now)
    )


def _static(ctx: ServerContext, path: str) -> Response:
    asset = ctx.assets.get(path[len("/static/") :])
    if asset is None:
        return Response(404, status_body(404, "NotFound", f"no route for {path}"), JSON)
    return Response(200, asset[0], asset[1], {"Cache-Control": "public, max-age=3600"})


def _get(ctx: ServerContext, request: Request) -> Response:
    path = request.path
    if path == "/metrics":
        accept = request.headers.get("accept", "")
        if wants_openmetrics(accept):
            _, content_type = choose_encoder(accept)
            return Response(200, _metrics_text(ctx, openmetrics=True), content_type)
        return Response(200, _metrics_text(ctx), TEXT_CONTENT_TYPE)
    if path == "/healthz":
        return Response(200, b"ok\n", PLAIN)
    if path == "/readyz":
        ok, detail = ctx.ready()
        return Response(200 if ok else 503, (detail + "\n").encode(), PLAIN)
    if path == "/api/v1/runs":
        history = "history=0" not in request.target.partition("?")[2].split("&")
        return Response(200, _runs_json(ctx, history), JSON)
    if path == "/":
        return _index(ctx, request)
    if path.startswith("/runs/"):
        return _run_page(ctx, request)
    if path.startswith("/api/v1/runs/") and path.endswith("/timeline"):
        return _timeline(ctx, path)
    if path.startswith("/api/v1/runs/") and path.endswith("/stacks"):
        return _stacks(ctx, request)
    if path.startswith("/api/v1/runs/"):
        return _run(ctx, request)
    if path.startswith("/static/"):
        return _static(ctx, path)
    return Response(404, status_body(404, "NotFound", f"no route for {path}"), JSON)


def _push_request(ctx: ServerContext, request: Request, namespace: str, name: str) -> PushRequest:
    """The POST as the push handlers take it, read once."""
    return PushRequest(
        namespace=namespace,
        name=name,
        body=request.body,
        client_ip=request.client_ip,
        authorization=request.headers.get("authorization"),
        now=ctx.clock(),
        body_too_large=request.body_too_large,
    )


def _post(ctx: ServerContext, request: Request) -> Response:
    """A POST: a progress report on Kubeflow's path or the native one, or a rank's stacks
    (or its question whether to send them), each routed by its own path."""
    path = request.path
    for pattern, kubeflow in ((KUBEFLOW_PATH, True), (NATIVE_PATH, False)):
        m = pattern.match(path)
        if m is not None:
            push = _push_request(ctx, request, m["namespace"], m["name"])
            resp = handle_push(push, kubeflow, ctx.resolver, ctx.ingestor)
            if kubeflow and resp.status == 200 and ctx.forwarder is not None:
                # Recorded here; the job's answer is Kubeflow Trainer's own.
                relayed = ctx.forwarder.forward(path, push.body, push.authorization)
                return Response(relayed.status, relayed.body, JSON)
            return Response(resp.status, resp.body, JSON)
    m = STACKS_PATH.match(path)
    if m is not None:
        push = _push_request(ctx, request, m["namespace"], m["name"])
        resp = handle_stacks(push, ctx.resolver, ctx.ingestor)
        return Response(resp.status, resp.body, JSON)
    return Response(404, status_body(404, "NotFound", f"no route for POST {path}"), JSON)


def _run(ctx: ServerContext, request: Request) -> Response:
    """``/api/v1/runs/{namespace}/{pod}``: one run as ``/api/v1/runs?history=0`` lists it
    (its charts' data is ``.../timeline``), its stall's source lines for a caller who may
    read them (CodeReader). The cluster page renders a node's run page from it."""

    def read(key: RunKey, now: float) -> RunSnapshot | None:
        snap = ctx.tracker.snapshot_one(key, now)
        if snap is None or not can_render(snap):
            return None
        return snap if _may_read_code(ctx, request, key) else without_code(snap)

    return _run_json(ctx, request.path, "", read, lambda s, now: run_to_dict(s))


Held = list[tuple[RankStacks, Diagnosis]]  # each rank's newest stacks and their cause


def _stacks(ctx: ServerContext, request: Request) -> Response:
    """``/api/v1/runs/{namespace}/{pod}/stacks``: each rank's newest stacks and cause, with
    their source lines for a caller who may read them (CodeReader), without for others."""

    def read(
        key: RunKey, now: float
    ) -> tuple[RunSnapshot, list[tuple[RankStacks, Diagnosis]]] | None:
        found = ctx.tracker.stacks(key, now)
        if found is None or _may_read_code(ctx, request, key):
            return found
        return without_code(found[0]), stacks_without_code(found[1])

    return _run_json(ctx, request.path, "/stacks", read, lambda f, now: stacks_document(*f, now))


def route(ctx: ServerContext, request: Request) -> Response:
    """The answer to one complete request."""
    if request.method in ("GET", "HEAD"):
        if ctx.read_guard is not None and request.path not in PROBES:
            refused = ctx.read_guard(
                request.path, request.client_ip, request.headers.get("authorization")
            )
            if refused is not None:
                return _refused_read(refused)
        return _get(ctx, request)
    if request.method in ("POST", "PUT"):
        return _post(ctx, request)
    return Response(
        405,
        status_body(405, "MethodNotAllowed", f"{request.method} is not served"),
        JSON,
        {"Allow": "GET, HEAD, POST, PUT"},
    )


def _refused_read(status: int) -> Response:
    """401 for a read without a bearer token, 403 for one whose user may not get it."""
    if status == 401:
        message = "this exporter answers reads with a bearer token (read_authorization)"
        return Response(
            401, status_body(401, "Unauthorized", message), JSON, {"WWW-Authenticate": "Bearer"}
        )
    message = "the token's user may not get this path (SubjectAccessReview)"
    return Response(403, status_body(403, "Forbidden", message), JSON)


def make_server(
    host: str,
    port: int,
    ctx: ServerContext,
    limits: ConnectionLimits | None = None,
    stats: HTTPStats | None = None,
) -> HTTPServer:
    """Bind (port 0 picks a free port) and return the server; call serve_forever to run."""
    limits = limits or ConnectionLimits(max_body_bytes=KUBEFLOW_MAX_BODY_BYTES)
    blocks = ctx.resolver.may_block
    forwarding = ctx.forwarder is not None
    return HTTPServer(
        host,
        port,
        lambda r: route(ctx, r),
        lambda r: pool_of(r, blocks, forwarding, ctx.read_guard is not None),
        limits,
        stats,
    )


__all__ = [
    "PUSH",
    "ServerContext",
    "make_server",
    "route",
    "serve_in_thread",
]
