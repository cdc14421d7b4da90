"""``top``: rows, sorting, rendering widths and colors; the CLI against a live exporter; and a
real terminal (tmux) at 80 columns."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
import time
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exporter.commands.top import bar, render
from exporter.commands.toprows import Row, rows_from_exporter, sort_rows, trend
from exporter.core.model import ProgressReport, RunKey, RunMeta

from .conftest import strict_json

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
        [sys.executable, "-m", "exporter", "top", "--exporter", exp.url, "--once"],
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
            "exporter",
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
    rows = strict_json(out.stdout)
    assert rows[0]["loss"] is None  # the diverged run's NaN loss: null, not a bare NaN
    assert [(r["job_name"], r["state"], r["step"], r["gpus"]) for r in rows] == [
        ("bad", "diverged", 5, 4.0),
        ("ok", "running", 10, 8.0),
        ("done", "finished", 100, 2.0),
    ]


def test_cli_reports_an_unreachable_source() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "exporter", "top", "--exporter", "http://127.0.0.1:9", "--once"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1 and "top:" in proc.stderr


def _screen(session: str) -> str:
    return subprocess.run(
        ["tmux", "capture-pane", "-p", "-e", "-t", session], capture_output=True, text=True
    ).stdout


def _alive(session: str) -> bool:
    return (
        subprocess.run(["tmux", "has-session", "-t", session], capture_output=True).returncode == 0
    )


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is installed by the test command")
@pytest.mark.parametrize(("columns", "quit_key"), [(80, "q"), (160, "C-c")])
def test_live_top_in_a_real_terminal(
    exporter_factory: Any, clock: Any, columns: int, quit_key: str
) -> None:
    """Like htop. At 80 columns names get the room and columns go by
    priority; at 160 everything shows, steps/s and age included; a summary line; q and
    Ctrl-C quit and give the terminal back."""
    exp = exporter_factory()
    populate(exp, clock)
    exp.tracker.apply(
        RunKey("ml", "llama-3.1-70b-finetune-lora", "llama-3.1-70b-finetune-lora"),
        ProgressReport(step=420, max_steps=1000, loss=2.31),
        clock(),
        RunMeta(gpus=8),
    )
    session = f"tpe-{uuid.uuid4().hex[:8]}"
    # tmux hands a detached session's programs COLUMNS=80 when its client has no terminal
    # (as under pytest); without it, top asks the terminal itself, as it would in real use.
    cmd = f"env -u COLUMNS -u LINES {sys.executable} -m exporter top --exporter {exp.url} --interval 0.5"  # noqa: E501
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", str(columns), "-y", "24", cmd],
        check=True,
    )
    # A detached session takes the size of the server's first; set this one's explicitly.
    subprocess.run(
        ["tmux", "resize-window", "-t", session, "-x", str(columns), "-y", "24"], check=True
    )
    try:
        screen = ""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            screen = _screen(session)
            if "done" in screen and (columns == 80 or "GPU-H" in screen):  # after the resize
                break
            time.sleep(0.2)
        plain = ANSI.sub("", screen)
        lines = plain.splitlines()
        assert "training jobs, sorted by state" in lines[0] and "q quit" in lines[0]
        assert lines[1].startswith("4 jobs | 20 GPUs held | 0.0 GPU-h wasted stalled | 1 diverged")
        assert all(len(line) <= columns for line in lines), plain
        header = lines[2].split()
        jobs = [line.split()[0 if columns == 80 else 1] for line in lines[3:] if "%" in line]
        assert jobs == ["bad", "llama-3.1-70b-finetune-lora", "ok", "done"], plain  # names uncut
        if columns == 80:
            assert header[:3] == ["JOB", "STATE", "PROGRESS"] and "NAMESPACE" not in header
        else:
            assert header == [
                "NAMESPACE", "JOB", "STATE", "PROGRESS", "STEP", "STEPS/S", "ETA", "AGE",
                "LOSS", "GPUS", "GPU-H",
            ]  # fmt: skip
        assert re.search(r"\x1b\[31m(\x1b\[1m)?diverged", screen), screen  # red, on a terminal
        subprocess.run(["tmux", "send-keys", "-t", session, "s"], check=True)
        deadline = time.monotonic() + 5
        while "sorted by name" not in _screen(session) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "sorted by name" in _screen(session)
        subprocess.run(["tmux", "send-keys", "-t", session, quit_key], check=True)
        deadline = time.monotonic() + 5
        while _alive(session) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(session)  # top ended, and with it the session
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def test_the_eta_column_shows_its_band() -> None:
    from dataclasses import replace

    from exporter.commands.top import eta_text

    banded = replace(
        row("a", "running"), eta_seconds=4800.0, eta_lower_seconds=3300.0, eta_upper_seconds=7800.0
    )
    assert eta_text(banded) == "1h20m (55m-2h10m)"
    assert eta_text(row("b", "running")) == "1h00m"  # no band: the ETA alone
    screen = render([banded], width=160)
    assert "1h20m (55m-2h10m)" in screen


def _job(line: str) -> str:
    """The job named on a table line ("" for a header, reason or status line)."""
    return next((w for w in line.split() if w.startswith("job-")), "")


def _state(line: str) -> str:
    words = line.split()
    return words[words.index(_job(line)) + 1]


def _rows(n: int) -> list[Row]:
    """``n`` jobs, a few needing attention (with a reason line under them)."""
    states = ["diverged", "stalled", "silent"] + ["running"] * (n - 3)
    return sort_rows(
        [
            Row(
                namespace="ml",
                job_name=f"job-{i:02d}",
                state=state,
                progress=i / n,
                step=i * 10,
                max_steps=n * 10,
                loss=1.0,
                gpus=8,
                eta_seconds=60.0,
                loss_trend=None,
                gpu_hours=1.0,
                reason="" if state == "running" else f"{state} for 5m",
            )
            for i, state in enumerate(states)
        ]
    )


def test_the_live_screen_keeps_its_head_and_scrolls() -> None:
    """80x24 with 40 jobs: the clock, the summary and the header on every screen; the most
    urgent first; a last line saying where the view is and how many rows are below; j,
    the arrows, PgDn, End and Home move it, within range."""
    from exporter.commands.top import screen, scroll

    rows = _rows(40)
    text, offset, shown = screen("12:00:00 training jobs", rows, 80, 24, 0)
    lines = text.split("\n")
    assert len(lines) == 24 and all(len(x) <= 80 for x in lines)
    assert lines[0].startswith("12:00:00") and lines[1].startswith("40 jobs")
    assert "JOB" in lines[2].split() and "PROGRESS" in lines[2].split()
    # The three that need attention first, each with its reason line under it.
    assert {_state(lines[3]), _state(lines[5]), _state(lines[7])} == {
        "diverged",
        "stalled",
        "silent",
    }
    assert lines[4].strip() == f"└ {_state(lines[3])} for 5m"
    assert shown == sum(1 for x in lines[3:-1] if _job(x))
    assert lines[-1].startswith(f"rows 1-{shown} of 40; {40 - shown} more below")
    page = shown
    assert scroll(0, "j", 40, page) == 1 and scroll(0, "\x1b[B", 40, page) == 1
    assert scroll(0, "k", 40, page) == 0  # not above the first
    # A page down starts at the first row the screen did not show: none skipped.
    nxt, _, _ = screen("t", rows, 80, 24, scroll(0, "\x1b[6~", 40, page))
    assert _job(nxt.split("\n")[3]) == f"job-{shown:02d}"
    assert scroll(30, "\x1b[H", 40, page) == 0 and scroll(3, "x", 40, page) == 3
    end = scroll(0, "\x1b[F", 40, page)
    text, offset, _ = screen("12:00:00 training jobs", rows, 80, 24, end)
    lines = text.split("\n")
    assert lines[0].startswith("12:00:00") and "JOB" in lines[2].split()
    assert _job(lines[-2]) == "job-39"  # the last job on the last body line
    assert lines[-1].startswith(f"rows {offset + 1}-40 of 40 (")
    # Few rows: no status line, nothing scrolls.
    text, offset, _ = screen("t", rows[:3], 80, 24, 5)
    assert offset == 0 and text.split("\n")[-1] == ""


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is installed by the test command")
def test_live_top_scrolls_in_a_real_terminal_at_80x24_with_40_jobs(
    exporter_factory: Any, clock: Any
) -> None:
    """The real thing: top in tmux at 80x24 against an exporter with 40 jobs; the keys a
    person presses (j, Down, PgDn, End, Home) scroll the rows under a head that stays."""
    exp = exporter_factory()
    for i in range(40):
        loss = math.nan if i == 0 else 1.0  # one diverged job, the most urgent
        exp.tracker.apply(
            RunKey("ml", f"job-{i:02d}", f"job-{i:02d}"),
            ProgressReport(step=i + 1, max_steps=100, loss=loss),
            clock(),
            RunMeta(gpus=8),
        )
    session = f"tpe-{uuid.uuid4().hex[:8]}"
    cmd = f"env -u COLUMNS -u LINES {sys.executable} -m exporter top --exporter {exp.url} --interval 5"  # noqa: E501
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", "80", "-y", "24", cmd], check=True
    )
    subprocess.run(["tmux", "resize-window", "-t", session, "-x", "80", "-y", "24"], check=True)

    def view(wait_for: str) -> list[str]:
        deadline = time.monotonic() + 10
        plain = ""
        while time.monotonic() < deadline:
            plain = ANSI.sub("", _screen(session))
            if wait_for in plain:
                break
            time.sleep(0.1)
        assert wait_for in plain, plain
        lines = plain.split("\n")[:24]
        assert "training jobs, sorted by state" in lines[0]  # the clock line, always
        assert lines[1].startswith("40 jobs") and "JOB" in lines[2].split()
        return lines

    def first_job(lines: list[str]) -> str:
        return _job(lines[3])

    try:
        lines = view("more below")
        assert first_job(lines) == "job-00" and "diverged" in lines[3]
        status = next(x for x in lines if x.startswith("rows 1-"))
        shown = int(status.split()[1].split("-")[1])
        for key, first in (("j", "job-01"), ("Down", "job-02"), ("NPage", None), ("End", None)):
            subprocess.run(["tmux", "send-keys", "-t", session, key], check=True)
            expect = f"rows {int(first[-2:]) + 1}-" if first else "of 40"
            lines = view(expect if first else "rows ")
            if first:
                assert first_job(lines) == first, (key, lines)
        lines = view("-40 of 40")
        assert any(_job(x) == "job-39" for x in lines)
        assert not any("more below" in x for x in lines)
        subprocess.run(["tmux", "send-keys", "-t", session, "Home"], check=True)
        lines = view(f"rows 1-{shown} of 40")
        assert first_job(lines) == "job-00"
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=True)
        deadline = time.monotonic() + 5
        while _alive(session) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(session)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


@given(st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)))
def test_any_duration_reads_in_at_most_seven_characters(seconds: float | None) -> None:
    """Whatever number a source or a scrape gives (+Inf from an exposition, 1e999 from a
    JSON body, an ETA of 2^62 steps), a duration is a short string and never raises: a
    table cell, not a traceback or a 300-digit count of days."""
    from exporter.core.humanize import duration

    text = duration(seconds)
    assert 1 <= len(text) <= 7, text


def test_an_absurd_eta_and_band_keep_the_table_whole() -> None:
    """An ETA of 53 billion days and a band read from a scrape as +Inf: the ETA column
    says ">999d" and the table still fits the terminal."""
    from dataclasses import replace

    from exporter.commands.top import eta_text
    from exporter.commands.toprows import _num

    absurd = replace(
        row("a", "running"),
        eta_seconds=2.0**62,
        eta_lower_seconds=_num("1e18"),
        eta_upper_seconds=_num("+Inf"),
    )
    assert eta_text(absurd) == ">999d (>999d->999d)"
    assert eta_text(replace(absurd, eta_seconds=999 * 86400.0)).startswith("999d00h (")
    screen = render([absurd, row("b", "running")], width=120)
    assert all(len(line) <= 120 for line in screen.splitlines())
    assert ">999d (>999d->999d)" in screen


def test_tokens_mfu_checkpoint_age_and_risk_show_where_known_and_room_allows() -> None:
    """From an exporter's /api/v1/runs: a job counting tokens with a checkpoint gets TOK/S,
    MFU, CKPT and RISK-GPU-H on a wide terminal; they are the first to go as it narrows;
    a fleet where no job has them gives them no room at all."""
    now = 1_800_000_000.0
    doc = {
        "time": now,
        "runs": [
            {
                "namespace": "ml",
                "job_name": "llm",
                "pod": f"llm-{rank}",
                "state": "running",
                "progress_ratio": 0.4,
                "step": 400,
                "max_steps": 1000,
                "gpus": 8,
                "tokens_per_second": 327_680.0 if rank == 0 else None,
                "model_flops_utilization": 0.323 if rank == 0 else None,
                "last_checkpoint_timestamp_seconds": now - 76 - rank,
                "progress_at_risk_gpu_seconds": 3600.0 * 1.5,
                "info": {"rank": str(rank)},
            }
            for rank in (0, 1)
        ],
    }
    (row,) = rows_from_exporter(doc)
    assert (row.tokens_per_second, row.mfu) == (327_680.0, 0.323)
    assert row.checkpoint_age_seconds == 76 and row.at_risk_gpu_hours == 3.0
    wide = render([row], width=200)
    header, line = wide.splitlines()[:2]
    for column, value in (("TOK/S", "327680"), ("MFU", "32%"), ("CKPT", "1m16s")):
        assert column in header and value in line, (column, wide)
    assert "RISK-GPU-H" in header and line.rstrip().endswith("3.0")
    narrow = render([row], width=90).splitlines()[0]
    assert "TOK/S" not in narrow and "RISK-GPU-H" not in narrow and "ETA" in narrow
    plain = [Row("ml", "bert", "running", 0.5, 5, 10, 60.0, 1.0, None, 1.0, 0.1)]
    header = render(plain, width=200).splitlines()[0]
    assert not {"TOK/S", "MFU", "CKPT", "RISK-GPU-H"} & set(header.split())
