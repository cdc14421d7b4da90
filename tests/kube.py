"""What the Kubernetes-mode tests share: pod and TrainJob objects as the API server sends
them, the push path and body, and a wait for what the watch delivers."""

from __future__ import annotations

import json
import time
from typing import Any

from exporter.app import Exporter

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
        "metadata": {"namespace": ns, "name": name, "annotations": annotations or {}},
        "status": {"trainerStatus": status} if status is not None else {},
    }


def trainjob_source(exp: Exporter) -> Any:
    from exporter.sources.trainjob import TrainJobSource

    (source,) = [s for s in exp.sources.values() if isinstance(s, TrainJobSource)]
    return source
