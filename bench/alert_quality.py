"""Detection quality: a corpus of simulated runs judged by the shipped rules, with defaults.

Each run is simulated for hours through the real tracker (reports every 30 s of simulated
time, default thresholds), scraped once a minute through the real collector's text output,
and the scraped series are handed to ``promtool test rules`` with the rule files as
shipped. Every run asserts "no alert" at every minute; promtool reports each alert that did
fire, and this module classifies them: the run's expected alert (a detection, with its
time) or anything else (a false positive). A bad run whose alert never fires is a miss.

It also checks that the exporter and the rules tell one truth: from the state the exporter
reported at each minute and each alert's ``for:``, it derives exactly when each alert must
fire, and compares with what promtool saw fire, minute by minute (``disagreements``).

Run: ``python -m bench.alert_quality`` (prints counts per run and JSON).
"""

from __future__ import annotations

import json
import math
import random
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from exporter.core.model import ProgressReport, RunKey, RunMeta
from exporter.core.states import STATES
from exporter.core.tracker import Tracker, TrackerConfig
from exporter.logs.accumulate import LogAccumulator
from exporter.logs.parse import parse_message
from exporter.views.collector import render_runs_text

ROOT = Path(__file__).resolve().parent.parent
RULE_FILES = sorted((ROOT / "alerts").glob("*.rules.yaml"))
REPORT_EVERY = 30  # seconds of simulated time between reports
CHECK_EVERY = 1  # minutes between "no alert" assertions: every evaluation
NAMESPACE = "corpus"

# A run: given simulated seconds and a seeded RNG, the report to send (None: nothing).
ReportFn = Callable[[float, random.Random], "ProgressReport | None"]
# A rank of a multi-rank job: the same, given the rank too.
RankReportFn = Callable[[float, random.Random, int], "ProgressReport | None"]
# GPU utilization (percent, as dcgm-exporter's DCGM_FI_DEV_GPU_UTIL) at a time, of a rank.
UtilFn = Callable[[float, int], float]


def busy(t: float, rank: int) -> float:
    """What a training GPU shows: 85 to 99 %, never idle."""
    return 92.0 + 7.0 * math.sin(t / 97.0 + rank)


@dataclass(frozen=True)
class Run:
    name: str
    description: str
    report: ReportFn
    minutes: int  # how long the pod exists
    expected: str | None = None  # the one alert it must raise
    gpus: float = 8.0
    # Kubernetes mode: the exporter sees the pod running for ``minutes`` (True); standalone:
    # nothing tells whether the process lives (None).
    alive: bool | None = None
    # Other alerts it must raise too (a stuck rank is also a stalled run).
    also: tuple[str, ...] = ()
    # A multi-rank job: ``ranks`` pods of one job, each a run, each reporting through
    # ``rank_report`` (``report`` is unused) at its own phase of the report interval.
    ranks: int = 1
    rank_report: RankReportFn | None = None
    # dcgm-exporter's view of each rank's GPUs (scraped beside the exporter), and whether
    # it names the pod in exported_pod/exported_namespace (a ServiceMonitor scrape).
    gpu_util: UtilFn = busy
    exported_labels: bool = False
    # The rank TrainingRankStalled must name (and no other).
    stuck_rank: str | None = None
    # Prometheus starts scraping at this minute (it was down, or deployed later).
    scrape_from: int = 0

    @property
    def alerts(self) -> tuple[str, ...]:
        """Every alert the run must raise."""
        return ((self.expected,) if self.expected else ()) + self.also


def _loss(step: float, floor: float = 1.8, scale: float = 2.0, k: float = 500) -> float:
    """A power-law training curve (what LLM pre-training looks like): still improving
    about 1 % an hour after six hours, never flat."""
    return float(floor + scale * (1 + step / k) ** -0.5)


