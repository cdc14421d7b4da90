"""Every dashboard query, variables substituted, runs on the real Prometheus of the e2e
stack without error and returns data for the scenario runs; key values are checked."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from exporter.core.states import BY_CODE, BY_NAME

from ..conftest import get_json
from .conftest import LiveStack
from .scenarios import NAMESPACE, RANKED_JOB, RANKED_STUCK, RANKS
from .stack import query

# One worker builds the session's live stack for the three modules that read it.
pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.waits]
ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = sorted((ROOT / "grafana" / "dashboards").glob("*.json"))
VARIABLES = {
    # One cluster: its series carry no cluster label, the hidden variable finds no value,
    # and Grafana writes it as nothing: cluster=~"" matches every series.
    "$cluster": "",
    "$namespace": NAMESPACE,
    "$job_name": "healthy",
    "$__rate_interval": "1m",
    "$gpu_hour_price": "2.5",
}


def substitute(expr: str, job: str) -> str:
    for name, value in {**VARIABLES, "$job_name": job}.items():
        expr = expr.replace(name, value)
    return expr


# Panels that show a job's alerts have data only for a job that has one; "Why it is stuck"
# only for a stalled job whose reporter sent its stacks (the real reporter's hang).
ALERT_PANELS = {"Firing alerts": "hung", "Ranks": "ranked", "Why it is stuck": "reporter-hang"}


def panel_results(doc: dict[str, Any], prom: str, job: str) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for p in doc["panels"]:
        rows: list[Any] = []
        for t in p["targets"]:
            rows += query(prom, substitute(t["expr"], ALERT_PANELS.get(p["title"], job)))
        out[p["title"]] = rows
    return out


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.stem)
def test_every_panel_returns_data(live_stack: LiveStack, path: Path) -> None:
    doc = json.loads(path.read_text())
    results = panel_results(doc, live_stack.prometheus_url, "healthy")
    empty = [title for title, rows in results.items() if not rows]
    assert empty == [], f"{path.name}: panels with no data: {empty}"


def test_job_detail_header_shows_state_step_age_and_alerts(live_stack: LiveStack) -> None:
    """What the runbook sends people to: the job's state, time since its last step and
    report, and its firing alerts; the state is the exporter's own."""
    doc = json.loads((ROOT / "grafana" / "dashboards" / "training-job-detail.json").read_text())
    panels = {p["title"]: p for p in doc["panels"]}
    prom = live_stack.prometheus_url

    def one(title: str, job: str) -> float:
        (row,) = query(prom, substitute(panels[title]["targets"][0]["expr"], job))
        return float(row["value"][1])

    mapping = panels["State"]["fieldConfig"]["defaults"]["mappings"][0]["options"]
    assert mapping[str(int(one("State", "hung")))]["text"] == BY_NAME["stalled"].label
    assert mapping[str(int(one("State", "healthy")))]["text"] == BY_NAME["running"].label
    runs = {r["job_name"]: r for r in get_json(live_stack.exporter.url + "/api/v1/runs")["runs"]}
    assert runs["hung"]["state"] == "stalled" and runs["healthy"]["state"] == "running"
    stalled_for = one("Since last step", "hung")
    assert stalled_for > runs["hung"]["thresholds"]["stall_seconds"]
    assert one("Since last step", "healthy") < 5
    assert one("Since last report", "hung") < 5  # the hung run still reports (heartbeat)
    alerts = query(prom, substitute(panels["Firing alerts"]["targets"][0]["expr"], "hung"))
    assert {a["metric"]["alertname"] for a in alerts} == {"TrainingJobStalled"}


def test_variable_queries_list_the_scenario_jobs(live_stack: LiveStack) -> None:
    namespaces = query(live_stack.prometheus_url, "count by (namespace) (training_run_info)")
    assert {r["metric"]["namespace"] for r in namespaces} == {NAMESPACE}
    jobs = query(
        live_stack.prometheus_url,
        f'count by (job_name) (training_run_info{{namespace="{NAMESPACE}"}})',
    )
    assert {"healthy", "hung", "plateau", "diverging", "finished", "halves", "silent"} <= {
        r["metric"]["job_name"] for r in jobs
    }


