"""One job (``training-job-detail``): loss curves, step and throughput, ETA and its bounds,
ranks, GPU-hours and waste."""

from __future__ import annotations

from typing import Any

from panels import (
    JOB,
    JOB_STATE_EXPR,
    alerts_table,
    cluster_var,
    dashboard,
    datasource_var,
    namespace_var,
    panel,
    promql_default,
    query_var,
    stat,
    state_mappings,
    target,
    timeseries,
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
        panel(
            15,
            "table",
            "Why it is stuck",
            "While the job is stalled: each stuck rank's cause (checkpoint, data, collective, "
            "device, unknown), the collective it waits in and the frame of the training code "
            "where it is, from its stacks, refined by its GPUs' utilization "
            "(docs/runbook.md#why-a-run-is-stuck). Every rank's whole stacks: kubectl "
            "progress stacks JOB.",
            "none",
            [
                target(
                    f"namespace_pod_job_name_rank:training_stall_cause:info{{{JOB}}}",
                    instant=True,
                    table=True,
                )
            ],
            (0, 40, 14, 8),
            transformations=[
                {
                    "id": "organize",
                    "options": {
                        "excludeByName": {
                            "Time": True,
                            "Value": True,
                            "namespace": True,
                            "job_name": True,
                        },
                        "indexByName": {"rank": 0, "cause": 1, "op": 2, "frame": 3, "pod": 4},
                    },
                }
            ],
            options={"showHeader": True, "cellHeight": "sm"},
        ),
        timeseries(
            16,
            "Stalled GPU-hours by cause",
            "GPU-hours the job held while stalled, by why it was stuck (the blocking rank's "
            "cause; unexplained: no stacks said). A stall's hours are charged once its cause "
            "is known, or at its end. none: the job never stalled.",
            "h",
            [
                # With lean_series a cause has a series once it counted: a job that never
                # stalled has none, and shows 0 as "none" instead of no data.
                target(
                    f"sum by (stall_cause) (training_stall_gpu_seconds_total{{{JOB}}}) / 3600 "
                    f"or label_replace(sum(training_gpu_seconds_total{{{JOB}}}) * 0, "
                    f'"stall_cause", "none", "", "")',
                    legend="{{stall_cause}}",
                )
            ],
            (14, 40, 10, 8),
            stack=True,
        ),
        timeseries(
            17,
            "Work at risk since the last checkpoint",
            "GPU-hours of training since each run's last checkpoint (or its attempt's start): "
            "what a preemption now would lose. It drops at every checkpoint; past the run's "
            "checkpoint risk threshold (dashed) TrainingCheckpointStale fires and the run is "
            "asked to save.",
            "h",
            [
                target(f"training_progress_at_risk_gpu_seconds{{{JOB}}} / 3600", legend="{{pod}}"),
                target(
                    f"(max(training_checkpoint_risk_threshold_gpu_seconds{{{JOB}}}) or "
                    f"{promql_default('training_checkpoint_risk_threshold_gpu_seconds')}) / 3600",
                    "B",
                    "threshold",
                ),
            ],
            (0, 48, 12, 8),
        ),
        timeseries(
            19,
            "Tokens per second",
            "Tokens trained on per second (training_tokens_per_second), per run: its token "
            "count's rate, or the rate it prints.",
            "short",
            [target(f"training_tokens_per_second{{{JOB}}}", legend="{{pod}}")],
            (0, 56, 12, 8),
        ),
        timeseries(
            20,
            "Model FLOPs utilization (MFU)",
            "tokens/s x the model's training FLOPs per token / (GPUs x one GPU's dense BF16 "
            "peak, training_gpu_peak_flops; exporter/core/gpus.py lists the peaks and their "
            "datasheets). Needs the run's FLOPs per token (or parameters) and its GPU model.",
            "percentunit",
            [target(f"training_model_flops_utilization{{{JOB}}}", legend="{{pod}}")],
            (12, 56, 12, 8),
            defaults={"min": 0},
        ),
        timeseries(
            21,
            "Chance of missing each deadline",
            "The probability the job finishes after its own deadline (user) and after "
            "Kubernetes' kill deadline, its activeDeadlineSeconds (kill), from the ETA's band "
            "(docs/eta.md#the-chance-of-missing-a-deadline). Above 0.5 for the kill, "
            "TrainingWillBeKilledByDeadline fires.",
            "percentunit",
            [
                target(
                    f"max by (deadline) (training_deadline_miss_probability{{{JOB}}})",
                    legend="{{deadline}}",
                )
            ],
            (0, 64, 12, 8),
            defaults={"min": 0, "max": 1},
        ),
        timeseries(
            22,
            "Nodes (or GPUs) needed for each deadline",
            "The fewest nodes that finish the job by each deadline with the configured "
            "probability (default 80 %), from its pace per node, beside the nodes it has: "
            "fewer needed than it has is headroom (docs/kubernetes.md#nodes-needed). A job "
            "with no node count (standalone, a bare pod) is sized in GPUs.",
            "none",
            [
                target(
                    f"max by (deadline) (training_deadline_nodes_needed{{{JOB}}})",
                    legend="nodes needed: {{deadline}}",
                ),
                target(f"max(training_nodes{{{JOB}}})", "B", "nodes it has"),
                target(
                    f"max by (deadline) (training_deadline_gpus_needed{{{JOB}}})",
                    "C",
                    "GPUs needed: {{deadline}}",
                ),
            ],
            (12, 64, 12, 8),
            defaults={"min": 0},
        ),
        stat(
            18,
            "Since the last checkpoint",
            "Time since the job's newest checkpoint (any of its runs), as its reporter, "
            "callbacks or logs said.",
            "s",
            f"time() - max(training_last_checkpoint_timestamp_seconds{{{JOB}}})",
            (12, 48, 12, 8),
            [(None, "blue")],
        ),
    ]
    # The runbook sends people here first: the job's state, how long since it last stepped
    # and reported, and what is firing. The graphs follow below.
    state = stat(
        10,
        "State",
        "The job's state: the most urgent state of any of its runs (training_run_state), as the exporter, top and the alerts see it.",
        "none",
        JOB_STATE_EXPR,
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
            cluster_var(),
            namespace_var(False),
            query_var(
                "job_name",
                "Job",
                'label_values(training_run_info{cluster=~"$cluster", namespace="$namespace"}, job_name)',
                False,
            ),
        ],
        links=[{"title": "Training jobs", "type": "link", "url": "/d/training-jobs/training-jobs"}],
    )
