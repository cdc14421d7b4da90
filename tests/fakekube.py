"""A fake Kubernetes API server that speaks the real HTTP list/watch protocol to the real
``kubernetes`` client: list with ``resourceVersion``, chunked watch streams of
ADDED/MODIFIED/DELETED events (and BOOKMARK when asked), 410 Gone for a resourceVersion
older than what it keeps, and label/field-free filtering by namespace.

Resources are addressed as the API does: ``/api/v1/namespaces/NS/pods``,
``/apis/GROUP/VERSION/namespaces/NS/PLURAL`` and the cluster-wide ``/apis/GROUP/VERSION/PLURAL``.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

_PATH = re.compile(
    r"^/(?:api/(?P<core>v1)|apis/(?P<group>[^/]+)/(?P<version>[^/]+))"
    r"(?:/namespaces/(?P<ns>[^/]+))?/(?P<plural>[a-z]+)(?:/(?P<name>[^/]+))?$"
)


class FakeKube:
    """Objects by (api path prefix, plural); every change gets a new resourceVersion."""

    def __init__(self, history: int = 1000) -> None:
        self.lock = threading.Condition()
        self.rv = 1
        self.objects: dict[tuple[str, str], dict[tuple[str, str], dict[str, Any]]] = {}
        self.events: list[tuple[int, str, str, dict[str, Any]]] = []  # (rv, resource, type, obj)
        self.history = history
        self.requests: list[str] = []
        self.down = False  # while True, every connection is dropped (an API server outage)
        # TokenReview: token -> (namespace, service account, pod name, audiences)
        self.tokens: dict[str, tuple[str, str, str, list[str]]] = {}

    @staticmethod
    def resource(api: str, plural: str) -> str:
        return f"{api}/{plural}"

    def put(self, api: str, plural: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Create or replace an object (``api`` is ``v1`` or ``GROUP/VERSION``)."""
        with self.lock:
            self.rv += 1
            meta = obj.setdefault("metadata", {})
            meta["resourceVersion"] = str(self.rv)
            store = self.objects.setdefault((api, plural), {})
            key = (meta.get("namespace", ""), meta["name"])
            kind = "MODIFIED" if key in store else "ADDED"
            store[key] = obj
            self._event(self.resource(api, plural), kind, obj)
            return obj

    def delete(self, api: str, plural: str, namespace: str, name: str) -> None:
        with self.lock:
            obj = self.objects.get((api, plural), {}).pop((namespace, name))
            self.rv += 1
            obj["metadata"]["resourceVersion"] = str(self.rv)
            self._event(self.resource(api, plural), "DELETED", obj)

    def _event(self, resource: str, kind: str, obj: dict[str, Any]) -> None:
        self.events.append((self.rv, resource, kind, json.loads(json.dumps(obj))))
        del self.events[: max(0, len(self.events) - self.history)]
        self.lock.notify_all()

    def oldest_rv(self) -> int:
        return self.events[0][0] - 1 if self.events else self.rv


def _field(obj: dict[str, Any], path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part, "") if isinstance(value, dict) else ""
    return str(value)


def matches(obj: dict[str, Any], field_selector: str | None) -> bool:
    """``fieldSelector`` of ``a.b=c`` / ``a.b!=c`` terms, as the API server applies it."""
    for term in filter(None, (field_selector or "").split(",")):
        if "!=" in term:
            path, value = term.split("!=", 1)
            if _field(obj, path) == value:
                return False
        else:
            path, value = term.split("=", 1)
            if _field(obj, path.rstrip("=")) != value:
                return False
    return True


