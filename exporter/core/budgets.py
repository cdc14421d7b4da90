"""What the exporter may hold in memory, by kind: one budget each, all in one table, so
that the DaemonSet's memory limit is their sum plus the process itself (tests/test_deploy.py
checks the manifest against it), and ``training_exporter_memory_budget_bytes{kind}`` says
each beside what it uses.

* runs: each run's state (values, series, loss history, custom metrics), ``max_runs`` x
  RUN_BYTES; held to it at admission (a run past ``max_runs`` is refused: ``run_cap``);
* timelines: each run's life for the charts, ``max_runs`` x TIMELINE_BYTES; held to it by
  construction (the table thins itself);
* observations: Katib trial runs' values, in order, until sent, OBSERVATIONS_BUDGET of
  OBSERVED_BYTES; the oldest of any run evicted (``observations_budget``);
* stacks: ranks' stacks, exporter.core.stacks.STACKS_BUDGET_BYTES; the oldest of any run
  evicted (``stacks_budget``);
* views: view answers being built, VIEWS x the larger of PAGE_BYTES and ``max_runs`` x
  SNAPSHOT_BYTES; at most VIEWS at once (the HTTP server's view pool).

The per-item sizes are upper estimates, each checked against a measure of the real thing
(``tracemalloc``) in tests/test_budgets.py. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from .stacks import STACKS_BUDGET_BYTES

KIB = 1024
MIB = 1024 * KIB
# The process itself in Kubernetes mode: the interpreter, prometheus_client, the kubernetes
# client, threads and buffers (its imports alone measured 52 MiB; standalone idles at 33).
PROCESS_BYTES = 64 * MIB
# One run at its fullest (512 samples, 120 losses, 32 custom metrics, thresholds, stall and
# checkpoint records), its timeline aside: measured at 33-34 KiB (tests/test_budgets.py).
RUN_BYTES = 40 * KIB
# One run's timeline at its fullest (96 rows of 10 doubles, 64 evaluations, 48 changes of
# state): its arrays measured at 9.1 KiB, the changes of state up to 3 KiB more.
TIMELINE_BYTES = 14 * KIB
# Katib observations held, all trial runs together (40 runs' worth at the 512 a run keeps),
# and one at its largest (a handful of named values).
OBSERVATIONS_BUDGET = 20_000
OBSERVED_BYTES = 512
# View answers built at once (the HTTP server's view pool answers 4 at a time). /metrics
# holds every run's snapshot while it writes family after family (5 KiB a run, measured);
# a status page of 1,000 runs peaks at 6.6 MiB; /api/v1/runs streams 200 runs a batch.
VIEWS = 4
SNAPSHOT_BYTES = 6 * KIB
PAGE_BYTES = 8 * MIB


@dataclass(frozen=True)
class Budget:
    """One kind of thing held, and the bytes it may use."""

    kind: str
    bytes: int


def budgets(max_runs: int) -> tuple[Budget, ...]:
    """Every kind's budget for a tracker of at most ``max_runs`` runs (see the module doc)."""
    return (
        Budget("runs", max_runs * RUN_BYTES),
        Budget("timelines", max_runs * TIMELINE_BYTES),
        Budget("observations", OBSERVATIONS_BUDGET * OBSERVED_BYTES),
        Budget("stacks", STACKS_BUDGET_BYTES),
        Budget("views", VIEWS * max(PAGE_BYTES, max_runs * SNAPSHOT_BYTES)),
    )


def memory_limit(max_runs: int) -> int:
    """The memory a container of this exporter needs: the process and every budget."""
    return PROCESS_BYTES + sum(b.bytes for b in budgets(max_runs))
