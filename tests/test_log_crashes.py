"""A crash in the log is a failure with its cause: a Python traceback that ends a run's log
makes the run ``failed`` with the reason ``failed: <ExceptionType>: <message>`` in every view
(the API that top and kubectl progress read, the status page, /metrics' failure info that
TrainingJobFailed's description reads; the alert itself is tested on both sides of its
``for:`` by promtool in alerts/tests/alerts.test.yaml). The crash is a real one: a real
Python process that trains a few steps with a real tqdm bar, then asks torch for more memory
than the machine has and dies of the allocator's own error."""

from __future__ import annotations

import html
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from exporter.logs.inspect import read_log

from .conftest import get_json, http, need_module

CRASH = textwrap.dedent(
    """
    import sys, torch
    from tqdm import tqdm
    for step in tqdm(range(20), total=100, file=sys.stdout, mininterval=0):
        print(f"step {step + 1}/100 loss {2.0 / (step + 1):.4f}", flush=True)
    torch.empty(10**15)  # some 4 PB: the CPU allocator refuses it at once
    """
)


def _crashed_log(tmp_path: Path) -> Path:
    log = tmp_path / "crash.log"
    with open(log, "wb") as out:
        proc = subprocess.run(
            [sys.executable, "-c", CRASH], stdout=out, stderr=subprocess.STDOUT, timeout=120
        )
    assert proc.returncode == 1
    return log


def test_a_real_crash_is_the_runs_failure_in_every_view(
    exporter_factory: Any, tmp_path: Path
) -> None:
    need_module("tqdm", "ml")  # the script draws a real tqdm bar
    log = _crashed_log(tmp_path)
    exp = exporter_factory(log_paths=(str(log),), namespace="local")
    exp.poll_once()
    (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    assert (run["state"], run["step"], run["max_steps"]) == ("failed", 20, 100)
    reason = run["state_reason"]
    assert reason.startswith("failed: RuntimeError: ") and "can't allocate memory" in reason
    failure = reason.removeprefix("failed: ")
    metrics = http("GET", exp.url + "/metrics")[1].decode()
    info = [line for line in metrics.splitlines() if line.startswith("training_run_failure_info{")]
    assert len(info) == 1 and 'reason="' + failure.replace('"', '\\"') + '"' in info[0], info
    page = http("GET", exp.url + "/runs/local/crash")[1].decode()
    assert html.escape(failure, quote=False)[:60] in page


@pytest.mark.parametrize(
    ("tail", "state"),
    [
        # It trained on after the traceback (a caught and printed exception): no failure.
        ("step 21/100 loss 0.1\n", "running"),
        # Nothing after the traceback: the run died of it.
        ("", "failed"),
    ],
)
def test_only_a_traceback_the_log_ends_with_is_a_failure(
    tail: str, state: str, tmp_path: Path
) -> None:
    log = _crashed_log(tmp_path)
    with open(log, "a") as fh:
        fh.write(tail)
    report = read_log(str(log), 1e9)[0].report()
    assert (report.failure is not None) == (state == "failed")


def test_an_error_without_a_traceback_and_a_finished_run_are_no_failure(tmp_path: Path) -> None:
    log = tmp_path / "plain.log"
    log.write_text(
        "step 1/10 loss 1.0\nValueError: this is a warning someone printed\nstep 2/10 loss 0.9\n"
        "ValueError: printed again, last\n"
    )
    assert read_log(str(log), 1e9)[0].report().failure is None
    done = tmp_path / "done.log"
    done.write_text(
        "{'loss': '0.5', 'epoch': '1.0'}\n"
        "{'train_runtime': '10.0', 'train_samples_per_second': '3.2', "
        "'train_loss': '0.6', 'epoch': '1.0'}\n"
        'Traceback (most recent call last):\n  File "x.py", line 1\nKeyboardInterrupt\n'
    )
    report = read_log(str(done), 1e9)[0].report()
    assert report.final and report.failure is None
