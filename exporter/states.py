"""Job states shared by the fleet dashboard, ``top`` and the status page.

The exporter computes a run's state itself (``/api/v1/runs``); over Prometheus the same
state comes from :data:`STATE_PROMQL`, built on the shipped recording rules. Codes order the
states so that PromQL's ``max`` picks the one that matters most for a job.
"""

from __future__ import annotations

# (code, state, label, Grafana color); higher codes win when several apply.
STATES: tuple[tuple[int, str, str, str], ...] = (
    (0, "running", "Running", "green"),
    (1, "plateaued", "Plateaued", "yellow"),
    (2, "stalled", "Stalled", "red"),
    (3, "diverged", "Diverged", "dark-red"),
    (4, "finished", "Finished", "blue"),
    (5, "finished-but-running", "Finished but running", "orange"),
)
STATE_BY_CODE = {code: state for code, state, _, _ in STATES}
# What a person should look at first, in order; then the rest.
ATTENTION = (
    "stalled",
    "diverged",
    "finished-but-running",
    "plateaued",
    "waiting",
    "running",
    "finished",
)


def state_promql(selector: str) -> str:
    """One state code per (namespace, job_name) for series matching ``selector``
    (a label matcher list such as ``namespace=~"$namespace"``).

    ``or`` keeps its left side where label sets match, so states go from the highest code
    down; series with other label sets (recording rules) are settled by ``max``.
    """
    s = selector
    return f"""max by (namespace, job_name) (
  namespace_pod_job_name:training_finished_running_seconds:max{{{s}}} * 0 + 5
  or (training_finished{{{s}}} == 1) * 4
  or count by (namespace, pod, job_name) (training_loss{{{s}}} != training_loss{{{s}}}) * 3
  or namespace_pod_job_name:training_stalled_seconds:max{{{s}}} * 0 + 2
  or ((time() - training_last_improvement_timestamp_seconds{{{s}}})
      > training_plateau_window_seconds{{{s}}}) * 0 + 1
  or (training_run_active{{{s}}} == 1) * 0
)"""
