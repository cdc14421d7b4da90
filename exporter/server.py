"""HTTP: ``/metrics``, ``/healthz``, ``/readyz``, ``/api/v1/runs`` and the push endpoints.

Standard library ``http.server`` with one thread per keep-alive connection. The handler only
does HTTP framing; what each route answers is decided by the push source, the collectors
and the API module.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import choose_encoder

from . import statuspage
from .api import runs_document
from .collector import render_runs_text, renderable
from .ingest import Ingestor
from .model import KUBEFLOW_MAX_BODY_BYTES, Clock
from .sources.push import (
    KUBEFLOW_PATH,
    NATIVE_PATH,
    PushResolver,
    handle_push,
    status_body,
)
from .sources.push import (
    NAME as PUSH,
)
from .stats import ExporterStats
from .tracker import RunSnapshot, Tracker

TEXT_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def wants_openmetrics(accept: str) -> bool:
    """True only when the client cannot take the text format. Prometheus offers both and
    gets text, which this exporter renders on its fast path."""
    accept = accept.lower()
    return "application/openmetrics-text" in accept and not (
        "text/plain" in accept or "*/*" in accept
    )


@dataclass
class ServerContext:
    """What the request handler needs; one per exporter, no globals."""

    registry: CollectorRegistry  # every collector: for encoders other than plain text
    self_registry: CollectorRegistry  # the exporter's own metrics only
    tracker: Tracker
    ingestor: Ingestor
    resolver: PushResolver
    clock: Clock
    ready: Callable[[], tuple[bool, str]]
    stats: ExporterStats


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "training-progress-exporter"
    disable_nagle_algorithm = True
    ctx: ServerContext  # set on the subclass made by make_server
    # Idle keep-alive connections are closed after this many seconds.
    timeout = 60

    def log_message(self, format: str, *args: Any) -> None:
        return  # access logs at our request rates would dwarf the work itself

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        ctx = self.ctx
        if path == "/metrics":
            accept = self.headers.get("Accept", "")
            if wants_openmetrics(accept):
                encoder, content_type = choose_encoder(accept)
                self._send(200, encoder(ctx.registry), content_type)
            else:
                runs = render_runs_text(self._runs(ctx.clock())).encode()
                self._send(200, runs + generate_latest(ctx.self_registry), TEXT_CONTENT_TYPE)
        elif path == "/healthz":
            self._send(200, b"ok\n", "text/plain; charset=utf-8")
        elif path == "/readyz":
            ok, detail = ctx.ready()
            self._send(200 if ok else 503, (detail + "\n").encode(), "text/plain; charset=utf-8")
        elif path == "/api/v1/runs":
            now = ctx.clock()
            doc = runs_document(self._runs(now, history=True), now)
            self._send(200, json.dumps(doc).encode())
        elif path == "/":
            now = ctx.clock()
            page = statuspage.index(self._runs(now, history=True), now)
            self._send(200, page.encode(), "text/html; charset=utf-8")
        elif path.startswith("/runs/"):
            self._run_page(path)
        else:
            self._send(404, status_body(404, "NotFound", f"no route for {path}"))

    def _runs(self, now: float, history: bool = False) -> list[RunSnapshot]:
        """Every run a view can render (one that cannot is left out and counted)."""
        snapshots, skipped = renderable(self.ctx.tracker.snapshot(now, history=history))
        self.ctx.stats.set_unrenderable(skipped)
        return snapshots

    def _run_page(self, path: str) -> None:
        parts = [unquote(p) for p in path.split("/")[2:]]
        now = self.ctx.clock()
        if len(parts) == 2:
            for snap in self._runs(now, history=True):
                if (snap.key.namespace, snap.key.pod) == (parts[0], parts[1]):
                    page = statuspage.detail(snap, now)
                    self._send(200, page.encode(), "text/html; charset=utf-8")
                    return
        self._send(
            404,
            b'<!doctype html><p>No such run. <a href="../../">All runs</a>',
            "text/html; charset=utf-8",
        )

    def _read_body(self) -> bytes | None:
        """The request body, or None after answering (no length, chunked, or too large)."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            self.close_connection = True
            self._send(411, status_body(411, "LengthRequired", "Content-Length is required"))
            return None
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            length = -1
        if length < 0:
            self.close_connection = True
            self._send(400, status_body(400, "BadRequest", "invalid Content-Length"))
            return None
        if length > KUBEFLOW_MAX_BODY_BYTES:
            # Do not read a body we will refuse; the connection cannot be reused after that.
            self.close_connection = True
            return b"\0" * (KUBEFLOW_MAX_BODY_BYTES + 1)
        return self.rfile.read(length) if length else b""

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        m = KUBEFLOW_PATH.match(path)
        kubeflow = m is not None
        if m is None:
            m = NATIVE_PATH.match(path)
        if m is None:
            self._send(404, status_body(404, "NotFound", f"no route for POST {path}"))
            return
        body = self._read_body()
        if body is None:
            return
        ctx = self.ctx
        resp = handle_push(
            kubeflow=kubeflow,
            namespace=m.group("namespace"),
            name=m.group("name"),
            body=body,
            client_ip=self.client_address[0],
            authorization=self.headers.get("Authorization"),
            resolver=ctx.resolver,
            ingestor=ctx.ingestor,
            now=ctx.clock(),
        )
        self._send(resp.status, resp.body)

    do_PUT = do_POST


class ExporterHTTPServer(ThreadingHTTPServer):
    """Threading server whose threads never keep the process alive."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


def make_server(host: str, port: int, ctx: ServerContext) -> ExporterHTTPServer:
    """Bind (port 0 picks a free port) and return the server; call serve_forever to run."""
    handler = type("Handler", (_Handler,), {"ctx": ctx})
    return ExporterHTTPServer((host, port), handler)


def serve_in_thread(server: ExporterHTTPServer) -> threading.Thread:
    """Run ``server`` on a daemon thread and return it."""
    # serve_forever checks for shutdown every poll_interval (0.5 s by default): a shorter one
    # makes stop() (and every restart in the tests) that much quicker, at no cost while idle.
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="http-server", daemon=True
    )
    thread.start()
    return thread


__all__ = ["PUSH", "ExporterHTTPServer", "ServerContext", "make_server", "serve_in_thread"]
