"""HTTP/1.1 messages as the exporter's server reads and writes them: a request's head parsed
strictly (CRLF only, one Content-Length, one Authorization: where two parsers on the path
could disagree, the request is refused), the request and response values the routes see,
the bounds a client meets, and Kubernetes' ``Status`` failure body. Pure; the connections
themselves are :mod:`exporter.plumbing.httpd`'s.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from http import HTTPStatus

_TOKEN = re.compile(rb"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")


_DIGITS = re.compile(r"^[0-9]+\Z")


_REQUEST_LINE = re.compile(rb"^([A-Z]+) (\S+) HTTP/(1\.[01])\r\n\Z")


@dataclass(frozen=True)
class ConnectionLimits:
    """Bounds on what a client can hold; defaults documented in docs/reliability.md."""

    max_connections: int = 256
    header_timeout: float = 10.0
    body_timeout: float = 10.0
    idle_timeout: float = 60.0
    write_timeout: float = 10.0  # per chunk: a client must keep reading
    response_timeout: float = 60.0  # a whole answer, however slowly the client reads
    max_views: int = 4  # view answers (/metrics, /, /api/v1/runs) built or being sent at once
    # One address may hold this many connections, and this many views at once: a client
    # that floods connections, or asks for views and never reads them, competes with
    # itself, not with Prometheus (another address).
    max_connections_per_client: int = 64
    max_views_per_client: int = 2
    max_line_bytes: int = 8192
    max_headers: int = 100
    # The whole head (request line and headers): 100 lines of 8 KiB held open by 256
    # clients would be 200 MB; 16 KiB each is 4 MB (nginx allows 4 x 8 KiB by default).
    max_head_bytes: int = 16 * 1024
    max_body_bytes: int = 64 * 1024
    scrape_workers: int = 2
    push_workers: int = 4
    forward_workers: int = 4
    max_queued: int = 256  # per pool: requests waiting for a worker


@dataclass(frozen=True)
class Request:
    """One parsed request; header names are lower case."""

    method: str
    target: str
    version: str
    headers: dict[str, str]
    body: bytes
    client_ip: str
    body_too_large: bool = False  # declared over the limit; the body was not read

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]


@dataclass
class Response:
    """What to send. ``body`` is bytes, or an iterator of chunks produced in the worker
    thread (sent with chunked encoding; the iterator is closed if the client leaves)."""

    status: int
    body: bytes | Iterator[bytes] = b""
    content_type: str = "text/plain; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)


class HttpError(Exception):
    """A request that cannot be parsed: answered with ``status`` and the connection closed."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason  # the counter's label


def status_body(code: int, reason: str, message: str) -> bytes:
    """A Kubernetes ``metav1.Status`` failure body, as the API server (and the Kubeflow
    Trainer's progress endpoint) answers a request it refuses: what a pod's client expects
    from the exporter's push endpoints and from its forwarding of them."""
    return json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        }
    ).encode()


def content_length(values: list[str]) -> int:
    """The one body length that every ``Content-Length`` value agrees on.

    Raises :class:`HttpError` (400) for a value that is not plain digits (``+2``, ``1_1``,
    `` -1``) or for values that differ: a proxy and this server could otherwise disagree
    on where the body ends (request smuggling, RFC 9112 section 6.3).
    """
    lengths = set()
    for value in values:
        for part in value.split(","):
            part = part.strip(" \t")
            if not _DIGITS.match(part) or len(part) > 18:
                raise HttpError(400, "bad_length", f"invalid Content-Length {value!r}")
            lengths.add(int(part))
    if len(lengths) > 1:
        raise HttpError(400, "bad_length", "conflicting Content-Length headers")
    return lengths.pop() if lengths else 0


def parse_head(
    lines: list[bytes], limits: ConnectionLimits
) -> tuple[str, str, str, dict[str, list[str]]]:
    """Method, target, version and headers (name -> values) of a request head.

    Pure: ``lines`` are the raw lines up to, not including, the empty line.
    """
    m = _REQUEST_LINE.match(lines[0])
    if m is None and lines[0].endswith(b"\n") and not lines[0].endswith(b"\r\n"):
        raise HttpError(400, "bad_line_end", "the request line must end with CRLF")
    if m is None:
        if re.match(rb"^[A-Z]+ \S+ HTTP/\d", lines[0]):
            raise HttpError(505, "bad_version", "only HTTP/1.0 and HTTP/1.1 are served")
        raise HttpError(400, "bad_request_line", "malformed request line")
    headers: dict[str, list[str]] = {}
    for raw in lines[1:]:
        # CRLF only (RFC 9112 2.2): a bare LF or a CR inside a line is how two parsers on
        # the path come to disagree about where a header ends.
        if not raw.endswith(b"\r\n") or b"\r" in raw[:-2]:
            raise HttpError(400, "bad_line_end", "header lines must end with CRLF")
        line = raw[:-2]
        name, sep, value = line.partition(b":")
        # No folded lines, no space before the colon: both let two parsers disagree.
        if not sep or not _TOKEN.match(name):
            raise HttpError(400, "bad_header", "malformed header line")
        try:
            text = value.strip(b" \t").decode("latin-1")
        except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes every byte
            raise HttpError(400, "bad_header", "malformed header value") from None
        headers.setdefault(name.decode("ascii").lower(), []).append(text)
    if len(headers.get("authorization", [])) > 1:
        # Which one would a proxy have checked? Neither is trusted.
        raise HttpError(400, "duplicate_authorization", "more than one Authorization header")
    return m.group(1).decode(), m.group(2).decode("latin-1"), m.group(3).decode(), headers


def response_head(status: int, version: str, headers: dict[str, str]) -> bytes:
    phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else ""
    lines = [f"HTTP/{version} {status} {phrase}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
