"""The cluster page from Prometheus (``cluster --prometheus URL``): every run of every node
from the metrics engine the exporters are already scraped into (Prometheus, Thanos Query,
Mimir: anything that answers Prometheus' query API), so a page view costs three queries,
however many nodes there are and whether their exporters answer or not.

The EndpointSlice fan-out (exporter/commands/cluster.py) stays the zero-setup mode; this one
is for fleets: its cost does not grow with the nodes, and a slow or lying exporter cannot
reach the page at all (Prometheus already bounded what it scraped).

A run's detail page is rendered from the run's own series (one more query), with the page's
own template; nothing is proxied to any exporter in this mode.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..views.stackviews import diagnosis_from_labels
from ..views.stackviews import summary as stall_summary
from .cluster import MAX_STRING, Gathered, _plain
from .toprows import (
    REASON_QUERY,
    WHY_QUERY,
    RunKey,
    Series,
    instant_query,
    run_reason,
    runs_from_series,
)

# What the table shows of each run (statuspage.runs_table), and the run's identity and node.
# A run's state is the one training_run_state series at 1, not its eleven (a full exporter
# writes one per state): a run is some 13 series here.
PAGE_QUERY = (
    "training_run_state == 1"
    ' or {__name__=~"training_(run_info|step|max_steps|progress_ratio|eta_seconds'
    "|eta_lower_seconds|eta_upper_seconds|loss|gpus|gpu_seconds_total"
    '|last_checkpoint_timestamp_seconds|last_step_timestamp_seconds)"}'
)
# What the reason needs, only for the runs that have one (not running, not finished).
ATTENTION = (
    ' and on (namespace, pod, job_name) (training_run_state{state!~"running|finished"} == 1)'
)
# A run's series, by name, as its page's fields (the rest of its training_* gauges are shown
# as they are, under their names).
FIELDS = {
    "training_step": "step",
    "training_max_steps": "max_steps",
    "training_progress_ratio": "progress_ratio",
    "training_eta_seconds": "eta_seconds",
    "training_eta_lower_seconds": "eta_lower_seconds",
    "training_eta_upper_seconds": "eta_upper_seconds",
    "training_loss": "loss",
    "training_eval_loss": "eval_loss",
    "training_best_loss": "best_loss",
    "training_gpus": "gpus",
    "training_gpu_seconds_total": "gpu_seconds",
    "training_stalled_gpu_seconds_total": "stalled_gpu_seconds",
    "training_last_checkpoint_timestamp_seconds": "last_checkpoint_timestamp_seconds",
    "training_last_step_timestamp_seconds": "last_step_timestamp_seconds",
    "training_last_report_timestamp_seconds": "last_report_timestamp_seconds",
    "training_steps_per_second": "steps_per_second",
    "training_typical_steps_per_second": "typical_steps_per_second",
    "training_tokens_per_second": "tokens_per_second",
    "training_learning_rate": "learning_rate",
    "training_model_flops_utilization": "model_flops_utilization",
    "training_progress_at_risk_gpu_seconds": "progress_at_risk_gpu_seconds",
}
MAX_RUNS = 50_000
# What one answer may hold: Prometheus is trusted to answer, not to answer small (a proxy,
# an impostor or a fleet beyond the page's size). With every sample a run of its own (the
# worst an answer can be), 60,000 samples took the page to 205 MiB, under its 256Mi limit
# (docs/benchmarks.md); a run is some 13 samples of PAGE_QUERY, so about 4,600 runs. Larger
# fleets raise it (cluster --max-samples) with the limit: some 30 MiB per 10,000 more.
MAX_QUERY_SAMPLES = 60_000
MAX_QUERY_BYTES = 32 * 1024 * 1024


def _field(value: float) -> float | None:
    return value if math.isfinite(value) else None


def stuck_of(why: list[dict[str, Any]]) -> dict[tuple[str, str], list[Any]]:
    """Per job (namespace, job_name), the diagnoses of its stuck ranks from the answer to
    :data:`WHY_QUERY`."""
    stuck: dict[tuple[str, str], list[Any]] = {}
    for s in why:
        m = s["metric"]
        stuck.setdefault((m.get("namespace", ""), m.get("job_name", "")), []).append(
            diagnosis_from_labels(m)
        )
    return stuck


def runs_of(
    page: Series,
    reasons: dict[RunKey, dict[str, float]],
    stuck: dict[tuple[str, str], list[Any]],
    now: float,
) -> list[dict[str, Any]]:
    """The runs, in ``/api/v1/runs`` form, from the answer to :data:`PAGE_QUERY` (read by
    ``runs_from_series``), the reason query's values for the runs needing attention and
    :func:`stuck_of`: each with its state, the reason the exporter would give, why a stalled
    job is stuck, and its node."""
    values, states, infos = page
    runs = []
    for key, state in list(states.items())[:MAX_RUNS]:
        namespace, job_name, pod = key
        v = values.get(key, {})
        run: dict[str, Any] = {
            "namespace": namespace,
            "pod": pod,
            "job_name": job_name,
            "state": state,
            "exporter_node": str(infos.get(key, {}).get("node", ""))[:MAX_STRING],
        }
        for name, value in v.items():
            if name in FIELDS:
                run[FIELDS[name]] = _field(value)
        if key in reasons or state not in ("running", "finished"):
            run["state_reason"] = run_reason(state, {**v, **reasons.get(key, {})}, now)
        causes = stuck.get((namespace, job_name))
        if causes and state in ("stalled", "silent"):
            run["stall_summary"] = stall_summary(causes)
        runs.append(run)
    return runs


def run_detail(series: list[dict[str, Any]], now: float) -> dict[str, Any] | None:
    """One run's page data from the selection of its series: its fields, its other gauges
    as ``metrics`` and its info labels; None when it has no state."""
    values, states, infos = runs_from_series(series)
    if len(states) != 1:
        return None
    ((key, state),) = states.items()
    namespace, job_name, pod = key
    v = values.get(key, {})
    run: dict[str, Any] = {"namespace": namespace, "pod": pod, "job_name": job_name}
    run["state"] = state
    run["state_reason"] = run_reason(state, v, now)
    run["metrics"] = {}
    for name, value in v.items():
        if name in FIELDS:
            run[FIELDS[name]] = _field(value)
        elif len(run["metrics"]) < 256:
            run["metrics"][name] = _field(value)
    run["info"] = {
        k: _plain(val)[1]
        for k, val in infos.get(key, {}).items()
        if k not in ("__name__", "namespace", "pod", "job_name")
    }
    run["exporter_node"] = str(run["info"].get("node", ""))
    return run


def _label(value: str) -> str:
    """``value`` quoted for a PromQL label matcher."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


