"""GPU capacity (``training-gpu-capacity``): which GPUs free up when, and the GPU-hours
wasted by cause."""

from __future__ import annotations

from typing import Any

from panels import (
    NS,
    cluster_var,
    dashboard,
    datasource_var,
    namespace_var,
    panel,
    price_var,
    stat,
    target,
    timeseries,
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
            cluster_var(),
            namespace_var(True),
            price_var(),
        ],
        links=[{"title": "Training jobs", "type": "link", "url": "/d/training-jobs/training-jobs"}],
    )
