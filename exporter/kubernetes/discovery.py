"""Kubernetes mode's :class:`~exporter.discovery.Discovery`: this node's training pods (an
API server watch, or the kubelet's ``/pods``), push authorization by pod IP and TokenReview,
and the :class:`Cluster` the pod-driven sources read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..discovery import Discovery, DiscoveryError
from ..ingest import Ingestor
from ..model import RunMeta
from .client import ApiFactory, apis
from .pods import DEFAULT_GPU_RESOURCES, PodInfo
from .tokenreview import TokenReview
from .watch import KubernetesResolver, PodRegistry, PodWatcher, run_meta

if TYPE_CHECKING:
    from ..config import Config


@dataclass(frozen=True)
class Cluster:
    """What Kubernetes mode gives the sources: this node's training pods and the API."""

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
    config: Config, ingestor: Ingestor, environ: Mapping[str, str]
) -> Discovery:
    """Discovery for Kubernetes mode. Raises DiscoveryError when it cannot start."""
    if not config.node_name:
        raise DiscoveryError("Kubernetes mode needs the node name: set NODE_NAME (downward API)")
    registry = PodRegistry(config.node_name, ingestor)
    api = apis()
    resources = config.gpu_resources or DEFAULT_GPU_RESOURCES
    watcher: Any
    if config.pod_discovery == "kubelet":
        from .kubelet import KubeletPoller

        host = environ.get("HOST_IP", "127.0.0.1")
        watcher = KubeletPoller(
            config.kubelet_url or f"https://{host}:10250",
            registry,
            ca_path=config.kubelet_ca,
            resources=resources,
        )
    elif config.pod_discovery == "apiserver":
        watcher = PodWatcher(api.core, config.node_name, registry, resources=resources)
    else:
        raise DiscoveryError(
            f"pod_discovery must be apiserver or kubelet, not {config.pod_discovery!r}"
        )
    return Discovery(
        mode="kubernetes",
        resolver=KubernetesResolver(registry, TokenReview(api.auth, config.token_audience)),
        push_idle_expiry=False,
        start=watcher.start,
        stop=watcher.stop,
        ready=watcher.ready,
        cluster=Cluster(config.node_name, registry, api.custom, api.core),
    )