def test_fleet_view_shows_each_jobs_state_and_the_waste(live_stack: LiveStack) -> None:
    doc = json.loads((ROOT / "grafana" / "dashboards" / "training-jobs.json").read_text())
    prom = live_stack.prometheus_url
    table = next(p for p in doc["panels"] if p["title"] == "Training jobs")
    state_expr = next(t["expr"] for t in table["targets"] if t["refId"] == "STATE")
    states = {
        r["metric"]["job_name"]: BY_CODE[int(float(r["value"][1]))].name
        for r in query(prom, substitute(state_expr, ""))
    }
    assert states == {
        "healthy": "running",
        "halves": "degraded",
        "plateau": "plateaued",
        "hung": "stalled",
        "diverging": "diverged",
        "finished": "finished-but-running",
        "silent": "silent",
        "reporter-hang": "stalled",
        "idle": "running",
        "ranked": "running",
    }
    # The same states as the exporter's own view.
    runs = get_json(live_stack.exporter.url + "/api/v1/runs")["runs"]
    assert {r["job_name"]: r["state"] for r in runs} == states
    stats = {p["title"]: p for p in doc["panels"] if p["type"] == "stat"}

    def value(title: str) -> float:
        (row,) = query(prom, substitute(stats[title]["targets"][0]["expr"], ""))
        return float(row["value"][1])

    assert value("Stalled jobs") == 2  # hung, reporter-hang
    # hung (16) + reporter-hang (2) + finished (2). The panel reads recording rules, one
    # evaluation behind the states read above: give them that evaluation.
    deadline = time.monotonic() + 10
    while value("GPUs held by stalled or finished jobs") != 20 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert value("GPUs held by stalled or finished jobs") == 16 + 2 + 2
    assert value("GPU-hours wasted (7 days)") > 0
    assert value("Cost wasted (7 days)") == pytest.approx(
        value("GPU-hours wasted (7 days)") * 2.5, rel=0.05
    )


def test_gpu_utilization_joins_both_dcgm_label_forms(live_stack: LiveStack) -> None:
    doc = json.loads((ROOT / "grafana" / "dashboards" / "training-job-detail.json").read_text())
    panel = next(p for p in doc["panels"] if p["title"].startswith("GPU utilization"))
    expr = panel["targets"][0]["expr"]
    prom = live_stack.prometheus_url
    # node-b's series were renamed by Prometheus itself (the target's own pod label won).
    renamed = query(prom, 'DCGM_FI_DEV_GPU_UTIL{exported_pod="hung"}')
    assert [r["metric"]["pod"] for r in renamed] == ["nvidia-dcgm-exporter-7xk2p"]

    def values(job: str) -> list[tuple[str, float]]:
        return [
            (r["metric"]["pod"], float(r["value"][1])) for r in query(prom, substitute(expr, job))
        ]

    assert values("healthy") == [("healthy", 91.0)]  # pod/namespace form
    assert values("hung") == [("hung", 0.0)]  # exported_ form, GPU_UTIL only
    assert values("idle") == [("idle", 1.0)]  # SM activity wins over GPU_UTIL's 100 %
    assert sorted(values("ranked")) == [(pod, 70.0) for pod, _, _ in RANKS]


def test_goodput_row_splits_gpu_seconds_by_cause(live_stack: LiveStack) -> None:
    """The capacity dashboard's goodput: the stalled runs' GPU-seconds are wasted as
    stalled, the idle run's as idle (from dcgm-exporter), and productive + wasted = held."""
    prom = live_stack.prometheus_url
    wasted = {
        (r["metric"]["job_name"], r["metric"]["cause"]): float(r["value"][1])
        for r in query(prom, "namespace_job_name_cause:training_wasted_gpu_seconds:rate5m > 0")
    }
    assert wasted[("hung", "stalled")] > 0
    assert ("healthy", "idle") not in wasted and ("healthy", "stalled") not in wasted
    by_job = {
        r["metric"]["job_name"]: float(r["value"][1])
        for r in query(prom, "namespace_job_name:training_gpu_seconds:rate5m")
    }
    # All it holds is wasted, idle: its GPUs do nothing while it steps.
    assert wasted[("idle", "idle")] == pytest.approx(by_job["idle"]) and by_job["idle"] > 0
    held = {
        r["metric"]["namespace"]: float(r["value"][1])
        for r in query(prom, "sum by (namespace) (namespace_job_name:training_gpu_seconds:rate5m)")
    }
    productive = query(prom, "namespace:training_productive_gpu_seconds:rate5m")
    total_wasted = query(
        prom, "sum by (namespace) (namespace_cause:training_wasted_gpu_seconds:rate5m)"
    )
    assert float(productive[0]["value"][1]) + float(total_wasted[0]["value"][1]) == pytest.approx(
        held[NAMESPACE], rel=0.05
    )
    ratio = float(query(prom, "namespace:training_goodput:ratio")[0]["value"][1])
    assert 0 < ratio < 1
    doc = json.loads((ROOT / "grafana" / "dashboards" / "training-gpu-capacity.json").read_text())
    goodput = [p for p in doc["panels"] if p.get("title", "").startswith("Goodput")]
    assert goodput, "the capacity dashboard has a Goodput row"


def test_ranks_panel_puts_the_stuck_rank_first(live_stack: LiveStack) -> None:
    doc = json.loads((ROOT / "grafana" / "dashboards" / "training-job-detail.json").read_text())
    panel = next(p for p in doc["panels"] if p["title"] == "Ranks")
    lag = next(t for t in panel["targets"] if t["refId"] == "LAG")
    rows = query(live_stack.prometheus_url, substitute(lag["expr"], RANKED_JOB))
    by_rank = {r["metric"]["rank"]: float(r["value"][1]) for r in rows}
    stuck = RANKS[RANKED_STUCK][1]
    assert max(by_rank, key=by_rank.__getitem__) == stuck and by_rank[stuck] > 5
