"""Every dashboard query, variables substituted, runs on the real Prometheus of the e2e
stack without error and returns data for the scenario runs; key values are checked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import LiveStack
from .scenarios import NAMESPACE
from .stack import query

pytestmark = pytest.mark.e2e
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


def panel_results(doc: dict[str, Any], prom: str, job: str) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for p in doc["panels"]:
        rows: list[Any] = []
        for t in p["targets"]:
            rows += query(prom, substitute(t["expr"], job))
        out[p["title"]] = rows
    return out


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.stem)
def test_every_panel_returns_data(live_stack: LiveStack, path: Path) -> None:
    doc = json.loads(path.read_text())
    results = panel_results(doc, live_stack.prometheus_url, "healthy")
    empty = [title for title, rows in results.items() if not rows]
    assert empty == [], f"{path.name}: panels with no data: {empty}"


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
        r["metric"]["job_name"]: float(r["value"][1])
        for r in query(prom, substitute(state_expr, ""))
    }
    # 0 running, 1 plateaued, 2 stalled, 3 diverged, 4 finished, 5 finished but running
    assert states["healthy"] == 0 and states["halves"] == 0
    assert states["plateau"] == 1
    assert states["hung"] == 2
    assert states["diverging"] == 3
    assert states["finished"] == 5
    stats = {p["title"]: p for p in doc["panels"] if p["type"] == "stat"}

    def value(title: str) -> float:
        (row,) = query(prom, substitute(stats[title]["targets"][0]["expr"], ""))
        return float(row["value"][1])

    assert value("Stalled jobs") == 1
    assert value("GPUs held by stalled or finished jobs") == 16 + 2  # hung + finished
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
