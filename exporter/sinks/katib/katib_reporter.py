"""Kubernetes mode, opt-in (``katib_db_manager``): Katib trials get their objective metrics
from what the exporter already reads (logs, callbacks, status files, pushes), with no
``report_metrics()`` and no sidecar in the trial.

For each Katib trial with a pod on this node (the Trial in the pod's owner chain), the
exporter reads the Trial (its objective and additional metric names, its collector kind),
and when the collector kind is ``Push`` (nothing else reports) sends each new value of
those metrics to Katib's DB manager with ``ReportObservationLog``: each value once, in
batches at most every ``katib_report_interval`` per trial, the last ones at once when the run
finishes (exporter/sinks/katib/observations.py). One pod per trial reports: rank 0, or the first
by name, as for TrainJobs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from ...core.model import RunKey
from ...kubernetes.client import get_custom_object
from ...plumbing.discovery import PodInfo, reporting_pods
from ...plumbing.ingest import Ingestor
from .observations import (
    MetricLog,
    TrialError,
    TrialLog,
    TrialSpec,
    due,
    observe,
    parse_trial,
    sent,
)

NAME = "katib"
GROUP, VERSION, PLURAL = "kubeflow.org", "v1beta1", "trials"
TRIAL_TTL = 60.0  # a Trial's spec does not change; re-read it this often to notice deletion
RETRY_SECONDS = 10.0  # after a failed read of a Trial
WARN_EVERY = 60.0  # a failing trial is logged at most this often
log = logging.getLogger(__name__)


class ObservationSink(Protocol):
    """Where observations go: exporter.sinks.katib.dbmanager.DBManager, or a test's recorder."""

    def report(self, trial: str, observations: list[MetricLog]) -> None: ...


def trial_pods(pods: list[PodInfo]) -> dict[tuple[str, str], PodInfo]:
    """(namespace, trial) -> the pod on this node that reports for it (pods.reporting_pods)."""
    return reporting_pods(pods, lambda p: (p.namespace, p.trial) if p.trial else None)


class KatibReporter:
    """Sends this node's Push-collector trials' metrics to Katib's DB manager."""

    name = NAME

    def __init__(
        self,
        custom_api: Callable[[], Any],
        pods: Callable[[], list[PodInfo]],
        ingestor: Ingestor,
        sink: ObservationSink,
        min_interval: float = 10.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.custom_api = custom_api
        self.pods = pods
        self.ingestor = ingestor
        self.sink = sink
        self.min_interval = min_interval
        self.monotonic = monotonic
        self._specs: dict[tuple[str, str], tuple[float, TrialSpec | None]] = {}
        self._logs: dict[tuple[str, str], TrialLog] = {}
        self._warned: dict[tuple[str, str], float] = {}

    def poll(self) -> None:
        targets = trial_pods(self.pods())
        ok = True
        for key, pod in targets.items():
            try:
                spec = self._spec(*key)
            except Exception as exc:
                ok = False
                # Not a verdict on the trial: try again soon, not at every poll.
                self._specs[key] = (self.monotonic() - TRIAL_TTL + RETRY_SECONDS, None)
                self._warn(key, f"cannot read it: {exc}")
                continue
            if spec is None or not spec.pushed:
                continue  # gone, or a sidecar collector reports it already
            run_key = RunKey(pod.namespace, pod.name, pod.job_name)
            snap = self.ingestor.run(run_key)
            if snap is None:
                continue
            trial_log = self._logs.setdefault(key, TrialLog())
            observed, lost = self.ingestor.observations(run_key, trial_log.cursor)
            for _ in range(observe(spec, observed, lost, trial_log)):
                self.ingestor.drop(NAME, "katib_backlog")
            now = self.monotonic()
            # The run said it is done, or its pod completed: the last values go now.
            finished = snap.finished or pod.finished
            batch = due(trial_log, now, self.min_interval, finished)
            if not batch:
                continue
            try:
                self.sink.report(spec.name, batch)
            except Exception as exc:
                ok = False
                # Kept pending (bounded); tried again after the interval, like a send.
                trial_log.sent_at = now
                self._warn(key, f"ReportObservationLog failed: {exc}")
                continue
            sent(trial_log, batch, now, finished)
        for key in set(self._logs) - set(targets):
            del self._logs[key]
        for stale in (self._specs, self._warned):
            for key in set(stale) - set(targets):
                del stale[key]
        self.ingestor.source_up(NAME, ok)

    def _warn(self, key: tuple[str, str], what: str) -> None:
        now = self.monotonic()
        if now - self._warned.get(key, -WARN_EVERY) >= WARN_EVERY:
            self._warned[key] = now
            log.warning("katib trial %s/%s: %s (logged at most once a minute)", *key, what)

    def _spec(self, namespace: str, trial: str) -> TrialSpec | None:
        """The Trial's spec, cached for TRIAL_TTL; None when it is gone or says nothing
        to report (logged once)."""
        cached = self._specs.get((namespace, trial))
        now = self.monotonic()
        if cached is not None and now - cached[0] < TRIAL_TTL:
            return cached[1]
        spec: TrialSpec | None = None
        obj = read_trial(self.custom_api(), namespace, trial)
        if obj is not None:
            try:
                spec = parse_trial(obj)
            except TrialError as exc:
                log.warning("katib trial %s/%s: %s", namespace, trial, exc)
            if spec is not None and not spec.pushed:
                log.info(
                    "katib trial %s/%s: collector %s reports it, not us",
                    namespace,
                    trial,
                    spec.collector,
                )
        self._specs[(namespace, trial)] = (now, spec)
        return spec


def read_trial(api: Any, namespace: str, name: str) -> dict[str, Any] | None:
    """The Trial object, or None when it does not exist."""
    return get_custom_object(api, GROUP, VERSION, PLURAL, namespace, name)