def _handler(kube: FakeKube) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _json(self, status: int, doc: Any) -> None:
            body = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            kube.requests.append("POST " + self.path)
            body = json.loads(
                self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}"
            )
            if self.path != "/apis/authentication.k8s.io/v1/tokenreviews":
                self._json(
                    404, {"kind": "Status", "status": "Failure", "code": 404, "reason": "NotFound"}
                )
                return
            spec = body.get("spec") or {}
            known = kube.tokens.get(spec.get("token", ""))
            wanted = spec.get("audiences") or []
            status: dict[str, Any] = {"authenticated": False}
            if known and (not wanted or set(wanted) & set(known[3])):
                ns, sa, pod_name, audiences = known
                status = {
                    "authenticated": True,
                    "audiences": [a for a in audiences if a in wanted] or audiences,
                    "user": {
                        "username": f"system:serviceaccount:{ns}:{sa}",
                        "extra": {"authentication.kubernetes.io/pod-name": [pod_name]},
                    },
                }
            self._json(201, {**body, "status": status})

        def do_GET(self) -> None:
            url = urlparse(self.path)
            kube.requests.append(self.path)
            if kube.down:
                self.close_connection = True
                self.connection.shutdown(2)
                return
            m = _PATH.match(url.path)
            if not m:
                self._json(
                    404, {"kind": "Status", "status": "Failure", "code": 404, "reason": "NotFound"}
                )
                return
            api = "v1" if m["core"] else f"{m['group']}/{m['version']}"
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            if api != "v1" and (api, m["plural"]) not in kube.objects:
                # A custom resource nobody defined: the CRD is not installed.
                self._json(
                    404, {"kind": "Status", "status": "Failure", "code": 404, "reason": "NotFound"}
                )
                return
            if query.get("watch") in ("true", "1"):
                self._watch(api, m["plural"], m["ns"], query)
            else:
                self._list(api, m["plural"], m["ns"], m["name"], query.get("fieldSelector"))

        def _list(
            self, api: str, plural: str, ns: str | None, name: str | None, selector: str | None
        ) -> None:
            with kube.lock:
                store = kube.objects.get((api, plural), {})
                items = [
                    o
                    for (n, _), o in sorted(store.items())
                    if (ns is None or n == ns) and matches(o, selector)
                ]
                rv = str(kube.rv)
            if name is not None:
                match = [o for o in items if o["metadata"]["name"] == name]
                if match:
                    self._json(200, match[0])
                else:
                    self._json(
                        404,
                        {"kind": "Status", "status": "Failure", "code": 404, "reason": "NotFound"},
                    )
                return
            kind = plural[:-1].capitalize() + "List"
            self._json(
                200,
                {
                    "apiVersion": api,
                    "kind": kind,
                    "metadata": {"resourceVersion": rv},
                    "items": items,
                },
            )

        def _watch(self, api: str, plural: str, ns: str | None, query: dict[str, str]) -> None:
            since = int(query.get("resourceVersion") or kube.rv)
            timeout = float(query.get("timeoutSeconds", "5"))
            resource = kube.resource(api, plural)
            if since < kube.oldest_rv():
                self._json(
                    410,
                    {
                        "kind": "Status",
                        "apiVersion": "v1",
                        "status": "Failure",
                        "reason": "Expired",
                        "code": 410,
                        "message": f"too old resource version: {since}",
                    },
                )
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()

            def chunk(doc: dict[str, Any]) -> None:
                data = (json.dumps(doc) + "\n").encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            deadline = threading.Event()
            threading.Timer(timeout, deadline.set).start()
            sent = since
            try:
                while not deadline.is_set():
                    if kube.down:
                        self.close_connection = True
                        return  # dropped mid-stream, no terminating chunk
                    with kube.lock:
                        new = [
                            e
                            for e in kube.events
                            if e[0] > sent
                            and e[1] == resource
                            and (ns is None or e[3]["metadata"].get("namespace") == ns)
                            and matches(e[3], query.get("fieldSelector"))
                        ]
                        if not new:
                            kube.lock.wait(0.2)
                            continue
                    for rv, _, kind, obj in new:
                        chunk({"type": kind, "object": obj})
                        sent = rv
                if query.get("allowWatchBookmarks") == "true":
                    chunk(
                        {
                            "type": "BOOKMARK",
                            "object": {
                                "kind": plural,
                                "apiVersion": api,
                                "metadata": {"resourceVersion": str(kube.rv)},
                            },
                        }
                    )
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                pass

    return Handler


@contextmanager
def fake_kube(tmp: Path) -> Iterator[tuple[FakeKube, Path]]:
    """A running fake API server and a kubeconfig file pointing at it."""
    kube = FakeKube()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(kube))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    kubeconfig = tmp / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "fake",
                "clusters": [{"name": "fake", "cluster": {"server": url}}],
                "users": [{"name": "fake", "user": {"token": "fake-token"}}],
                "contexts": [
                    {
                        "name": "fake",
                        "context": {"cluster": "fake", "user": "fake", "namespace": "default"},
                    }
                ],
            }
        )
    )
    try:
        yield kube, kubeconfig
    finally:
        server.shutdown()
        server.server_close()