def noisy_healthy(t: float, rng: random.Random) -> ProgressReport:
    step = int(t * 2)
    loss = _loss(step) * (1 + rng.gauss(0, 0.03))
    eval_loss = _loss(step - step % 3600) * 1.05 if step >= 3600 else None
    return ProgressReport(
        step=step, max_steps=50_000, loss=loss, eval_loss=eval_loss, learning_rate=3e-4
    )


def long_warmup(t: float, rng: random.Random) -> ProgressReport:
    # 40 minutes of compilation / cache warm-up at a fifth of the speed, loss flat meanwhile.
    step = int(t * 0.4) if t < 2400 else 960 + int((t - 2400) * 2)
    loss = 2.8 + rng.gauss(0, 0.02) if t < 2400 else _loss(step - 960) * (1 + rng.gauss(0, 0.05))
    return ProgressReport(step=step, max_steps=50_000, loss=loss)


def eval_pauses(t: float, rng: random.Random) -> ProgressReport | None:
    # A 20-minute evaluation every 2 hours; the step-driven reporter says nothing meanwhile.
    cycle = t % 7200
    if cycle > 6000:
        return None
    done = (t // 7200) * 6000 + cycle
    step = int(done * 2)
    return ProgressReport(step=step, max_steps=80_000, loss=_loss(step) * (1 + rng.gauss(0, 0.02)))


def lr_restarts(t: float, rng: random.Random) -> ProgressReport:
    # Cosine with warm restarts every 45 minutes: loss jumps up at each restart.
    step = int(t * 2)
    period = 5400
    phase = (step % period) / period
    base = _loss(step)
    loss = (
        base
        * (1 + 0.5 * math.cos(math.pi * phase) ** 2 * (phase < 0.15))
        * (1 + rng.gauss(0, 0.02))
    )
    return ProgressReport(step=step, max_steps=60_000, loss=loss)


def slow_steady(t: float, rng: random.Random) -> ProgressReport:
    # One step every 20 s, for days.
    step = int(t / 20)
    return ProgressReport(
        step=step, max_steps=20_000, loss=_loss(step, k=20) * (1 + rng.gauss(0, 0.03))
    )


def finishes_and_exits(t: float, rng: random.Random) -> ProgressReport:
    step = min(int(t * 2), 7000)
    return ProgressReport(step=step, max_steps=7000, loss=_loss(step), final=step >= 7000)


def hung_heartbeat(t: float, rng: random.Random) -> ProgressReport:
    step = int(min(t, 3600) * 2)  # a deadlock after 1 h; a heartbeat thread keeps reporting
    return ProgressReport(step=step, max_steps=50_000, loss=_loss(step))


def hung_silent(t: float, rng: random.Random) -> ProgressReport | None:
    if t > 3600:
        return None  # the loop (and its callback) stopped
    step = int(t * 2)
    return ProgressReport(step=step, max_steps=50_000, loss=_loss(step))


def plateaued(t: float, rng: random.Random) -> ProgressReport:
    step = int(t * 2)
    loss = _loss(min(step, 4000)) * (1 + rng.gauss(0, 0.03)) + (0.05 if step > 4000 else 0)
    return ProgressReport(step=step, max_steps=80_000, loss=loss)


def nan_loss(t: float, rng: random.Random) -> ProgressReport:
    step = int(t * 2)
    return ProgressReport(step=step, max_steps=50_000, loss=math.nan if t > 5400 else _loss(step))


def exploding(t: float, rng: random.Random) -> ProgressReport:
    step = int(t * 2)
    loss = _loss(step) if t < 5400 else _loss(step) * math.exp((t - 5400) / 300)
    return ProgressReport(step=step, max_steps=50_000, loss=loss)


def finished_lingers(t: float, rng: random.Random) -> ProgressReport:
    step = min(int(t * 2), 7000)
    return ProgressReport(step=step, max_steps=7000, loss=_loss(step), final=step >= 7000)


def straggler(t: float, rng: random.Random) -> ProgressReport:
    # A node degrades after 2 h: 40 % of the speed for 1 h, then recovers.
    if t < 7200:
        step = t * 2
    elif t < 10800:
        step = 14400 + (t - 7200) * 0.8
    else:
        step = 14400 + 2880 + (t - 10800) * 2
    return ProgressReport(
        step=int(step), max_steps=90_000, loss=_loss(step) * (1 + rng.gauss(0, 0.03))
    )


def rerun(t: float, rng: random.Random) -> ProgressReport | None:
    # Finishes after 58 min at loss 0.05, exits; 10 min later the job is re-run under the
    # same name from step 0 (a longer schedule): its loss starts at 2 again, 40x the first
    # attempt's best, which is not a divergence.
    def fine_tune(step: int) -> float:  # converges to 0.05 (a fine-tune)
        return 0.05 + 1.95 * math.exp(-step / 1000)

    if t <= 3600:
        step = min(int(t * 2), 7000)
        return ProgressReport(step=step, max_steps=7000, loss=fine_tune(step), final=step >= 7000)
    if t < 4200:
        return None
    step = int((t - 4200) * 2)
    loss = fine_tune(step) * (1 + rng.gauss(0, 0.02))
    return ProgressReport(step=step, max_steps=40_000, loss=loss)


def rerun_longer(t: float, rng: random.Random) -> ProgressReport | None:
    # Finishes 3000 steps, then is re-run with a longer schedule from its final checkpoint:
    # the new attempt's first step is above the last one, and it must not stay "finished".
    if t <= 1500:
        step = min(int(t * 2), 3000)
        return ProgressReport(step=step, max_steps=3000, loss=_loss(step), final=step >= 3000)
    if t < 2100:
        return None
    step = min(3000 + int((t - 2100) * 2), 9000)
    loss = _loss(step) * (1 + rng.gauss(0, 0.02))
    return ProgressReport(step=step, max_steps=9000, loss=loss, final=step >= 9000)


class PerEpochBars:
    """A plain PyTorch loop as its log shows it: a fresh tqdm bar per epoch (400 batches,
    no description, loss in the postfix) and an evaluation bar (50 batches) after each,
    read by the log source's own parser and accumulator. No total is ever stated."""

    BATCHES, EVAL = 400, 50

    def __init__(self) -> None:
        self.acc = LogAccumulator()
        self.done = 0  # steps already drawn

    def _bar(self, n: int, total: int, loss: float | None, at: float) -> str:
        post = f", loss={loss:.3g}" if loss is not None else ""
        clock = f"00:{int(at) % 60:02d}<00:10"
        return f"\r{n * 100 // total:3d}%|#  | {n}/{total} [{clock},  2.00it/s{post}]"

    def __call__(self, t: float, rng: random.Random) -> ProgressReport:
        step = int(t * 2)
        if step < self.done:  # a new simulation of the run: its log starts empty
            self.acc, self.done = LogAccumulator(), 0
        lines: list[str] = []
        for s in range(self.done + 1, step + 1):
            epoch_done = s % self.BATCHES == 0
            if epoch_done or s == step:
                n = self.BATCHES if epoch_done else s % self.BATCHES
                lines.append(self._bar(n, self.BATCHES, _loss(s) * (1 + rng.gauss(0, 0.02)), t))
            if epoch_done:
                lines.append(self._bar(self.EVAL, self.EVAL, None, t))
        self.done = step
        for line in lines:
            for found in parse_message(line, t):
                self.acc.feed(found, t)
        return self.acc.report()


def _rank_step(t: float, rank: int, rate: float = 2.0) -> int:
    return int(t * rate) - rank % 3  # ranks report at their own moment: a few steps apart


def ranks_healthy(t: float, rng: random.Random, rank: int) -> ProgressReport:
    step = _rank_step(t, rank)
    return ProgressReport(step=step, max_steps=50_000, loss=_loss(step) * (1 + rng.gauss(0, 0.03)))


def rank_slow_alive(t: float, rng: random.Random, rank: int) -> ProgressReport:
    # Rank 3 runs at 70 % of the others' pace from the start (a slower node, local SGD).
    step = int(t * (1.4 if rank == 3 else 2.0))
    return ProgressReport(step=step, max_steps=50_000, loss=_loss(step) * (1 + rng.gauss(0, 0.03)))


def rank_hangs(t: float, rng: random.Random, rank: int) -> ProgressReport:
    # Rank 2 deadlocks after 1 h (heartbeat on); the others go on without it.
    step = _rank_step(min(t, 3600) if rank == 2 else t, rank)
    return ProgressReport(step=step, max_steps=50_000, loss=_loss(step))


def all_hang_after_one(t: float, rng: random.Random, rank: int) -> ProgressReport:
    # Rank 1 stops after 1 h; the others go on 5 more minutes (prefetched micro-batches,
    # pipeline stages) until they wait for it in a collective.
    step = _rank_step(min(t, 3600 if rank == 1 else 3900), rank)
    return ProgressReport(step=step, max_steps=50_000, loss=_loss(step))


def all_hang_together(t: float, rng: random.Random, rank: int) -> ProgressReport:
    # Every rank stops within a report interval (a network partition): no rank to blame.
    step = _rank_step(min(t, 3600), rank)
    return ProgressReport(step=step, max_steps=50_000, loss=_loss(step))


def starved(t: float, rng: random.Random) -> ProgressReport:
    # Steps advance, slowly, on a CPU-bound input pipeline: the GPUs sit at 2 %.
    step = int(t * 0.2)
    return ProgressReport(
        step=step, max_steps=20_000, loss=_loss(step, k=50) * (1 + rng.gauss(0, 0.03))
    )


def starved_util(t: float, rank: int) -> float:
    return 2.0 + abs(math.sin(t / 50.0))


def waits_for_data(t: float, rng: random.Random) -> ProgressReport:
    # Downloads its dataset for 80 min (reports, no step), then trains.
    if t < 4800:
        return ProgressReport(max_steps=50_000)
    step = int((t - 4800) * 2)
    return ProgressReport(step=step, max_steps=50_000, loss=_loss(step))


def waits_util(t: float, rank: int) -> float:
    return 0.0 if t < 4800 else busy(t, rank)


def eval_on_cpu_util(t: float, rank: int) -> float:
    # The 20-minute evaluations of eval_pauses run on the CPU: the GPUs idle meanwhile.
    return 0.0 if t % 7200 > 6000 else busy(t, rank)


def nccl_spin_util(t: float, rank: int) -> float:
    # A rank waiting in a NCCL collective spins its GPU at 100 % "utilization".
    return 100.0 if t > 3600 else busy(t, rank)


CORPUS: tuple[Run, ...] = (
    Run(
        "noisy-healthy", "3 % noise on the logged loss, evaluation every 30 min", noisy_healthy, 360
    ),
    Run("long-warmup", "40 min at a fifth of the speed, loss flat meanwhile", long_warmup, 300),
    Run(
        "eval-pauses",
        "20-min evaluations every 2 h with no report during them, on the CPU (GPUs idle)",
        eval_pauses,
        400,
        gpu_util=eval_on_cpu_util,
    ),
    Run("lr-restarts", "warm restarts every 45 min push the loss up", lr_restarts, 360),
    Run("slow-steady", "one step every 20 s", slow_steady, 360),
    Run("finishes-exits", "finishes after 58 min, pod exits 5 min later", finishes_and_exits, 63),
    Run(
        "hung-heartbeat",
        "deadlock after 1 h, heartbeat continues, GPUs spin in NCCL",
        hung_heartbeat,
        180,
        "TrainingJobStalled",
        gpu_util=nccl_spin_util,
    ),
    Run(
        "hung-silent",
        "deadlock after 1 h, reports stop, standalone (nothing tells it lives)",
        hung_silent,
        180,
        "TrainingReportsStopped",
    ),
    Run(
        "hung-silent-pod",
        "deadlock after 1 h, reports stop, pod still Running (Kubernetes mode)",
        hung_silent,
        180,
        "TrainingJobStalled",
        alive=True,
    ),
    Run(
        "eval-pauses-pod",
        "20-min evaluations every 2 h, no report during them, pod Running",
        eval_pauses,
        400,
        alive=True,
    ),
    Run(
        "finishes-exits-pod",
        "finishes after 58 min, pod exits 5 min later (Kubernetes mode)",
        finishes_and_exits,
        63,
        alive=True,
    ),
    Run(
        "plateaued",
        "loss flat from 33 min while steps advance",
        plateaued,
        420,
        "TrainingLossPlateau",
    ),
    Run("nan-loss", "NaN loss after 90 min", nan_loss, 150, "TrainingLossDiverged"),
    Run(
        "exploding", "loss grows exponentially after 90 min", exploding, 150, "TrainingLossDiverged"
    ),
    Run(
        "finished-lingers",
        "finished after 58 min, pod stays 2 h",
        finished_lingers,
        180,
        "TrainingFinishedButRunning",
    ),
    Run(
        "straggler",
        "throughput to 40 % from 2 h to 3 h",
        straggler,
        240,
        "TrainingThroughputDegraded",
    ),
    Run(
        "rerun",
        "finishes at loss 0.05 after 58 min, re-run under the same name 10 min later",
        rerun,
        180,
    ),
    Run(
        "rerun-longer",
        "finishes 3000 steps, re-run from there with a longer schedule (new max_steps)",
        rerun_longer,
        88,
    ),
    Run(
        "per-epoch-bars",
        "log only: a fresh tqdm bar per epoch and an evaluation bar, no total stated",
        PerEpochBars(),
        240,
    ),
    Run(
        "straggler-late-prometheus",
        "throughput to 40 % from 2 h to 3 h, Prometheus started 10 min into the slowdown",
        straggler,
        240,
        "TrainingThroughputDegraded",
        scrape_from=130,
    ),
    Run(
        "ranks-healthy",
        "4 ranks, a few steps apart, each reporting at its own moment",
        noisy_healthy,
        240,
        alive=True,
        ranks=4,
        rank_report=ranks_healthy,
    ),
    Run(
        "rank-slow-alive",
        "4 ranks, rank 3 at 70 % of the others' pace throughout",
        noisy_healthy,
        240,
        alive=True,
        ranks=4,
        rank_report=rank_slow_alive,
    ),
    Run(
        "rank-hangs",
        "4 ranks, rank 2 deadlocks after 1 h (heartbeat on), the others go on",
        noisy_healthy,
        180,
        "TrainingRankStalled",
        alive=True,
        also=("TrainingJobStalled",),
        ranks=4,
        rank_report=rank_hangs,
        stuck_rank="2",
        exported_labels=True,
    ),
    Run(
        "all-hang-after-one",
        "4 ranks, rank 1 stops after 1 h, the others 5 min later",
        noisy_healthy,
        180,
        "TrainingRankStalled",
        alive=True,
        also=("TrainingJobStalled",),
        ranks=4,
        rank_report=all_hang_after_one,
        stuck_rank="1",
        gpu_util=nccl_spin_util,
    ),
    Run(
        "all-hang-together",
        "4 ranks stop within one report interval (a network partition)",
        noisy_healthy,
        180,
        "TrainingJobStalled",
        alive=True,
        ranks=4,
        rank_report=all_hang_together,
    ),
    Run(
        "gpus-starved",
        "steps advance on a CPU-bound input pipeline, GPUs at 2 to 3 %",
        starved,
        180,
        "TrainingGPUsIdle",
        alive=True,
        gpu_util=starved_util,
        exported_labels=True,
    ),
    Run(
        "gpus-wait-for-data",
        "80 min downloading its dataset (reports, no step), GPUs at 0 %",
        waits_for_data,
        180,
        "TrainingGPUsIdle",
        alive=True,
        gpu_util=waits_util,
    ),
)


@dataclass(frozen=True)
class Simulation:
    """What the exporter (and dcgm-exporter) showed: promtool series text -> one value per
    minute, and each rank's state at each minute (None once it left the exporter)."""

    series: dict[str, list[str]]
    states: list[list[str | None]]  # per rank


def _dcgm_labels(run: Run, rank: int, pod: str) -> str:
    """dcgm-exporter's labels for the GPU of ``pod``, as Prometheus stores them."""
    gpu = (
        f'gpu="0",UUID="GPU-{rank:04d}",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",'
        f'Hostname="node-{rank}",job="dcgm-exporter",instance="node-{rank}:9400"'
    )
    if run.exported_labels:  # scraped through a ServiceMonitor: the pod labels are its own
        return (
            f'{gpu},namespace="gpu-operator",pod="nvidia-dcgm-exporter-{rank}",'
            f'exported_namespace="{NAMESPACE}",exported_pod="{pod}",exported_container="trainer"'
        )
    return f'{gpu},namespace="{NAMESPACE}",pod="{pod}",container="trainer"'


def scrape_series(run: Run, seed: int) -> Simulation:
    """Simulate ``run`` through the tracker and the collector, one scrape a minute; each
    rank's pod is a run of the job, reporting at its own phase of the report interval."""
    rng = random.Random(seed)
    tracker = Tracker(TrackerConfig())
    if run.ranks == 1:
        keys = [RunKey(NAMESPACE, run.name, run.name)]
    else:
        keys = [RunKey(NAMESPACE, f"{run.name}-{r}", run.name) for r in range(run.ranks)]
    metas = [
        RunMeta(source="push", gpus=run.gpus, alive=run.alive, rank=str(r), node=f"node-{r}")
        for r in range(run.ranks)
    ]
    series: dict[str, list[str]] = {}
    states: list[list[str | None]] = [[] for _ in keys]
    retention_end = run.minutes + 10  # the exporter keeps a gone run 10 min by default
    total_minutes = retention_end + 10
    for minute in range(total_minutes + 1):
        now = minute * 60.0
        if minute > 0 and minute <= run.minutes:
            for r, (key, meta) in enumerate(zip(keys, metas, strict=True)):
                phase = (r * 7) % REPORT_EVERY
                for t in range(int(now - 60) + REPORT_EVERY, int(now) + 1, REPORT_EVERY):
                    at = float(t - phase)
                    if run.rank_report is not None:
                        report = run.rank_report(at, rng, r)
                    else:
                        report = run.report(at, rng)
                    if report is not None:
                        tracker.apply(key, report, at, meta)
        if minute == run.minutes:
            for key in keys:
                tracker.mark_gone(key, now)
        tracker.expire(now)
        snapshots = tracker.snapshot(now)
        by_key = {snap.key: snap.state for snap in snapshots}
        for r, key in enumerate(keys):
            states[r].append(by_key.get(key))
        text = render_runs_text(snapshots)
        seen = set()
        for family in text_string_to_metric_families(text):
            for smp in family.samples:
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(smp.labels.items()))
                name = f"{smp.name}{{{labels}}}"
                seen.add(name)
                values = series.setdefault(name, ["_"] * minute)
                values.append("NaN" if math.isnan(smp.value) else repr(float(smp.value)))
        if 0 < minute <= run.minutes:  # dcgm-exporter sees the GPUs while the pod holds them
            for r, key in enumerate(keys):
                name = f"DCGM_FI_DEV_GPU_UTIL{{{_dcgm_labels(run, r, key.pod)}}}"
                seen.add(name)
                values = series.setdefault(name, ["_"] * minute)
                values.append(repr(float(run.gpu_util(now, r))))
        for name, values in series.items():
            if name not in seen:
                values.append("stale" if values and values[-1] not in ("_", "stale") else "_")
    if run.scrape_from:  # nothing scraped before Prometheus started
        for values in series.values():
            values[: run.scrape_from] = ["_"] * min(run.scrape_from, len(values))
        for rank_states in states:
            rank_states[: run.scrape_from] = [None] * min(run.scrape_from, len(rank_states))
    return Simulation(series, states)