Query = Callable[[str], list[dict[str, Any]]]


def prometheus_query(
    url: str,
    timeout: float = 10.0,
    max_samples: int = MAX_QUERY_SAMPLES,
    max_bytes: int = MAX_QUERY_BYTES,
) -> Query:
    """Instant queries against ``url`` (toprows.instant_query: the one bounded GET client,
    malformed samples left out), each answer at most ``max_bytes`` and ``max_samples``
    samples, counted before it is parsed; RuntimeError saying why not."""
    return lambda expr: instant_query(url, expr, timeout, max_bytes, max_samples)


@dataclass
class PrometheusView:
    """The cluster's runs from Prometheus, gathered at most every ``max_age`` seconds however
    many people look (as :class:`exporter.commands.cluster.ClusterView`)."""

    url: str
    query: Query
    max_age: float = 4.0
    clock: Callable[[], float] = time.time
    assets: Mapping[str, tuple[bytes, str]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _last: Gathered | None = None

    @property
    def source(self) -> str:
        return f"Prometheus at {self.url}"

    def gather(self) -> Gathered:
        """Every run Prometheus holds (three queries), no older than ``max_age``; a failed
        query is shown as the page's problem, never as an empty fleet."""
        with self._lock:
            now = self.clock()
            if self._last is not None and now - self._last.time < self.max_age:
                return self._last
            try:
                # Each answer is read down to its values as it comes, so that at most one
                # raw answer (bounded by MAX_QUERY_SAMPLES) is held at a time.
                page = runs_from_series(self.query(PAGE_QUERY))
                missing: list[str] = []
                # The runs show without what a later query could not give (a fleet whose
                # runs fit the page but whose silent runs' reasons do not): said, not hidden.
                reasons: dict[RunKey, dict[str, float]] = {}
                stuck: dict[tuple[str, str], list[Any]] = {}
                try:
                    reasons = runs_from_series(self.query(_attention()))[0]
                except RuntimeError as exc:
                    missing.append(f"the reasons of the runs needing attention: {exc}")
                try:
                    stuck = stuck_of(self.query(WHY_QUERY))
                except RuntimeError as exc:
                    missing.append(f"why stalled jobs are stuck: {exc}")
                runs = runs_of(page, reasons, stuck, now)
                self._last = Gathered(now, (), None, listed=tuple(runs), missing=tuple(missing))
            except RuntimeError as exc:
                self._last = Gathered(now, (), str(exc), listed=())
            return self._last

    def run(self, namespace: str, pod: str) -> dict[str, Any] | None:
        """One run's page data (one query), or None when Prometheus has no such run.
        Raises RuntimeError when the query fails."""
        expr = f'{{__name__=~"training_.+",namespace={_label(namespace)},pod={_label(pod)}}}'
        return run_detail(self.query(expr), self.clock())


def _attention() -> str:
    """The reason's series, only for the runs that need attention (a reason is shown for
    them alone: a fleet of healthy runs costs none of these)."""
    return f"({REASON_QUERY}){ATTENTION}"
