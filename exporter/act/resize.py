"""Resizing a job for its deadline: what change the API allows for each kind, within the
job's own bounds. Pure functions over the objects the API returns (plain dicts).

``act`` resizes only where the API lets a running job change size, and never past the bounds
the job states:

- a **PyTorchJob with an ``elasticPolicy``**: its Worker replicas through its ``/scale``
  subresource (the training-operator's CRD maps ``spec.replicas`` of the scale to
  ``spec.pytorchReplicaSpecs.Worker.replicas``), within ``minReplicas``..``maxReplicas``;
  the torchrun agents re-form the job at the new size from its last checkpoint;
- a **JobSet** with one replicated Job of one replica (one Indexed Job whose pods are the
  nodes): that Job template's ``parallelism`` and ``completions`` together, within the
  bounds its annotations state (``training-progress.io/min-nodes``, ``max-nodes``; none
  stated: no resize);
- a **TrainJob**, whose ``spec.trainer`` is immutable today: a recommendation only (an Event
  and the annotation ``training-progress.io/recommended-nodes``).

Every other kind gets the recommendation too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.annotations import PREFIX

MIN_NODES = PREFIX + "min-nodes"
MAX_NODES = PREFIX + "max-nodes"
RECOMMENDED_NODES = PREFIX + "recommended-nodes"
# What act asks the run to do before a resize, and writes on the job: a new value each time.
CHECKPOINT_ANNOTATION = PREFIX + "checkpoint"


@dataclass(frozen=True)
class Change:
    """A resize the API allows: how to patch, and the sizes before and after (nodes)."""

    how: str  # "scale" (the /scale subresource) or "json-patch" (on the object)
    body: Any  # the scale's merge patch, or the JSON patch operations
    nodes_from: int
    nodes_to: int


@dataclass(frozen=True)
class NoChange:
    """Why the job is not resized (it may still be recommended ``nodes``)."""

    reason: str  # recommend_only, beyond_bounds, no_change, not_elastic
    message: str


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _bound(annotations: Mapping[str, Any], key: str) -> int | None:
    raw = annotations.get(key)
    try:
        value = int(str(raw))
    except (TypeError, ValueError):
        return None
    return value if value > 0 else None


def plan(kind: str, obj: Mapping[str, Any], needed: int) -> Change | NoChange:
    """The change that brings ``obj`` (a ``kind``) to ``needed`` nodes, or why none."""
    spec = obj.get("spec") or {}
    if kind == "PyTorchJob":
        return _pytorchjob(spec, needed)
    if kind == "JobSet":
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        return _jobset(spec, annotations, needed)
    return NoChange(
        "recommend_only",
        f"a {kind} cannot change size while it runs: {needed} nodes recommended",
    )


def _pytorchjob(spec: Mapping[str, Any], needed: int) -> Change | NoChange:
    elastic = spec.get("elasticPolicy")
    replicas = spec.get("pytorchReplicaSpecs") or {}
    worker = replicas.get("Worker") if isinstance(replicas, Mapping) else None
    if not isinstance(elastic, Mapping) or not isinstance(worker, Mapping):
        return NoChange("not_elastic", "a PyTorchJob without an elasticPolicy keeps its size")
    others = sum(
        _int(r.get("replicas")) or 0
        for role, r in replicas.items()
        if role != "Worker" and isinstance(r, Mapping)
    )
    current = _int(worker.get("replicas"))
    low, high = _int(elastic.get("minReplicas")), _int(elastic.get("maxReplicas"))
    if current is None or low is None or high is None:
        return NoChange("not_elastic", "its elasticPolicy states no minReplicas and maxReplicas")
    target = needed - others
    if target == current:
        return NoChange("no_change", f"it has the {needed} nodes it needs")
    if not low <= target <= high:
        return NoChange(
            "beyond_bounds",
            f"{target} workers are needed, outside its elasticPolicy's {low}..{high}",
        )
    return Change("scale", {"spec": {"replicas": target}}, current + others, needed)


def _jobset(
    spec: Mapping[str, Any], annotations: Mapping[str, Any], needed: int
) -> Change | NoChange:
    jobs = spec.get("replicatedJobs")
    if not isinstance(jobs, list) or len(jobs) != 1 or not isinstance(jobs[0], Mapping):
        return NoChange("not_elastic", "only a JobSet of one replicated Job is resized")
    job = jobs[0]
    template = (job.get("template") or {}).get("spec") or {}
    if _int(job.get("replicas", 1)) != 1 or not isinstance(template, Mapping):
        return NoChange("not_elastic", "only a replicated Job of one replica is resized")
    current = _int(template.get("parallelism", 1))
    if current is None:
        return NoChange("not_elastic", "its Job states no parallelism")
    low, high = _bound(annotations, MIN_NODES), _bound(annotations, MAX_NODES)
    if low is None or high is None:
        return NoChange(
            "recommend_only",
            f"{needed} nodes recommended: its annotations {MIN_NODES} and {MAX_NODES} state "
            "no bounds to resize within",
        )
    if needed == current:
        return NoChange("no_change", f"it has the {needed} nodes it needs")
    if not low <= needed <= high:
        return NoChange("beyond_bounds", f"{needed} nodes are needed, outside its {low}..{high}")
    base = "/spec/replicatedJobs/0/template/spec"
    ops = [
        {"op": "test", "path": f"{base}/parallelism", "value": current},
        {"op": "replace", "path": f"{base}/parallelism", "value": needed},
        {
            "op": "replace" if "completions" in template else "add",
            "path": f"{base}/completions",
            "value": needed,
        },
    ]
    return Change("json-patch", ops, current, needed)
