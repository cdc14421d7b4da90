"""ETA accuracy on a simulated corpus: our tracker against the naive estimate.

The naive estimate is what Transformers' ``KubeflowCallback`` sends: seconds since this
process started training / global step x remaining steps. Each corpus run is simulated step
by step with jitter; it reports every ``log_every`` steps, and at each report both estimates
are compared with the true remaining time. Error is the mean absolute percentage error
(MAPE) over a run's reports from 5 % to 95 % progress (before 5 % neither has a rate; after
95 % the true remaining time is so small that any percentage error is noise), then averaged
over the runs of a scenario and over the whole corpus.

Run: ``python -m bench.eta_accuracy`` (prints a table and JSON).
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from statistics import mean

from exporter.estimate import naive_eta_seconds
from exporter.model import ProgressReport, RunKey
from exporter.tracker import Tracker

KEY = RunKey("bench", "run", "run")

# seconds per step at global step s (relative to the run's first step), before jitter
StepTime = Callable[[int], float]


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    total_steps: int
    start_step: int  # > 0: resumed from a checkpoint
    step_time: StepTime
    eval_every: int = 0  # steps between evaluation pauses (0: none)
    eval_seconds: float = 0.0
    log_every: int = 10


def _warmup(base: float, steps: int, factor: float) -> StepTime:
    return lambda s: base * (factor if s < steps else 1.0)


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "warm-up",
        "first 300 steps 4x slower (compilation, cache warm-up)",
        6000,
        0,
        _warmup(0.5, 300, 4.0),
    ),
    Scenario(
        "eval-pauses",
        "a 90 s evaluation every 500 steps",
        6000,
        0,
        lambda s: 0.5,
        eval_every=500,
        eval_seconds=90.0,
    ),
    Scenario(
        "resume", "resumed from a checkpoint at step 6000 of 10000", 10000, 6000, lambda s: 0.5
    ),
    Scenario(
        "throughput-drop",
        "throughput halves at step 3000 (straggler node)",
        6000,
        0,
        lambda s: 0.5 if s < 3000 else 1.0,
    ),
    Scenario(
        "everything",
        "warm-up, evaluations, resume at 30 %, and a drop at 70 %",
        10000,
        3000,
        lambda s: 2.0 if s < 3200 else 0.5 if s < 7000 else 0.8,
        eval_every=1000,
        eval_seconds=120.0,
    ),
    Scenario(
        "steady",
        "constant speed, no pauses (the naive estimate's best case)",
        6000,
        0,
        lambda s: 0.5,
    ),
)


def simulate(sc: Scenario, seed: int) -> list[tuple[float, int]]:
    """Report times and steps of one run, from its start (t=0) to its last step."""
    rng = random.Random(seed)
    t = 0.0
    reports = [(0.0, sc.start_step)]
    for step in range(sc.start_step + 1, sc.total_steps + 1):
        t += sc.step_time(step) * rng.uniform(0.9, 1.1)
        if sc.eval_every and step % sc.eval_every == 0 and step < sc.total_steps:
            t += sc.eval_seconds * rng.uniform(0.95, 1.05)
        if step % sc.log_every == 0 or step == sc.total_steps:
            reports.append((t, step))
    return reports


def run_errors(sc: Scenario, seed: int) -> tuple[float, float]:
    """(our MAPE, naive MAPE) for one simulated run."""
    reports = simulate(sc, seed)
    t_end = reports[-1][0]
    tracker = Tracker()
    ours, naive = [], []
    for t, step in reports:
        now = 1e9 + t
        tracker.apply(KEY, ProgressReport(step=step, max_steps=sc.total_steps), now)
        progress = (step - sc.start_step) / (sc.total_steps - sc.start_step)
        if not 0.05 <= progress <= 0.95:
            continue
        true = t_end - t
        est = tracker.snapshot(now)[0].eta_seconds
        nv = naive_eta_seconds(t, step, sc.total_steps)
        if est is None or nv is None or true <= 0:
            continue
        ours.append(abs(est - true) / true)
        naive.append(abs(nv - true) / true)
    return mean(ours), mean(naive)


def evaluate(runs_per_scenario: int = 5) -> dict[str, dict[str, float]]:
    """Per scenario and overall: mean of per-run MAPE, ours and naive, as fractions."""
    out: dict[str, dict[str, float]] = {}
    all_ours, all_naive = [], []
    for sc in SCENARIOS:
        pairs = [run_errors(sc, seed) for seed in range(runs_per_scenario)]
        o, n = mean(p[0] for p in pairs), mean(p[1] for p in pairs)
        all_ours += [p[0] for p in pairs]
        all_naive += [p[1] for p in pairs]
        out[sc.name] = {"ours": o, "naive": n}
    out["overall"] = {"ours": mean(all_ours), "naive": mean(all_naive)}
    return out


def table(results: dict[str, dict[str, float]]) -> str:
    lines = ["| scenario | our MAPE | naive MAPE | ratio |", "| --- | ---: | ---: | ---: |"]
    for name, r in results.items():
        ratio = r["ours"] / r["naive"] if r["naive"] else float("inf")
        lines.append(f"| {name} | {r['ours']:.1%} | {r['naive']:.1%} | {ratio:.2f} |")
    return "\n".join(lines)


def main() -> int:
    results = evaluate()
    print(table(results))
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
