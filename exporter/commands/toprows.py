"""What ``top`` shows, as data: one :class:`Row` a training job, read from one exporter's
``/api/v1/runs`` (one node, or standalone) or from Prometheus (the whole cluster, through the
recording rules), and sorted. The terminal view that draws them is :mod:`exporter.commands.top`."""

from __future__ import annotations

import json
import math
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.ranks import DONE_STATES, Laggard, RankView, stuck_rank
from ..core.stacks import Diagnosis
from ..core.states import BY_CODE, Observation, reason, severity
from ..core.thresholds import Thresholds, promql_beyond
from ..plumbing.fetch import FetchError, bounded_json, get
from ..views.deadlineviews import Deadline, deadlines_of
from ..views.stackviews import diagnosis_from_labels
from ..views.stackviews import summary as stall_summary


@dataclass(frozen=True)
class Row:
    """One training job."""

    namespace: str
    job_name: str
    state: str
    progress: float | None
    step: int | None
    max_steps: int | None
    eta_seconds: float | None
    loss: float | None
    loss_trend: str | None  # down (improving), up, flat
    gpus: float | None
    gpu_hours: float | None
    reason: str = ""  # why the job is in its state: "stalled for 42m (threshold 30m)"
    steps_per_second: float | None = None  # the slowest rank's
    age_seconds: float | None = None  # since the job's first report
    wasted_gpu_hours: float | None = None  # GPU-hours held while stalled
    stuck_rank: str = ""  # the rank TrainingRankStalled names, in words ("" for none)
    stuck_rank_short: str = ""  # the same for a table cell: "2@node-c"
    # The ETA's 80 % band (docs/eta.md), counted down like it.
    eta_lower_seconds: float | None = None
    eta_upper_seconds: float | None = None
    why: str = ""  # why a stalled job is stuck, from its ranks' stacks (exporter.core.stacks)
    deadlines: tuple[Deadline, ...] = ()  # soonest first
    tokens_per_second: float | None = None  # the job's (its ranks' largest: rank 0 counts)
    mfu: float | None = None  # model FLOPs utilization, 0..1
    checkpoint_age_seconds: float | None = None  # since the newest checkpoint of any rank
    at_risk_gpu_hours: float | None = None  # trained since the last checkpoint (all ranks)


def _num(value: Any) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number


def trend(points: list[float], tolerance: float = 0.01) -> str | None:
    """Direction of a loss series: mean of its last third against the third before."""
    if len(points) < 6:
        return None
    third = len(points) // 3
    before = sum(points[-2 * third : -third]) / third
    after = sum(points[-third:]) / third
    if abs(after - before) <= tolerance * abs(before):
        return "flat"
    return "down" if after < before else "up"


