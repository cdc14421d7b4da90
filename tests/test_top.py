"""``top``: rows, sorting, rendering widths and colors; the CLI against a live exporter; and a
real terminal (tmux) at 80 columns."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
import time
import uuid
from typing import Any

import pytest

from exporter.model import ProgressReport, RunKey, RunMeta
from exporter.top import Row, bar, render, rows_from_exporter, sort_rows, trend

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def row(job: str, state: str, progress: float | None = 0.5, loss: float | None = 1.0) -> Row:
    return Row("ns", job, state, progress, 50, 100, 3600.0, loss, "down", 8.0, 1.5)


def test_attention_first_ordering() -> None:
    rows = [
        row("a", "running"),
        row("b", "finished"),
        row("c", "stalled"),
        row("d", "finished-but-running"),
        row("e", "diverged"),
        row("f", "plateaued"),
    ]
    assert [r.state for r in sort_rows(rows)] == [
        "stalled",
        "diverged",
        "finished-but-running",
        "plateaued",
        "running",
        "finished",
    ]


@pytest.mark.parametrize("width", [80, 100, 160])
def test_render_fits_the_terminal_width(width: int) -> None:
    rows = [
        row("a-rather-long-training-job-name-for-a-narrow-terminal", "finished-but-running"),
        row("b", "stalled", progress=None, loss=math.nan),
    ]
    text = render(rows, width=width)
    assert all(len(line) <= width for line in text.splitlines()), text
    assert "NaN" in text and "stalled" in text


def test_colors_only_when_asked() -> None:
    rows = [row("a", "stalled"), row("b", "running")]
    plain, colored = render(rows, color=False), render(rows, color=True)
    assert not ANSI.search(plain)
    assert "\x1b[31;1m" in colored and "\x1b[32m" in colored  # bold red stalled, green running
    assert ANSI.sub("", colored) == plain


def test_progress_bar_and_trend() -> None:
    assert bar(0.5, 14) == "████░░░░░  50%"
    assert len(bar(0.37, 20)) == 20 and bar(0.37, 20).endswith(" 37%")
    assert bar(1.0, 10).startswith("█████") and bar(None, 6) == "-     "
    assert trend([3, 2.9, 2.8, 2.5, 2.3, 2.1]) == "down"
    assert trend([1, 1, 1, 1.5, 1.6, 1.7]) == "up"
    assert trend([1, 1, 1, 1, 1, 1.001]) == "flat"
    assert trend([1, 2]) is None


def test_rows_from_exporter_merge_ranks() -> None:
    doc = {
        "runs": [
            {
                "namespace": "ml",
                "job_name": "llm",
                "pod": "llm-0",
                "state": "running",
                "progress_ratio": 0.5,
                "step": 500,
                "max_steps": 1000,
                "eta_seconds": 100,
                "loss": 2.0,
                "gpus": 8,
                "gpu_seconds": 7200,
                "loss_history": [],
            },
            {
                "namespace": "ml",
                "job_name": "llm",
                "pod": "llm-1",
                "state": "stalled",
                "progress_ratio": 0.4,
                "step": 400,
                "max_steps": 1000,
                "eta_seconds": 200,
                "loss": "NaN",
                "gpus": 8,
                "gpu_seconds": 7200,
                "loss_history": [],
            },
        ]
    }
    (r,) = rows_from_exporter(doc)
    assert (r.state, r.progress, r.step, r.gpus, r.gpu_hours) == ("stalled", 0.4, 400, 16.0, 4.0)
    assert r.loss is not None and math.isnan(r.loss)


def populate(exporter: Any, clock: Any) -> None:
    t = exporter.tracker
    t.apply(
        RunKey("ml", "ok", "ok"),
        ProgressReport(step=10, max_steps=100, loss=1.0),
        clock(),
        RunMeta(gpus=8),
    )
    t.apply(
        RunKey("ml", "bad", "bad"),
        ProgressReport(step=5, max_steps=100, loss=math.nan),
        clock(),
        RunMeta(gpus=4),
    )
    t.apply(
        RunKey("ml", "done", "done"),
        ProgressReport(step=100, max_steps=100, final=True),
        clock(),
        RunMeta(gpus=2),
    )


def test_cli_once_and_json_against_a_live_exporter(exporter_factory: Any, clock: Any) -> None:
    exp = exporter_factory()
    populate(exp, clock)
    table = subprocess.run(
        [sys.executable, "-m", "exporter.cli", "top", "--exporter", exp.url, "--once"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split()[:3] == ["NAMESPACE", "JOB", "STATE"]
    rows = [line for line in lines[1:] if not line.lstrip().startswith("└")]
    assert [line.split()[1] for line in rows] == ["bad", "ok", "done"]  # diverged first
    # Under a row that needs attention, why: the same words as the exporter's state_reason.
    assert lines[lines.index(rows[0]) + 1].strip() == "└ loss is not finite"
    assert not ANSI.search(table.stdout)  # piped: plain text
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "exporter.cli",
            "top",
            "--exporter",
            exp.url,
            "--once",
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    rows = json.loads(out.stdout)
    assert [(r["job_name"], r["state"], r["step"], r["gpus"]) for r in rows] == [
        ("bad", "diverged", 5, 4.0),
        ("ok", "running", 10, 8.0),
        ("done", "finished", 100, 2.0),
    ]


def test_cli_reports_an_unreachable_source() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "exporter.cli", "top", "--exporter", "http://127.0.0.1:9", "--once"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1 and "top:" in proc.stderr


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is installed by the test command")
def test_live_top_in_an_80_column_terminal(exporter_factory: Any, clock: Any) -> None:
    exp = exporter_factory()
    populate(exp, clock)
    session = f"tpe-{uuid.uuid4().hex[:8]}"
    cmd = f"{sys.executable} -m exporter.cli top --exporter {exp.url} --interval 0.5"
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", "80", "-y", "24", cmd], check=True
    )
    try:
        screen = ""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            screen = subprocess.run(
                ["tmux", "capture-pane", "-p", "-e", "-t", session], capture_output=True, text=True
            ).stdout
            if "done" in screen:
                break
            time.sleep(0.2)
        plain = ANSI.sub("", screen)
        assert "training jobs" in plain and "NAMESPACE" in plain
        assert all(len(line) <= 80 for line in plain.splitlines()), plain
        lines = [line for line in plain.splitlines() if line.startswith("ml ")]
        assert [line.split()[1] for line in lines] == ["bad", "ok", "done"]
        assert re.search(r"\x1b\[31m(\x1b\[1m)?diverged", screen), screen  # red, on a terminal
        assert "█" in plain
        subprocess.run(["tmux", "send-keys", "-t", session, "C-c"], check=True)
        time.sleep(0.5)
        alive = subprocess.run(["tmux", "has-session", "-t", session], capture_output=True)
        assert alive.returncode != 0  # Ctrl-C ended top, and with it the session
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
