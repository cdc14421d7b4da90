"""Dashboards as code: build the three Grafana dashboards and their Kubernetes ConfigMaps.

    python grafana/build.py           # write grafana/dashboards/*.json and the ConfigMaps
    python grafana/build.py --check   # exit 1 if a committed file is out of date

Plain Python producing Grafana's dashboard JSON model (schemaVersion 41, Grafana 11.6),
rather than grafana-foundation-sdk: three dashboards need a dozen small helpers, the output
is reviewed as JSON in every diff anyway, and no build dependency is needed to change a
panel. Every query uses the ``datasource`` variable; units, descriptions and stable uids and
panel ids are set here; tests/test_dashboards.py lints the output and runs every query
against a real Prometheus.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "grafana" / "dashboards"
CONFIGMAPS = ROOT / "deploy" / "overlays" / "prometheus-operator" / "grafana-dashboards.yaml"
SCHEMA_VERSION = 41
DS = {"type": "prometheus", "uid": "${datasource}"}
NS = 'namespace=~"$namespace"'
JOB = 'namespace="$namespace", job_name="$job_name"'
DETAIL = "/d/training-job-detail/training-job-detail"

# Job states, their order and colors live in one table in the package, shared with `top`,
# `kubectl progress`, the status page and the alert rules; every state here is read from
# the exporter's training_run_state series.
sys.path.insert(0, str(ROOT))
from exporter.states import STATES, TRAINING, state_code_promql  # noqa: E402

_STATE_EXPR = state_code_promql(NS)
_JOB_STATE_EXPR = state_code_promql(JOB)


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


def jobs_dashboard() -> dict[str, Any]:
    by_job = "namespace, job_name"
    table_targets = [
        target(_STATE_EXPR, "STATE", instant=True, table=True),
        target(
            f"namespace_job_name:training_progress_ratio:min{{{NS}}}",
            "PROGRESS",
            instant=True,
            table=True,
        ),
        target(f"max by ({by_job}) (training_step{{{NS}}})", "STEP", instant=True, table=True),
        target(
            f"max by ({by_job}) (training_max_steps{{{NS}}})", "TOTAL", instant=True, table=True
        ),
        target(
            f"namespace_job_name:training_eta_seconds:max{{{NS}}}", "ETA", instant=True, table=True
        ),
        target(f"avg by ({by_job}) (training_loss{{{NS}}})", "LOSS", instant=True, table=True),
        target(f"namespace_job_name:training_gpus:sum{{{NS}}}", "GPUS", instant=True, table=True),
        target(
            f"sum by ({by_job}) (training_gpu_seconds_total{{{NS}}}) / 3600",
            "GPUH",
            instant=True,
            table=True,
        ),
        target(
            f"sum by ({by_job}) (training_gpu_seconds_total{{{NS}}}) / 3600 * $gpu_hour_price",
            "COST",
            instant=True,
            table=True,
        ),
    ]
    names = {
        "Value #STATE": "State",
        "Value #PROGRESS": "Progress",
        "Value #STEP": "Step",
        "Value #TOTAL": "Total steps",
        "Value #ETA": "ETA",
        "Value #LOSS": "Loss",
        "Value #GPUS": "GPUs",
        "Value #GPUH": "GPU-hours",
        "Value #COST": "Cost",
    }
    units = {
        "Progress": "percentunit",
        "ETA": "s",
        "GPU-hours": "none",
        "Cost": "currencyUSD",
        "Step": "none",
        "Total steps": "none",
        "GPUs": "none",
        "Loss": "none",
        "State": "none",
    }
    overrides: list[dict[str, Any]] = [
        {
            "matcher": {"id": "byName", "options": name},
            "properties": [{"id": "unit", "value": unit}],
        }
        for name, unit in units.items()
    ]
    overrides += [
        {
            "matcher": {"id": "byName", "options": "Progress"},
            "properties": [
                {
                    "id": "custom.cellOptions",
                    "value": {"type": "gauge", "mode": "basic", "valueDisplayMode": "text"},
                },
                {"id": "min", "value": 0},
                {"id": "max", "value": 1},
                {"id": "custom.width", "value": 220},
            ],
        },
        {
            "matcher": {"id": "byName", "options": "State"},
            "properties": [
                {
                    "id": "mappings",
                    "value": state_mappings(),
                },
                {"id": "custom.cellOptions", "value": {"type": "color-background"}},
            ],
        },
        {
            "matcher": {"id": "byName", "options": "job_name"},
            "properties": [
                {"id": "displayName", "value": "Job"},
                {
                    "id": "links",
                    "value": [
                        {
                            "title": "Job detail",
                            "url": f"{DETAIL}?var-namespace=${{__data.fields.namespace}}&var-job_name=${{__value.raw}}&${{datasource:queryparam}}",
                        }
                    ],
                },
            ],
        },
        {
            "matcher": {"id": "byName", "options": "Loss"},
            "properties": [{"id": "decimals", "value": 4}],
        },
        {
            "matcher": {"id": "byName", "options": "GPU-hours"},
            "properties": [{"id": "decimals", "value": 1}],
        },
    ]
    waste_gpuh = (
        f"(sum(increase(training_stalled_gpu_seconds_total{{{NS}}}[7d])) / 3600 or vector(0))"
        f" + (sum(sum_over_time(namespace:training_finished_running_gpus:sum{{{NS}}}[7d:5m])) / 12 or vector(0))"
    )
    panels = [
        stat(
            1,
            "Running jobs",
            "Training jobs with a run that is running, plateaued, degraded or waiting (training_run_state).",
            "none",
            f'count(count by (namespace, job_name) (training_run_state{{state=~"{"|".join(TRAINING)}", {NS}}} == 1)) or vector(0)',
            (0, 0, 4, 4),
            [(None, "blue")],
        ),
        stat(
            2,
            "Stalled jobs",
            "Jobs with a run in state stalled: its step stopped advancing while it still reports or its pod still runs (TrainingJobStalled).",
            "none",
            f'count(count by (namespace, job_name) (training_run_state{{state="stalled", {NS}}} == 1)) or vector(0)',
            (4, 0, 4, 4),
            [(None, "green"), (1, "red")],
        ),
        stat(
            3,
            "GPUs held by stalled or finished jobs",
            "GPUs of jobs that are stalled, or that finished but still hold their pods.",
            "none",
            f"(sum(namespace:training_stalled_gpus:sum{{{NS}}}) or vector(0)) + (sum(namespace:training_finished_running_gpus:sum{{{NS}}}) or vector(0))",
            (8, 0, 5, 4),
            [(None, "green"), (1, "orange")],
        ),
        stat(
            4,
            "GPU-hours wasted (7 days)",
            "GPU-hours spent stalled, plus GPU-hours held by finished jobs past their grace period, over the last 7 days.",
            "none",
            waste_gpuh,
            (13, 0, 5, 4),
            [(None, "green"), (1, "orange"), (100, "red")],
        ),
        stat(
            5,
            "Cost wasted (7 days)",
            "The wasted GPU-hours times the price per GPU-hour variable.",
            "currencyUSD",
            f"({waste_gpuh}) * $gpu_hour_price",
            (18, 0, 6, 4),
            [(None, "green"), (100, "orange"), (1000, "red")],
        ),
        panel(
            6,
            "table",
            "Training jobs",
            "Every training job: state, progress, ETA, loss, GPUs and GPU-hours. Click a job for its detail view.",
            "none",
            table_targets,
            (0, 4, 24, 12),
            transformations=[
                {"id": "merge", "options": {}},
                {
                    "id": "organize",
                    "options": {
                        "excludeByName": {"Time": True},
                        "renameByName": names,
                        "indexByName": {
                            "namespace": 0,
                            "job_name": 1,
                            "Value #STATE": 2,
                            "Value #PROGRESS": 3,
                        },
                    },
                },
                {"id": "sortBy", "options": {"sort": [{"field": "State", "desc": True}]}},
            ],
            overrides=overrides,
            options={"showHeader": True, "cellHeight": "sm"},
        ),
        alerts_table(
            7,
            "Firing training alerts",
            "Training alerts firing now, from Prometheus' ALERTS series.",
            NS,
            (0, 16, 24, 6),
        ),
    ]
    return dashboard(
        "training-jobs",
        "Training jobs",
        "Every training job at a glance: state, progress, ETA, GPUs, and the GPU-hours wasted.",
        panels,
        [
            datasource_var(),
            query_var("namespace", "Namespace", "label_values(training_run_info, namespace)", True),
            price_var(),
        ],
        links=[
            {
                "title": "GPU capacity",
                "type": "link",
                "url": "/d/training-gpu-capacity/training-gpu-capacity",
            }
        ],
    )


def detail_dashboard() -> dict[str, Any]:
    panels = [
        timeseries(
            1,
            "Progress",
            "Progress of the job (its slowest rank), 0 to 100 %.",
            "percentunit",
            [target(f"namespace_job_name:training_progress_ratio:min{{{JOB}}}", legend="progress")],
            (0, 0, 12, 8),
            defaults={"min": 0, "max": 1},
        ),
        timeseries(
            2,
            "ETA",
            "Estimated time to completion, between the ETA at the fastest and at the slowest "
            "pace the job has shown, and at least 30 % either way (a change of pace nothing "
            "announces). A healthy job's ETA falls at the rate of the clock.",
            "s",
            [
                target(f"namespace_job_name:training_eta_seconds:max{{{JOB}}}", legend="ETA"),
                target(
                    f"max by (namespace, job_name) (training_eta_lower_seconds{{{JOB}}})",
                    "B",
                    "lower bound",
                ),
                target(
                    f"max by (namespace, job_name) (training_eta_upper_seconds{{{JOB}}})",
                    "C",
                    "upper bound",
                ),
            ],
            (12, 0, 12, 8),
        ),
        timeseries(
            3,
            "Loss",
            "Training loss, evaluation loss and the best loss so far (evaluation loss where reported).",
            "none",
            [
                target(f"avg by (job_name) (training_loss{{{JOB}}})", "A", "train loss"),
                target(f"avg by (job_name) (training_eval_loss{{{JOB}}})", "B", "eval loss"),
                target(f"min by (job_name) (training_best_loss{{{JOB}}})", "C", "best"),
            ],
            (0, 8, 12, 8),
        ),
        timeseries(
            4,
            "Learning rate",
            "Learning rate as reported by the job.",
            "none",
            [
                target(
                    f"avg by (job_name) (training_learning_rate{{{JOB}}})", legend="learning rate"
                )
            ],
            (12, 8, 6, 8),
        ),
        timeseries(
            5,
            "Gradient norm",
            "Gradient norm as reported by the job; spikes often precede divergence.",
            "none",
            [target(f"avg by (job_name) (training_grad_norm{{{JOB}}})", legend="grad norm")],
            (18, 8, 6, 8),
        ),
        timeseries(
            6,
            "Steps per second",
            "Throughput per rank, excluding evaluation and checkpoint pauses.",
            "none",
            [target(f"training_steps_per_second{{{JOB}}}", legend="{{pod}}")],
            (0, 16, 12, 8),
        ),
        timeseries(
            7,
            "Per-rank progress",
            "Progress of each rank (pod) that reports; a rank that lags is a straggler.",
            "percentunit",
            [target(f"training_progress_ratio{{{JOB}}}", legend="{{pod}}")],
            (12, 16, 12, 8),
            defaults={"min": 0, "max": 1},
        ),
        timeseries(
            8,
            "GPU-hours",
            "GPU-hours the job has held, and the part spent stalled.",
            "none",
            [
                target(
                    f"sum by (job_name) (training_gpu_seconds_total{{{JOB}}}) / 3600",
                    "A",
                    "GPU-hours",
                ),
                target(
                    f"sum by (job_name) (training_stalled_gpu_seconds_total{{{JOB}}}) / 3600",
                    "B",
                    "stalled",
                ),
            ],
            (0, 24, 12, 8),
        ),
        timeseries(
            9,
            "GPU utilization (dcgm-exporter)",
            "GPU utilization of the job's pods from dcgm-exporter, when it runs: SM activity where "
            "the GPU has it, else GPU utilization (the recording rule reads both the pod and the "
            "exported_pod label forms). At or below the run's idle utilization for its idle "
            "threshold, TrainingGPUsIdle fires.",
            "percent",
            [
                target(
                    f"namespace_pod_job_name:training_gpu_utilization:avg{{{JOB}}} * 100",
                    legend="{{pod}}",
                )
            ],
            (12, 24, 12, 8),
            defaults={"min": 0, "max": 100},
        ),
        panel(
            14,
            "table",
            "Ranks",
            "Every rank of the job (a pod each, on its own node): its step, and how long before "
            "the job's newest step it last advanced. The laggard is on top; past the rank lag "
            "threshold (default 2 min) it is the stuck rank TrainingRankStalled names.",
            "s",
            [
                target(
                    f"namespace_pod_job_name:training_rank_lag_seconds:behind_newest{{{JOB}}}",
                    "LAG",
                    instant=True,
                    table=True,
                ),
                target(f"max by (pod) (training_step{{{JOB}}})", "STEP", instant=True, table=True),
            ],
            (0, 32, 24, 8),
            transformations=[
                {"id": "merge", "options": {}},
                {
                    "id": "organize",
                    "options": {
                        "excludeByName": {"Time": True, "namespace": True, "job_name": True},
                        "renameByName": {
                            "Value #LAG": "Behind the newest rank",
                            "Value #STEP": "Step",
                        },
                        "indexByName": {"rank": 0, "pod": 1, "node": 2},
                    },
                },
                {
                    "id": "sortBy",
                    "options": {"sort": [{"field": "Behind the newest rank", "desc": True}]},
                },
            ],
            overrides=[
                {
                    "matcher": {"id": "byName", "options": "Behind the newest rank"},
                    "properties": [
                        {"id": "custom.cellOptions", "value": {"type": "color-background"}},
                        {
                            "id": "thresholds",
                            "value": {
                                "mode": "absolute",
                                "steps": [
                                    {"value": None, "color": "green"},
                                    {"value": 60, "color": "orange"},
                                    {"value": 120, "color": "red"},
                                ],
                            },
                        },
                    ],
                },
                {
                    "matcher": {"id": "byName", "options": "Step"},
                    "properties": [{"id": "unit", "value": "none"}],
                },
            ],
            options={"showHeader": True, "cellHeight": "sm"},
        ),
    ]
    # The runbook sends people here first: the job's state, how long since it last stepped
    # and reported, and what is firing. The graphs follow below.
    state = stat(
        10,
        "State",
        "The job's state: the most urgent state of any of its runs (training_run_state), as the exporter, top and the alerts see it.",
        "none",
        _JOB_STATE_EXPR,
        (0, 0, 5, 4),
        [(None, "text")],
    )
    state["fieldConfig"]["defaults"]["mappings"] = state_mappings()
    state["options"]["textMode"] = "value"
    header = [
        state,
        stat(
            11,
            "Since last step",
            "Time since the step last advanced, for the rank that advanced least recently. Compare with the stall threshold.",
            "s",
            f"time() - min(training_last_step_timestamp_seconds{{{JOB}}})",
            (5, 0, 4, 4),
            [(None, "blue")],
        ),
        stat(
            12,
            "Since last report",
            "Time since the last progress report of any kind, for the rank that reported least recently.",
            "s",
            f"time() - min(training_last_report_timestamp_seconds{{{JOB}}})",
            (9, 0, 4, 4),
            [(None, "blue")],
        ),
        alerts_table(
            13,
            "Firing alerts",
            "Training alerts firing now for this job.",
            JOB,
            (13, 0, 11, 4),
            hide=("namespace", "job_name"),
        ),
    ]
    for p in panels:  # the graphs sit below the header row
        p["gridPos"]["y"] += 4
    panels = header + panels
    return dashboard(
        "training-job-detail",
        "Training job detail",
        "One training job over time: progress and ETA, loss curves, throughput, ranks and GPUs.",
        panels,
        [
            datasource_var(),
            query_var(
                "namespace", "Namespace", "label_values(training_run_info, namespace)", False
            ),
            query_var(
                "job_name",
                "Job",
                'label_values(training_run_info{namespace="$namespace"}, job_name)',
                False,
            ),
        ],
        links=[{"title": "Training jobs", "type": "link", "url": "/d/training-jobs/training-jobs"}],
    )


def capacity_dashboard() -> dict[str, Any]:
    panels = [
        timeseries(
            1,
            "GPUs busy by namespace",
            "GPUs held by training jobs, by namespace.",
            "none",
            [target(f"namespace:training_gpus:sum{{{NS}}}", legend="{{namespace}}")],
            (0, 0, 12, 8),
            stack=True,
        ),
        panel(
            2,
            "bargauge",
            "GPUs freeing up (next 24 h, by ETA)",
            "GPUs of jobs expected to finish within 1, 6 and 24 hours at their current rate.",
            "none",
            [
                target(
                    f"sum(namespace:training_gpus_free_within_1h:sum{{{NS}}}) or vector(0)",
                    "A",
                    "within 1 h",
                    instant=True,
                ),
                target(
                    f"sum(namespace:training_gpus_free_within_6h:sum{{{NS}}}) or vector(0)",
                    "B",
                    "within 6 h",
                    instant=True,
                ),
                target(
                    f"sum(namespace:training_gpus_free_within_24h:sum{{{NS}}}) or vector(0)",
                    "C",
                    "within 24 h",
                    instant=True,
                ),
            ],
            (12, 0, 12, 8),
            options={
                "orientation": "horizontal",
                "displayMode": "gradient",
                "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            },
        ),
        timeseries(
            3,
            "GPUs by namespace (5 min average)",
            "GPUs held, averaged over each interval; the area is GPU-hours.",
            "none",
            [
                target(
                    f"sum by (namespace) (rate(training_gpu_seconds_total{{{NS}}}[$__rate_interval]))",
                    legend="{{namespace}}",
                )
            ],
            (0, 8, 12, 8),
            stack=True,
        ),
        panel(
            4,
            "barchart",
            "GPU-hours by namespace (last 24 h)",
            "GPU-hours used per namespace over the last day.",
            "none",
            [
                target(
                    f"sum by (namespace) (increase(training_gpu_seconds_total{{{NS}}}[1d])) / 3600",
                    legend="{{namespace}}",
                    instant=True,
                    table=True,
                )
            ],
            (12, 8, 12, 8),
            options={"orientation": "horizontal", "xField": "namespace"},
        ),
        timeseries(
            5,
            "Stalled GPUs",
            "GPUs held by stalled jobs, by namespace.",
            "none",
            [
                target(
                    f"namespace:training_stalled_gpus:sum{{{NS}}}", "A", "{{namespace}} stalled"
                ),
                target(
                    f"namespace:training_finished_running_gpus:sum{{{NS}}}",
                    "B",
                    "{{namespace}} finished, still held",
                ),
            ],
            (0, 16, 12, 8),
            stack=True,
        ),
        stat(
            6,
            "Wasted GPU-hours and cost (7 days)",
            "GPU-hours spent stalled over the last 7 days, times the price per GPU-hour.",
            "currencyUSD",
            f"(sum(increase(training_stalled_gpu_seconds_total{{{NS}}}[7d])) / 3600 or vector(0)) * $gpu_hour_price",
            (12, 16, 12, 8),
            [(None, "green"), (100, "orange"), (1000, "red")],
        ),
        # The goodput row: of the GPU-seconds held, how many moved training forward, and
        # where the rest went (training-progress.goodput rules, evaluated every minute, so
        # sum_over_time(...) * 60 s is GPU-seconds).
        timeseries(
            7,
            "Goodput by namespace",
            "Share of the GPU-seconds held that advanced training (the step moving on GPUs "
            "that work), by namespace. The rest is wasted, by cause, on the right.",
            "percentunit",
            [target(f"namespace:training_goodput:ratio{{{NS}}}", legend="{{namespace}}")],
            (0, 24, 8, 8),
            defaults={"min": 0, "max": 1},
        ),
        timeseries(
            8,
            "Goodput: GPUs productive and wasted, by cause",
            "GPUs held, split into productive and wasted by cause: waiting for the first step, "
            "stalled, silent, diverged, finished but running, restarts (steps redone after a "
            "resume), evaluation and checkpoint pauses, idle GPUs (dcgm-exporter).",
            "none",
            [
                target(
                    f"sum(namespace:training_productive_gpu_seconds:rate5m{{{NS}}})",
                    "A",
                    "productive",
                ),
                target(
                    f"sum by (cause) (namespace_cause:training_wasted_gpu_seconds:rate5m{{{NS}}}) > 0",
                    "B",
                    "{{cause}}",
                ),
            ],
            (8, 24, 8, 8),
            stack=True,
        ),
        panel(
            9,
            "barchart",
            "Goodput: wasted GPU-hours by cause (7 days)",
            "GPU-hours wasted over the last 7 days, by cause, in the selected namespaces.",
            "none",
            [
                target(
                    f"sum by (cause) (sum_over_time(namespace_cause:training_wasted_gpu_seconds:rate5m{{{NS}}}[7d])) * 60 / 3600",
                    legend="{{cause}}",
                    instant=True,
                    table=True,
                )
            ],
            (16, 24, 8, 8),
            options={"orientation": "horizontal", "xField": "cause"},
        ),
    ]
    return dashboard(
        "training-gpu-capacity",
        "Training GPU capacity",
        "GPUs busy and freeing up, GPU-hours by namespace, and the GPU-hours and cost wasted.",
        panels,
        [
            datasource_var(),
            query_var("namespace", "Namespace", "label_values(training_run_info, namespace)", True),
            price_var(),
        ],
        links=[{"title": "Training jobs", "type": "link", "url": "/d/training-jobs/training-jobs"}],
    )


DASHBOARDS = {
    "training-jobs.json": jobs_dashboard,
    "training-job-detail.json": detail_dashboard,
    "training-gpu-capacity.json": capacity_dashboard,
}


def render() -> dict[Path, str]:
    """Every generated file and its text."""
    files = {
        OUT / name: json.dumps(build(), indent=2, sort_keys=True) + "\n"
        for name, build in DASHBOARDS.items()
    }
    docs = []
    for path, text in files.items():
        indented = "\n".join("    " + line for line in text.rstrip("\n").splitlines())
        docs.append(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
            f"  name: grafana-dashboard-{path.stem}\n"
            '  labels:\n    grafana_dashboard: "1"\n'
            "    app.kubernetes.io/name: training-progress-exporter\n"
            "  annotations:\n    grafana_folder: Training\n"
            f"data:\n  {path.name}: |\n{indented}\n"
        )
    files[CONFIGMAPS] = (
        "# Generated by grafana/build.py from the dashboards. Do not edit.\n"
        '# For the kube-prometheus-stack Grafana sidecar (label grafana_dashboard: "1";\n'
        "# folder from the grafana_folder annotation where the sidecar reads it).\n"
        + "---\n".join(docs)
    )
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    stale = []
    for path, text in render().items():
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path.relative_to(ROOT)))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if stale:
        print(f"out of date (run python grafana/build.py): {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