def rows_from_exporter(doc: dict[str, Any]) -> list[Row]:
    """Rows from an exporter's ``/api/v1/runs``; ranks of one job merged (slowest wins)."""
    now = _num(doc.get("time")) or time.time()
    jobs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for run in doc.get("runs", []):
        jobs.setdefault((run["namespace"], run["job_name"]), []).append(run)
    rows = []
    for (namespace, job), runs in jobs.items():
        lead = min(runs, key=lambda r: _num(r.get("progress_ratio")) or 0.0)
        worst = min(runs, key=lambda r: severity(r["state"]))
        state = worst["state"]
        losses = [v for _, v in lead.get("loss_history", [])]
        laggard = stuck_rank(
            [
                RankView(
                    rank=str((r.get("info") or {}).get("rank", "")),
                    pod=str(r.get("pod", "")),
                    node=str((r.get("info") or {}).get("node", "")),
                    last_step=_num(r.get("last_step_timestamp_seconds")),
                    lag_threshold=_num((r.get("thresholds") or {}).get("rank_lag_seconds"))
                    or math.inf,
                    state=str(r.get("state", "")),
                )
                for r in runs
                if not r.get("gone")
            ]
        )
        rows.append(
            Row(
                namespace=namespace,
                job_name=job,
                state=state,
                progress=_num(lead.get("progress_ratio")),
                step=lead.get("step"),
                max_steps=lead.get("max_steps"),
                eta_seconds=_num(lead.get("eta_seconds")),
                eta_lower_seconds=_num(lead.get("eta_lower_seconds")),
                eta_upper_seconds=_num(lead.get("eta_upper_seconds")),
                loss=_num(lead.get("loss")),
                loss_trend=trend(losses),
                gpus=sum(_num(r.get("gpus")) or 0.0 for r in runs),
                gpu_hours=sum(_num(r.get("gpu_seconds")) or 0.0 for r in runs) / 3600,
                reason=str(worst.get("state_reason") or ""),
                steps_per_second=_min(_num(r.get("steps_per_second")) for r in runs),
                age_seconds=_age(
                    now, [_num(r.get("first_report_timestamp_seconds")) for r in runs]
                ),
                wasted_gpu_hours=sum(_num(r.get("stalled_gpu_seconds")) or 0.0 for r in runs)
                / 3600,
                stuck_rank=laggard.describe() if laggard else "",
                stuck_rank_short=laggard.short() if laggard else "",
                deadlines=deadlines_of(lead),
                tokens_per_second=_max(_num(r.get("tokens_per_second")) for r in runs),
                mfu=_max(_num(r.get("model_flops_utilization")) for r in runs),
                checkpoint_age_seconds=_since(
                    now, _max(_num(r.get("last_checkpoint_timestamp_seconds")) for r in runs)
                ),
                at_risk_gpu_hours=_total(_num(r.get("progress_at_risk_gpu_seconds")) for r in runs),
                why=stall_summary(
                    [
                        diagnosis_from_labels(d)
                        for r in runs
                        for d in (r.get("stall") or [])
                        if isinstance(d, dict)
                    ]
                ),
            )
        )
    return sort_rows(rows)


def _min(values: Any) -> float | None:
    present = [v for v in values if v is not None]
    return min(present) if present else None


def _max(values: Any) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def _total(values: Any) -> float | None:
    """The sum of the known values in GPU-hours (they are GPU-seconds); None if none is."""
    present = [v for v in values if v is not None]
    return sum(present) / 3600 if present else None


def _since(now: float, at: float | None) -> float | None:
    return None if at is None else max(0.0, now - at)


def _age(now: float, starts: list[float | None]) -> float | None:
    first = _min(starts)
    return None if first is None else max(0.0, now - first)


# Every column of every job, as the recording rules of alerts/views.rules.yaml (and
# capacity.rules.yaml) keep them: one selection, however many jobs and nodes. Each recorded
# series -> (the column it fills, how its value becomes the column's).
VIEWS_QUERY = '{__name__=~"namespace_job_name(_deadline)?:training_.+"}'
_HOURS = 1 / 3600
VIEW_COLUMNS: dict[str, tuple[str, str]] = {
    "namespace_job_name:training_state_code:max": ("state", ""),
    "namespace_job_name:training_progress_ratio:min": ("progress", ""),
    "namespace_job_name:training_step:min": ("step", ""),
    "namespace_job_name:training_max_steps:max": ("max_steps", ""),
    "namespace_job_name:training_eta_seconds:max": ("eta", ""),
    "namespace_job_name:training_eta_lower_seconds:max": ("eta_lower", ""),
    "namespace_job_name:training_eta_upper_seconds:max": ("eta_upper", ""),
    "namespace_job_name:training_loss:avg": ("loss", ""),
    "namespace_job_name:training_loss:deriv10m": ("loss_deriv", ""),
    "namespace_job_name:training_gpus:sum": ("gpus", ""),
    "namespace_job_name:training_gpu_seconds_total:sum": ("gpu_hours", "hours"),
    "namespace_job_name:training_steps_per_second:min": ("steps_per_second", ""),
    "namespace_job_name:training_start_timestamp_seconds:min": ("age", "since"),
    "namespace_job_name:training_stalled_gpu_seconds:increase24h": ("wasted", "hours"),
    "namespace_job_name:training_deadline_timestamp_seconds:min": ("deadline", ""),
    "namespace_job_name:training_kill_deadline_timestamp_seconds:min": ("kill_deadline", ""),
    "namespace_job_name_deadline:training_deadline_miss_probability:max": ("miss", "deadline"),
    "namespace_job_name_deadline:training_deadline_nodes_needed:max": ("nodes", "deadline"),
}


