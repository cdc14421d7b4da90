"""The one HTTP GET client: what the HTTP source pulls from pods, what the cluster page asks
each exporter, and what ``top`` reads from an exporter or Prometheus.

Bounded in everything a far end controls: the whole exchange within ``timeout`` seconds (a
timer closes the connection, so an answer at a byte a second cannot hold a thread for
minutes), at most ``max_bytes`` of body, no redirect followed (it would be a new target,
or carry a request to another host), and no proxy from the environment (``http.client``
reads none: the targets are on the pod network, and a proxy would see every answer).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from ..core.model import ReportError


def direct_opener(*handlers: urllib.request.BaseHandler) -> urllib.request.OpenerDirector:
    """A urllib opener that never goes through a proxy from the environment (urllib's own
    default reads ``HTTP_PROXY`` and ``HTTPS_PROXY``): what the exporter sends carries a
    pod's token or its own, to endpoints inside the cluster (a Kubeflow Trainer, a kubelet),
    and a variable in the DaemonSet's environment must not hand either to a third host."""
    return urllib.request.build_opener(urllib.request.ProxyHandler({}), *handlers)


class FetchError(ReportError):
    """Why a GET failed: ``reason`` (counted: ``invalid_url``, ``http_status``, ``timeout``,
    ``oversize``, ``unreachable``), ``message`` naming the URL, and ``detail`` without it
    ("answered 503 Service Unavailable"), for pages that name the target themselves."""

    def __init__(self, reason: str, url: str, detail: str, extra: str = "") -> None:
        super().__init__(reason, f"{url}: {detail}{extra}")
        self.detail = detail


def get(url: str, timeout: float, max_bytes: int, accept: str = "application/json") -> bytes:
    """The body of ``GET url``: status 200, at most ``max_bytes``, all of it within
    ``timeout`` seconds. Raises :class:`FetchError`."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FetchError("invalid_url", url, "only http and https URLs are fetched")
    try:
        port = parts.port
    except ValueError:
        raise FetchError("invalid_url", url, "bad port") from None
    connection = (
        http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    )
    conn = connection(parts.hostname, port, timeout=timeout)
    expired = threading.Event()
    # The socket, kept here: for a response that closes the connection, http.client hands
    # it to the response and clears conn.sock.
    held: list[socket.socket] = []

    def expire() -> None:
        expired.set()
        for sock in held:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    late = f"no answer within {timeout:g} s"
    timer = threading.Timer(timeout, expire)
    timer.daemon = True
    timer.start()
    try:
        conn.connect()
        if conn.sock is not None:
            held.append(conn.sock)
            if expired.is_set():  # the deadline passed while connecting
                raise TimeoutError
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        conn.request("GET", path, headers={"Accept": accept})
        resp = conn.getresponse()
        answered = f"answered {resp.status} {resp.reason}".rstrip()
        if 300 <= resp.status < 400:
            where = resp.getheader("Location", "")[:200]
            raise FetchError("http_status", url, answered, f" to {where!r}: not followed")
        if resp.status != 200:
            raise FetchError("http_status", url, answered)
        length = resp.getheader("Content-Length")
        if length is not None and length.isdigit() and int(length) > max_bytes:
            raise FetchError("oversize", url, f"answer of {length} bytes, over {max_bytes}")
        body = resp.read(max_bytes + 1)
    except FetchError:
        raise
    except (OSError, http.client.HTTPException, ValueError) as exc:
        if expired.is_set() or isinstance(exc, TimeoutError):
            raise FetchError("timeout", url, late) from None
        raise FetchError("unreachable", url, f"cannot connect: {exc}") from None
    finally:
        timer.cancel()
        conn.close()
    if expired.is_set():
        raise FetchError("timeout", url, late)
    if len(body) > max_bytes:
        raise FetchError("oversize", url, f"answer larger than {max_bytes} bytes")
    return body


class TooMuchJSON(ValueError):
    """A JSON answer refused unparsed: it would build more than its reader allows."""


def bounded_json(
    body: bytes,
    max_containers: int,
    max_separators: int,
    worth: str = "",
    parse_constant: Callable[[str], Any] | None = None,
) -> Any:
    """``body`` parsed as JSON, once it is counted and found to build at most
    ``max_containers`` arrays and objects and ``max_separators`` values (its ``[``, ``{``,
    ``,`` and ``:`` bytes, which no value can hide: an overcount at worst). Parsing costs
    many times the bytes (60 MiB of ``[],`` took a page to 1.6 GB), so a far end's answer is
    judged by what it would build before any of it is. Raises :class:`TooMuchJSON` naming
    the count and what the bound is ``worth`` ("10000 runs' worth"), or ValueError."""
    containers = body.count(b"[") + body.count(b"{")
    why = f" ({worth})" if worth else ""
    if containers > max_containers:
        raise TooMuchJSON(
            f"answer holds {containers} JSON arrays and objects, more than "
            f"{max_containers}{why}: not parsed"
        )
    separators = body.count(b",") + body.count(b":")
    if separators > max_separators:
        raise TooMuchJSON(
            f"answer holds {separators} JSON values, more than {max_separators}{why}: not parsed"
        )
    return json.loads(body, parse_constant=parse_constant)
