"""What Kubernetes mode is told: a part of the exporter's settings (:mod:`exporter.daemon.config`
composes them), apart from the code that acts on it so that reading a config loads no
Kubernetes machinery."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core.annotations import DEFAULT_GPU_RESOURCES


@dataclass(frozen=True)
class KubernetesSettings:
    """What Kubernetes mode is told (the ``node_name``, ``pod_discovery``, ``kubelet_*``,
    ``token_audience``, ``gpu_resources``, ``opendatahub_metrics_pull`` and
    ``read_authorization`` settings)."""

    node_name: str
    pod_discovery: str = "apiserver"
    kubelet_url: str = ""
    kubelet_ca: str = ""
    token_audience: str = "training-progress-exporter"
    gpu_resources: Sequence[str] = DEFAULT_GPU_RESOURCES
    opendatahub_metrics_pull: bool = False  # pull pods OpenShift AI's NetworkPolicy fences
    # Every read but the probes needs a bearer token whose user may get its path (a
    # SubjectAccessReview on the non-resource URL, as kube-rbac-proxy asks).
    read_authorization: bool = False


POD_DISCOVERY = ("apiserver", "kubelet")
