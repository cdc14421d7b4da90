"""What Kubernetes mode is told: a part of the exporter's settings (:mod:`exporter.config`
composes them), apart from the code that acts on it so that reading a config loads no
Kubernetes machinery."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..annotations import DEFAULT_GPU_RESOURCES


@dataclass(frozen=True)
class KubernetesSettings:
    """What Kubernetes mode is told (the ``node_name``, ``pod_discovery``, ``kubelet_*``,
    ``token_audience`` and ``gpu_resources`` settings)."""

    node_name: str
    pod_discovery: str = "apiserver"
    kubelet_url: str = ""
    kubelet_ca: str = ""
    token_audience: str = "training-progress-exporter"
    gpu_resources: Sequence[str] = DEFAULT_GPU_RESOURCES


POD_DISCOVERY = ("apiserver", "kubelet")