@lru_cache(maxsize=1)
def _alert_rules() -> tuple[dict[str, Any], ...]:
    """The shipped alert rules, parsed once: every run's expectations read them (42 parses
    of the YAML took 5 s of the corpus' evaluation)."""
    groups = [g for p in RULE_FILES for g in yaml.safe_load(p.read_text())["groups"]]
    return tuple(
        r
        for g in groups
        for r in g["rules"]
        if "alert" in r and r["alert"] != "TrainingProgressExporterDown"
    )


def _for_minutes(rule: dict[str, Any]) -> int:
    return _minutes(str(rule.get("for", "0m")))


def state_alerts() -> set[str]:
    """The alerts that page on one state of a run (the others join runs or other data)."""
    return {d.alert for d in STATES if d.alert}


def expected_firing(states: list[str | None]) -> set[tuple[str, int]]:
    """(alert, minute) pairs at which each state alert must be firing, given the exporter's
    state each minute: firing at minute m when the run was in the alert's state at every
    evaluation from m - for to m (the rules are evaluated once a minute)."""
    by_alert = {d.alert: d.name for d in STATES if d.alert}
    out = set()
    for rule in _alert_rules():
        state = by_alert.get(rule["alert"])
        if state is None:
            continue
        hold = _for_minutes(rule)
        for m in range(hold, len(states)):
            if all(states[k] == state for k in range(m - hold, m + 1)):
                out.add((rule["alert"], m))
    return out


