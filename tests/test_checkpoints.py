"""Checkpoints seen from logs as real runs print them, and what a preemption would lose.

The log lines are real captures (tests/fixtures/logs/checkpoints/README.md says of what);
the callbacks and the reporter run for real in tests/test_integrations_ml.py.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from exporter.core.model import ProgressReport, RunKey
from exporter.core.run.accrual import at_risk
from exporter.core.thresholds import Thresholds
from exporter.core.tracker import Tracker, TrackerConfig
from exporter.logs.inspect import inspect_path

from .conftest import FakeClock, get_json, http

CAPTURES = Path(__file__).parent / "fixtures" / "logs" / "checkpoints"
T0 = 1_767_225_600.0
KEY = RunKey("ml", "llm-0", "llm")


@pytest.mark.parametrize(
    "name, step",
    [
        ("transformers-5.24-info.log", 10),  # "Saving model checkpoint to out/checkpoint-10"
        ("lightning-2.6-verbose.log", 12),  # "global step 12: ... saving model to '...'"
        ("deepspeed-torch-engine.log", 20),  # "Checkpoint global_step20 is ready now!"
        ("accelerate-1.15-info.log", None),  # "Saving current state to ...": no step named
    ],
)
def test_each_frameworks_checkpoint_line_is_read(name: str, step: int | None) -> None:
    report = inspect_path(str(CAPTURES / name))["report"]
    assert report.get("checkpoint_step") == step, report
    assert report["checkpoint_timestamp"] > 0


def test_a_checkpoint_in_a_log_is_exported_at_the_lines_time(
    tmp_path: Path, exporter_factory: Any, clock: FakeClock
) -> None:
    """CRI lines: a tqdm bar, then Trainer's INFO line as it printed it; the checkpoint's
    time is the line's own."""
    written = clock() - 30
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000000000Z", time.gmtime(written))
    bar = " 40%|████      | 40/100 [00:10<00:15,  4.00it/s]"
    lines = [
        f"{stamp} stderr F {bar}",
        f"{stamp} stderr F [transformers] Saving model checkpoint to /out/checkpoint-40",
    ]
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    exp = exporter_factory(log_paths=(str(log),), namespace="ml")
    exp.poll_once()
    (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    assert run["last_checkpoint_step"] == 40
    assert run["last_checkpoint_timestamp_seconds"] == pytest.approx(written, abs=1)
    text = http("GET", exp.url + "/metrics")[1].decode()
    assert 'training_last_checkpoint_step{job_name="train",namespace="ml",pod="train"} 40.0' in text


def _tracker(risk_hours: float = 64.0) -> Tracker:
    return Tracker(TrackerConfig(thresholds=Thresholds(checkpoint_risk_gpu_hours=risk_hours)))


def _report(step: int, **kw: Any) -> ProgressReport:
    return ProgressReport(step=step, max_steps=10_000, gpus=8, **kw)


def test_the_risk_is_the_training_since_the_checkpoint_and_a_new_one_resets_it() -> None:
    tr = _tracker()
    for i in range(11):  # 8 GPUs stepping for 100 s
        tr.apply(KEY, _report(10 * i), T0 + 10 * i)
    (snap,) = tr.snapshot(T0 + 100)
    assert snap.last_checkpoint_step is None
    assert snap.at_risk_gpu_seconds == pytest.approx(800)  # all of it: none seen
    tr.apply(KEY, _report(110, checkpoint_step=110, checkpoint_timestamp=T0 + 110), T0 + 110)
    (snap,) = tr.snapshot(T0 + 110)
    assert (snap.last_checkpoint_step, snap.last_checkpoint_timestamp) == (110, T0 + 110)
    assert snap.at_risk_gpu_seconds == pytest.approx(0)
    # Restated by every report after it: not a new checkpoint, the risk grows.
    tr.apply(KEY, _report(120, checkpoint_step=110, checkpoint_timestamp=T0 + 110), T0 + 120)
    (snap,) = tr.snapshot(T0 + 120)
    assert snap.at_risk_gpu_seconds == pytest.approx(80)


def test_a_checkpoint_said_late_keeps_the_work_since_it_at_risk() -> None:
    tr = _tracker()
    for i in range(11):
        tr.apply(KEY, _report(10 * i), T0 + 10 * i)
    # Saved 30 s ago, said now (a log read late): 8 GPUs x 30 s are still at risk.
    tr.apply(KEY, _report(110, checkpoint_step=80, checkpoint_timestamp=T0 + 80), T0 + 110)
    (snap,) = tr.snapshot(T0 + 110)
    assert snap.at_risk_gpu_seconds == pytest.approx(240)


def test_stalled_time_is_not_at_risk() -> None:
    tr = _tracker()
    for i in range(11):
        tr.apply(KEY, _report(10 * i, checkpoint_step=0, checkpoint_timestamp=T0), T0 + 10 * i)
    # A heartbeat with a frozen step for two hours: the stall is waste, not work at risk.
    for i in range(1, 13):
        tr.apply(KEY, _report(100, checkpoint_step=0, checkpoint_timestamp=T0), T0 + 100 + 600 * i)
    (snap,) = tr.snapshot(T0 + 100 + 7200)
    assert snap.state == "stalled"
    assert snap.at_risk_gpu_seconds < 800 + 8 * 1800 + 1  # at most the time before it stalled


def test_the_directive_is_sent_once_when_the_risk_passes_and_again_after_a_save() -> None:
    tr = _tracker(risk_hours=100 / 3600)  # 100 GPU-seconds
    told = []
    for i in range(30):
        ck = {"checkpoint_step": 0, "checkpoint_timestamp": T0}
        if i >= 20:
            ck = {"checkpoint_step": 200, "checkpoint_timestamp": T0 + 200}
        tr.apply(KEY, _report(10 * i, **ck), T0 + 10 * i)
        if "checkpoint" in tr.directives(KEY, T0 + 10 * i):
            told.append(10 * i)
    # Over 100 GPU-seconds (8 GPUs) after 20 s: told once; the save at 200 resets it, and
    # 20 s after it, told again.
    assert told == [20, 220], told


def test_a_run_never_seen_to_checkpoint_is_not_told_to() -> None:
    """Nothing says it does not save (its saves may go unreported): no directive."""
    tr = _tracker(risk_hours=100 / 3600)
    told = [
        i
        for i in range(30)
        if tr.apply(KEY, _report(10 * i), T0 + 10 * i) and tr.directives(KEY, T0 + 10 * i)
    ]
    assert told == []


def test_a_new_attempt_starts_with_nothing_at_risk() -> None:
    tr = _tracker()
    for i in range(11):
        tr.apply(KEY, _report(10 * i), T0 + 10 * i)
    tr.apply(KEY, _report(50), T0 + 120)  # back to 50: a restart from a checkpoint
    with tr._lock:
        run = tr._runs[KEY]
        assert at_risk(run) == pytest.approx(0)


def test_checkpoint_values_that_no_run_could_state_are_dropped(exporter_factory: Any) -> None:
    exp = exporter_factory()
    url = exp.url + "/api/v1/namespaces/default/runs/r/report"
    body = {"step": 5, "last_checkpoint_step": -3, "last_checkpoint_timestamp": 1e15}
    status, answer = http("POST", url, json.dumps(body).encode())
    assert status == 200
    assert set(json.loads(answer)["dropped"]) == {
        "invalid_checkpoint_step",
        "invalid_checkpoint_timestamp",
    }
    (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    assert run["last_checkpoint_step"] is None and run["step"] == 5


SHAPES = json.loads((CAPTURES / "shapes.json").read_text())


@pytest.mark.parametrize("case", SHAPES["saves"], ids=lambda c: c["line"][:48])
def test_the_save_lines_people_and_tools_print_are_read(case: dict[str, Any]) -> None:
    """The general rule (exporter/logs/formats/checkpoints.py): each line of
    fixtures/logs/checkpoints/shapes.json is a save at the line's time, with the step it
    names (or none) and the seconds it says the save took (or none)."""
    from exporter.logs.parse import parse_line

    found = parse_line(case["line"], T0)
    assert found is not None and found.parser == "checkpoints", case
    assert found.report.checkpoint_timestamp == T0
    assert found.report.checkpoint_step == case["step"]
    assert found.report.checkpoint_seconds == case["seconds"]
    assert found.report.step is None  # a save's step is no progress


@pytest.mark.parametrize("case", SHAPES["not_saves"], ids=lambda c: c["line"][:48])
def test_lines_about_saves_that_are_none_are_not_read_as_saves(case: dict[str, Any]) -> None:
    from exporter.logs.parse import parse_line

    found = parse_line(case["line"], T0)
    assert found is None or found.report.checkpoint_timestamp is None, (case, found)


def test_a_torchtitan_save_is_at_the_runs_step_and_gives_its_save_time(tmp_path: Path) -> None:
    """torchtitan names no step in its save line: the save is at the step read so far (21,
    the last of the real excerpt), and its "in 4.21 seconds" is the run's save time, what
    the kill-deadline directive leaves room for (exporter.core.directives)."""
    world = Path(__file__).parent / "fixtures" / "world" / "torchtitan-checkpoint.log"
    log = tmp_path / "titan.log"
    log.write_text(world.read_text() + SHAPES["saves"][1]["line"] + "\n")
    report = inspect_path(str(log))["report"]
    assert (report["step"], report["checkpoint_step"]) == (21, 21)
    assert report["checkpoint_seconds"] == 4.21