def results_from_views(series: list[dict[str, Any]], now: float) -> dict[str, list[dict[str, Any]]]:
    """The columns of :func:`rows_from_prometheus` from one :data:`VIEWS_QUERY` answer: each
    recorded series under its column's name, its value made the column's (GPU-seconds into
    GPU-hours, a start time into an age, a deadline's kind into the column's name)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for s in series:
        metric = s.get("metric") or {}
        column = VIEW_COLUMNS.get(str(metric.get("__name__", "")))
        if column is None:
            continue
        name, how = column
        value = _num(s["value"][1])
        if how == "deadline":
            kind = metric.get("deadline")
            if kind not in ("user", "kill"):
                continue
            name = f"{name}_{kind}"
        elif value is not None and how == "hours":
            value *= _HOURS
        elif value is not None and how == "since":
            value = max(0.0, now - value)
        out.setdefault(name, []).append(
            {"metric": metric, "value": [s["value"][0], "NaN" if value is None else repr(value)]}
        )
    return out


# The rank TrainingRankStalled names per job (exporter.core.ranks in PromQL: the alert's own
# expression, the furthest behind first).
STUCK_RANK_QUERY = (
    "topk by (namespace, job_name) (1, "
    + promql_beyond(
        "namespace_pod_job_name:training_rank_lag_seconds:behind_newest",
        ">",
        "training_rank_lag_threshold_seconds",
        group_left=True,
    )
    + ' unless on (namespace, pod, job_name) training_run_state{state=~"'
    + "|".join(DONE_STATES)
    + '"} == 1)'
)


# Why stalled jobs are stuck: every rank's cause and frame (refined by the GPUs' utilization
# where the rules run, docs/runbook.md#why-a-run-is-stuck).
WHY_QUERY = (
    "namespace_pod_job_name_rank:training_stall_cause:info"
    " or on (namespace, pod, job_name, rank) training_stall_info"
)


def why_from_prometheus(series: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    """(namespace, job_name) -> why it is stuck, from :data:`WHY_QUERY`."""
    by_job: dict[tuple[str, str], list[Diagnosis]] = {}
    for s in series:
        m = s["metric"]
        key = (m.get("namespace", ""), m.get("job_name", ""))
        by_job.setdefault(key, []).append(diagnosis_from_labels(m))
    return {key: stall_summary(ds) for key, ds in by_job.items()}


def stuck_ranks_from_prometheus(
    series: list[dict[str, Any]],
) -> dict[tuple[str, str], Laggard]:
    """(namespace, job_name) -> its stuck rank, from :data:`STUCK_RANK_QUERY`."""
    out = {}
    for s in series:
        m = s["metric"]
        lag = _num(s["value"][1])
        if lag is not None:
            laggard = Laggard(m.get("rank", ""), m.get("pod", ""), m.get("node", ""), lag)
            out[(m.get("namespace", ""), m.get("job_name", ""))] = laggard
    return out


RunKey = tuple[str, str, str]  # namespace, job_name, pod
# runs_from_series' answer: each run's values by name, its state, its info labels.
Series = tuple[dict[RunKey, dict[str, float]], dict[RunKey, str], dict[RunKey, dict[str, str]]]

# Per run: what states.reason() needs, so that a job's reason reads exactly as the exporter
# would write it (from the same series the exporter exports).
REASON_QUERY = (
    '{__name__=~"training_(run_state|last_step_timestamp_seconds|last_report_timestamp_seconds'
    "|last_improvement_timestamp_seconds|start_timestamp_seconds|stall_threshold_seconds"
    "|plateau_window_seconds|report_timeout_seconds|finished_grace_seconds|divergence_ratio"
    "|throughput_drop_ratio|loss|eval_loss|best_loss|gpus|steps_per_second"
    '|typical_steps_per_second)"}'
)
_THRESHOLD_SERIES = {
    "training_stall_threshold_seconds": "stall_seconds",
    "training_plateau_window_seconds": "plateau_seconds",
    "training_report_timeout_seconds": "report_timeout_seconds",
    "training_finished_grace_seconds": "finished_grace_seconds",
    "training_divergence_ratio": "divergence_ratio",
    "training_throughput_drop_ratio": "throughput_drop_ratio",
}


def runs_from_series(
    series: list[dict[str, Any]],
) -> Series:
    """Per run (namespace, job_name, pod), from an instant selection of raw series: each
    series' value by its name, the state whose ``training_run_state`` is 1, and the labels of
    its ``training_run_info``."""
    runs: dict[RunKey, dict[str, float]] = {}
    states: dict[RunKey, str] = {}
    infos: dict[RunKey, dict[str, str]] = {}
    for s in series:
        m = s["metric"]
        key = (m.get("namespace", ""), m.get("job_name", ""), m.get("pod", ""))
        value = _num(s["value"][1])
        if value is None:
            continue
        name = m.get("__name__", "")
        if name == "training_run_state":
            if value == 1:
                states[key] = m.get("state", "")
        elif name == "training_run_info":
            infos[key] = m
        else:
            runs.setdefault(key, {})[name] = value
    return runs, states, infos


def run_reason(state: str, v: dict[str, float], now: float) -> str:
    """A run's reason, as the exporter writes it, from its series' values (``v``: by name,
    from :data:`REASON_QUERY`; the typical pace is the exporter's own,
    ``training_typical_steps_per_second``: one truth for the state, the alert and views)."""
    th = Thresholds(**{f: v[name] for name, f in _THRESHOLD_SERIES.items() if name in v})
    evaluated = v.get("training_eval_loss") is not None
    obs = Observation(
        now=now,
        first_report=v.get("training_start_timestamp_seconds", now),
        last_report=v.get("training_last_report_timestamp_seconds", now),
        last_step=v.get("training_last_step_timestamp_seconds"),
        last_improvement=v.get("training_last_improvement_timestamp_seconds"),
        finished=state in ("finished", "finished-but-running"),
        progress=None,
        loss=v.get("training_loss"),
        eval_loss=v.get("training_eval_loss"),
        # training_best_loss is the eval loss's best once the run reports one, else the
        # train loss's (Tracker): the train loss's own best only then.
        best_train_loss=None if evaluated else v.get("training_best_loss"),
        gpus=v.get("training_gpus", 0.0),
        gone_since=None,
        steps_per_second=v.get("training_steps_per_second"),
        typical_steps_per_second=v.get("training_typical_steps_per_second"),
    )
    return reason(state, obs, th)


def reasons_from_prometheus(series: list[dict[str, Any]], now: float) -> dict[tuple[str, str], str]:
    """(namespace, job_name) -> the reason of its most urgent run, from :data:`REASON_QUERY`
    results."""
    runs, states, _ = runs_from_series(series)
    out: dict[tuple[str, str], tuple[int, str]] = {}
    for key, state in states.items():
        rank = severity(state)
        job = key[:2]
        if job not in out or rank < out[job][0]:
            out[job] = (rank, run_reason(state, runs.get(key, {}), now))
    return {job: text for job, (_, text) in out.items()}


def rows_from_prometheus(
    results: dict[str, list[dict[str, Any]]],
    reasons: dict[tuple[str, str], str] | None = None,
    stuck: dict[tuple[str, str], Laggard] | None = None,
    why: dict[tuple[str, str], str] | None = None,
) -> list[Row]:
    """Rows from the instant-query results of :data:`PROMETHEUS_QUERIES`."""
    values: dict[tuple[str, str], dict[str, float | None]] = {}
    for name, series in results.items():
        for s in series:
            key = (s["metric"].get("namespace", ""), s["metric"].get("job_name", ""))
            values.setdefault(key, {})[name] = _num(s["value"][1])
    rows = []
    for (namespace, job), v in values.items():
        if "state" not in v:  # a job Prometheus no longer sees
            continue
        code = int(v["state"] or 0)
        deriv = v.get("loss_deriv")
        loss_trend = (
            None
            if deriv is None or math.isnan(deriv)
            else ("flat" if abs(deriv) < 1e-9 else "down" if deriv < 0 else "up")
        )
        step, total = v.get("step"), v.get("max_steps")
        laggard = (stuck or {}).get((namespace, job))
        rows.append(
            Row(
                namespace=namespace,
                job_name=job,
                state=BY_CODE[code].name if code in BY_CODE else "running",
                progress=v.get("progress"),
                step=int(step) if step is not None else None,
                max_steps=int(total) if total is not None else None,
                eta_seconds=v.get("eta"),
                eta_lower_seconds=v.get("eta_lower"),
                eta_upper_seconds=v.get("eta_upper"),
                loss=v.get("loss"),
                loss_trend=loss_trend,
                gpus=v.get("gpus"),
                gpu_hours=v.get("gpu_hours"),
                reason=(reasons or {}).get((namespace, job), ""),
                steps_per_second=v.get("steps_per_second"),
                age_seconds=v.get("age"),
                wasted_gpu_hours=v.get("wasted"),
                stuck_rank=laggard.describe() if laggard else "",
                stuck_rank_short=laggard.short() if laggard else "",
                why=(why or {}).get((namespace, job), ""),
                deadlines=_deadlines_from(v),
            )
        )
    return sort_rows(rows)


def _deadlines_from(v: dict[str, float | None]) -> tuple[Deadline, ...]:
    out = []
    for kind, at in (("user", v.get("deadline")), ("kill", v.get("kill_deadline"))):
        if at is None or math.isnan(at):
            continue
        needed = v.get(f"nodes_{kind}")
        out.append(
            Deadline(
                kind=kind,
                at=at,
                miss_probability=v.get(f"miss_{kind}"),
                size_needed=needed,
                unit="nodes" if needed is not None else "",
            )
        )
    return tuple(sorted(out, key=lambda d: d.at))


def _last(value: float | None) -> float:
    return math.inf if value is None or math.isnan(value) else value


# Sort keys (``--sort``, and ``s`` cycles them in the live view): name, and how each orders.
SORTS: dict[str, Callable[[Row], tuple[Any, ...]]] = {
    "state": lambda r: (severity(r.state), r.namespace, r.job_name),
    "name": lambda r: (r.namespace, r.job_name),
    "eta": lambda r: (_last(r.eta_seconds), r.namespace, r.job_name),
    "progress": lambda r: (-(r.progress or 0.0), r.namespace, r.job_name),
    "gpus": lambda r: (-(r.gpus or 0.0), r.namespace, r.job_name),
    "age": lambda r: (-(r.age_seconds or 0.0), r.namespace, r.job_name),
}


def sort_rows(rows: list[Row], by: str = "state") -> list[Row]:
    """By ``by`` (:data:`SORTS`); by default what needs attention first (stalled, diverged,
    finished-but-running...), then by name."""
    return sorted(rows, key=SORTS[by])


# An exporter's /api/v1/runs at 10,000 runs is some 34 MB; Prometheus' answers are smaller.
MAX_ANSWER_BYTES = 256 * 1024 * 1024


def fetch_json(url: str, timeout: float = 10.0) -> Any:
    """The JSON document at ``url`` (the one bounded client, exporter.plumbing.fetch); its errors
    name the URL."""
    return json.loads(get(url, timeout, MAX_ANSWER_BYTES))


def from_exporter(url: str) -> list[Row]:
    return rows_from_exporter(fetch_json(url.rstrip("/") + "/api/v1/runs"))


def _sample(s: Any) -> bool:
    """Whether ``s`` is an instant vector's sample as Prometheus writes it: a string map of
    labels and a [time, "value"] pair (what a proxy or an impostor sends otherwise is left
    out, never a crash of the view)."""
    if not isinstance(s, dict) or not isinstance(s.get("metric"), dict):
        return False
    value = s.get("value")
    return (
        all(isinstance(k, str) and isinstance(v, str) for k, v in s["metric"].items())
        and isinstance(value, list)
        and len(value) == 2
        and isinstance(value[1], str)
    )


# What one sample may build when an answer is bounded by samples: its object, its labels'
# object and its value pair; a ``:`` and a ``,`` per label (a training series has at most
# some 20 labels) and a few of its own.
CONTAINERS_PER_SAMPLE = 3
SEPARATORS_PER_SAMPLE = 64


def instant_query(
    url: str,
    expr: str,
    timeout: float = 10.0,
    max_bytes: int = MAX_ANSWER_BYTES,
    max_samples: int | None = None,
) -> list[dict[str, Any]]:
    """The well-formed samples of an instant query of the Prometheus-compatible API at
    ``url`` (Prometheus, Thanos Query, Mimir). With ``max_samples``, an answer that holds (or
    would build as much as) more samples is refused before it is parsed. Raises
    RuntimeError saying why there are none: unreachable, not JSON, too many samples, not a
    query's answer, or the query's own error."""
    target = f"{url.rstrip('/')}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
    try:
        body = get(target, timeout, max_bytes)
        if max_samples is None:
            doc = json.loads(body)
        elif (samples := body.count(b'"metric"')) > max_samples:
            # Prometheus' own answer, too large for this reader: said before it is parsed
            # (an answer that spells its keys otherwise meets the counts below).
            raise RuntimeError(
                f"Prometheus at {url}: answer holds {samples} samples, more than {max_samples}"
            )
        else:
            doc = bounded_json(
                body,
                CONTAINERS_PER_SAMPLE * max_samples + 16,
                SEPARATORS_PER_SAMPLE * max_samples + 64,
                f"{max_samples} samples' worth",
            )
    except FetchError as exc:  # its detail, without the query's whole URL
        raise RuntimeError(f"Prometheus at {url}: {exc.detail}") from None
    except (ValueError, RecursionError) as exc:
        raise RuntimeError(f"Prometheus at {url}: {str(exc)[:200]}") from None
    if not isinstance(doc, dict) or doc.get("status") != "success":
        error = doc.get("error") if isinstance(doc, dict) else "not a query answer"
        raise RuntimeError(f"Prometheus at {url}: {error}")
    data = doc.get("data")
    result = data.get("result") if isinstance(data, dict) else None
    if max_samples is not None and isinstance(result, list) and len(result) > max_samples:
        raise RuntimeError(
            f"Prometheus at {url}: answer holds {len(result)} samples, more than {max_samples}"
        )
    return [s for s in result if _sample(s)] if isinstance(result, list) else []


def _query(url: str, name: str, expr: str) -> list[dict[str, Any]]:
    try:
        return instant_query(url, expr)
    except RuntimeError as exc:
        raise RuntimeError(f"Prometheus query {name} failed: {exc}") from None


def from_prometheus(url: str) -> list[Row]:
    """Every job's row from Prometheus (or Thanos Query, Mimir): four queries, whatever the
    number of jobs and nodes. Raises RuntimeError when a query fails, or when the runs are
    there but the views' recording rules are not."""
    now = time.time()
    results = results_from_views(_query(url, "views", VIEWS_QUERY), now)
    runs = _query(url, "reason", REASON_QUERY)
    if runs and "state" not in results:
        raise RuntimeError(
            f"{url} has training runs but not the recording rules of alerts/views.rules.yaml "
            "(namespace_job_name:training_state_code:max): load alerts/*.rules.yaml"
        )
    reasons = reasons_from_prometheus(runs, now)
    stuck = stuck_ranks_from_prometheus(_query(url, "stuck rank", STUCK_RANK_QUERY))
    why = why_from_prometheus(_query(url, "why", WHY_QUERY))
    return rows_from_prometheus(results, reasons, stuck, why)
