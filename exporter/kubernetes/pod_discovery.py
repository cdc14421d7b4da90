"""Kubernetes mode's :class:`~exporter.plumbing.discovery.Discovery`: this node's training pods (an
API server watch, or the kubelet's ``/pods``), push authorization by pod IP and TokenReview,
and the :class:`~exporter.plumbing.discovery.Cluster` the pod-driven sources and sinks read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.annotations import DEFAULT_GPU_RESOURCES
from ..core.model import RunMeta
from ..plumbing.discovery import ApiFactory, Discovery, DiscoveryError, PodInfo
from ..plumbing.ingest import Ingestor
from .accessreview import AccessReview, KubernetesCodeReader, ReadGuard
from .client import apis
from .kube_settings import POD_DISCOVERY, KubernetesSettings
from .owners import OwnerLookup, PodReader
from .tokenreview import TokenReview
from .watch import KubernetesResolver, PodRegistry, PodWatcher, run_meta


@dataclass(frozen=True)
class KubernetesCluster:
    """This node's training pods (from the registry discovery keeps) and the API."""

    node: str
    registry: PodRegistry
    custom_api: ApiFactory
    core_api: ApiFactory

    def pods(self) -> list[PodInfo]:
        return self.registry.all()

    def meta(self, pod: PodInfo, source: str) -> RunMeta:
        """The run metadata ``pod`` gives a run read by ``source``."""
        return run_meta(pod, self.node, source)


def kubernetes_discovery(
    settings: KubernetesSettings, ingestor: Ingestor, environ: Mapping[str, str]
) -> Discovery:
    """Discovery for Kubernetes mode. Raises DiscoveryError when it cannot start."""
    if not settings.node_name:
        raise DiscoveryError("Kubernetes mode needs the node name: set NODE_NAME (downward API)")
    if settings.pod_discovery not in POD_DISCOVERY:
        raise DiscoveryError(
            f"pod_discovery must be apiserver or kubelet, not {settings.pod_discovery!r}"
        )
    registry = PodRegistry(settings.node_name, ingestor)
    api = apis()
    resources = tuple(settings.gpu_resources) or DEFAULT_GPU_RESOURCES
    reader = PodReader(
        OwnerLookup(api.custom),
        ingestor.drop,
        resources,
        pull_fenced=settings.opendatahub_metrics_pull,
    )
    watcher: Any
    if settings.pod_discovery == "kubelet":
        from .kubelet import KubeletPoller

        host = environ.get("HOST_IP", "127.0.0.1")
        watcher = KubeletPoller(
            settings.kubelet_url or f"https://{host}:10250",
            registry,
            reader,
            ca_path=settings.kubelet_ca,
        )
    else:
        watcher = PodWatcher(api.core, settings.node_name, registry, reader)
    review = AccessReview(api.auth, api.authz)
    return Discovery(
        mode="kubernetes",
        resolver=KubernetesResolver(registry, TokenReview(api.auth, settings.token_audience)),
        push_idle_expiry=False,
        start=watcher.start,
        stop=watcher.stop,
        ready=watcher.ready,
        cluster=KubernetesCluster(settings.node_name, registry, api.custom, api.core),
        reader=KubernetesCodeReader(registry, review),
        read_guard=ReadGuard(review) if settings.read_authorization else None,
    )
