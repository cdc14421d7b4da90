"""How many nodes a run needs to make its deadline, and how many its job has.

A job behind its deadline could make it on more nodes; one far ahead holds nodes others
wait for. From the run's ETA and band at its current size, :func:`fewest_units` finds the
fewest nodes (or GPUs, for a run with no node count) that finish by the deadline with at
least a given probability (exporter.core.deadlines.miss_probability), on this model:

- **Pace scales as size to a power**: steps/s at ``m`` units is the pace at ``n`` times
  (m / n) ** exponent. The exponent is the run's own where it ran at two sizes (its
  attempts: :func:`exponent_from_history`, ``basis="history"``), else
  :data:`DEFAULT_EXPONENT` (``basis="default"``): 0.9, a 2x larger job 1.87x as fast.
- **A resize restarts the job** from its last checkpoint: the restart's seconds
  (the ``resize_restart_seconds`` setting, :data:`RESTART_SECONDS` by default) added to any
  size but the current one (scaling without a fresh checkpoint is never done:
  exporter/act, which asks for one first).
- The band scales with the ETA (its width is a spread in log space).

:data:`NODE_FIELDS` says where each workload kind states its node count (one pod per node,
as distributed training runs them): :func:`node_count` reads it from an owner.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .deadlines import miss_probability

DEFAULT_EXPONENT = 0.9
# An exponent measured from the run's sizes is kept within these: beyond 1 is a measurement
# artefact (superlinear scaling), below 0.3 a job that barely scales.
EXPONENT_RANGE = (0.3, 1.0)
RESTART_SECONDS = 300.0
# The probability of finishing by the deadline a size must reach (training_deadline_nodes_needed).
DEFAULT_LEVEL = 0.8
# Sizes tried: up to this multiple of the current one (and MAX_UNITS at most).
MAX_FACTOR = 8
MAX_UNITS = 4096
HISTORY = "history"
DEFAULT = "default"


def exponent_from_history(sizes: Sequence[tuple[float, float]]) -> float | None:
    """The scaling exponent from (size, steps/s) of the run's attempts: between the two
    most different sizes, ln(pace ratio) / ln(size ratio), kept within EXPONENT_RANGE. None
    with fewer than two sizes."""
    known = [(u, p) for u, p in sizes if u > 0 and p > 0]
    if len({u for u, _ in known}) < 2:
        return None
    small = min(known, key=lambda x: x[0])
    large = max(known, key=lambda x: x[0])
    found = math.log(large[1] / small[1]) / math.log(large[0] / small[0])
    return min(max(found, EXPONENT_RANGE[0]), EXPONENT_RANGE[1])


def eta_at(
    eta: float,
    lower: float,
    upper: float,
    current: float,
    size: float,
    exponent: float,
    restart: float = RESTART_SECONDS,
) -> tuple[float, float, float]:
    """The ETA and its band at ``size`` units, the run now at ``current``: the time left
    scaled by (current / size) ** exponent, plus ``restart`` seconds for a resize."""
    if size == current:
        return eta, lower, upper
    factor = (current / size) ** exponent
    return restart + eta * factor, restart + lower * factor, restart + upper * factor


def fewest_units(
    eta: float,
    lower: float,
    upper: float,
    seconds_left: float,
    current: int,
    exponent: float,
    level: float = DEFAULT_LEVEL,
    restart: float = RESTART_SECONDS,
) -> int | None:
    """The fewest units (from 1 to MAX_FACTOR times ``current``) at which the run finishes
    within ``seconds_left`` with probability at least ``level`` (0.5 or more, as the
    setting's bounds say); None when no size does (the deadline is out of reach by scaling).

    Searched by bisection, on each side of the current size: every other size pays the
    restart, and on either side a larger size finishes sooner, with a chance of making the
    deadline that only grows once it is past one half (exporter.core.deadlines)."""
    if current <= 0 or seconds_left <= 0:
        return None
    level = max(level, 0.5)

    def makes_it(size: int) -> bool:
        e, lo, hi = eta_at(eta, lower, upper, current, size, exponent, restart)
        return 1.0 - miss_probability(e, lo, hi, seconds_left) >= level

    below = range(1, current)
    found = bisect.bisect_left(below, True, key=makes_it)
    if found < len(below):
        return below[found]
    if makes_it(current):
        return current
    above = range(current + 1, min(MAX_UNITS, current * MAX_FACTOR) + 1)
    found = bisect.bisect_left(above, True, key=makes_it)
    return above[found] if found < len(above) else None


def _int(value: Any, default: int | None = None) -> int | None:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_UNITS:
        return None
    return value


def _replicas(specs: Any, roles: tuple[str, ...] | None = None) -> int | None:
    """The sum of ``replicas`` over a Kubeflow v1 job's replica specs (those of ``roles``)."""
    if not isinstance(specs, Mapping) or not specs:
        return None
    total = 0
    for role, spec in specs.items():
        if roles is not None and role not in roles:
            continue
        count = _int(spec.get("replicas") if isinstance(spec, Mapping) else None, 1)
        if count is None:
            return None
        total += count
    return total or None


def _jobset(obj: Mapping[str, Any]) -> int | None:
    jobs = (obj.get("spec") or {}).get("replicatedJobs")
    if not isinstance(jobs, list) or not jobs:
        return None
    total = 0
    for job in jobs:
        if not isinstance(job, Mapping):
            return None
        spec = ((job.get("template") or {}).get("spec")) or {}
        replicas = _int(job.get("replicas"), 1)
        parallelism = _int(spec.get("parallelism") if isinstance(spec, Mapping) else None, 1)
        if replicas is None or parallelism is None:
            return None
        total += replicas * parallelism
    return total or None


def _spec(*path: str) -> Callable[[Mapping[str, Any]], Any]:
    def get(obj: Mapping[str, Any]) -> Any:
        found: Any = obj
        for part in path:
            found = found.get(part) if isinstance(found, Mapping) else None
        return found

    return get


# kind -> how it states its node count (pods, one per node), as its API reference names it.
NODE_FIELDS: Mapping[str, Callable[[Mapping[str, Any]], int | None]] = {
    # Kubeflow Trainer TrainJobSpec.trainer.numNodes (unset: the runtime's, not read here).
    "TrainJob": lambda o: _int(_spec("spec", "trainer", "numNodes")(o)),
    "JobSet": _jobset,  # the sum of replicas x parallelism of its replicated Jobs
    "Job": lambda o: _int(_spec("spec", "parallelism")(o), 1),  # batch/v1: default 1
    "PyTorchJob": lambda o: _replicas(_spec("spec", "pytorchReplicaSpecs")(o)),
    "TFJob": lambda o: _replicas(_spec("spec", "tfReplicaSpecs")(o), ("Chief", "Master", "Worker")),
    "MPIJob": lambda o: _replicas(_spec("spec", "mpiReplicaSpecs")(o), ("Worker",)),
    "XGBoostJob": lambda o: _replicas(_spec("spec", "xgbReplicaSpecs")(o)),
    "PaddleJob": lambda o: _replicas(_spec("spec", "paddleReplicaSpecs")(o)),
    "JAXJob": lambda o: _replicas(_spec("spec", "jaxReplicaSpecs")(o)),
}
# What of each kind an owner cache keeps for NODE_FIELDS (the subtree under these keys).
NODE_PATHS: Mapping[str, tuple[str, ...]] = {
    "TrainJob": ("spec", "trainer"),
    "JobSet": ("spec", "replicatedJobs"),
    "Job": ("spec", "parallelism"),
    "PyTorchJob": ("spec", "pytorchReplicaSpecs"),
    "TFJob": ("spec", "tfReplicaSpecs"),
    "MPIJob": ("spec", "mpiReplicaSpecs"),
    "XGBoostJob": ("spec", "xgbReplicaSpecs"),
    "PaddleJob": ("spec", "paddleReplicaSpecs"),
    "JAXJob": ("spec", "jaxReplicaSpecs"),
}


def node_count(kind: str, obj: Mapping[str, Any]) -> int | None:
    """The nodes (pods) a workload of ``kind`` runs on, as its spec states, or None."""
    read = NODE_FIELDS.get(kind)
    if read is None:
        return None
    try:
        return read(obj)
    except (AttributeError, TypeError):
        return None


def _slim(value: Any) -> Any:
    """A replica spec without its pod template: the count is all a cache needs."""
    if isinstance(value, Mapping):
        return {k: _slim(v) for k, v in value.items() if k != "template" or _has_spec(v)}
    if isinstance(value, list):
        return [_slim(v) for v in value[:64]]
    return value


def _has_spec(template: Any) -> bool:
    # A JobSet's replicated Job template carries parallelism under template.spec; a pod
    # template (a Kubeflow replica's) carries containers, which nothing here reads.
    return isinstance(template, Mapping) and "containers" not in (template.get("spec") or {})


def kept(kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
    """What of ``obj`` :func:`node_count` reads (pod templates left out)."""
    path = NODE_PATHS.get(kind)
    if path is None:
        return {}
    value = _spec(*path)(obj)
    if value is None:
        return {}
    out: dict[str, Any] = {}
    node = out
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = _slim(value)
    return out
