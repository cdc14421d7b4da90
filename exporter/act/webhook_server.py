"""``act``'s HTTP front: Alertmanager's webhook at ``POST /api/v1/alerts`` (bearer token
required), ``/metrics`` and ``/healthz``. Served by the exporter's own HTTP server."""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable

from prometheus_client import CollectorRegistry, generate_latest

from ..plumbing.httpd import POOL_PUSH, POOL_SCRAPE, HTTPServer
from ..plumbing.httpmessages import ConnectionLimits, Request, Response
from .controller import TAKEN, Actor, NotLeader
from .handoff import FORWARDED, hand_on
from .kube import ClusterError
from .metrics import act_registry
from .webhook import MAX_BODY_BYTES, WebhookError, parse_notification

JSON = "application/json"
TEXT = "text/plain; version=0.0.4; charset=utf-8"
WEBHOOK = "/api/v1/alerts"


def _status(code: int, message: str) -> Response:
    return Response(code, json.dumps({"status": "error", "message": message}).encode(), JSON)


def route(
    actor: Actor,
    token: bytes,
    request: Request,
    registry: CollectorRegistry | None = None,
    leader_url: Callable[[], str] = lambda: "",
) -> Response:
    """The answer to one request (``registry``: act's metrics, built from ``actor`` when
    not given; ``leader_url``: where a follower hands notifications on)."""
    path = request.path
    if request.method in ("GET", "HEAD"):
        if path == "/metrics":
            return Response(200, generate_latest(registry or act_registry(actor)), TEXT)
        if path in ("/healthz", "/readyz"):
            return Response(200, b"ok\n")
        return _status(404, "not found")
    if request.method != "POST" or path != WEBHOOK:
        return _status(404 if request.method == "POST" else 405, "POST /api/v1/alerts only")
    given = request.headers.get("authorization", "").encode()
    if not hmac.compare_digest(given, b"Bearer " + token):
        actor.stats.notification("unauthorized")
        return Response(
            401,
            json.dumps({"status": "error", "message": "a bearer token is required"}).encode(),
            JSON,
            {"WWW-Authenticate": 'Bearer realm="training-progress-act"'},
        )
    if request.body_too_large:
        actor.stats.notification("rejected")
        return _status(413, f"notifications are limited to {MAX_BODY_BYTES} bytes")
    try:
        alerts = parse_notification(request.body)
    except WebhookError as err:
        actor.stats.notification("rejected")
        return _status(400, f"{err.reason}: {err}")
    try:
        outcomes = actor.handle(alerts)
    except NotLeader as err:
        if request.headers.get(FORWARDED):
            actor.stats.notification("retry")
            return _status(503, f"{err}; retry")
        status, answer = hand_on(leader_url(), WEBHOOK, request.body, given.decode())
        actor.stats.notification("handed_on" if status < 300 else "retry")
        return Response(status, answer, JSON)
    except ClusterError as err:
        # Alertmanager retries a notification answered 5xx; nothing was remembered.
        actor.stats.notification("retry")
        return _status(503, str(err))
    actor.stats.notification("accepted")
    body = {
        "status": "ok",
        "outcomes": [
            {
                "alert": o.alert,
                "namespace": o.namespace,
                "job": o.job,
                "action": o.action,
                "outcome": o.outcome,
                "message": o.message,
            }
            for o in outcomes
        ],
        "taken": sum(o.outcome == TAKEN for o in outcomes),
    }
    return Response(200, json.dumps(body).encode(), JSON)


def make_server(
    host: str,
    port: int,
    actor: Actor,
    token: str,
    leader_url: Callable[[], str] = lambda: "",
) -> HTTPServer:
    """Bind (port 0 picks a free port); call serve_forever to run. ``leader_url``: where
    this replica hands notifications on while it does not lead."""
    secret = token.encode()
    metrics = act_registry(actor)
    return HTTPServer(
        host,
        port,
        lambda r: route(actor, secret, r, metrics, leader_url),
        lambda r: POOL_PUSH if r.method == "POST" else POOL_SCRAPE,
        ConnectionLimits(max_body_bytes=MAX_BODY_BYTES),
        server_name="training-progress-act",
    )
