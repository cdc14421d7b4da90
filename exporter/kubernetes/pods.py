"""Which pods are training pods, and what a pod says about its run: pure functions over the
pod objects the Kubernetes API returns (as plain dicts, so tests need no client objects).

One annotation prefix serves everything of ours: ``training-progress.io/``.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..model import clean_label
from ..thresholds import BOUNDS, Overrides, parse_overrides

PREFIX = "training-progress.io/"
ANNOTATION_ENABLED = PREFIX + "enabled"  # "true" opts a pod in, "false" opts it out
ANNOTATION_JOB = PREFIX + "job-name"
ANNOTATION_DEADLINE = PREFIX + "deadline"  # RFC 3339
ANNOTATION_BUDGET = PREFIX + "gpu-hours-budget"
ANNOTATION_THRESHOLD = PREFIX + "threshold."  # + a threshold name, e.g. threshold.stall_seconds
ANNOTATION_CONTAINER = PREFIX + "container"  # the container whose log and identity count
ANNOTATION_HTTP_PORT = PREFIX + "http-port"  # pull JSON progress from the pod on this port
ANNOTATION_HTTP_PATH = PREFIX + "http-path"  # ... at this path (default /metrics)
ANNOTATION_STATUS_VOLUME = PREFIX + "status-volume"  # an emptyDir the pod writes its file to
ANNOTATION_STATUS_FILE = PREFIX + "status-file"  # ... named this (default progress.json)
ANNOTATION_CHECKPOINT = PREFIX + "checkpoint"  # any new value: tell the run to save now
ODH_PROGRESSION = "trainer.opendatahub.io/progression-tracking"
ODH_PORT = 28080
_SIMPLE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}\Z")

# (label, job kind), in order of precedence: the most specific workload first.
JOB_LABELS: tuple[tuple[str, str], ...] = (
    ("trainer.kubeflow.org/trainjob-name", "TrainJob"),
    ("training.kubeflow.org/job-name", "KubeflowJob"),
    ("jobset.sigs.k8s.io/jobset-name", "JobSet"),
    ("ray.io/originated-from-cr-name", "RayJob"),
    ("batch.kubernetes.io/job-name", "Job"),
    ("job-name", "Job"),
)
KATIB_TRIAL_LABEL = "katib.kubeflow.org/trial"
KATIB_EXPERIMENT_LABEL = "katib.kubeflow.org/experiment"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
RANK_LABELS = (
    "batch.kubernetes.io/job-completion-index",
    REPLICA_INDEX_LABEL,
    "jobset.sigs.k8s.io/job-index",
)
DEFAULT_GPU_RESOURCES = (
    "nvidia.com/gpu",
    "nvidia.com/mig-*",
    "amd.com/gpu",
    "gpu.intel.com/*",
    "habana.ai/gaudi",
    "aws.amazon.com/neuron*",
    "google.com/tpu",
)


@dataclass(frozen=True)
class PodInfo:
    """What the exporter needs from one training pod."""

    namespace: str
    name: str
    uid: str
    ip: str
    host_network: bool
    job_name: str
    job_kind: str
    rank: str
    container: str
    gpus: float
    start_timestamp: float | None  # when the pod got its node's resources (GPU-seconds start)
    finished: bool  # Succeeded or Failed: no longer holds its GPUs
    deadline_timestamp: float | None
    gpu_seconds_budget: float | None
    thresholds: Overrides
    failed: bool = False  # phase Failed (a kind of finished)
    end_timestamp: float | None = None  # a finished pod's last container stop
    trial: str = ""  # Katib: the trial this pod runs (katib.kubeflow.org/trial)
    experiment: str = ""  # ... and its experiment (katib.kubeflow.org/experiment)
    http_url: str | None = None  # where to pull JSON progress from, if anywhere
    deleting: bool = False  # has a deletionTimestamp (evicted, drained, deleted)
    checkpoint_request: str | None = None  # the checkpoint annotation's value
    status_file: tuple[str, str] | None = None  # (emptyDir volume, file name), if any


def _http_url(ip: str, annotations: Mapping[str, Any]) -> str | None:
    if not ip:
        return None
    host = f"[{ip}]" if ":" in ip else ip  # IPv6 pod IPs need brackets in a URL
    path = str(annotations.get(ANNOTATION_HTTP_PATH, "/metrics"))
    if not path.startswith("/") or any(c in path for c in " \r\n"):
        return None
    port_raw = annotations.get(ANNOTATION_HTTP_PORT)
    if port_raw is None:
        if str(annotations.get(ODH_PROGRESSION, "")).lower() != "true":
            return None
        port_raw = ODH_PORT
    try:
        port = int(str(port_raw))
    except ValueError:
        return None
    return f"http://{host}:{port}{path}" if 0 < port < 65536 else None


def _status_file(annotations: Mapping[str, Any]) -> tuple[str, str] | None:
    volume = annotations.get(ANNOTATION_STATUS_VOLUME)
    name = str(annotations.get(ANNOTATION_STATUS_FILE, "progress.json"))
    if (
        not isinstance(volume, str)
        or not _SIMPLE_NAME.match(volume)
        or not _SIMPLE_NAME.match(name)
    ):
        return None  # names only: no "/", no ".."
    if volume in (".", "..") or name in (".", ".."):
        return None
    return volume, name


def _time(value: Any) -> float | None:
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _quantity(value: Any) -> float:
    """A resource quantity as a number (GPUs are whole numbers; "1k" style is accepted)."""
    text = str(value).strip()
    suffixes = {"k": 1e3, "M": 1e6, "G": 1e9}
    try:
        if text and text[-1] in suffixes:
            return float(text[:-1]) * suffixes[text[-1]]
        return float(text)
    except ValueError:
        return 0.0


def gpus(pod: Mapping[str, Any], resources: Sequence[str] = DEFAULT_GPU_RESOURCES) -> float:
    """GPUs the pod's containers are limited to (requests where no limit is given)."""
    total = 0.0
    for c in (pod.get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {}
        amounts = dict(res.get("requests") or {})
        amounts.update(res.get("limits") or {})
        for name, value in amounts.items():
            if any(fnmatch.fnmatchcase(name, pattern) for pattern in resources):
                total += _quantity(value)
    return total


def _owner_job(meta: Mapping[str, Any]) -> tuple[str, str] | None:
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller") and ref.get("name"):
            return str(ref["name"]), str(ref.get("kind") or "")
    return None


def training_pod(
    pod: Mapping[str, Any], resources: Sequence[str] = DEFAULT_GPU_RESOURCES
) -> PodInfo | None:
    """The pod as a training pod, or None when it is not one (or opted out)."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    enabled = str(annotations.get(ANNOTATION_ENABLED, "")).lower()
    if enabled == "false":
        return None
    job = next(((labels[label], kind) for label, kind in JOB_LABELS if labels.get(label)), None)
    if annotations.get(ANNOTATION_JOB):
        job = (str(annotations[ANNOTATION_JOB]), job[1] if job else "Pod")
    if job is None:
        if enabled != "true":
            return None
        job = _owner_job(meta) or (str(meta.get("name", "")), "Pod")
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    containers = spec.get("containers") or []
    rank_label = next((label for label in RANK_LABELS if label in labels), "")
    rank = str(labels[rank_label]) if rank_label else ""
    replica_type = str(labels.get(REPLICA_TYPE_LABEL, "")).lower()
    if rank_label == REPLICA_INDEX_LABEL and replica_type not in ("", "master"):
        # A PyTorchJob's master and its first worker are both replica index 0: name the
        # worker's rank by its replica type so no two pods of a job share one.
        rank = f"{replica_type}-{rank}"
    states = [cs.get("state") or {} for cs in status.get("containerStatuses") or []]
    starts = [
        _time((st.get("running") or st.get("terminated") or {}).get("startedAt")) for st in states
    ]
    start = min((s for s in starts if s is not None), default=None) or _time(
        status.get("startTime")
    )
    finished = status.get("phase") in ("Succeeded", "Failed")
    # A finished pod gave its GPUs back when its last container stopped.
    ends = [_time((st.get("terminated") or {}).get("finishedAt")) for st in states]
    end = max((e for e in ends if e is not None), default=None) if finished else None
    budget_raw = annotations.get(ANNOTATION_BUDGET)
    budget = (
        _quantity(budget_raw) * 3600
        if budget_raw is not None and _quantity(budget_raw) > 0
        else None
    )
    overrides = {
        k[len(ANNOTATION_THRESHOLD) :]: v
        for k, v in annotations.items()
        if k.startswith(ANNOTATION_THRESHOLD) and k[len(ANNOTATION_THRESHOLD) :] in BOUNDS
    }
    return PodInfo(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        ip=str(status.get("podIP") or ""),
        host_network=bool(spec.get("hostNetwork")),
        job_name=clean_label(job[0], 253) or "",
        job_kind=clean_label(job[1], 64) or "",
        rank=clean_label(rank, 16) or "",
        trial=clean_label(str(labels.get(KATIB_TRIAL_LABEL, "")), 63) or "",
        experiment=clean_label(str(labels.get(KATIB_EXPERIMENT_LABEL, "")), 63) or "",
        container=clean_label(
            str(
                annotations.get(ANNOTATION_CONTAINER)
                or (containers[0].get("name", "") if containers else "")
            ),
            63,
        )
        or "",
        gpus=gpus(pod, resources),
        start_timestamp=start,
        finished=finished,
        failed=status.get("phase") == "Failed",
        end_timestamp=end,
        deadline_timestamp=_time(annotations.get(ANNOTATION_DEADLINE)),
        gpu_seconds_budget=budget,
        thresholds=parse_overrides(overrides, lambda _reason: None),
        http_url=_http_url(str(status.get("podIP") or ""), annotations),
        deleting=bool(meta.get("deletionTimestamp")),
        checkpoint_request=clean_label(annotations.get(ANNOTATION_CHECKPOINT), 63),
        status_file=_status_file(annotations),
    )


def reporting_pods(
    pods: list[PodInfo], key: Callable[[PodInfo], tuple[str, str] | None]
) -> dict[tuple[str, str], PodInfo]:
    """``key`` -> the one pod on this node that reports for it (a TrainJob, a Katib trial):
    rank 0 or an unranked one, the first by name; pods whose ``key`` is None are not asked.
    Sorted by key."""
    out: dict[tuple[str, str], PodInfo] = {}
    for p in pods:
        k = key(p)
        if k is None or p.rank not in ("0", ""):
            continue
        if k not in out or p.name < out[k].name:
            out[k] = p
    return dict(sorted(out.items()))
