"""Which pods are training pods, and what a pod says about its run: pure functions over the
pod objects the Kubernetes API returns (as plain dicts, so tests need no client objects).
The annotation and label names are in :mod:`exporter.core.annotations`.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ..core.annotations import (
    ANNOTATION_BUDGET,
    ANNOTATION_CHECKPOINT,
    ANNOTATION_CONTAINER,
    ANNOTATION_DEADLINE,
    ANNOTATION_ENABLED,
    ANNOTATION_HTTP_PATH,
    ANNOTATION_HTTP_PORT,
    ANNOTATION_JOB,
    ANNOTATION_LOG_FORMAT,
    ANNOTATION_STACKS,
    ANNOTATION_STATUS_FILE,
    ANNOTATION_STATUS_VOLUME,
    ANNOTATION_THRESHOLD,
    DEFAULT_GPU_RESOURCES,
    JOB_LABELS,
    KATIB_TRIAL_LABEL,
    ODH_METRICS_PORT,
    ODH_POLL_INTERVAL,
    ODH_PORT,
    ODH_PROGRESSION,
    RANK_LABELS,
    REPLICA_INDEX_LABEL,
    REPLICA_TYPE_LABEL,
)
from ..core.deadlines import earliest, kill_deadline
from ..core.model import clean_label, rfc3339_seconds
from ..core.thresholds import BOUNDS, parse_overrides
from ..core.workloads import Ref, Refused, identify
from ..plumbing.discovery import PodInfo

_SIMPLE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}\Z")


def _url(ip: str, port_raw: Any, path: str) -> str | None:
    if not ip or not path.startswith("/") or any(c in path for c in " \r\n"):
        return None
    host = f"[{ip}]" if ":" in ip else ip  # IPv6 pod IPs need brackets in a URL
    try:
        port = int(str(port_raw))
    except ValueError:
        return None
    return f"http://{host}:{port}{path}" if 0 < port < 65536 else None


_GO_DURATION = re.compile(r"^[+-]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|ms|s|m|h))+\Z")
_GO_UNIT = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_GO_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
ODH_POLL_DEFAULT, ODH_POLL_MIN, ODH_POLL_MAX = 30.0, 5.0, 300.0


def odh_poll_interval(value: str | None) -> float:
    """Seconds between pulls of a TrainJob's metrics port, read as OpenShift AI's controller
    reads ``trainer.opendatahub.io/metrics-poll-interval`` (``GetMetricsPollInterval``): a Go
    duration ("45s", "1m30s") or whole seconds ("45"), clamped to 5..300 s; 30 s when it is
    absent or unreadable."""
    text = (value or "").strip()
    if not text:
        return ODH_POLL_DEFAULT
    if text == "0" or _GO_DURATION.match(text):
        seconds = sum(float(n) * _GO_SECONDS[u] for n, u in _GO_UNIT.findall(text))
        seconds = -seconds if text.startswith("-") else seconds
    elif re.fullmatch(r"[+-]?\d{1,18}", text):
        seconds = float(int(text))
    else:
        return ODH_POLL_DEFAULT
    return min(ODH_POLL_MAX, max(ODH_POLL_MIN, seconds))


def _http_target(
    ip: str, annotations: Mapping[str, Any], owners: tuple[Ref, ...], pull_fenced: bool
) -> tuple[str | None, float | None]:
    """Where to pull the pod's JSON progress from, and how often (None: every poll).

    Our annotation (``http-port``) says so outright. A TrainJob that OpenShift AI tracks
    (``progression-tracking: "true"`` on the TrainJob, as its controller reads it) serves on
    its ``metrics-port`` at its ``metrics-poll-interval``; that controller fences the port with
    a NetworkPolicy, so it is pulled only when ``pull_fenced`` says one lets us in (the
    progress is in the TrainJob's annotation anyway). A pod annotated ``progression-tracking``
    itself (no TrainJob tracks it) is pulled on the default port.
    """
    path = str(annotations.get(ANNOTATION_HTTP_PATH, "/metrics"))
    if annotations.get(ANNOTATION_HTTP_PORT) is not None:
        return _url(ip, annotations[ANNOTATION_HTTP_PORT], path), None
    trainjob = next((r for r in owners if r.kind == "TrainJob"), None)
    if trainjob is not None and trainjob.annotation(ODH_PROGRESSION) == "true":
        if not pull_fenced:
            return None, None
        port = trainjob.annotation(ODH_METRICS_PORT) or ODH_PORT
        return _url(ip, port, "/metrics"), odh_poll_interval(trainjob.annotation(ODH_POLL_INTERVAL))
    if str(annotations.get(ODH_PROGRESSION, "")).lower() == "true":
        return _url(ip, ODH_PORT, path), None
    return None, None


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
    return rfc3339_seconds(value)


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


def training_pod(
    pod: Mapping[str, Any],
    owners: tuple[Ref, ...],
    resources: Sequence[str] = DEFAULT_GPU_RESOURCES,
    pull_fenced: bool = False,
) -> PodInfo | Refused | None:
    """The pod as a training pod, None when it is not one (or opted out), or why it is
    refused: its job, trial and experiment come from ``owners``, its controller chain
    (:func:`exporter.core.workloads.chain`), and labels that claim another are refused."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    enabled = str(annotations.get(ANNOTATION_ENABLED, "")).lower()
    if enabled == "false":
        return None
    claims = any(labels.get(label) for label, _ in JOB_LABELS) or labels.get(KATIB_TRIAL_LABEL)
    if not claims and enabled != "true":
        return None
    # A bare pod's opt-in annotation may name its job; a pod with owners is theirs.
    own = str(annotations[ANNOTATION_JOB]) if annotations.get(ANNOTATION_JOB) else None
    who = identify(meta, owners, own)
    if isinstance(who, Refused):
        return who
    job = (who.job_name, who.job_kind)
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
    http_url, http_interval = _http_target(
        str(status.get("podIP") or ""), annotations, owners, pull_fenced
    )
    # Whatever kills first: the pod's own activeDeadlineSeconds or an owner's.
    killed, killer = earliest(
        (kill_deadline("Pod", pod), "Pod"), *((r.kill_deadline, r.kind) for r in owners)
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
        trial=clean_label(who.trial, 63) or "",
        experiment=clean_label(who.experiment, 63) or "",
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
        kill_deadline_timestamp=killed,
        kill_deadline_kind=killer,
        # The highest owner that states a count: a TrainJob's numNodes, else the JobSet below
        # it (one Job per node has parallelism 1: the Job alone would say 1).
        nodes=next((r.nodes for r in reversed(owners) if r.nodes is not None), None),
        gpu_seconds_budget=budget,
        thresholds=parse_overrides(overrides, lambda _reason: None),
        http_url=http_url,
        http_interval=http_interval,
        deleting=bool(meta.get("deletionTimestamp")),
        checkpoint_request=clean_label(annotations.get(ANNOTATION_CHECKPOINT), 63),
        stacks_request=clean_label(annotations.get(ANNOTATION_STACKS), 63),
        status_file=_status_file(annotations),
        log_format=clean_label(annotations.get(ANNOTATION_LOG_FORMAT), 63) or "",
    )
