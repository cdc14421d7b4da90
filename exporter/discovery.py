"""Discovery: which runs exist on this node, and who may push for which run.

Standalone mode (a laptop, a single GPU box) has no pods: runs are whatever reports arrive,
pushes are trusted, and the push path names the run. Kubernetes mode (pods on this node via
the API server, GPU accounting, push authorization) plugs in through the same
:class:`Discovery` shape from :mod:`exporter.kubernetes.discovery`, imported only in that
mode, so standalone use and the reporter never need the ``kubernetes`` client.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .sources.push import PushResolver, StandaloneResolver

if TYPE_CHECKING:
    from .config import Config
    from .ingest import Ingestor
    from .kubernetes.discovery import Cluster

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
    # Kubernetes mode: this node's training pods and the API, for the pod-driven sources.
    cluster: Cluster | None = None


def resolve_mode(mode: str, environ: Mapping[str, str]) -> str:
    """``auto`` becomes ``kubernetes`` inside a pod, else ``standalone``."""
    if mode == "auto":
        return "kubernetes" if environ.get(IN_CLUSTER_ENV) else "standalone"
    return mode


def read_token(path: str | None) -> str | None:
    """The push token in ``path`` (surrounding whitespace dropped). Raises DiscoveryError
    when the file is named but unusable: an exporter that was asked to check tokens must
    not start without one."""
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            token = fh.read(4096).strip()
    except OSError as exc:
        raise DiscoveryError(f"push_token_file {path}: {exc.strerror}") from None
    if not token:
        raise DiscoveryError(f"push_token_file {path} is empty")
    return token


def make_discovery(
    config: Config, ingestor: Ingestor, environ: Mapping[str, str] | None = None
) -> Discovery:
    """The discovery for ``config.mode`` (after resolving ``auto``)."""
    env = os.environ if environ is None else environ
    if resolve_mode(config.mode, env) == "standalone":
        resolver = StandaloneResolver(read_token(config.push_token_file))
        return Discovery(mode="standalone", resolver=resolver, push_idle_expiry=True)
    from .kubernetes.discovery import kubernetes_discovery

    return kubernetes_discovery(config, ingestor, env)
