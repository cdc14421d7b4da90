"""Kubernetes mode: the progress Kubeflow Trainer already keeps in each TrainJob.

Clusters running Kubeflow Trainer with progress tracking store it in the TrainJob
(``status.trainerStatus``) or, on OpenShift AI, in the annotation
``trainer.opendatahub.io/trainerStatus``. This source reads both for every TrainJob whose
rank-0 pod runs on this node, so exactly one node exports each job. A status is ingested
only when the TrainJob changed (its resourceVersion), so an old status never looks like a
fresh report. Without the TrainJob CRD the source is simply off.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from ..ingest import Ingestor
from ..model import (
    KUBEFLOW_MAX_BODY_BYTES,
    ReportError,
    RunKey,
    RunMeta,
    clean_label,
    parse_any,
    parse_kubeflow,
)
from .pods import ANNOTATION_CHECKPOINT, PodInfo

NAME = "trainjob"
GROUP, VERSION, PLURAL = "trainer.kubeflow.org", "v1alpha1", "trainjobs"
ODH_ANNOTATION = "trainer.opendatahub.io/trainerStatus"
# Listing every TrainJob of the cluster from every node: not more often than this.
MIN_INTERVAL = 15.0


def rank0_pod(pods: list[PodInfo], namespace: str, job: str) -> PodInfo | None:
    """The pod of this TrainJob that reports for it: rank 0 (or an unranked one), by name."""
    mine = sorted(
        (
            p
            for p in pods
            if p.namespace == namespace
            and p.job_name == job
            and p.job_kind == "TrainJob"
            and p.rank in ("0", "")
        ),
        key=lambda p: p.name,
    )
    return mine[0] if mine else None


def parse_trainjob(obj: dict[str, Any], now: float) -> Any:
    """The TrainJob's progress as a Parsed report, or None when it has none; ReportError when
    what it has is malformed."""
    status = obj.get("status") or {}
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if status.get("trainerStatus") is not None:
        return parse_kubeflow({"trainerStatus": status["trainerStatus"]}, now)
    raw = annotations.get(ODH_ANNOTATION)
    if raw is None:
        return None
    if not isinstance(raw, str) or len(raw) > KUBEFLOW_MAX_BODY_BYTES:
        raise ReportError(
            "invalid_annotation", f"{ODH_ANNOTATION} is not a JSON string under 64 KiB"
        )
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ReportError("invalid_json", f"{ODH_ANNOTATION}: {exc}") from None
    return parse_any(doc, now)


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
        self._versions: dict[tuple[str, str], str] = {}

    def poll(self) -> None:
        if self.monotonic() < self._next:
            return
        self._next = self.monotonic() + MIN_INTERVAL
        from kubernetes.client import ApiException

        try:
            doc = self.custom_api().list_cluster_custom_object(
                GROUP, VERSION, PLURAL, _request_timeout=30
            )
        except ApiException as exc:
            if exc.status == 404:  # no TrainJob CRD in this cluster: nothing to read
                self.available = False
                return
            self.ingestor.source_up(NAME, False)
            return
        except Exception:
            self.ingestor.source_up(NAME, False)
            return
        self.available = True
        self.ingestor.source_up(NAME, True)
        pods = self.pods()
        seen = set()
        for obj in doc.get("items") or []:
            meta = obj.get("metadata") or {}
            key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
            seen.add(key)
            pod = rank0_pod(pods, *key)
            version = str(meta.get("resourceVersion", ""))
            if pod is None or self._versions.get(key) == version:
                continue
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
                continue
            if parsed is not None:
                self.ingestor.accept(NAME, run_key, parsed, self.meta(pod))
        for key in set(self._versions) - seen:
            del self._versions[key]
