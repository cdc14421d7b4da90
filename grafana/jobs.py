"""The fleet overview (``training-jobs``): every job with its state, progress bar, ETA,
throughput and GPUs, and the alerts firing."""

from __future__ import annotations

from typing import Any

from panels import (
    DETAIL,
    NS,
    STATE_EXPR,
    TRAINING,
    alerts_table,
    cluster_var,
    dashboard,
    datasource_var,
    namespace_var,
    panel,
    price_var,
    stat,
    state_mappings,
    target,
)


def jobs_dashboard() -> dict[str, Any]:
    by_job = "namespace, job_name"
    table_targets = [
        target(STATE_EXPR, "STATE", instant=True, table=True),
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
            cluster_var(),
            namespace_var(True),
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
