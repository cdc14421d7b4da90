"""Stacks source: each rank's reporter posts its threads' stacks, or asks whether it should.

``POST /api/v1/namespaces/{namespace}/runs/{name}/stacks`` with ``{"rank": 1}`` asks (the
reporter of a rank other than 0 does so at each heartbeat; rank 0 learns it from its
report's answer); with ``"threads"`` too, it delivers them (docs/report-format.md#stacks).
The answer is ``{"status": "ok", "directives": ["stacks"]}`` when the exporter wants that
rank's stacks now. Authorized exactly as a report push to the same run (the pod's own IP or
token): one pod can neither read nor write another's stacks. Pure request handling; the
server module does the HTTP.
"""

from __future__ import annotations

import json
import re

from ..core.directives import STACKS
from ..core.model import ReportError
from ..core.wire import decode_json, parse_rank, parse_stacks
from ..plumbing.discovery import PushResolver
from ..plumbing.httpmessages import status_body
from ..plumbing.ingest import Ingestor
from .push import PushRequest, PushResponse, admit

NAME = "stacks"
STACKS_PATH = re.compile(r"^/api/v1/namespaces/(?P<namespace>[^/]+)/runs/(?P<name>[^/]+)/stacks\Z")


def handle_stacks(request: PushRequest, resolver: PushResolver, ingestor: Ingestor) -> PushResponse:
    """Validate, authorize and keep one rank's stacks (or answer its question)."""
    target = admit(NAME, request, resolver, ingestor)
    if isinstance(target, PushResponse):
        return target
    try:
        doc = decode_json(request.body)
        if not isinstance(doc, dict):
            raise ReportError("invalid_stacks", "not a JSON object")
        rank = parse_rank(doc.get("rank"))
        stacks = parse_stacks(doc, request.now) if "threads" in doc else None
    except ReportError as err:
        ingestor.reject(NAME, err)
        return PushResponse(422, status_body(422, "Invalid", err.message))
    if stacks is not None and not ingestor.stacks(NAME, target.key, stacks):
        return PushResponse(
            404, status_body(404, "NotFound", "no such run yet: its progress reports come first")
        )
    wanted = ingestor.wants_stacks(target.key, rank)
    answer = {"status": "ok", "directives": [STACKS] if wanted else []}
    return PushResponse(200, json.dumps(answer).encode())
