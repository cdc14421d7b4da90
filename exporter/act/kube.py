"""The Kubernetes calls ``act`` (exporter/act) makes, through the real ``kubernetes`` client:
read a pod and its owner, list the owner's pods, delete pods, patch the suspend flag, create
Events; and, for running more than one replica, its Lease and its journal's ConfigMap.

Objects are read as plain dicts (``_preload_content=False``), like the exporter's watch, so
the pure parts (owners, policy) see exactly what the API server sent.
"""

from __future__ import annotations

import json
import socket
from datetime import UTC, datetime
from typing import Any

from ..core.workloads import Kind
from .job_owners import Owner

COMPONENT = "training-progress-act"
TIMEOUT = 10.0


class ClusterError(Exception):
    """An API call failed (the server refused it, or could not be reached)."""


class Conflict(ClusterError):
    """409: someone changed the object first (or it already exists); read it again."""


MERGE_PATCH = "application/merge-patch+json"


class KubernetesOps:
    """One API client's worth of calls; every method raises ClusterError on failure."""

    def __init__(self, api_client: Any, timeout: float = TIMEOUT) -> None:
        """``api_client`` should make no retries of its own (``api_client(retries=0)``):
        each call then has one deadline, ``timeout``, however the server fails."""
        from kubernetes import client

        self.timeout = timeout
        self._core = client.CoreV1Api(api_client)
        self._custom = client.CustomObjectsApi(api_client)
        self._coordination = client.CoordinationV1Api(api_client)
        self._instance = socket.gethostname()

    @staticmethod
    def _json(response: Any) -> dict[str, Any]:
        doc = json.loads(response.data)
        return doc if isinstance(doc, dict) else {}

    def _call(self, what: str, fn: Any, *args: Any, missing_ok: bool = False, **kw: Any) -> Any:
        from kubernetes.client.exceptions import ApiException

        try:
            return fn(*args, _request_timeout=self.timeout, **kw)
        except ApiException as err:
            if missing_ok and err.status == 404:
                return None
            if err.status == 409:
                raise Conflict(f"{what}: {err.status} {err.reason}") from None
            raise ClusterError(f"{what}: {err.status} {err.reason}") from None
        except Exception as err:  # urllib3 errors: the server could not be reached
            raise ClusterError(f"{what}: {err}") from None

    def pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The pod, or None if it no longer exists."""
        r = self._call(
            f"read pod {namespace}/{name}",
            self._core.read_namespaced_pod,
            name,
            namespace,
            _preload_content=False,
            missing_ok=True,
        )
        return None if r is None else self._json(r)

    def pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        r = self._call(
            f"list pods {namespace} {selector}",
            self._core.list_namespaced_pod,
            namespace,
            label_selector=selector,
            _preload_content=False,
        )
        return list(self._json(r).get("items") or [])

    def get(self, kind: Kind, namespace: str, name: str) -> dict[str, Any] | None:
        """A workload object (a Job, a JobSet, a TrainJob...), or None if it is gone (or its
        kind is not installed)."""
        r = self._call(
            f"read {kind.kind} {namespace}/{name}",
            self._custom.get_namespaced_custom_object,
            *kind.locate(namespace, name),
            _preload_content=False,
            missing_ok=True,
        )
        return None if r is None else self._json(r)

    def _patch_owner(
        self, verb: str, owner: Owner, body: Any, content_type: str, scale: bool = False
    ) -> None:
        """One patch of an owner object (or of its ``/scale`` subresource)."""
        group, version = _group_version(owner.api_version)
        fn = (
            self._custom.patch_namespaced_custom_object_scale
            if scale
            else self._custom.patch_namespaced_custom_object
        )
        self._call(
            f"{verb} {owner.kind} {owner.namespace}/{owner.name}",
            fn,
            group,
            version,
            owner.namespace,
            owner.plural,
            owner.name,
            body,
            _content_type=content_type,
            _preload_content=False,
        )

    def suspend(self, owner: Owner) -> None:
        self._patch_owner("suspend", owner, owner.suspend_patch(), MERGE_PATCH)

    def annotate(
        self, kind: Kind | None, namespace: str, name: str, values: dict[str, str]
    ) -> None:
        """Set annotations on a pod (``kind`` None) or on a workload object (merge patch)."""
        body = {"metadata": {"annotations": values}}
        if kind is None:
            self._call(
                f"annotate pod {namespace}/{name}",
                self._core.patch_namespaced_pod,
                name,
                namespace,
                body,
                _content_type=MERGE_PATCH,  # the client's default for pods is a JSON patch
                _preload_content=False,
            )
            return
        self._call(
            f"annotate {kind.kind} {namespace}/{name}",
            self._custom.patch_namespaced_custom_object,
            *kind.locate(namespace, name),
            body,
            _content_type=MERGE_PATCH,
            _preload_content=False,
        )

    def scale(self, owner: Owner, body: Any) -> None:
        """Patch the owner's ``/scale`` subresource (a PyTorchJob's Worker replicas)."""
        self._patch_owner("scale", owner, body, MERGE_PATCH, scale=True)

    def json_patch(self, owner: Owner, ops: list[dict[str, Any]]) -> None:
        """A JSON patch on the owner; its ``test`` operation makes it fail if the object
        changed since it was read."""
        self._patch_owner("patch", owner, ops, "application/json-patch+json")

    def delete_pod(self, namespace: str, name: str, uid: str = "") -> None:
        """Delete the pod (nothing when it is gone). With ``uid``, only that pod: one of the
        same name made since (a restarted rank) is left alone, as if gone."""
        from kubernetes import client

        body = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=uid or None))
        try:
            self._call(
                f"delete pod {namespace}/{name}",
                self._core.delete_namespaced_pod,
                name,
                namespace,
                body=body,
                _preload_content=False,
                missing_ok=True,
            )
        except Conflict:
            if not uid:
                raise

    def lease(self, namespace: str, name: str) -> dict[str, Any] | None:
        """A ``coordination.k8s.io/v1`` Lease, or None if it does not exist."""
        r = self._call(
            f"read lease {namespace}/{name}",
            self._coordination.read_namespaced_lease,
            name,
            namespace,
            _preload_content=False,
            missing_ok=True,
        )
        return None if r is None else self._json(r)

    def create_lease(self, namespace: str, body: dict[str, Any]) -> None:
        self._call(
            f"create lease {namespace}",
            self._coordination.create_namespaced_lease,
            namespace,
            body,
            _preload_content=False,
        )

    def replace_lease(self, namespace: str, name: str, body: dict[str, Any]) -> None:
        """Replace the Lease; Conflict if it changed since ``body``'s resourceVersion."""
        self._call(
            f"replace lease {namespace}/{name}",
            self._coordination.replace_namespaced_lease,
            name,
            namespace,
            body,
            _preload_content=False,
        )

    def config_map(self, namespace: str, name: str) -> dict[str, Any] | None:
        """A ConfigMap, or None if it does not exist."""
        r = self._call(
            f"read configmap {namespace}/{name}",
            self._core.read_namespaced_config_map,
            name,
            namespace,
            _preload_content=False,
            missing_ok=True,
        )
        return None if r is None else self._json(r)

    def save_config_map(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        """Create the ConfigMap (no resourceVersion in ``body``) or replace it (Conflict if
        it changed since that resourceVersion); the object as the server stored it."""
        name = body["metadata"]["name"]
        if body["metadata"].get("resourceVersion"):
            r = self._call(
                f"replace configmap {namespace}/{name}",
                self._core.replace_namespaced_config_map,
                name,
                namespace,
                body,
                _preload_content=False,
            )
        else:
            r = self._call(
                f"create configmap {namespace}/{name}",
                self._core.create_namespaced_config_map,
                namespace,
                body,
                _preload_content=False,
            )
        return self._json(r)

    def event(
        self, involved: dict[str, Any], reason: str, message: str, warning: bool = False
    ) -> None:
        """A core/v1 Event on ``involved`` (its kind, apiVersion, namespace, name, uid)."""
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "generateName": f"{involved['name']}.",
                "namespace": involved["namespace"],
            },
            "involvedObject": involved,
            "reason": reason,
            "message": message[:1024],
            "type": "Warning" if warning else "Normal",
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": self._instance,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        self._call(
            f"create event {reason}",
            self._core.create_namespaced_event,
            involved["namespace"],
            body,
            _preload_content=False,
        )


def _group_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version
