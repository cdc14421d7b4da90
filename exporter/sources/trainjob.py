"""Kubernetes mode: the progress Kubeflow Trainer already keeps in each TrainJob.

Clusters running Kubeflow Trainer with progress tracking store it in the TrainJob
(``status.trainerStatus``, Kubeflow's shape) or, on OpenShift AI, in the annotation
``trainer.opendatahub.io/trainerStatus`` (their ``AnnotationStatus``: step, epochs, train and
eval metrics, "complete" once done; exporter.core.wire.parse_opendatahub). This source reads both
for every TrainJob whose rank-0 pod runs on this node, so exactly one node exports each job.
A status is ingested only when the TrainJob changed (its resourceVersion), so an old status
never looks like a fresh report, and never when the exporter's own write-back wrote it (its
field manager alone owns the field). Without the TrainJob CRD the source is simply off.

It reads only what its node needs: one GET per TrainJob whose rank-0 pod is on this node,
never a cluster-wide LIST (20,000 TrainJobs are 58 MB a LIST, seconds of CPU under the GIL
and an OOM kill at the DaemonSet's memory limit, on every node, every poll). Whether the CRD
exists is probed with a LIST of at most one item, at start and every ``PROBE_INTERVAL``
while it is missing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from ..core.annotations import ANNOTATION_CHECKPOINT, ODH_TRAINER_STATUS
from ..core.managed import ODH_ANNOTATION_PATH, TRAINER_STATUS_PATH, written_by_us
from ..core.model import (
    KUBEFLOW_MAX_BODY_BYTES,
    TRAINJOB_SOURCE,
    ReportError,
    RunKey,
    RunMeta,
    clean_label,
)
from ..core.wire import parse_kubeflow, parse_opendatahub
from ..kubernetes.client import api_status, get_custom_object
from ..plumbing.discovery import PodInfo, reporting_pods
from ..plumbing.ingest import Ingestor

NAME = TRAINJOB_SOURCE
GROUP, VERSION, PLURAL = "trainer.kubeflow.org", "v1alpha1", "trainjobs"
# Reading this node's TrainJobs: not more often than this.
MIN_INTERVAL = 15.0
PROBE_INTERVAL = 300.0  # while the TrainJob CRD is missing, look again this often


def rank0_pods(pods: list[PodInfo]) -> dict[tuple[str, str], PodInfo]:
    """(namespace, TrainJob) -> the pod on this node that reports for it (pods.reporting_pods).
    TrainJobs whose rank 0 runs elsewhere are absent."""
    return reporting_pods(
        pods, lambda p: (p.namespace, p.job_name) if p.job_kind == "TrainJob" else None
    )


def read_trainjob(api: Any, namespace: str, name: str) -> dict[str, Any] | None:
    """The TrainJob as the API server sends it, or None if it does not exist (404); other
    failures raise (the client's ApiException, or a connection error)."""
    return get_custom_object(api, GROUP, VERSION, PLURAL, namespace, name)


def parse_trainjob(obj: dict[str, Any], now: float) -> Any:
    """The TrainJob's progress as a Parsed report, or None when it has none (or only what the
    exporter wrote itself); ReportError when what it has is malformed."""
    status = obj.get("status") or {}
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if status.get("trainerStatus") is not None and not written_by_us(obj, TRAINER_STATUS_PATH):
        return parse_kubeflow({"trainerStatus": status["trainerStatus"]}, now)
    raw = annotations.get(ODH_TRAINER_STATUS)
    if raw is None or written_by_us(obj, ODH_ANNOTATION_PATH):
        return None
    if not isinstance(raw, str) or len(raw) > KUBEFLOW_MAX_BODY_BYTES:
        raise ReportError(
            "invalid_annotation", f"{ODH_TRAINER_STATUS} is not a JSON string under 64 KiB"
        )
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ReportError("invalid_json", f"{ODH_TRAINER_STATUS}: {exc}") from None
    return parse_opendatahub(doc, now)


class TrainJobSource:
    """Polls TrainJobs (at most every MIN_INTERVAL seconds) with the real client."""

    name = NAME

    def __init__(
        self,
        custom_api: Callable[[], Any],
        pods: Callable[[], list[PodInfo]],
        meta: Callable[[PodInfo], RunMeta],
        ingestor: Ingestor,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.custom_api = custom_api
        self.pods = pods
        self.meta = meta
        self.ingestor = ingestor
        self.monotonic = monotonic
        self.available: bool | None = None  # None until the first list tells
        self._next = 0.0
        self._probe_after = 0.0
        self._versions: dict[tuple[str, str], str] = {}

    def poll(self) -> None:
        if self.monotonic() < self._next:
            return
        self._next = self.monotonic() + MIN_INTERVAL
        if not self.available and not self._probe():
            return
        targets = rank0_pods(self.pods())
        up = True
        for key, pod in targets.items():
            try:
                obj = read_trainjob(self.custom_api(), *key)
            except Exception:
                up = False
                continue
            if obj is not None:  # None: a pod whose TrainJob is gone
                self._ingest(key, pod, obj)
        self.ingestor.source_up(NAME, up)
        for key in set(self._versions) - set(targets):
            del self._versions[key]

    def _probe(self) -> bool:
        """Whether the TrainJob CRD exists (a LIST of at most one item); rate-limited."""
        if self.available is False and self.monotonic() < self._probe_after:
            return False
        self._probe_after = self.monotonic() + PROBE_INTERVAL
        try:
            self.custom_api().list_cluster_custom_object(
                GROUP, VERSION, PLURAL, limit=1, _preload_content=False, _request_timeout=30
            )
        except Exception as exc:
            if api_status(exc) == 404:  # no TrainJob CRD in this cluster: nothing to read
                self.available = False
                return False
            self.ingestor.source_up(NAME, False)
            return False
        self.available = True
        return True

    def _ingest(self, key: tuple[str, str], pod: PodInfo, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        version = str(meta.get("resourceVersion", ""))
        if self._versions.get(key) == version:
            return
        self._versions[key] = version
        run_key = RunKey(pod.namespace, pod.name, pod.job_name)
        annotations = meta.get("annotations") or {}
        self.ingestor.checkpoint_requested(
            run_key, clean_label(annotations.get(ANNOTATION_CHECKPOINT), 63)
        )
        try:
            parsed = parse_trainjob(obj, self.ingestor.clock())
        except ReportError as err:
            self.ingestor.reject(NAME, err)
            return
        if parsed is not None:
            self.ingestor.accept(NAME, run_key, parsed, self.meta(pod))
