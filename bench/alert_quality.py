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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from exporter.collector import render_runs_text
from exporter.model import ProgressReport, RunKey, RunMeta
from exporter.states import STATES
from exporter.tracker import Tracker, TrackerConfig

ROOT = Path(__file__).resolve().parent.parent
REPORT_EVERY = 30  # seconds of simulated time between reports
CHECK_EVERY = 1  # minutes between "no alert" assertions: every evaluation
NAMESPACE = "corpus"

# A run: given simulated seconds and a seeded RNG, the report to send (None: nothing).
ReportFn = Callable[[float, random.Random], "ProgressReport | None"]


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


CORPUS: tuple[Run, ...] = (
    Run(
        "noisy-healthy", "3 % noise on the logged loss, evaluation every 30 min", noisy_healthy, 360
    ),
    Run("long-warmup", "40 min at a fifth of the speed, loss flat meanwhile", long_warmup, 300),
    Run("eval-pauses", "20-min evaluations every 2 h with no report during them", eval_pauses, 400),
    Run("lr-restarts", "warm restarts every 45 min push the loss up", lr_restarts, 360),
    Run("slow-steady", "one step every 20 s", slow_steady, 360),
    Run("finishes-exits", "finishes after 58 min, pod exits 5 min later", finishes_and_exits, 63),
    Run(
        "hung-heartbeat",
        "deadlock after 1 h, heartbeat continues",
        hung_heartbeat,
        180,
        "TrainingJobStalled",
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
)


@dataclass(frozen=True)
class Simulation:
    """What the exporter showed: promtool series text -> one value per minute, and the
    run's state at each minute (None once it left the exporter)."""

    series: dict[str, list[str]]
    states: list[str | None]


def scrape_series(run: Run, seed: int) -> Simulation:
    """Simulate ``run`` through the tracker and the collector, one scrape a minute."""
    rng = random.Random(seed)
    tracker = Tracker(TrackerConfig())
    key = RunKey(NAMESPACE, run.name, run.name)
    meta = RunMeta(source="push", gpus=run.gpus, alive=run.alive)
    series: dict[str, list[str]] = {}
    states: list[str | None] = []
    retention_end = run.minutes + 10  # the exporter keeps a gone run 10 min by default
    total_minutes = retention_end + 10
    for minute in range(total_minutes + 1):
        now = minute * 60.0
        if minute > 0 and minute <= run.minutes:
            for t in range(int(now - 60) + REPORT_EVERY, int(now) + 1, REPORT_EVERY):
                report = run.report(float(t), rng)
                if report is not None:
                    tracker.apply(key, report, float(t), meta)
        if minute == run.minutes:
            tracker.mark_gone(key, now)
        tracker.expire(now)
        snapshots = tracker.snapshot(now)
        states.append(snapshots[0].state if snapshots else None)
        text = render_runs_text(snapshots)
        seen = set()
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
                name = f"{s.name}{{{labels}}}"
                seen.add(name)
                values = series.setdefault(name, ["_"] * minute)
                values.append("NaN" if math.isnan(s.value) else repr(float(s.value)))
        for name, values in series.items():
            if name not in seen:
                values.append("stale" if values and values[-1] not in ("_", "stale") else "_")
    return Simulation(series, states)


def _alert_rules() -> list[dict[str, Any]]:
    doc = yaml.safe_load((ROOT / "alerts" / "training-progress.rules.yaml").read_text())
    return [
        r
        for g in doc["groups"]
        for r in g["rules"]
        if "alert" in r and r["alert"] != "TrainingProgressExporterDown"
    ]


def _for_minutes(rule: dict[str, Any]) -> int:
    return _minutes(str(rule.get("for", "0m")))


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
        "rule_files": [str(ROOT / "alerts" / "training-progress.rules.yaml")],
        "evaluation_interval": "1m",
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
        for run in CORPUS:
            sim = scrape_series(run, seed)
            output = promtool_test(run, sim, Path(tmp))
            fired: dict[str, int] = {}
            firing: set[tuple[str, int]] = set()
            for name, duration in _FIRED.findall(output):
                fired.setdefault(name, _minutes(duration))
                firing.add((name, _minutes(duration)))
            expected = expected_firing(sim.states)
            disagree = sorted(firing ^ expected, key=lambda x: (x[1], x[0]))
            disagreements += len(disagree)
            unexpected = sorted(set(fired) - {run.expected} if run.expected else set(fired))
            missed = run.expected is not None and run.expected not in fired
            false_positives += len(unexpected)
            misses += int(missed)
            results[run.name] = {
                "description": run.description,
                "expected": run.expected,
                "fired_first_minute": fired,
                "false_positives": unexpected,
                "missed": missed,
                "minutes_checked": len(sim.states),
                "disagreements": [
                    {"minute": m, "alert": a, "firing": (a, m) in firing, "state": sim.states[m]}
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
        lines.append(
            f"| {name} | {r['description']} | {r['expected'] or 'none'} | {fired} | {verdict} |"
        )
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
