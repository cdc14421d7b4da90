"""Kubernetes mode, opt-in (``trainjob_status_writeback``): progress the exporter read from
any other source (logs, status files, pushes, HTTP pulls) written back into the TrainJob,
so ``kubectl get trainjob``, the Kubeflow SDK and the OpenShift AI dashboard show it for jobs
that never report to Kubeflow themselves.

The exporter on the node of a TrainJob's rank-0 pod writes ``status.trainerStatus`` through
the status subresource, in the upstream shape and limits (``progressPercentage``,
``estimatedRemainingSeconds``, ``metrics`` as name/value strings, ``lastUpdatedTime``), or,
for OpenShift AI, the same content as the ``trainer.opendatahub.io/trainerStatus``
annotation. At most every ``MIN_INTERVAL`` seconds per job and only when the content
changed; never over a status that the job wrote more recently than our latest report (a job
that reports to Kubeflow itself keeps its own), and never for a run whose progress came from
that very status.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ..discovery import PodInfo
from ..ingest import Ingestor
from ..model import KUBEFLOW_MAX_FIELD_CHARS, KUBEFLOW_MAX_METRICS, RunKey, RunView
from ..settings import ConfigError
from ..sources.trainjob import GROUP, ODH_ANNOTATION, PLURAL, VERSION, rank0_pods, read_trainjob
from ..sources.trainjob import NAME as TRAINJOB_SOURCE

NAME = "writeback"
MODES = ("off", "status", "annotation")
MIN_INTERVAL = 15.0
log = logging.getLogger(__name__)


def writeback_mode(value: str) -> str:
    """The ``trainjob_status_writeback`` setting: off, status (or true) or annotation."""
    mode = value.strip().lower()
    mode = {"true": "status", "false": "off"}.get(mode, mode)
    if mode not in MODES:
        raise ConfigError(
            f"trainjob_status_writeback must be off, status (or true) or annotation, not {value!r}"
        )
    return mode


def _rfc3339(unix: float) -> str:
    return datetime.fromtimestamp(unix, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _value(v: float) -> str:
    return f"{v:.6g}"[:KUBEFLOW_MAX_FIELD_CHARS]


def trainer_status(s: RunView) -> dict[str, Any]:
    """The upstream ``trainerStatus`` for a run (without ``lastUpdatedTime``)."""
    out: dict[str, Any] = {}
    if s.progress is not None:
        percent = int(s.progress * 100)
        # As Transformers' callback does: 100 only once the run says it is done.
        out["progressPercentage"] = 100 if s.finished else max(0, min(99, percent))
    if s.eta_seconds is not None:
        out["estimatedRemainingSeconds"] = int(s.eta_seconds)
    metrics: list[dict[str, str]] = []
    for name, value in (
        ("loss", s.loss),
        ("eval_loss", s.eval_loss),
        ("learning_rate", s.learning_rate),
        ("grad_norm", s.grad_norm),
        ("current_step", s.step),
        ("total_steps", s.max_steps),
        ("current_epoch", s.epoch),
        ("total_epochs", s.max_epochs),
        *s.metrics,
    ):
        if value is not None and len(metrics) < KUBEFLOW_MAX_METRICS:
            metrics.append({"name": name[:KUBEFLOW_MAX_FIELD_CHARS], "value": _value(value)})
    if metrics:
        out["metrics"] = metrics
    return out


def _updated(status: Any) -> float | None:
    raw = status.get("lastUpdatedTime") if isinstance(status, dict) else None
    if not isinstance(raw, str):
        return None
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class StatusWriter:
    """Writes this node's TrainJobs' progress back, at most every MIN_INTERVAL per job."""

    name = NAME

    def __init__(
        self,
        custom_api: Callable[[], Any],
        pods: Callable[[], list[PodInfo]],
        ingestor: Ingestor,
        target: str,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.custom_api = custom_api
        self.pods = pods
        self.ingestor = ingestor
        self.target = target
        self.monotonic = monotonic
        self._written: dict[tuple[str, str], tuple[float, str]] = {}  # when, what

    def poll(self) -> None:
        targets = rank0_pods(self.pods())
        ok = True
        for key, pod in targets.items():
            last = self._written.get(key)
            if last is not None and self.monotonic() - last[0] < MIN_INTERVAL:
                continue
            snap = self.ingestor.run(RunKey(pod.namespace, pod.name, pod.job_name))
            if snap is None or snap.meta.source == TRAINJOB_SOURCE:
                continue  # nothing read yet, or the progress came from this very status
            content = trainer_status(snap)
            text = json.dumps(content, sort_keys=True)
            if not content or (last is not None and last[1] == text):
                continue
            try:
                self._write(key, content, snap)
            except Exception as exc:
                ok = False
                log.warning("trainjob %s/%s: cannot write progress back: %s", *key, exc)
                continue
            self._written[key] = (self.monotonic(), text)
        for key in set(self._written) - set(targets):
            del self._written[key]
        self.ingestor.source_up(NAME, ok)

    def _write(self, key: tuple[str, str], content: dict[str, Any], snap: RunView) -> None:
        namespace, name = key
        api = self.custom_api()
        current = read_trainjob(api, namespace, name)
        if current is None:
            return  # the TrainJob is gone
        if self.target == "annotation":
            raw = ((current.get("metadata") or {}).get("annotations") or {}).get(ODH_ANNOTATION)
            try:
                existing = json.loads(raw) if raw else None
            except ValueError:
                existing = None
        else:
            existing = (current.get("status") or {}).get("trainerStatus")
        theirs = _updated(existing)
        if (
            theirs is not None
            and theirs > snap.last_report_timestamp
            and not self._ours(key, existing)
        ):
            return  # the job wrote its own status after our latest report: it wins
        body = {**content, "lastUpdatedTime": _rfc3339(snap.last_report_timestamp)}
        if self.target == "annotation":
            api.patch_namespaced_custom_object(
                GROUP,
                VERSION,
                namespace,
                PLURAL,
                name,
                {"metadata": {"annotations": {ODH_ANNOTATION: json.dumps(body)}}},
                _preload_content=False,
                _request_timeout=10,
            )
        else:
            api.patch_namespaced_custom_object_status(
                GROUP,
                VERSION,
                namespace,
                PLURAL,
                name,
                {"status": {"trainerStatus": body}},
                _preload_content=False,
                _request_timeout=10,
            )

    def _ours(self, key: tuple[str, str], existing: Any) -> bool:
        """Whether ``existing`` is what this writer last wrote (its content, any time)."""
        last = self._written.get(key)
        if last is None or not isinstance(existing, dict):
            return False
        mine = {k: v for k, v in existing.items() if k != "lastUpdatedTime"}
        return json.dumps(mine, sort_keys=True) == last[1]
