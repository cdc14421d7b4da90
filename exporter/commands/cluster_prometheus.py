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
    instant_query,
    run_reason,
    runs_from_series,
)

# What the table shows of each run (statuspage.runs_table), and the run's identity and node.
PAGE_QUERY = (
    '{__name__=~"training_(run_state|run_info|step|max_steps|progress_ratio|eta_seconds'
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


def _field(value: float) -> float | None:
    return value if math.isfinite(value) else None


def runs_of(
    page: list[dict[str, Any]],
    attention: list[dict[str, Any]],
    why: list[dict[str, Any]],
    now: float,
) -> list[dict[str, Any]]:
    """The runs, in ``/api/v1/runs`` form, from the answers to :data:`PAGE_QUERY`, the
    reason query for the runs needing attention and :data:`WHY_QUERY`: each with its state,
    the reason the exporter would give, why a stalled job is stuck, and its node."""
    values, states, infos = runs_from_series(page)
    reasons, _, _ = runs_from_series(attention)
    stuck: dict[tuple[str, str], list[Any]] = {}
    for s in why:
        m = s["metric"]
        stuck.setdefault((m.get("namespace", ""), m.get("job_name", "")), []).append(
            diagnosis_from_labels(m)
        )
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


def prometheus_query(url: str, timeout: float = 10.0) -> Query:
    """Instant queries against ``url`` (toprows.instant_query: the one bounded GET client,
    malformed samples left out); RuntimeError saying why not."""
    return lambda expr: instant_query(url, expr, timeout)


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
                runs = runs_of(
                    self.query(PAGE_QUERY),
                    self.query(_attention()),
                    self.query(WHY_QUERY),
                    now,
                )
                self._last = Gathered(now, (), None, listed=tuple(runs))
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
