"""Panel helpers shared by the dashboards (grafana/jobs.py, detail.py, capacity.py): Grafana's
dashboard JSON model (schemaVersion 41, Grafana 11.6) for targets, panels, stats, tables,
time series, template variables and the dashboard itself. Every query uses the
``datasource`` variable."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_VERSION = 41
DS = {"type": "prometheus", "uid": "${datasource}"}
# Every selector names the cluster too (#59): one cluster has no such label, the hidden
# variable finds no value and `cluster=~""` matches every series; many clusters under one
# Prometheus-compatible store (the mixin's clusterLabel) show the variable and never mix.
CLUSTER = 'cluster=~"$cluster"'
NS = CLUSTER + ', namespace=~"$namespace"'
JOB = CLUSTER + ', namespace="$namespace", job_name="$job_name"'
DETAIL = "/d/training-job-detail/training-job-detail"

# Job states, their order and colors live in one table in the package, shared with `top`,
# `kubectl progress`, the status page and the alert rules; every state here is read from
# the exporter's training_run_state series.
sys.path.insert(0, str(ROOT))
from exporter.core.states import STATES, TRAINING, state_code_promql  # noqa: E402
from exporter.core.thresholds import promql_default  # noqa: E402

# The dashboards read the states, and a threshold's built-in default, from here.
__all__ = ["STATES", "TRAINING", "promql_default"]

STATE_EXPR = state_code_promql(NS)
JOB_STATE_EXPR = state_code_promql(JOB)


def state_mappings() -> list[dict[str, Any]]:
    """Value mappings from a state code to the state's label and color (the one table)."""
    return [
        {
            "type": "value",
            "options": {
                str(d.code): {"text": d.label, "color": d.grafana_color, "index": i}
                for i, d in enumerate(STATES)
            },
        }
    ]


def target(
    expr: str, ref: str = "A", legend: str = "", instant: bool = False, table: bool = False
) -> dict[str, Any]:
    t: dict[str, Any] = {
        "datasource": DS,
        "refId": ref,
        "expr": expr,
        "legendFormat": legend or "__auto",
    }
    if instant:
        t["instant"] = True
        t["range"] = False
    if table:
        t["format"] = "table"
    return t


def panel(
    pid: int,
    kind: str,
    title: str,
    description: str,
    unit: str,
    targets: list[dict[str, Any]],
    grid: tuple[int, int, int, int],
    **extra: Any,
) -> dict[str, Any]:
    x, y, w, h = grid
    p: dict[str, Any] = {
        "id": pid,
        "type": kind,
        "title": title,
        "description": description,
        "datasource": DS,
        "gridPos": {"x": x, "y": y, "w": w, "h": h},
        "targets": targets,
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {},
    }
    for key, value in extra.items():
        if key == "defaults":
            p["fieldConfig"]["defaults"].update(value)
        elif key == "overrides":
            p["fieldConfig"]["overrides"] = value
        else:
            p[key] = value
    return p


def stat(
    pid: int,
    title: str,
    description: str,
    unit: str,
    expr: str,
    grid: tuple[int, int, int, int],
    thresholds: list[tuple[float | None, str]],
) -> dict[str, Any]:
    return panel(
        pid,
        "stat",
        title,
        description,
        unit,
        [target(expr, instant=True)],
        grid,
        defaults={
            "thresholds": {
                "mode": "absolute",
                "steps": [{"value": v, "color": c} for v, c in thresholds],
            }
        },
        options={
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "colorMode": "background",
            "graphMode": "none",
            "textMode": "value",
        },
    )


def alerts_table(
    pid: int,
    title: str,
    description: str,
    selector: str,
    grid: tuple[int, int, int, int],
    hide: tuple[str, ...] = (),
) -> dict[str, Any]:
    """A table of the training alerts firing now for ``selector``, from ``ALERTS``."""
    return panel(
        pid,
        "table",
        title,
        description,
        "none",
        [
            target(
                f'ALERTS{{alertstate="firing", alertname=~"Training.*", {selector}}}',
                instant=True,
                table=True,
            )
        ],
        grid,
        transformations=[
            {
                "id": "organize",
                "options": {
                    "excludeByName": {
                        name: True for name in ("Time", "Value", "__name__", "alertstate", *hide)
                    }
                },
            }
        ],
        options={"showHeader": True, "cellHeight": "sm"},
    )


def timeseries(
    pid: int,
    title: str,
    description: str,
    unit: str,
    targets: list[dict[str, Any]],
    grid: tuple[int, int, int, int],
    stack: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    custom: dict[str, Any] = {
        "lineWidth": 1,
        "fillOpacity": 10,
        "showPoints": "never",
        "spanNulls": True,
    }
    if stack:
        custom["stacking"] = {"mode": "normal", "group": "A"}
        custom["fillOpacity"] = 60
    defaults = {"custom": custom, **extra.pop("defaults", {})}
    return panel(
        pid,
        "timeseries",
        title,
        description,
        unit,
        targets,
        grid,
        defaults=defaults,
        options={
            "legend": {"displayMode": "list", "placement": "bottom"},
            "tooltip": {"mode": "multi", "sort": "desc"},
        },
        **extra,
    )


def datasource_var() -> dict[str, Any]:
    return {
        "name": "datasource",
        "label": "Data source",
        "type": "datasource",
        "query": "prometheus",
        "current": {},
        "hide": 0,
        "refresh": 1,
        "regex": "",
        "options": [],
    }


def query_var(name: str, label: str, query: str, multi: bool) -> dict[str, Any]:
    v: dict[str, Any] = {
        "name": name,
        "label": label,
        "type": "query",
        "datasource": DS,
        "query": {"query": query, "refId": f"{name}-var"},
        "definition": query,
        "refresh": 2,
        "sort": 1,
        "hide": 0,
        "current": {},
        "options": [],
        "regex": "",
        "multi": multi,
        "includeAll": multi,
    }
    if multi:
        v["allValue"] = ".*"
    return v


def cluster_var() -> dict[str, Any]:
    """The cluster, hidden: with one cluster there is none to choose (as kubernetes-mixin
    hides it); the mixin's clusterLabel shows it."""
    v = query_var("cluster", "Cluster", "label_values(training_run_info, cluster)", False)
    v["hide"] = 2
    return v


def namespace_var(multi: bool) -> dict[str, Any]:
    """The namespaces of the chosen cluster."""
    return query_var(
        "namespace", "Namespace", f"label_values(training_run_info{{{CLUSTER}}}, namespace)", multi
    )


def price_var() -> dict[str, Any]:
    return {
        "name": "gpu_hour_price",
        "label": "Price per GPU-hour",
        "type": "textbox",
        "query": "2.5",
        "current": {"text": "2.5", "value": "2.5"},
        "hide": 0,
        "description": "What one GPU-hour costs you, in your currency; used for cost panels.",
        "options": [{"selected": True, "text": "2.5", "value": "2.5"}],
    }


def dashboard(
    uid: str,
    title: str,
    description: str,
    panels: list[dict[str, Any]],
    variables: list[dict[str, Any]],
    links: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "uid": uid,
        "title": title,
        "description": description,
        "tags": ["training", "training-progress-exporter"],
        "timezone": "browser",
        "editable": False,
        "graphTooltip": 1,
        "refresh": "30s",
        "schemaVersion": SCHEMA_VERSION,
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": variables},
        "annotations": {"list": []},
        "links": links or [],
        "panels": panels,
        "version": 1,
    }
