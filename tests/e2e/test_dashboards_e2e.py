"""Every dashboard query, variables substituted, runs on the real Prometheus of the e2e
stack without error and returns data for the scenario runs; key values are checked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from exporter.states import BY_CODE, BY_NAME

from ..conftest import get_json
from .conftest import LiveStack
from .scenarios import NAMESPACE
from .stack import query

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = sorted((ROOT / "grafana" / "dashboards").glob("*.json"))
VARIABLES = {
    "$namespace": NAMESPACE,
    "$job_name": "healthy",
    "$__rate_interval": "1m",
    "$gpu_hour_price": "2.5",
}


def substitute(expr: str, job: str) -> str:
    for name, value in {**VARIABLES, "$job_name": job}.items():
        expr = expr.replace(name, value)
    return expr


# Panels that show a job's alerts have data only for a job that has one.
ALERT_PANELS = {"Firing alerts": "hung"}


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
    }
    # The same states as the exporter's own view.
    runs = get_json(live_stack.exporter.url + "/api/v1/runs")["runs"]
    assert {r["job_name"]: r["state"] for r in runs} == states
    stats = {p["title"]: p for p in doc["panels"] if p["type"] == "stat"}

    def value(title: str) -> float:
        (row,) = query(prom, substitute(stats[title]["targets"][0]["expr"], ""))
        return float(row["value"][1])

    assert value("Stalled jobs") == 2  # hung, reporter-hang
    # hung (16) + reporter-hang (2) + finished (2)
    assert value("GPUs held by stalled or finished jobs") == 16 + 2 + 2
    assert value("GPU-hours wasted (7 days)") > 0
    assert value("Cost wasted (7 days)") == pytest.approx(
        value("GPU-hours wasted (7 days)") * 2.5, rel=0.05
    )


def test_gpu_utilization_joins_both_dcgm_label_forms(live_stack: LiveStack) -> None:
    doc = json.loads((ROOT / "grafana" / "dashboards" / "training-job-detail.json").read_text())
    panel = next(p for p in doc["panels"] if p["title"].startswith("GPU utilization"))
    expr = panel["targets"][0]["expr"]
    healthy = query(live_stack.prometheus_url, substitute(expr, "healthy"))
    hung = query(live_stack.prometheus_url, substitute(expr, "hung"))
    assert [(r["metric"]["pod"], float(r["value"][1])) for r in healthy] == [("healthy", 91.0)]
    assert [(r["metric"]["pod"], float(r["value"][1])) for r in hung] == [("hung", 0.0)]
