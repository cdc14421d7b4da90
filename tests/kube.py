"""What the Kubernetes-mode tests share: pod and TrainJob objects as the API server sends
them, the push path and body, and a wait for what the watch delivers."""

from __future__ import annotations

import json
import time
from typing import Any

from exporter.core.workloads import KINDS, Ref, chain
from exporter.daemon.app import Exporter

from .conftest import K8S_NODE

T_START = "2026-11-29T10:00:00Z"


T_START_TS = 1795946400.0


def pod(
    ns: str,
    name: str,
    labels: dict[str, str] | None = None,
    *,
    ip: str = "10.0.0.5",
    gpus: str | None = "8",
    annotations: dict[str, str] | None = None,
    node: str = K8S_NODE,
    host_network: bool = False,
    phase: str = "Running",
) -> dict[str, Any]:
    resources = {"limits": {"nvidia.com/gpu": gpus}} if gpus else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "namespace": ns,
            "name": name,
            "uid": f"uid-{name}",
            "labels": dict(labels or {}),
            "annotations": annotations or {},
        },
        "spec": {
            "nodeName": node,
            "hostNetwork": host_network,
            "containers": [{"name": "trainer", "image": "x", "resources": resources}],
        },
        "status": {
            "phase": phase,
            "podIP": ip,
            "startTime": T_START,
            "containerStatuses": [
                {"name": "trainer", "state": {"running": {"startedAt": T_START}}}
            ],
        },
    }


TRAINJOB = {
    "trainer.kubeflow.org/trainjob-name": "llm",
    "batch.kubernetes.io/job-completion-index": "0",
}


def wait(cond: Any, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


KF = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/{name}/status"


BODY = json.dumps({"trainerStatus": {"metrics": [{"name": "current_step", "value": "5"}]}}).encode()


def registry_of(exp: Exporter) -> Any:
    """The pod registry of a Kubernetes-mode exporter's discovery."""
    return exp.discovery.resolver.registry  # type: ignore[attr-defined]


def trainjob_obj(
    ns: str, name: str, status: Any = None, annotations: dict[str, str] | None = None
) -> dict:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {
            "namespace": ns,
            "name": name,
            "uid": f"uid-trainjob-{name}",  # what the pods' owner chain names (owner_chain)
            "annotations": annotations or {},
        },
        "status": {"trainerStatus": status} if status is not None else {},
    }


def trainjob_source(exp: Exporter) -> Any:
    from exporter.sources.trainjob import TrainJobSource

    (source,) = [s for s in exp.sources.values() if isinstance(s, TrainJobSource)]
    return source


def _obj(kind: str, ns: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": KINDS[kind].api_version,
        "kind": kind,
        "metadata": {"namespace": ns, "name": name, "uid": f"uid-{kind.lower()}-{name}"},
    }


def owner_chain(ns: str, labels: dict[str, str]) -> list[dict[str, Any]]:
    """The workload objects that would own a pod with these labels, as their controllers
    make them, from the top down (a TrainJob's pod: TrainJob, JobSet, Job)."""
    trial = labels.get("katib.kubeflow.org/trial")
    if labels.get("trainer.kubeflow.org/trainjob-name"):
        name = labels["trainer.kubeflow.org/trainjob-name"]
        objs = [_obj("TrainJob", ns, name), _obj("JobSet", ns, name)]
        objs.append(_obj("Job", ns, f"{name}-node-0"))
    elif labels.get("jobset.sigs.k8s.io/jobset-name"):
        name = labels["jobset.sigs.k8s.io/jobset-name"]
        objs = [_obj("JobSet", ns, name), _obj("Job", ns, f"{name}-workers-0")]
    elif labels.get("training.kubeflow.org/job-name"):
        objs = [_obj("PyTorchJob", ns, labels["training.kubeflow.org/job-name"])]
    elif labels.get("ray.io/originated-from-cr-name"):
        name = labels["ray.io/originated-from-cr-name"]
        objs = [_obj("RayJob", ns, name), _obj("RayCluster", ns, f"{name}-raycluster")]
    elif labels.get("batch.kubernetes.io/job-name") or labels.get("job-name") or trial:
        name = labels.get("batch.kubernetes.io/job-name") or labels.get("job-name") or trial
        objs = [_obj("Job", ns, str(name))]
    else:
        objs = []
    if trial:
        experiment = labels.get("katib.kubeflow.org/experiment") or trial.rsplit("-", 1)[0]
        objs = [_obj("Experiment", ns, experiment), _obj("Trial", ns, trial), *objs]
    return objs


def _ref(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "controller": True,
    }


def put_pod(kube: Any, p: dict[str, Any]) -> dict[str, Any]:
    """Put ``p`` into the fake API server as its controllers would have made it (see
    :func:`own`). Returns the pod."""
    kube.put("v1", "pods", own(kube, p))
    return p


def own(kube: Any, p: dict[str, Any]) -> dict[str, Any]:
    """Give ``p`` the owners its labels imply, as its controllers would have made them: the
    owner objects (those not in the fake API server yet), each owned by the one above, and
    the pod owned by the lowest. Returns the pod (not put: a kubelet may serve it)."""
    meta = p["metadata"]
    above: dict[str, Any] | None = None
    for obj in owner_chain(meta["namespace"], meta.get("labels") or {}):
        kind = KINDS[obj["kind"]]
        store = kube.objects.get((kind.api_version, kind.plural), {})
        existing = store.get((meta["namespace"], obj["metadata"]["name"]))
        if existing is not None:  # made by the test itself: its UID is the one to name
            obj = {**obj, "metadata": {**obj["metadata"], **(existing.get("metadata") or {})}}
        else:
            if above is not None:
                obj["metadata"]["ownerReferences"] = [_ref(above)]
            kube.put(kind.api_version, kind.plural, obj)
        above = obj
    if above is not None:
        meta["ownerReferences"] = [_ref(above)]
    return p


def refs_of(p: dict[str, Any]) -> tuple[Ref, ...]:
    """The controller chain of ``p`` as discovery would read it, with the owners its labels
    imply (pure tests: no API server)."""
    meta = p["metadata"]
    objs = owner_chain(meta["namespace"], meta.get("labels") or {})
    by_name: dict[tuple[str, str], dict[str, Any]] = {}
    above: dict[str, Any] | None = None
    for obj in objs:
        if above is not None:
            obj["metadata"]["ownerReferences"] = [_ref(above)]
        by_name[(obj["kind"], obj["metadata"]["name"])] = obj
        above = obj
    owned = {**meta, "ownerReferences": [_ref(above)] if above is not None else []}
    return chain(owned, lambda kind, ns, name: by_name.get((kind.kind, name)))


def writes_by(kube: Any, suffix: str, manager: str = "training-progress-exporter") -> list[Any]:
    """The bodies of the PATCHes ``manager`` (server-side apply's field manager) sent to a
    path ending in ``suffix``: by default the exporter's own write-back."""
    return [
        body
        for method, path, body in kube.writes
        if method == "PATCH"
        and path.split("?")[0].endswith(suffix)
        and f"fieldManager={manager}" in path
    ]
