"""Which object a training pod belongs to, and how that object is suspended: pure functions
over the pod as the API returns it (a plain dict).

Kinds that can be suspended, and where: Kubeflow TrainJob and JobSet and batch Job at
``spec.suspend``, the training-operator v1 jobs (PyTorchJob, TFJob, MPIJob, XGBoostJob,
PaddleJob, JAXJob) at ``spec.runPolicy.suspend``. A pod with none of these owners is a bare
pod: it can be deleted, not suspended.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# (pod label naming the job, kind, API group/version, plural, path of the suspend flag);
# the most specific first, as in exporter.kubernetes.pods.JOB_LABELS.
_BY_LABEL: tuple[tuple[str, str, str, str, tuple[str, ...]], ...] = (
    (
        "trainer.kubeflow.org/trainjob-name",
        "TrainJob",
        "trainer.kubeflow.org/v1alpha1",
        "trainjobs",
        ("spec", "suspend"),
    ),
    (
        "jobset.sigs.k8s.io/jobset-name",
        "JobSet",
        "jobset.x-k8s.io/v1alpha2",
        "jobsets",
        ("spec", "suspend"),
    ),
    ("batch.kubernetes.io/job-name", "Job", "batch/v1", "jobs", ("spec", "suspend")),
    ("job-name", "Job", "batch/v1", "jobs", ("spec", "suspend")),
)
OPERATOR_LABEL = "training.kubeflow.org/job-name"
OPERATOR_KINDS = frozenset({"PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob"})


@dataclass(frozen=True)
class Owner:
    """A workload object that owns training pods and can be suspended."""

    kind: str
    api_version: str  # "batch/v1", "trainer.kubeflow.org/v1alpha1"
    plural: str
    namespace: str
    name: str
    suspend_path: tuple[str, ...]
    selector: str  # label selector of its pods: "label=name"

    def suspend_patch(self) -> dict[str, Any]:
        """The merge patch that sets the suspend flag."""
        patch: dict[str, Any] = {}
        node = patch
        for part in self.suspend_path[:-1]:
            node = node.setdefault(part, {})
        node[self.suspend_path[-1]] = True
        return patch


def owner_of(pod: Mapping[str, Any]) -> Owner | None:
    """The suspendable workload the pod belongs to, or None for a bare pod."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    namespace = meta.get("namespace") or ""
    operator_job = labels.get(OPERATOR_LABEL)
    if operator_job:
        for ref in meta.get("ownerReferences") or []:
            kind = ref.get("kind")
            if ref.get("controller") and kind in OPERATOR_KINDS:
                return Owner(
                    kind,
                    str(ref.get("apiVersion") or "kubeflow.org/v1"),
                    kind.lower() + "s",
                    namespace,
                    operator_job,
                    ("spec", "runPolicy", "suspend"),
                    f"{OPERATOR_LABEL}={operator_job}",
                )
    for label, kind, api_version, plural, path in _BY_LABEL:
        name = labels.get(label)
        if name:
            return Owner(kind, api_version, plural, namespace, name, path, f"{label}={name}")
    return None


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