def promtool_test(run: Run, sim: Simulation, workdir: Path) -> str:
    series = sim.series
    alerts = [r["alert"] for r in _alert_rules()]
    length = max(len(v) for v in series.values())
    test = {
        "rule_files": [str(p) for p in RULE_FILES],
        "evaluation_interval": "1m",
        # Recording rules before the alerts that read them (promtool's own order is random).
        "group_eval_order": GROUP_ORDER,
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    {"series": name, "values": " ".join(values + ["_"] * (length - len(values)))}
                    for name, values in series.items()
                ]
                + [
                    {
                        "series": 'up{job="training-progress-exporter",instance="sim"}',
                        "values": f"1x{length}",
                    }
                ],
                "alert_rule_test": [
                    {"eval_time": f"{m}m", "alertname": a, "exp_alerts": []}
                    for m in range(CHECK_EVERY, length, CHECK_EVERY)
                    for a in alerts
                ],
            }
        ],
    }
    path = workdir / f"{run.name}.test.yaml"
    path.write_text(yaml.safe_dump(test, width=1 << 20))
    promtool = shutil.which("promtool")
    if not promtool:
        raise SystemExit("promtool is not installed (make test-deps installs it)")
    proc = subprocess.run(
        [promtool, "test", "rules", str(path)], capture_output=True, text=True, timeout=300
    )
    return proc.stdout + proc.stderr


