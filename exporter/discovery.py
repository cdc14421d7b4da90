"""Discovery: which runs exist on this node, and who may push for which run.

Standalone mode (a laptop, a single GPU box) has no pods: runs are whatever reports arrive,
pushes are trusted, and the push path names the run. Kubernetes mode (pods on this node via
the API server, GPU accounting, push authorization) plugs in here through the same
:class:`Discovery` shape; it imports ``kubernetes`` lazily so that standalone use and the
reporter never need it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .model import RunKey
from .pods import DEFAULT_GPU_RESOURCES
from .sources.push import PushResolver, StandaloneResolver

if TYPE_CHECKING:
    from .ingest import Ingestor

# Set in every pod by the kubelet; its presence is how "auto" detects a cluster.
IN_CLUSTER_ENV = "KUBERNETES_SERVICE_HOST"


class DiscoveryError(RuntimeError):
    """Discovery cannot start in the requested mode; the message says why."""


@dataclass(frozen=True)
class Discovery:
    """The pieces a mode provides to the exporter."""

    mode: str
    resolver: PushResolver
    # Standalone pushes have no pod whose deletion ends the run; they expire when idle.
    push_idle_expiry: bool
    start: Callable[[], None] = lambda: None
    stop: Callable[[], None] = lambda: None
    ready: Callable[[], tuple[bool, str]] = lambda: (True, "standalone")
    # Sources only this mode has (Kubernetes: annotated pods' status files and HTTP endpoints).
    sources: tuple[Any, ...] = ()


def resolve_mode(mode: str, environ: Mapping[str, str]) -> str:
    """``auto`` becomes ``kubernetes`` inside a pod, else ``standalone``."""
    if mode == "auto":
        return "kubernetes" if environ.get(IN_CLUSTER_ENV) else "standalone"
    return mode


def make_discovery(
    mode: str,
    clock: Callable[[], float] = time.time,
    node_name: str = "",
    environ: Mapping[str, str] | None = None,
    core_api: Callable[[], Any] | None = None,
    custom_api: Callable[[], Any] | None = None,
    auth_api: Callable[[], Any] | None = None,
    token_audience: str = "training-progress-exporter",
    pod_source: str = "apiserver",
    gpu_resources: tuple[str, ...] | None = None,
    kubelet_url: str = "",
    kubelet_ca: str = "",
    ingestor: Ingestor | None = None,
    kubelet_root: str = "/var/lib/kubelet",
    log_root: str = "/var/log/pods",
    http_timeout: float = 2.0,
) -> Discovery:
    """Build the discovery for ``mode`` (after resolving ``auto``)."""
    resolved = resolve_mode(mode, os.environ if environ is None else environ)
    if resolved == "standalone":
        return Discovery(mode="standalone", resolver=StandaloneResolver(), push_idle_expiry=True)
    if not node_name:
        raise DiscoveryError("Kubernetes mode needs the node name: set NODE_NAME (downward API)")
    if ingestor is None:
        raise DiscoveryError("Kubernetes mode needs the ingestor")
    from .kubernetes_discovery import KubernetesResolver, PodRegistry, PodWatcher, TokenReview

    registry = PodRegistry(node_name, ingestor)
    if core_api is None or custom_api is None or auth_api is None:
        default_core, default_custom, default_auth = _api_factories()
        core_api = core_api or default_core
        custom_api = custom_api or default_custom
        auth_api = auth_api or default_auth
    watcher: Any
    if pod_source == "kubelet":
        from .kubelet_discovery import KubeletPoller

        host = (os.environ if environ is None else environ).get("HOST_IP", "127.0.0.1")
        watcher = KubeletPoller(
            kubelet_url or f"https://{host}:10250",
            registry,
            ca_path=kubelet_ca,
            resources=gpu_resources or DEFAULT_GPU_RESOURCES,
        )
    elif pod_source == "apiserver":
        watcher = PodWatcher(
            core_api,
            node_name,
            registry,
            resources=gpu_resources or DEFAULT_GPU_RESOURCES,
        )
    else:
        raise DiscoveryError(f"pod_discovery must be apiserver or kubelet, not {pod_source!r}")
    review = TokenReview(auth_api, token_audience)
    sources: tuple[Any, ...] = ()
    if True:
        from .kubernetes_discovery import run_meta
        from .sources.http import HttpSource, HttpTarget
        from .sources.kubelet_file import KubeletFileSource

        def file_meta(pod: Any) -> Any:
            return run_meta(pod, node_name, "file")

        def http_targets() -> list[HttpTarget]:
            return [
                HttpTarget(
                    RunKey(p.namespace, p.name, p.job_name),
                    p.http_url,
                    run_meta(p, node_name, "http"),
                )
                for p in registry.all()
                if p.http_url and not p.finished
            ]

        from .logs.source import LogSource, pod_log_targets
        from .sources.trainjob import TrainJobSource

        def log_meta(pod: Any) -> Any:
            return run_meta(pod, node_name, "log")

        def trainjob_meta(pod: Any) -> Any:
            return run_meta(pod, node_name, "trainjob")

        sources = (
            KubeletFileSource(kubelet_root, registry.all, file_meta, ingestor),
            HttpSource(http_targets, ingestor, timeout=http_timeout),
            TrainJobSource(custom_api, registry.all, trainjob_meta, ingestor),
            LogSource(pod_log_targets(log_root, registry.all, log_meta), ingestor),
        )
    return Discovery(
        mode="kubernetes",
        resolver=KubernetesResolver(registry, review),
        push_idle_expiry=False,
        start=watcher.start,
        stop=watcher.stop,
        ready=watcher.ready,
        sources=sources,
    )


def api_client() -> Any:
    """A kubernetes ``ApiClient`` of its own (no change to the client's global default): the
    in-cluster service account inside a pod, else ``$KUBECONFIG`` or ``~/.kube/config``.
    Raises DiscoveryError."""
    try:
        from kubernetes import client, config
    except ImportError as exc:
        raise DiscoveryError(f"Kubernetes mode needs the kubernetes package: {exc}") from None
    try:
        configuration = client.Configuration()
        config.load_incluster_config(client_configuration=configuration)
        return client.ApiClient(configuration)
    except Exception:
        pass
    try:
        # Read KUBECONFIG now: the client's own default is fixed when it is first imported.
        return config.new_client_from_config(config_file=os.environ.get("KUBECONFIG"))
    except Exception as exc:
        raise DiscoveryError(f"no in-cluster config and no usable kubeconfig: {exc}") from None


def _api_factories() -> tuple[Callable[[], Any], Callable[[], Any], Callable[[], Any]]:
    """Core, custom-objects and authentication APIs over one ApiClient: the cluster
    configuration is loaded once, not once per API."""
    from kubernetes import client

    shared = api_client()
    return (
        lambda: client.CoreV1Api(shared),
        lambda: client.CustomObjectsApi(shared),
        lambda: client.AuthenticationV1Api(shared),
    )
