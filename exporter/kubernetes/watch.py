"""Kubernetes mode: the training pods on this node, kept current by list+watch.

A :class:`PodWatcher` lists and watches the pods of one node (``spec.nodeName``) with the real
``kubernetes`` client, the same load a kubelet puts on the API server: it resumes from the
last resourceVersion, relists after 410 Gone, and reconnects with capped backoff while the
API server is away, serving the last known pods meanwhile (``/readyz`` says degraded).
The :class:`PodRegistry` it fills answers "which pod has this IP" for push authorization and
"what do we know about this pod" for every report.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Set
from typing import Any

from ..core.annotations import KUBEFLOW_TOKEN_AUDIENCE
from ..core.model import RunKey, RunMeta
from ..plumbing.discovery import ApiFactory, Denied, PodInfo, PushTarget
from ..plumbing.ingest import Ingestor
from .owners import PodReader

log = logging.getLogger(__name__)


def run_meta(pod: PodInfo, node: str, source: str = "") -> RunMeta:
    """The run metadata a training pod provides (labels on training_run_info, GPUs...)."""
    return RunMeta(
        job_kind=pod.job_kind,
        source=source,
        node=node,
        rank=pod.rank,
        container=pod.container,
        trial=pod.trial,
        experiment=pod.experiment,
        gpus=pod.gpus,
        deadline_timestamp=pod.deadline_timestamp,
        kill_deadline_timestamp=pod.kill_deadline_timestamp,
        kill_deadline_kind=pod.kill_deadline_kind,
        nodes=pod.nodes,
        gpu_seconds_budget=pod.gpu_seconds_budget,
        thresholds=pod.thresholds,
        gpu_start_timestamp=pod.start_timestamp,
        gpu_end_timestamp=pod.end_timestamp,
        alive=not pod.finished,
        pod_failed=pod.failed,
        deleting=pod.deleting,
        checkpoint_request=pod.checkpoint_request,
        stacks_request=pod.stacks_request,
        pod_uid=pod.uid,
        log_format=pod.log_format,
    )


class PodRegistry:
    """The training pods of this node, by (namespace, name) and by pod IP. Thread-safe."""

    def __init__(self, node: str, ingestor: Ingestor) -> None:
        self.node = node
        self.ingestor = ingestor
        self._lock = threading.Lock()
        self._pods: dict[tuple[str, str], PodInfo] = {}

    def replace_all(self, pods: list[PodInfo], unread: Set[str] = frozenset()) -> None:
        """A fresh list: pods missing from it are gone, except those whose UID is in
        ``unread`` (listed, but their owners could not be read this time)."""
        new = {(p.namespace, p.name): p for p in pods}
        with self._lock:
            for key, p in self._pods.items():
                if key not in new and p.uid in unread:
                    new[key] = p
            gone = [p for key, p in self._pods.items() if key not in new]
            self._pods = new
        for p in gone:
            self._gone(p)
        for p in pods:
            self._changed(p)

    def upsert(self, pod: PodInfo) -> None:
        with self._lock:
            self._pods[(pod.namespace, pod.name)] = pod
        self._changed(pod)

    def remove(self, namespace: str, name: str) -> None:
        with self._lock:
            pod = self._pods.pop((namespace, name), None)
        if pod is not None:
            self._gone(pod)

    def get(self, namespace: str, name: str) -> PodInfo | None:
        with self._lock:
            return self._pods.get((namespace, name))

    def all(self) -> list[PodInfo]:
        with self._lock:
            return list(self._pods.values())

    def by_ip(self, ip: str) -> list[PodInfo]:
        """The live pods that have ``ip``: a finished pod owns no IP (the node may already
        have given it to another pod)."""
        with self._lock:
            return [p for p in self._pods.values() if p.ip == ip and not p.finished]

    def __len__(self) -> int:
        with self._lock:
            return len(self._pods)

    def _key(self, pod: PodInfo) -> RunKey:
        return RunKey(pod.namespace, pod.name, pod.job_name)

    def _changed(self, pod: PodInfo) -> None:
        # A terminated pod's run says so (failed or not) before it is frozen as gone.
        self.ingestor.set_meta(self._key(pod), run_meta(pod, self.node, "push"))
        if pod.finished:
            self.ingestor.gone([self._key(pod)])

    def _gone(self, pod: PodInfo) -> None:
        self.ingestor.gone([self._key(pod)])


# (token, client IP, the job's Kubeflow audience) -> (namespace, pod name, matched audience),
# or why not (a drop reason).
TokenReviewer = Callable[[str, str, str], "tuple[str, str, str] | str"]

_REVIEW_DENIALS = {
    "token_rejected": (403, "the token did not pass the TokenReview"),
    "review_rate_limited": (429, "too many unknown tokens from this address; retry later"),
    "review_unavailable": (503, "the token could not be reviewed now; retry later"),
}


class KubernetesResolver:
    """Push authorization: only a pod on this node may push, and only for its own run.

    A pod is recognized by its IP. Pods on the host network share the node's IP, so for them
    (and only them) the bearer token decides: a projected service-account token whose
    TokenReview names the pod.
    """

    may_block = True  # a host-network pod's token is reviewed by the API server

    def __init__(self, registry: PodRegistry, review: TokenReviewer | None = None) -> None:
        self.registry = registry
        self.review = review

    def _by_token(
        self, authorization: str | None, client_ip: str, namespace: str, name: str
    ) -> PodInfo | Denied:
        if not authorization or not authorization.startswith("Bearer ") or self.review is None:
            return Denied(
                "host_network",
                "pods on the host network must send a projected "
                "service-account token (Authorization: Bearer)",
            )
        job_audience = KUBEFLOW_TOKEN_AUDIENCE.format(namespace=namespace, name=name)
        identity = self.review(authorization[len("Bearer ") :].strip(), client_ip, job_audience)
        if isinstance(identity, str):
            status, message = _REVIEW_DENIALS.get(identity, (403, identity))
            return Denied(identity, message, status)
        pod_namespace, pod_name, audience = identity
        pod = self.registry.get(pod_namespace, pod_name)
        if pod is None or pod.finished:
            return Denied("unknown_source", "the token belongs to no training pod on this node")
        if audience == job_audience and (
            pod.job_kind != "TrainJob" or (pod.namespace, pod.job_name) != (namespace, name)
        ):
            # Kubeflow's token is good for the TrainJob its audience names, nothing else.
            return Denied(
                "token_rejected",
                f"the token's audience is TrainJob {namespace}/{name}'s status, "
                f"and pod {pod.namespace}/{pod.name} is not of that TrainJob",
            )
        return pod

    def resolve(
        self, namespace: str, name: str, client_ip: str, authorization: str | None
    ) -> PushTarget | Denied:
        pods = self.registry.by_ip(client_ip)
        if not pods:
            return Denied("unknown_source", f"no training pod on this node has IP {client_ip}")
        if any(p.host_network for p in pods):
            # The node's IP is shared by every host-network pod: the IP proves nothing.
            found = self._by_token(authorization, client_ip, namespace, name)
            if isinstance(found, Denied):
                return found
            pods = [found]
        if len(pods) > 1:  # two live pods claim one IP: nobody can tell which one sends
            names = ", ".join(sorted(f"{p.namespace}/{p.name}" for p in pods))
            return Denied("ip_conflict", f"IP {client_ip} is claimed by {len(pods)} pods: {names}")
        pod = pods[0]
        if pod.namespace != namespace:
            return Denied(
                "namespace_mismatch",
                f"pod {pod.namespace}/{pod.name} may not report for namespace {namespace}",
            )
        if name not in (pod.job_name, pod.name):
            return Denied(
                "job_mismatch",
                f"pod {pod.namespace}/{pod.name} belongs to {pod.job_name}, not {name}",
            )
        return PushTarget(
            RunKey(pod.namespace, pod.name, pod.job_name), run_meta(pod, self.registry.node, "push")
        )


class PodWatcher:
    """List+watch of one node's pods, feeding a :class:`PodRegistry`; see the module doc."""

    def __init__(
        self,
        core_api: ApiFactory,
        node: str,
        registry: PodRegistry,
        reader: PodReader,
        max_backoff: float = 30.0,
        watch_timeout: int = 300,
    ) -> None:
        self.core_api = core_api
        self.node = node
        self.registry = registry
        self.reader = reader
        self.max_backoff = max_backoff
        self.watch_timeout = watch_timeout
        self.synced = threading.Event()
        self.healthy = False
        self.relists = 0
        self.last_error = ""
        self._stop = threading.Event()

    def _list(self, api: Any) -> str:
        # Raw JSON, not the client's models: faster for a thousand pods, and what the pure
        # pod functions take.
        resp = api.list_pod_for_all_namespaces(
            field_selector=f"spec.nodeName={self.node}", _preload_content=False, _request_timeout=30
        )
        status = int(getattr(resp, "status", 200))
        if not 200 <= status <= 299:
            from kubernetes.client import ApiException

            raise ApiException(status=status, reason="list pods")
        doc = json.loads(resp.data)
        pods = [self.reader.read(p) for p in doc.get("items") or []]
        self.registry.replace_all([p for p in pods if p is not None], set(self.reader.pending))
        self.relists += 1
        self.synced.set()
        return str((doc.get("metadata") or {}).get("resourceVersion", ""))

    def _watch(self, api: Any, rv: str) -> str:
        from kubernetes import watch

        for info in self.reader.retry():  # pods whose owners could not be read before
            self.registry.upsert(info)
        w = watch.Watch()
        for event in w.stream(
            api.list_pod_for_all_namespaces,
            field_selector=f"spec.nodeName={self.node}",
            resource_version=rv,
            timeout_seconds=self.watch_timeout,
            allow_watch_bookmarks=True,
            deserialize=False,
        ):
            if self._stop.is_set():
                w.stop()
                break
            obj = event.get("object") or {}
            meta = obj.get("metadata") or {}
            rv = str(meta.get("resourceVersion") or rv)
            kind = event["type"]
            if kind == "DELETED":
                self.registry.remove(meta.get("namespace", ""), meta.get("name", ""))
                self.reader.forget(str(meta.get("uid") or ""))
            elif kind in ("ADDED", "MODIFIED"):
                found = self.reader.read(obj)
                if found is not None:
                    self.registry.upsert(found)
                elif str(meta.get("uid") or "") not in self.reader.pending:
                    # Not (or no longer) a training pod; one whose owners are unread for
                    # now keeps what is known of it.
                    self.registry.remove(meta.get("namespace", ""), meta.get("name", ""))
        return rv

    def run(self) -> None:
        """Until :meth:`stop`: list, then watch from the list's resourceVersion."""
        from kubernetes.client import ApiException

        backoff = 1.0
        rv: str | None = None
        while not self._stop.is_set():
            try:
                api = self.core_api()
                if rv is None:
                    rv = self._list(api)
                self.healthy = True
                backoff = 1.0
                rv = self._watch(api, rv)
            except ApiException as exc:
                if exc.status == 410:  # our resourceVersion is too old: start over
                    rv = None
                    continue
                self._failed(f"API server: HTTP {exc.status}")
            except Exception as exc:  # connection refused, reset, timeout...
                self._failed(f"API server unreachable: {exc.__class__.__name__}")
            else:
                continue
            self._stop.wait(backoff)
            backoff = min(self.max_backoff, backoff * 2)

    def _failed(self, reason: str) -> None:
        self.healthy = False
        self.last_error = reason
        log.warning("pod discovery: %s; serving the last known pods", reason)

    def start(self) -> None:
        threading.Thread(target=self.run, name="pod-watcher", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def ready(self) -> tuple[bool, str]:
        if not self.synced.is_set():
            return False, "starting: pods of this node not listed yet"
        if not self.healthy:
            return (
                True,
                f"degraded: {self.last_error}; serving the last known {len(self.registry)} pods",
            )
        return True, f"ok: {len(self.registry)} training pods on node {self.node}"