GROUP_ORDER = [
    "training-progress.capacity",
    "training-progress.ranks",
    "training-progress.gpus",
    "training-progress.goodput",
    "training-progress.alerts",
]
_NAMED_RANK = re.compile(r'alertname="TrainingRankStalled"[^}]*?rank="([^"]*)"')
_FIRED = re.compile(r"alertname: (\w+), time: ((?:\d+h)?(?:\d+m)?(?:\d+s)?),")


def _minutes(duration: str) -> int:
    """Go duration text as promtool prints it (``1h35m``) to whole minutes."""
    parts = dict((unit, int(n)) for n, unit in re.findall(r"(\d+)([hms])", duration))
    return int(parts.get("h", 0) * 60 + parts.get("m", 0))


def evaluate(seed: int = 1) -> dict[str, Any]:
    """Per run: the alerts that fired (with the first minute), the verdict, and every minute
    where the exporter's state and the firing alerts disagree; and totals."""
    results: dict[str, Any] = {}
    false_positives = misses = disagreements = 0
    with tempfile.TemporaryDirectory() as tmp:

        def judged(run: Run) -> tuple[Simulation, str]:
            sim = scrape_series(run, seed)
            return sim, promtool_test(run, sim, Path(tmp))

        # Two at a time: while promtool (its own process) judges one run, the next is
        # simulated. Each run is its own simulation with its own seed: the order is moot.
        with ThreadPoolExecutor(max_workers=2) as pool:
            done = list(pool.map(judged, CORPUS))
        for run, (sim, output) in zip(CORPUS, done, strict=True):
            fired: dict[str, int] = {}
            firing: set[tuple[str, int]] = set()
            for name, duration in _FIRED.findall(output):
                fired.setdefault(name, _minutes(duration))
                firing.add((name, _minutes(duration)))
            expected = set().union(*(expected_firing(states) for states in sim.states))
            # One truth: the state alerts fire exactly when the ranks' states say so.
            by_state = {(a, m) for a, m in firing if a in state_alerts()}
            disagree = sorted(by_state ^ expected, key=lambda x: (x[1], x[0]))
            disagreements += len(disagree)
            unexpected = sorted(set(fired) - set(run.alerts))
            missed = any(a not in fired for a in run.alerts)
            named = sorted(set(_NAMED_RANK.findall(output)))
            if run.stuck_rank is not None and named != [run.stuck_rank]:
                unexpected.append(f"TrainingRankStalled named ranks {named}")
            false_positives += len(unexpected)
            misses += int(missed)
            results[run.name] = {
                "description": run.description,
                "expected": list(run.alerts),
                "fired_first_minute": fired,
                "ranks_named": named,
                "false_positives": unexpected,
                "missed": missed,
                "minutes_checked": len(sim.states[0]),
                "disagreements": [
                    {
                        "minute": m,
                        "alert": a,
                        "firing": (a, m) in firing,
                        "states": [states[m] for states in sim.states],
                    }
                    for a, m in disagree
                ],
            }
    return {
        "runs": results,
        "false_positives": false_positives,
        "misses": misses,
        "disagreements": disagreements,
        "healthy_runs": sum(1 for r in CORPUS if r.expected is None),
        "bad_runs": sum(1 for r in CORPUS if r.expected is not None),
    }


def table(result: dict[str, Any]) -> str:
    lines = [
        "| run | behaviour | expected alert | fired (first minute) | verdict |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, r in result["runs"].items():
        fired = ", ".join(f"{a} ({m} min)" for a, m in r["fired_first_minute"].items()) or "none"
        verdict = (
            "missed"
            if r["missed"]
            else f"false positive: {', '.join(r['false_positives'])}"
            if r["false_positives"]
            else "ok"
        )
        expected = ", ".join(r["expected"]) or "none"
        lines.append(f"| {name} | {r['description']} | {expected} | {fired} | {verdict} |")
    return "\n".join(lines)


def main() -> int:
    result = evaluate()
    print(table(result))
    print(
        f"\nfalse positives: {result['false_positives']}, missed: {result['misses']}"
        f" ({result['healthy_runs']} healthy runs, {result['bad_runs']} bad runs);"
        f" minutes where the exporter's state and the alerts disagree:"
        f" {result['disagreements']}"
    )
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
