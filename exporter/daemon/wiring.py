"""Composition: which discovery, sources and sinks a config switches on.

Every polled part, in either mode, comes from a factory here that takes the whole config (as
dcgm-exporter's collector factories do), the ingestor, and, in Kubernetes mode, the
:class:`~exporter.plumbing.discovery.Cluster` (None in standalone mode), and returns None when
the config does not switch it on. Each then polls on its own schedule
(:mod:`exporter.plumbing.schedule`).
Adding a source is one module in ``sources/`` (or ``logs/``) plus one entry here; a sink
one module in ``sinks/`` plus one entry.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from ..plumbing.discovery import (
    Cluster,
    Discovery,
    DiscoveryError,
    StandaloneCodeReader,
    StandaloneResolver,
    read_token,
    resolve_mode,
)
from ..plumbing.ingest import Ingestor
from ..sources import Polled
from .config import Config

Factory = Callable[[Config, Ingestor, "Cluster | None"], "Polled | None"]


def make_discovery(
    config: Config, ingestor: Ingestor, environ: Mapping[str, str] | None = None
) -> Discovery:
    """The discovery for ``config.mode`` (after resolving ``auto``); raises DiscoveryError
    when it cannot start."""
    env = os.environ if environ is None else environ
    if resolve_mode(config.mode, env) == "standalone":
        if config.read_authorization:
            raise DiscoveryError(
                "read_authorization asks the Kubernetes API who may read: Kubernetes mode only"
            )
        token = read_token(config.push_token_file)
        return Discovery(
            mode="standalone",
            resolver=StandaloneResolver(token),
            push_idle_expiry=True,
            reader=StandaloneCodeReader(token),
        )
    from ..kubernetes.pod_discovery import kubernetes_discovery

    return kubernetes_discovery(config.kubernetes_settings(), ingestor, env)


def _status_dir(config: Config, ingestor: Ingestor, cluster: Cluster | None) -> Polled | None:
    from ..sources.file import StatusDirSource

    if not config.status_dir:
        return None
    return StatusDirSource(config.status_dir, config.namespace, ingestor)


def _http(config: Config, ingestor: Ingestor, cluster: Cluster | None) -> Polled | None:
    """The configured targets, and in Kubernetes mode every annotated pod's endpoint."""
    from ..sources.http import HttpSource, HttpTarget

    configured = tuple(config.http_targets)
    if cluster is None:
        if not configured:
            return None
        return HttpSource(lambda: configured, ingestor, timeout=config.http_timeout)
    from ..core.model import RunKey

    def targets() -> list[HttpTarget]:
        pods = [
            HttpTarget(
                RunKey(p.namespace, p.name, p.job_name),
                p.http_url,
                cluster.meta(p, "http"),
                interval=p.http_interval or 0.0,
            )
            for p in cluster.pods()
            if p.http_url and not p.finished
        ]
        return [*configured, *pods]

    return HttpSource(targets, ingestor, timeout=config.http_timeout)


def _logs(config: Config, ingestor: Ingestor, cluster: Cluster | None) -> Polled | None:
    """``log_paths`` in standalone mode; every training pod's container log in Kubernetes."""
    from ..logs.source import LogSource, standalone_targets

    if cluster is None:
        if not config.log_paths:
            return None
        targets = standalone_targets(config.log_paths, config.namespace)
        return LogSource(targets, ingestor, files_are_runs=True, formats=config.log_formats)
    if not config.log_root:  # switched off (no hostPath: Pod Security "restricted")
        return None
    from ..logs.pod_logs import pod_log_targets

    targets = pod_log_targets(config.log_root, cluster.pods, lambda p: cluster.meta(p, "log"))
    return LogSource(targets, ingestor, formats=config.log_formats)


def _trainjob(config: Config, ingestor: Ingestor, cluster: Cluster | None) -> Polled | None:
    """Kubernetes mode: Kubeflow Trainer's own progress in each TrainJob's status."""
    if cluster is None:
        return None
    from ..sources.trainjob import TrainJobSource

    return TrainJobSource(
        cluster.custom_api, cluster.pods, lambda p: cluster.meta(p, "trainjob"), ingestor
    )


def _node(config: Config, ingestor: Ingestor, cluster: Cluster | None) -> Polled | None:
    """Kubernetes mode: this node's cordon (checkpoint directives before a drain)."""
    if cluster is None:
        return None
    from ..sources.node import NodeSource

    return NodeSource(cluster.core_api, cluster.node, ingestor)


def _writeback(config: Config, ingestor: Ingestor, cluster: Cluster | None) -> Polled | None:
    """Kubernetes mode, opt-in: progress from other sources written into the TrainJobs."""
    if cluster is None or config.trainjob_status_writeback == "off":
        return None
    from ..sinks.writeback import StatusWriter

    return StatusWriter(
        cluster.custom_api, cluster.pods, ingestor, config.trainjob_status_writeback
    )


def _katib(config: Config, ingestor: Ingestor, cluster: Cluster | None) -> Polled | None:
    """Kubernetes mode, opt-in: Katib trials' objective metrics to Katib's DB manager."""
    if cluster is None or not config.katib_db_manager:
        return None
    import logging

    from ..sinks.katib.dbmanager import DBManager, KatibUnavailable
    from ..sinks.katib.katib_reporter import KatibReporter

    try:
        sink = DBManager(config.katib_db_manager)
    except KatibUnavailable as exc:
        logging.getLogger(__name__).warning("Katib reporting is off: %s", exc)
        return None
    return KatibReporter(
        cluster.custom_api, cluster.pods, ingestor, sink, config.katib_report_interval
    )


def _kubelet_files(config: Config, ingestor: Ingestor, cluster: Cluster | None) -> Polled | None:
    """Kubernetes mode: status files in the pods' emptyDir volumes, through the kubelet dir."""
    if cluster is None or not config.kubelet_root:  # off without the kubelet's directory
        return None
    from ..sources.kubelet_files import KubeletFileSource

    return KubeletFileSource(
        config.kubelet_root, cluster.pods, lambda p: cluster.meta(p, "file"), ingestor
    )


# job name -> factory. The job name labels the poll metrics; each source keeps its own name
# on the report counters (both file sources count as source="file").
SOURCES: dict[str, Factory] = {
    "file": _status_dir,
    "http": _http,
    "log": _logs,
    "trainjob": _trainjob,
    "node": _node,
    "kubelet_file": _kubelet_files,
}
# What the exporter writes elsewhere, polled like the sources (and labelled the same way on
# the poll metrics).
SINKS: dict[str, Factory] = {
    "writeback": _writeback,
    "katib": _katib,
}


def build(
    factories: Mapping[str, Factory], config: Config, ingestor: Ingestor, cluster: Cluster | None
) -> dict[str, Polled]:
    """Every part of ``factories`` (:data:`SOURCES` or :data:`SINKS`) that the config
    switches on, by job name."""
    out = {}
    for name, factory in factories.items():
        polled = factory(config, ingestor, cluster)
        if polled is not None:
            out[name] = polled
    return out
