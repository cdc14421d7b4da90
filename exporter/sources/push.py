"""Push source: Kubeflow Trainer status POSTs and our native report POSTs.

The Kubeflow endpoint behaves like the upstream Trainer status server so the unchanged
Transformers ``KubeflowCallback`` and the Kubeflow SDK can point at it: 200 with the parsed
body echoed, 413 over 64 KiB, 422 with a ``metav1.Status`` for invalid JSON or values.
Request handling here is pure (no sockets): the server module does the HTTP.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ..core.model import (
    FORMAT_KUBEFLOW,
    KUBEFLOW_MAX_BODY_BYTES,
    ReportError,
    valid_kubernetes_names,
)
from ..core.wire import decode_json, parse_any, parse_kubeflow
from ..plumbing.discovery import PUSH, Denied, PushResolver, PushTarget
from ..plumbing.httpmessages import status_body
from ..plumbing.ingest import Ingestor

NAME = PUSH

KUBEFLOW_PATH = re.compile(
    r"^/apis/trainer\.kubeflow\.org/v1alpha1/namespaces/(?P<namespace>[^/]+)"
    r"/trainjobs/(?P<name>[^/]+)/status$"
)
NATIVE_PATH = re.compile(r"^/api/v1/namespaces/(?P<namespace>[^/]+)/runs/(?P<name>[^/]+)/report\Z")

# Kubernetes object name rules: namespaces are DNS-1123 labels, job names DNS-1123 subdomains.


@dataclass(frozen=True)
class PushResponse:
    """Status code and JSON body to send back."""

    status: int
    body: bytes


@dataclass(frozen=True, slots=True)
class PushRequest:
    """One POST from a pod, as the server read it: built once and passed down to the
    door (:func:`admit`) and the handler of its path."""

    namespace: str
    name: str
    body: bytes
    client_ip: str
    authorization: str | None
    now: float
    # Declared over the limit (Content-Length) and not read: answered 413.
    body_too_large: bool = False


def admit(
    source: str, request: PushRequest, resolver: PushResolver, ingestor: Ingestor
) -> PushTarget | PushResponse:
    """The run a POST may write (its names valid, its body within the limit, its sender
    the run's own pod), or the refusal to answer, counted under ``source``."""
    if not valid_kubernetes_names(request.namespace, request.name):
        ingestor.reject(source, ReportError("invalid_name", "invalid name"))
        return PushResponse(
            422, status_body(422, "Invalid", "namespace and name must be valid Kubernetes names")
        )
    if request.body_too_large or len(request.body) > KUBEFLOW_MAX_BODY_BYTES:
        ingestor.reject(source, ReportError("oversize", "oversize"))
        return PushResponse(
            413,
            status_body(
                413,
                "RequestEntityTooLarge",
                f"request body exceeds {KUBEFLOW_MAX_BODY_BYTES} bytes",
            ),
        )
    target = resolver.resolve(
        request.namespace, request.name, request.client_ip, request.authorization
    )
    if isinstance(target, Denied):
        ingestor.reject(source, ReportError(target.reason, target.message))
        reason = {429: "TooManyRequests", 503: "ServiceUnavailable"}.get(target.status, "Forbidden")
        return PushResponse(target.status, status_body(target.status, reason, target.message))
    return target


def handle_push(
    request: PushRequest, kubeflow: bool, resolver: PushResolver, ingestor: Ingestor
) -> PushResponse:
    """Validate, authorize, parse and ingest one push (``kubeflow``: on Kubeflow Trainer's
    path, answered as it answers); returns what to answer."""
    target = admit(NAME, request, resolver, ingestor)
    if isinstance(target, PushResponse):
        return target
    try:
        obj = decode_json(request.body)
        now = request.now
        parsed = parse_kubeflow(obj, now) if kubeflow else parse_any(obj, now)
    except ReportError as err:
        ingestor.reject(NAME, err)
        return PushResponse(422, status_body(422, "Invalid", err.message))
    upstream = kubeflow or parsed.report.format == FORMAT_KUBEFLOW
    ok, told = ingestor.push(NAME, target.key, parsed, target.meta, answer=not upstream)
    if not ok:
        return PushResponse(
            429, status_body(429, "TooManyRequests", "the exporter tracks its maximum of runs")
        )
    if upstream:
        echo = {"trainerStatus": obj.get("trainerStatus")} if isinstance(obj, dict) else {}
        return PushResponse(200, json.dumps(echo).encode())
    # The native answer carries directives (exporter.core.directives); the Kubeflow one stays
    # exactly what the upstream server answers.
    answer = {
        "status": "ok",
        "dropped": list(parsed.problems),
        "directives": list(told),
    }
    return PushResponse(200, json.dumps(answer).encode())
