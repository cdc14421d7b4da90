"""A fake Kubernetes API server that speaks the real HTTP list/watch protocol to the real
``kubernetes`` client: list with ``resourceVersion``, chunked watch streams of
ADDED/MODIFIED/DELETED events (and BOOKMARK when asked), 410 Gone for a resourceVersion
older than what it keeps, filtering by namespace, ``fieldSelector`` and equality
``labelSelector``; GET of one object, POST to create (``generateName`` too; 409
AlreadyExists for a name taken), PUT to replace (409 Conflict for a stale
``resourceVersion``), PATCH (merge, strategic merge and JSON patch ``replace``/``add``) and
DELETE (with a UID precondition). Every write is recorded in
``writes`` as (method, path, body).

Resources are addressed as the API does: ``/api/v1/namespaces/NS/pods``,
``/apis/GROUP/VERSION/namespaces/NS/PLURAL`` and the cluster-wide ``/apis/GROUP/VERSION/PLURAL``.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import yaml

from .apischema import check, prune, trainjob_status_schema

_PATH = re.compile(
    r"^/(?:api/(?P<core>v1)|apis/(?P<group>[^/]+)/(?P<version>[^/]+))"
    r"(?:/namespaces/(?P<ns>[^/]+))?/(?P<plural>[a-z]+)(?:/(?P<name>[^/]+)(?P<sub>/status|/scale)?)?$"
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
        # GETs whose path contains a key: answered 500 that many more times (an API error
        # on one call), or answered only after that many seconds (a slow API).
        self.fail: dict[str, int] = {}
        self.delay: dict[str, float] = {}
        # TokenReview: token -> (namespace, service account, pod name, audiences)
        self.tokens: dict[str, tuple[str, str, str, list[str]]] = {}
        # People's tokens (TokenReview with the API server's own audience): token ->
        # (username, groups); and what RBAC grants them, for SubjectAccessReview: (user or
        # group, namespace, verb, resource).
        self.users: dict[str, tuple[str, list[str]]] = {}
        self.grants: set[tuple[str, str, str, str]] = set()
        self.writes: list[tuple[str, str, Any]] = []  # (method, path, body) of each write
        # The scale subresources of CRDs: (api, plural) -> specReplicasPath, as their CRD
        # declares it (the training-operator's PyTorchJob: its Worker replicas); and each scale.
        self.scale_paths: dict[tuple[str, str], tuple[str, ...]] = {
            ("kubeflow.org/v1", "pytorchjobs"): (
                "spec",
                "pytorchReplicaSpecs",
                "Worker",
                "replicas",
            )
        }
        self.scaled: list[tuple[str, str, int, dict[str, Any]]] = []
        self.write_times: list[float] = []  # time.time() of each write, in the same order
        self.bytes_sent = 0  # response bytes (JSON answers and watch chunks), for benchmarks
        self.names = 0  # for generateName
        # (api, plural) -> the CRD's status schema: status writes are validated against it
        # (422 Invalid; unknown fields dropped, or refused with fieldValidation=Strict).
        self.schemas: dict[tuple[str, str], dict[str, Any]] = {
            ("trainer.kubeflow.org/v1alpha1", "trainjobs"): trainjob_status_schema(),
        }

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


def labels_match(obj: dict[str, Any], selector: str | None) -> bool:
    """``labelSelector`` of ``a=b`` / ``a==b`` / ``a!=b`` terms."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for term in filter(None, (selector or "").split(",")):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key) == value:
                return False
        else:
            key, value = term.replace("==", "=").split("=", 1)
            if labels.get(key) != value:
                return False
    return True


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (what strategic merge does for the fields used here)."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def json_patch(target: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """RFC 6902 ``add``, ``replace`` and ``test`` of object members and list items (by
    index); a failed ``test`` raises ValueError, and the object is left as it was."""
    out = json.loads(json.dumps(target))
    for op in ops:
        if op.get("op") not in ("add", "replace", "test"):
            raise ValueError(f"unsupported op {op.get('op')}")
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        node: Any = out
        for part in parts[:-1]:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        last: Any = int(parts[-1]) if isinstance(node, list) else parts[-1]
        if op["op"] == "test":
            current = node[last] if isinstance(node, list) else node.get(last)
            if current != op["value"]:
                raise ValueError(f"test failed at {op['path']}: {current!r} != {op['value']!r}")
            continue
        node[last] = op["value"]
    return dict(out)


Path_ = tuple[str, ...]
_IDENTITY = {("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace")}


def field_set(doc: Any, prefix: Path_ = ()) -> set[Path_]:
    """The leaf fields a patch body sets (lists are atomic), as paths of field names."""
    if isinstance(doc, dict) and doc:
        out: set[Path_] = set()
        for key, value in doc.items():
            out |= field_set(value, (*prefix, str(key)))
        return out
    return {prefix} if prefix else set()


def to_fields_v1(paths: set[Path_]) -> dict[str, Any]:
    """``paths`` as the API server writes ``managedFields[].fieldsV1``."""
    root: dict[str, Any] = {}
    for path in sorted(paths):
        node = root
        for name in path:
            node = node.setdefault(f"f:{name}", {})
    return root


def from_fields_v1(fields: Any, prefix: Path_ = ()) -> set[Path_]:
    if not isinstance(fields, dict) or not fields:
        return {prefix} if prefix else set()
    out: set[Path_] = set()
    for key, value in fields.items():
        if key.startswith("f:"):
            out |= from_fields_v1(value, (*prefix, key[2:]))
    return out or ({prefix} if prefix else set())


def _overlap(a: Path_, b: Path_) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def _remove(obj: dict[str, Any], path: Path_) -> None:
    node: Any = obj
    for name in path[:-1]:
        node = node.get(name) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(path[-1], None)


def _conflict(message: str, causes: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "reason": "Conflict",
        "code": 409,
        "message": message,
        "details": {"causes": causes},
    }


def managed_fields(
    obj: dict[str, Any],
    manager: str,
    operation: str,
    subresource: str,
    paths: set[Path_],
    replace: bool,
    api_version: str,
) -> list[Path_]:
    """Record that ``manager`` set ``paths`` (server-side apply bookkeeping); other managers
    lose them. With ``replace`` (an apply), the manager's earlier set is replaced and the
    fields it no longer applies, owned by nobody else, are returned for removal."""
    entries = [dict(e) for e in (obj.get("metadata") or {}).get("managedFields") or []]
    mine = next(
        (
            e
            for e in entries
            if e.get("manager") == manager
            and e.get("operation") == operation
            and e.get("subresource", "") == subresource
        ),
        None,
    )
    before = from_fields_v1(mine.get("fieldsV1")) if mine else set()
    for e in entries:
        if e is mine:
            continue
        kept = {
            p for p in from_fields_v1(e.get("fieldsV1")) if not any(_overlap(p, q) for q in paths)
        }
        e["fieldsV1"] = to_fields_v1(kept)
    others = set().union(*(from_fields_v1(e.get("fieldsV1")) for e in entries if e is not mine))
    dropped = [
        p for p in before - paths if replace and not any(_overlap(p, q) for q in paths | others)
    ]
    now_owned = paths if replace else before | paths
    if mine is None:
        mine = {"manager": manager, "operation": operation, "apiVersion": api_version}
        if subresource:
            mine["subresource"] = subresource
        entries.append(mine)
    mine["fieldsType"] = "FieldsV1"
    mine["fieldsV1"] = to_fields_v1(now_owned)
    mine["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    obj.setdefault("metadata", {})["managedFields"] = [e for e in entries if e.get("fieldsV1")]
    return dropped


def _handler(kube: FakeKube) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out as two writes: without TCP_NODELAY every answer waits
        # for a delayed ACK (40 ms), which no real API server makes a client wait.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _json(self, status: int, doc: Any) -> None:
            body = json.dumps(doc).encode()
            kube.bytes_sent += len(body)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _body(self) -> Any:
            return json.loads(
                self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}"
            )

        def _not_found(self) -> None:
            self._json(
                404, {"kind": "Status", "status": "Failure", "code": 404, "reason": "NotFound"}
            )

        def _target(self) -> tuple[str, str, str, str | None] | None:
            m = _PATH.match(urlparse(self.path).path)
            if not m:
                return None
            api = "v1" if m["core"] else f"{m['group']}/{m['version']}"
            return api, m["plural"], m["ns"] or "", m["name"]

        def _status_subresource(self) -> bool:
            m = _PATH.match(urlparse(self.path).path)
            return bool(m and m["sub"] == "/status")

        def _scale_subresource(self) -> bool:
            m = _PATH.match(urlparse(self.path).path)
            return bool(m and m["sub"] == "/scale")

        def _discovery(self, path: str) -> dict[str, Any] | None:
            """The legacy discovery documents kubectl reads before ``kubectl get``."""
            with kube.lock:
                kinds = {
                    key: next(iter(store.values()), {}).get("kind", "")
                    for key, store in kube.objects.items()
                }
            if path == "/api":
                return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
            if path == "/apis":
                groups = sorted({api for api, _ in kinds if api != "v1"})
                return {
                    "kind": "APIGroupList",
                    "apiVersion": "v1",
                    "groups": [
                        {
                            "name": g.split("/")[0],
                            "versions": [{"groupVersion": g, "version": g.split("/")[1]}],
                            "preferredVersion": {"groupVersion": g, "version": g.split("/")[1]},
                        }
                        for g in groups
                    ],
                }
            m = re.match(r"^/(?:api/(v1)|apis/([^/]+/[^/]+))$", path)
            if not m:
                return None
            api = m.group(1) or m.group(2)
            resources = []
            for (a, plural), kind in sorted(kinds.items()):
                if a != api:
                    continue
                kind = kind or plural[:-1].capitalize()
                scoped = plural not in ("nodes", "namespaces")
                verbs = ["get", "list", "watch", "create", "patch", "delete"]
                resources.append(
                    {
                        "name": plural,
                        "singularName": kind.lower(),
                        "namespaced": scoped,
                        "kind": kind,
                        "verbs": verbs,
                    }
                )
                resources.append(
                    {
                        "name": f"{plural}/status",
                        "singularName": "",
                        "namespaced": scoped,
                        "kind": kind,
                        "verbs": ["get", "patch"],
                    }
                )
            return {
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": api,
                "resources": resources,
            }

        def do_PATCH(self) -> None:
            kube.requests.append("PATCH " + self.path)
            content_type = self.headers.get("Content-Type", "")
            body: Any
            if "apply-patch" in content_type:  # server-side apply: YAML (or JSON)
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                body = yaml.safe_load(raw) or {}
            else:
                body = self._body()
            kube.writes.append(("PATCH", self.path, body))
            kube.write_times.append(time.time())
            target = self._target()
            with kube.lock:
                obj = None
                if target is not None and (name := target[3]) is not None:
                    obj = kube.objects.get((target[0], target[1]), {}).get((target[2], name))
                if obj is None or target is None:
                    self._not_found()
                    return
                wanted = (
                    (body.get("metadata") or {}).get("resourceVersion")
                    if isinstance(body, dict)
                    else None
                )
                if wanted is not None and wanted != obj["metadata"].get("resourceVersion"):
                    # Optimistic concurrency, as the API server does it.
                    self._json(
                        409,
                        {
                            "kind": "Status",
                            "apiVersion": "v1",
                            "status": "Failure",
                            "reason": "Conflict",
                            "code": 409,
                            "message": "the object has been modified",
                        },
                    )
                    return
                if self._scale_subresource():
                    # A CRD's scale subresource: spec.replicas lands at its specReplicasPath.
                    path = kube.scale_paths.get((target[0], target[1]))
                    replicas = ((body or {}).get("spec") or {}).get("replicas")
                    if path is None or not isinstance(replicas, int):
                        self._not_found()
                        return
                    patch: dict[str, Any] = {}
                    node = patch
                    for part in path[:-1]:
                        node = node.setdefault(part, {})
                    node[path[-1]] = replicas
                    updated = kube.put(target[0], target[1], merge_patch(obj, patch))
                    self._json(
                        200,
                        {
                            "kind": "Scale",
                            "apiVersion": "autoscaling/v1",
                            "metadata": {"name": target[3], "namespace": target[2]},
                            "spec": {"replicas": replicas},
                        },
                    )
                    kube.scaled.append((target[1], target[3] or "", replicas, updated))
                    return
                if self._status_subresource():
                    # The status subresource changes status only, whatever else is sent.
                    body = {"status": body.get("status")} if isinstance(body, dict) else body
                elif isinstance(body, dict) and "status" in body and target[1] != "pods":
                    # The main resource of a kind with a status subresource ignores status.
                    body = {k: v for k, v in body.items() if k != "status"}
                query = parse_qs(urlparse(self.path).query)
                apply = "apply-patch" in content_type
                manager = (query.get("fieldManager") or [""])[0]
                if apply and not manager:
                    self._json(
                        422,
                        {
                            "kind": "Status",
                            "code": 422,
                            "reason": "Invalid",
                            "message": "fieldManager: Required value: is required for apply patch",
                        },
                    )
                    return
                manager = manager or self.headers.get("User-Agent", "unknown").split("/")[0]
                if "json-patch" in content_type:
                    changed = {
                        tuple(
                            p.replace("~1", "/").replace("~0", "~")
                            for p in op["path"].split("/")[1:]
                        )
                        for op in body
                    }
                else:
                    changed = field_set(body) - _IDENTITY
                subresource = "status" if self._status_subresource() else ""
                if apply:
                    entries = (obj.get("metadata") or {}).get("managedFields") or []
                    causes = [
                        {
                            "type": "FieldManagerConflict",
                            "message": f'conflict with "{e.get("manager")}"',
                            "field": "." + ".".join(p),
                        }
                        for e in entries
                        if e.get("manager") != manager
                        for p in from_fields_v1(e.get("fieldsV1"))
                        if any(_overlap(p, q) for q in changed)
                    ]
                    if causes and (query.get("force") or ["false"])[0] != "true":
                        self._json(
                            409,
                            _conflict(
                                f"Apply failed with {len(causes)} conflict(s): "
                                + "; ".join(f"{c['message']}: {c['field']}" for c in causes),
                                causes,
                            ),
                        )
                        return
                    body = {k: v for k, v in body.items() if k not in ("apiVersion", "kind")}
                try:
                    patched = (
                        json_patch(obj, body)
                        if "json-patch" in content_type
                        else merge_patch(obj, body)
                    )
                except ValueError as err:  # a failed "test", as the API server answers it
                    self._json(
                        422,
                        {"kind": "Status", "status": "Failure", "code": 422,
                         "reason": "Invalid", "message": str(err)},
                    )  # fmt: skip
                    return
                dropped = managed_fields(
                    patched,
                    manager,
                    "Apply" if apply else "Update",
                    subresource,
                    changed,
                    replace=apply,
                    api_version=target[0],
                )
                for path in dropped:
                    _remove(patched, path)
                schema = kube.schemas.get((target[0], target[1]))
                if schema is not None and subresource and isinstance(patched.get("status"), dict):
                    errors, unknown = check(patched["status"], schema, ".status")
                    strict = (query.get("fieldValidation") or [""])[0] == "Strict"
                    if errors or (strict and unknown):
                        problems = errors + [f"{u}: unknown field" for u in unknown]
                        self._json(
                            422,
                            {
                                "kind": "Status",
                                "apiVersion": "v1",
                                "status": "Failure",
                                "code": 422,
                                "reason": "Invalid",
                                "message": "; ".join(problems),
                            },
                        )
                        return
                    patched["status"] = prune(patched["status"], schema)
                updated = kube.put(target[0], target[1], patched)
            self._json(200, updated)

        def _conflict(self, message: str, reason: str = "Conflict") -> None:
            self._json(
                409,
                {
                    "kind": "Status",
                    "status": "Failure",
                    "code": 409,
                    "reason": reason,
                    "message": message,
                },
            )

        def _existing(self) -> tuple[str, str, str, str, dict[str, Any]] | None:
            """(api, plural, namespace, name, object) the path names, if it exists (the
            caller holds ``kube.lock``)."""
            target = self._target()
            if target is None or (name := target[3]) is None:
                return None
            api, plural, ns, _ = target
            obj = kube.objects.get((api, plural), {}).get((ns, name))
            return None if obj is None else (api, plural, ns, name, obj)

        def do_PUT(self) -> None:
            """Replace an object: optimistic concurrency on ``metadata.resourceVersion`` (409
            Conflict when it is stale), as the API server does it."""
            kube.requests.append("PUT " + self.path)
            body = self._body()
            kube.writes.append(("PUT", self.path, body))
            kube.write_times.append(time.time())
            with kube.lock:
                found = self._existing()
                if found is None:
                    self._not_found()
                    return
                api, plural, ns, name, obj = found
                wanted = (body.get("metadata") or {}).get("resourceVersion")
                if wanted is not None and wanted != obj["metadata"].get("resourceVersion"):
                    self._conflict(
                        f"Operation cannot be fulfilled on {plural} {name!r}: the object has "
                        "been modified; please apply your changes to the latest version"
                    )
                    return
                meta = body.setdefault("metadata", {})
                meta.update(name=name, namespace=ns, uid=obj["metadata"].get("uid", ""))
                updated = kube.put(api, plural, body)
            self._json(200, updated)

        def do_DELETE(self) -> None:
            kube.requests.append("DELETE " + self.path)
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
            options = json.loads(raw) if raw.strip() else {}
            kube.writes.append(("DELETE", self.path, options or None))
            kube.write_times.append(time.time())
            with kube.lock:
                found = self._existing()
                if found is None:
                    self._not_found()
                    return
                api, plural, ns, name, obj = found
                uid = ((options or {}).get("preconditions") or {}).get("uid")
                if uid is not None and uid != obj["metadata"].get("uid"):
                    self._conflict(
                        f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
                        f"{obj['metadata'].get('uid')}"
                    )
                    return
                kube.delete(api, plural, ns, name)
            self._json(200, obj)

        def do_POST(self) -> None:
            kube.requests.append("POST " + self.path)
            body = self._body()
            if self.path == "/apis/authorization.k8s.io/v1/subjectaccessreviews":
                spec = body.get("spec") or {}
                attrs = spec.get("resourceAttributes") or {}
                url = spec.get("nonResourceAttributes") or {}
                # A non-resource URL is granted as ("", verb, "url:" + path), a path ending in
                # "*" granting every path it starts (RBAC's nonResourceURLs).
                asked: tuple[str, str, str] = (
                    ("", str(url.get("verb")), "url:" + str(url.get("path", "")))
                    if url
                    else (
                        str(attrs.get("namespace", "")),
                        str(attrs.get("verb")),
                        str(attrs.get("resource")),
                    )
                )
                who = [spec.get("user", ""), *(spec.get("groups") or [])]

                def granted(w: str) -> bool:
                    for g in kube.grants:
                        if g[0] != w or g[1:3] != asked[:2]:
                            continue
                        if g[3] == asked[2] or (
                            g[3].endswith("*") and asked[2].startswith(g[3][:-1])
                        ):
                            return True
                    return False

                allowed = any(granted(w) for w in who if w)
                self._json(201, {**body, "status": {"allowed": allowed}})
                return
            if self.path != "/apis/authentication.k8s.io/v1/tokenreviews":
                kube.writes.append(("POST", self.path, body))
                kube.write_times.append(time.time())
                target = self._target()
                if target is None or target[3] is not None:
                    self._not_found()
                    return
                api, plural, ns, _ = target
                meta = body.setdefault("metadata", {})
                if not meta.get("name"):
                    with kube.lock:
                        kube.names += 1
                        meta["name"] = f"{meta.get('generateName', 'obj-')}{kube.names:05d}"
                if ns:
                    meta["namespace"] = ns
                with kube.lock:
                    if (ns, meta["name"]) in kube.objects.get((api, plural), {}):
                        self._conflict(f"{plural} {meta['name']!r} already exists", "AlreadyExists")
                        return
                    meta.setdefault("uid", f"uid-{plural}-{ns}-{meta['name']}")
                    created = kube.put(api, plural, body)
                self._json(201, created)
                return
            spec = body.get("spec") or {}
            known = kube.tokens.get(spec.get("token", ""))
            wanted = spec.get("audiences") or []
            status: dict[str, Any] = {"authenticated": False}
            person = kube.users.get(spec.get("token", ""))
            if person is not None and not wanted:  # a person's token: the API's audience
                status = {
                    "authenticated": True,
                    "audiences": ["https://kubernetes.default.svc"],
                    "user": {"username": person[0], "groups": person[1]},
                }
            elif known and (not wanted or set(wanted) & set(known[3])):
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
            if url.path == "/_fake/stats":  # the stand-in's own counters, not an API path
                self._json(200, {"bytes_sent": kube.bytes_sent, "requests": len(kube.requests)})
                return
            discovery = self._discovery(url.path)
            if discovery is not None:
                kube.requests.append(self.path)
                self._json(200, discovery)
                return
            kube.requests.append(self.path)
            if kube.down:
                self.close_connection = True
                self.connection.shutdown(2)
                return
            for part, seconds in list(kube.delay.items()):
                if part in self.path:
                    time.sleep(seconds)
            for part, left in list(kube.fail.items()):
                if part in self.path and left > 0:
                    kube.fail[part] = left - 1
                    self._json(
                        500,
                        {"kind": "Status", "status": "Failure", "code": 500, "reason": "Internal"},
                    )
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
                self._list(
                    api,
                    m["plural"],
                    m["ns"],
                    m["name"],
                    query.get("fieldSelector"),
                    query.get("labelSelector"),
                )

        def _list(
            self,
            api: str,
            plural: str,
            ns: str | None,
            name: str | None,
            selector: str | None,
            label_selector: str | None = None,
        ) -> None:
            with kube.lock:
                store = kube.objects.get((api, plural), {})
                items = [
                    o
                    for (n, _), o in sorted(store.items())
                    if (ns is None or n == ns)
                    and matches(o, selector)
                    and labels_match(o, label_selector)
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
