"""Which object a training pod belongs to, and how that object is suspended: pure functions
over the objects the API returns (plain dicts) and the pod's controller chain
(:mod:`exporter.core.workloads`: owners, never labels).

Kinds that can be suspended, and where: Kubeflow TrainJob and JobSet and batch Job at
``spec.suspend``, the training-operator v1 jobs (PyTorchJob, TFJob, MPIJob, XGBoostJob,
PaddleJob, JAXJob) at ``spec.runPolicy.suspend``, RayJob at ``spec.suspend``. A pod with no
owner is a bare pod: it can be deleted, not suspended.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.workloads import KINDS, Ref


@dataclass(frozen=True)
class Owner:
    """The workload object that owns training pods (the job of their controller chain)."""

    kind: str
    api_version: str  # "batch/v1", "trainer.kubeflow.org/v1alpha1"
    plural: str
    namespace: str
    name: str
    uid: str
    suspend_path: tuple[str, ...] | None  # None: it cannot be suspended
    selector: str  # label selector of its pods, as its controller labels them: "label=name"

    def suspend_patch(self) -> dict[str, Any]:
        """The merge patch that sets the suspend flag (only for a suspendable kind)."""
        assert self.suspend_path is not None
        patch: dict[str, Any] = {}
        node = patch
        for part in self.suspend_path[:-1]:
            node = node.setdefault(part, {})
        node[self.suspend_path[-1]] = True
        return patch


def owner_of(ref: Ref, namespace: str) -> Owner | None:
    """The job a controller reference names, or None for a kind we do not know (only its
    pods can be acted on then, one by one)."""
    kind = KINDS.get(ref.kind)
    if kind is None or not kind.job:
        return None
    return Owner(
        kind.kind,
        kind.api_version,
        kind.plural,
        namespace,
        ref.name,
        ref.uid,
        kind.suspend_path,
        f"{kind.pod_label}={ref.name}",
    )


def running(pod: Mapping[str, Any]) -> bool:
    """Whether the pod still holds its node's resources (not Succeeded or Failed, not
    already being deleted)."""
    phase = (pod.get("status") or {}).get("phase")
    deleting = (pod.get("metadata") or {}).get("deletionTimestamp")
    return phase not in ("Succeeded", "Failed") and not deleting


def reference(obj: dict[str, Any], kind: str, api_version: str) -> dict[str, Any]:
    """An Event's ``involvedObject`` for ``obj``."""
    meta = obj.get("metadata") or {}
    return {
        "kind": kind,
        "apiVersion": api_version,
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
    }
