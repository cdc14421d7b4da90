"""Discovery: which runs exist on this node, and who may push for which run.

Standalone mode (a laptop, a single GPU box) has no pods: runs are whatever reports arrive,
pushes are trusted, and the push path names the run. Kubernetes mode (pods on this node via
the API server, GPU accounting, push authorization) plugs in here through the same
:class:`Discovery` shape; it imports ``kubernetes`` lazily so that standalone use and the
reporter never need it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from .sources.push import PushResolver, StandaloneResolver

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


def resolve_mode(mode: str, environ: Mapping[str, str]) -> str:
    """``auto`` becomes ``kubernetes`` inside a pod, else ``standalone``."""
    if mode == "auto":
        return "kubernetes" if environ.get(IN_CLUSTER_ENV) else "standalone"
    return mode


def make_discovery(mode: str, environ: Mapping[str, str] | None = None) -> Discovery:
    """Build the discovery for ``mode`` (after resolving ``auto``)."""
    resolved = resolve_mode(mode, os.environ if environ is None else environ)
    if resolved == "standalone":
        return Discovery(mode="standalone", resolver=StandaloneResolver(), push_idle_expiry=True)
    raise DiscoveryError(
        "Kubernetes mode (pod discovery, GPU accounting, push authorization) is not "
        "available in this release; run with --mode standalone"
    )
