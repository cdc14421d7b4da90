"""Kubernetes mode, opt-in (``trainjob_status_writeback``): progress the exporter read from
any other source (logs, status files, pushes, HTTP pulls) written back into the TrainJob,
so ``kubectl get trainjob``, the Kubeflow SDK's generated model and the OpenShift AI
dashboard show it for jobs that never report to Kubeflow themselves.

The exporter on the node of a TrainJob's rank-0 pod writes, in each system's own shape:

* ``status``: ``status.trainerStatus`` through the status subresource, Kubeflow Trainer's
  shape (``progressPercentage``, ``estimatedRemainingSeconds``, ``metrics`` as name/value
  strings, ``lastUpdatedTime``; the CRD's schema in tests/fixtures/upstream);
* ``annotation``: the annotation ``trainer.opendatahub.io/trainerStatus``, OpenShift AI's
  ``AnnotationStatus`` (opendatahub-io/trainer ``pkg/rhai/progression/progression.go``):
  step, epochs, ``trainMetrics`` and ``evalMetrics`` objects, the remaining time and its
  summary as their controller formats it, "complete" and 0 s once finished.

Both are written with server-side apply under the field manager ``FIELD_MANAGER``, at most
every ``MIN_INTERVAL`` seconds per job and only when the content changed. The exporter never
fights another writer: while the field is owned by another field manager (Kubeflow's status
server applies as ``trainer-status``; OpenShift AI's controller patches the annotation), or,
where the object tells no owner, its ``lastUpdatedTime`` is not one we wrote and is younger
than the run's report timeout, the TrainJob is left alone (and counted once per job:
``training_exporter_drops_total{source="writeback", reason="other_writer"}``).
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from ..core.annotations import ODH_TRAINER_STATUS
from ..core.managed import FIELD_MANAGER, ODH_ANNOTATION_PATH, TRAINER_STATUS_PATH, owners
from ..core.model import KUBEFLOW_MAX_FIELD_CHARS, KUBEFLOW_MAX_METRICS, RunKey, RunView
from ..core.wire import ODH_COMPLETE
from ..kubernetes.client import api_status
from ..plumbing.discovery import PodInfo
from ..plumbing.ingest import Ingestor
from ..plumbing.settings import ConfigError
from ..sources.trainjob import GROUP, PLURAL, VERSION, rank0_pods, read_trainjob
from ..sources.trainjob import NAME as TRAINJOB_SOURCE

NAME = "writeback"
MODES = ("off", "status", "annotation")
MIN_INTERVAL = 15.0
APPLY = "application/apply-patch+yaml"  # server-side apply (JSON is YAML)
INT32_MAX = 2**31 - 1  # the CRD's estimatedRemainingSeconds and progressPercentage: int32
STAMPS_KEPT = 8  # lastUpdatedTime values we wrote, remembered per job
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


def rfc3339(unix: float) -> str:
    """Go's ``time.RFC3339`` in UTC, as both upstreams write ``lastUpdatedTime``."""
    return datetime.fromtimestamp(unix, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _value(v: float) -> str:
    return f"{v:.6g}"[:KUBEFLOW_MAX_FIELD_CHARS]


def _percent(s: RunView) -> int | None:
    if s.progress is None:
        return 100 if s.finished else None
    # As Transformers' callback does: 100 only once the run says it is done.
    return 100 if s.finished else max(0, min(99, int(s.progress * 100)))


def trainer_status(s: RunView) -> dict[str, Any]:
    """Kubeflow Trainer's ``trainerStatus`` for a run (without ``lastUpdatedTime``)."""
    out: dict[str, Any] = {}
    percent = _percent(s)
    if percent is not None:
        out["progressPercentage"] = percent
    if s.finished:
        out["estimatedRemainingSeconds"] = 0
    elif s.eta_seconds is not None:
        out["estimatedRemainingSeconds"] = min(INT32_MAX, int(s.eta_seconds))
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
    # The last checkpoint, for whoever decides what to preempt: its step, and its time as
    # lastUpdatedTime is written (the list's values are strings).
    if s.last_checkpoint_step is not None and len(metrics) < KUBEFLOW_MAX_METRICS:
        metrics.append({"name": "last_checkpoint_step", "value": str(s.last_checkpoint_step)})
    if s.last_checkpoint_timestamp is not None and len(metrics) < KUBEFLOW_MAX_METRICS:
        metrics.append(
            {"name": "last_checkpoint_time", "value": rfc3339(s.last_checkpoint_timestamp)}
        )
    if metrics:
        out["metrics"] = metrics
    return out


def duration_summary(seconds: int | None) -> str:
    """OpenShift AI's ``formatDurationSummary``: "2 hours 5 minutes", "1 day 1 hour" (at
    most two parts, no minutes beside days), "less than a minute"; "" for none or <= 0."""
    if seconds is None or seconds <= 0:
        return ""
    days, hours, minutes = seconds // 86400, seconds % 86400 // 3600, seconds % 3600 // 60
    parts = [
        f"{n} {unit}{'' if n == 1 else 's'}"
        for n, unit in ((days, "day"), (hours, "hour"), (minutes if not days else 0, "minute"))
        if n > 0
    ]
    return " ".join(parts[:2]) or "less than a minute"


def _finite(values: Iterable[tuple[str, float | int | None]]) -> dict[str, float]:
    return {
        name[:KUBEFLOW_MAX_FIELD_CHARS]: float(v)
        for name, v in values
        if v is not None and math.isfinite(float(v))
    }


def annotation_status(s: RunView) -> dict[str, Any]:
    """OpenShift AI's ``AnnotationStatus`` for a run (without ``lastUpdatedTime``).

    Their field names, types and omissions: ``progressPercentage`` is always there (null
    when unknown); a finished run has ``estimatedRemainingSeconds: 0`` and the summary
    "complete" ("complete (early stopped)" below its total, "failed at N%" for a failed
    pod), which is how their controller knows the final status was captured. Metrics are
    finite numbers: evaluation values (``eval_*``) in ``evalMetrics``, the rest in
    ``trainMetrics``.
    """
    percent = _percent(s)
    out: dict[str, Any] = {"progressPercentage": percent}
    if s.finished:
        out["estimatedRemainingSeconds"] = 0
        if s.meta.pod_failed:
            out["estimatedRemainingTimeSummary"] = f"failed at {percent or 0}%"
        elif s.step is not None and s.max_steps and s.step < s.max_steps:
            out["estimatedRemainingTimeSummary"] = ODH_COMPLETE[1]
        else:
            out["estimatedRemainingTimeSummary"] = ODH_COMPLETE[0]
    elif s.eta_seconds is not None:
        remaining = min(INT32_MAX, int(s.eta_seconds))
        out["estimatedRemainingSeconds"] = remaining
        if summary := duration_summary(remaining):
            out["estimatedRemainingTimeSummary"] = summary
    if s.step is not None:
        out["currentStep"] = min(INT32_MAX, s.step)
    if s.max_steps is not None:
        out["totalSteps"] = min(INT32_MAX, s.max_steps)
    if s.epoch is not None and math.isfinite(s.epoch):
        out["currentEpoch"] = float(s.epoch)
    if s.max_epochs is not None and math.isfinite(s.max_epochs):
        out["totalEpochs"] = min(INT32_MAX, math.ceil(s.max_epochs))
    custom = list(s.metrics)[: KUBEFLOW_MAX_METRICS - 4]
    train = _finite(
        [
            ("loss", s.loss),
            ("learning_rate", s.learning_rate),
            ("grad_norm", s.grad_norm),
            *((k, v) for k, v in custom if not k.startswith("eval_")),
        ]
    )
    evals = _finite(
        [("eval_loss", s.eval_loss), *((k, v) for k, v in custom if k.startswith("eval_"))]
    )
    if train:
        out["trainMetrics"] = train
    if evals:
        out["evalMetrics"] = evals
    return out


def _updated(status: Any) -> float | None:
    raw = status.get("lastUpdatedTime") if isinstance(status, Mapping) else None
    if not isinstance(raw, str):
        return None
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


FIELD_PATHS: dict[str, tuple[str, ...]] = {
    "status": TRAINER_STATUS_PATH,
    "annotation": ODH_ANNOTATION_PATH,
}


def existing_content(obj: Mapping[str, Any], mode: str) -> Any:
    """What the TrainJob holds where ``mode`` writes (decoded), or None."""
    if mode == "status":
        return (obj.get("status") or {}).get("trainerStatus")
    raw = ((obj.get("metadata") or {}).get("annotations") or {}).get(ODH_TRAINER_STATUS)
    try:
        return json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None


def other_writer(
    obj: Mapping[str, Any], mode: str, ours: set[str], now: float, timeout: float
) -> str | None:
    """Who else writes this TrainJob's progress (a reason in words), or None when it is
    ours to write: another field manager owns the field, or, where no manager owns it, its
    ``lastUpdatedTime`` is not one of ``ours`` and younger than ``timeout`` seconds."""
    managers = owners(obj, FIELD_PATHS[mode])
    others = sorted(managers - {FIELD_MANAGER})
    if others:
        return f"field manager {', '.join(others)} owns it"
    if managers:
        return None  # ours alone
    existing = existing_content(obj, mode)
    updated = _updated(existing)
    if (
        updated is not None
        and existing.get("lastUpdatedTime") not in ours
        and now - updated < timeout
    ):
        return f"it was written {max(0, int(now - updated))} s ago, not by us"
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
        self._stamps: dict[tuple[str, str], list[str]] = {}  # lastUpdatedTime values we wrote
        self._left: dict[tuple[str, str], str] = {}  # jobs left to another writer, and why

    def content(self, s: RunView) -> dict[str, Any]:
        """What this mode writes for a run (without ``lastUpdatedTime``)."""
        return annotation_status(s) if self.target == "annotation" else trainer_status(s)

    def poll(self) -> None:
        targets = rank0_pods(self.pods())
        ok = True
        for key, pod in targets.items():
            last = self._written.get(key)
            if last is not None and self.monotonic() - last[0] < MIN_INTERVAL:
                continue
            snap = self.ingestor.run(RunKey(pod.namespace, pod.name, pod.job_name))
            if snap is None or snap.meta.source == TRAINJOB_SOURCE:
                continue  # nothing read yet, or the progress came from this very TrainJob
            content = self.content(snap)
            text = json.dumps(content, sort_keys=True)
            if not content or (last is not None and last[1] == text):
                continue
            try:
                written = self._write(key, content, snap)
            except Exception as exc:
                ok = False
                log.warning("trainjob %s/%s: cannot write progress back: %s", *key, exc)
                continue
            if written:
                self._written[key] = (self.monotonic(), text)
        for gone in set(self._written) | set(self._stamps) | set(self._left):
            if gone not in targets:
                self._written.pop(gone, None)
                self._stamps.pop(gone, None)
                self._left.pop(gone, None)
        self.ingestor.source_up(NAME, ok)

    def _leave(self, key: tuple[str, str], why: str) -> None:
        if self._left.get(key) != why:
            if key not in self._left:
                self.ingestor.drop(NAME, "other_writer")
            log.info("trainjob %s/%s: left alone, another writer is active (%s)", *key, why)
        self._left[key] = why

    def _write(self, key: tuple[str, str], content: dict[str, Any], snap: RunView) -> bool:
        """Apply ``content``; False when the TrainJob is gone or another writer has it."""
        namespace, name = key
        api = self.custom_api()
        current = read_trainjob(api, namespace, name)
        if current is None:
            return False  # the TrainJob is gone
        ours = set(self._stamps.get(key, ()))
        why = other_writer(
            current,
            self.target,
            ours,
            self.ingestor.clock(),
            snap.thresholds.report_timeout_seconds,
        )
        if why is not None:
            self._leave(key, why)
            return False
        stamp = rfc3339(snap.last_report_timestamp)
        body = {**content, "lastUpdatedTime": stamp}
        applied: dict[str, Any] = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "TrainJob",
            "metadata": {"name": name, "namespace": namespace},
        }
        call = api.patch_namespaced_custom_object_status
        if self.target == "annotation":
            applied["metadata"]["annotations"] = {
                ODH_TRAINER_STATUS: json.dumps(body, separators=(",", ":"))
            }
            call = api.patch_namespaced_custom_object
        else:
            applied["status"] = {"trainerStatus": body}
        try:
            call(
                GROUP,
                VERSION,
                namespace,
                PLURAL,
                name,
                applied,
                field_manager=FIELD_MANAGER,
                field_validation="Strict",
                _content_type=APPLY,
                _preload_content=False,
                _request_timeout=10,
            )
        except Exception as exc:
            if api_status(exc) == 409:  # another manager took the field since we read it
                self._leave(key, "the API server reports a conflict with another field manager")
                return False
            raise
        self._left.pop(key, None)
        stamps = self._stamps.setdefault(key, [])
        stamps.append(stamp)
        del stamps[:-STAMPS_KEPT]
        return True
