"""Sources: one module per way a report arrives, and the one explicit registry of them.

A polled source has ``name`` and ``poll()``; the push source is served by the HTTP server.
Every polled source, in either mode, comes from a factory in :data:`SOURCES` that takes the
whole config (as dcgm-exporter's collector factories do), the ingestor, and, in Kubernetes
mode, the :class:`~exporter.kubernetes.discovery.Cluster` (None in standalone mode), and
returns None when the config does not switch the source on. Each source then polls on its
own schedule (:mod:`exporter.schedule`). Adding a source is one module plus one entry here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..config import Config
    from ..ingest import Ingestor
    from ..kubernetes.discovery import Cluster


class PolledSource(Protocol):
    """A source the exporter polls on an interval."""

    name: str

    def poll(self) -> None: ...


SourceFactory = Callable[["Config", "Ingestor", "Cluster | None"], "PolledSource | None"]


def _status_dir(config: Config, ingestor: Ingestor, cluster: Cluster | None) -> PolledSource | None:
    from .file import StatusDirSource

    if not config.status_dir:
        return None
    return StatusDirSource(config.status_dir, config.namespace, ingestor)


def _http(config: Config, ingestor: Ingestor, cluster: Cluster | None) -> PolledSource | None:
    """The configured targets, and in Kubernetes mode every annotated pod's endpoint."""
    from .http import HttpSource, HttpTarget

    configured = tuple(config.http_targets)
    if cluster is None:
        if not configured:
            return None
        return HttpSource(lambda: configured, ingestor, timeout=config.http_timeout)
    from ..model import RunKey

    def targets() -> list[HttpTarget]:
        pods = [
            HttpTarget(RunKey(p.namespace, p.name, p.job_name), p.http_url, cluster.meta(p, "http"))
            for p in cluster.pods()
            if p.http_url and not p.finished
        ]
        return [*configured, *pods]

    return HttpSource(targets, ingestor, timeout=config.http_timeout)


def _logs(config: Config, ingestor: Ingestor, cluster: Cluster | None) -> PolledSource | None:
    """``log_paths`` in standalone mode; every training pod's container log in Kubernetes."""
    from ..logs.source import LogSource, standalone_targets

    if cluster is None:
        if not config.log_paths:
            return None
        targets = standalone_targets(config.log_paths, config.namespace)
        return LogSource(targets, ingestor, files_are_runs=True)
    if not config.log_root:  # switched off (no hostPath: Pod Security "restricted")
        return None
    from ..kubernetes.logs import pod_log_targets

    targets = pod_log_targets(config.log_root, cluster.pods, lambda p: cluster.meta(p, "log"))
    return LogSource(targets, ingestor)


def _trainjob(config: Config, ingestor: Ingestor, cluster: Cluster | None) -> PolledSource | None:
    """Kubernetes mode: Kubeflow Trainer's own progress in each TrainJob's status."""
    if cluster is None:
        return None
    from ..kubernetes.trainjob import TrainJobSource

    return TrainJobSource(
        cluster.custom_api, cluster.pods, lambda p: cluster.meta(p, "trainjob"), ingestor
    )


def _node(config: Config, ingestor: Ingestor, cluster: Cluster | None) -> PolledSource | None:
    """Kubernetes mode: this node's cordon (checkpoint directives before a drain)."""
    if cluster is None:
        return None
    from ..kubernetes.node import NodeSource

    return NodeSource(cluster.core_api, cluster.node, ingestor)


def _writeback(config: Config, ingestor: Ingestor, cluster: Cluster | None) -> PolledSource | None:
    """Kubernetes mode, opt-in: progress from other sources written into the TrainJobs."""
    if cluster is None or config.trainjob_status_writeback == "off":
        return None
    from ..kubernetes.writeback import StatusWriter

    return StatusWriter(
        cluster.custom_api, cluster.pods, ingestor, config.trainjob_status_writeback
    )


def _katib(config: Config, ingestor: Ingestor, cluster: Cluster | None) -> PolledSource | None:
    """Kubernetes mode, opt-in: Katib trials' objective metrics to Katib's DB manager."""
    if cluster is None or not config.katib_db_manager:
        return None
    import logging

    from ..katib.dbmanager import DBManager, KatibUnavailable
    from ..kubernetes.katib import KatibReporter

    try:
        sink = DBManager(config.katib_db_manager)
    except KatibUnavailable as exc:
        logging.getLogger(__name__).warning("Katib reporting is off: %s", exc)
        return None
    return KatibReporter(
        cluster.custom_api, cluster.pods, ingestor, sink, config.katib_report_interval
    )


def _kubelet_files(
    config: Config, ingestor: Ingestor, cluster: Cluster | None
) -> PolledSource | None:
    """Kubernetes mode: status files in the pods' emptyDir volumes, through the kubelet dir."""
    if cluster is None or not config.kubelet_root:  # off without the kubelet's directory
        return None
    from ..kubernetes.files import KubeletFileSource

    return KubeletFileSource(
        config.kubelet_root, cluster.pods, lambda p: cluster.meta(p, "file"), ingestor
    )


# job name -> factory. The job name labels the poll metrics; each source keeps its own name
# on the report counters (both file sources count as source="file").
SOURCES: dict[str, SourceFactory] = {
    "file": _status_dir,
    "http": _http,
    "log": _logs,
    "trainjob": _trainjob,
    "node": _node,
    "writeback": _writeback,
    "katib": _katib,
    "kubelet_file": _kubelet_files,
}


def build_sources(
    config: Config, ingestor: Ingestor, cluster: Cluster | None
) -> dict[str, PolledSource]:
    """Every source the config switches on, by job name."""
    out = {}
    for name, factory in SOURCES.items():
        source = factory(config, ingestor, cluster)
        if source is not None:
            out[name] = source
    return out
