"""The command line behaves like a Unix tool: one JSON value per call, an output flag,
quiet on a closed pipe, no abbreviations, an unknown option answered by its own command's
usage with the option meant (issue #58)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from exporter.commands.cli import _parser

LOG = "iter 10: loss 2.5000, time 100.00ms\niter 20: loss 2.4000, time 100.00ms\n"


def _cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "exporter", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_inspect_prints_one_json_value_an_array_for_several_paths(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(LOG)
    one = _cli("inspect", str(log))
    assert one.returncode == 0, one.stderr
    doc = json.loads(one.stdout)
    assert doc["report"]["step"] == 20 and doc["path"] == str(log)
    several = _cli("inspect", "-o", "json", str(log), str(tmp_path / "missing.log"))
    assert several.returncode == 1  # one path could not be read
    docs = json.loads(several.stdout)  # one document, not two
    assert [d["path"] for d in docs] == [str(log), str(tmp_path / "missing.log")]
    assert docs[0]["report"]["loss"] == 2.4 and "error" in docs[1]


def test_inspect_of_a_symlink_names_the_error_and_goes_on(tmp_path: Path) -> None:
    """A symlink is not followed (the log source's rule for host files): a clear error for
    that path, no traceback, the other paths read, exit 1."""
    log = tmp_path / "train.log"
    log.write_text(LOG)
    link = tmp_path / "link.log"
    link.symlink_to(log)
    out = _cli("inspect", "-o", "json", str(link), str(log))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    docs = json.loads(out.stdout)
    assert docs[0] == {"path": str(link), "error": f"{link}: is a symlink, not followed"}
    assert docs[1]["report"]["step"] == 20


def test_inspect_text_says_what_was_read_on_a_few_lines(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(LOG)
    status = tmp_path / "status.json"
    status.write_text('{"step": 7, "max_steps": 70, "loss": 0.5}')
    out = _cli("inspect", "--output", "text", str(log), str(status))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"{log}: log, 2 lines, matched: progress 2"
    assert "step 20" in lines[1] and "loss 2.4" in lines[1]
    status_at = next(i for i, ln in enumerate(lines) if ln.startswith(f"{status}:"))
    assert "status file" in lines[status_at]
    assert "step 7, max_steps 70, loss 0.5" in lines[status_at + 1]


def test_inspect_into_a_pipe_closed_early_is_quiet(tmp_path: Path) -> None:
    """``inspect ... | head -1``: no BrokenPipeError traceback, the status SIGPIPE gives."""
    log = tmp_path / "train.log"
    log.write_text(LOG)
    proc = subprocess.Popen(
        [sys.executable, "-m", "exporter", "inspect", "-o", "text", *[str(log)] * 3000],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # what head does after its line
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141
    assert first.startswith(str(log).encode()) and stderr == "", stderr


@pytest.mark.parametrize(
    ("args", "meant"),
    [
        (["run", "--stall", "5m"], "--stall-seconds"),  # an abbreviation is no option
        (["run", "--stal-seconds", "5m"], "--stall-seconds"),  # a typo
        (["inspect", "--outptu", "text", "x.log"], "--output"),
        (["top", "--prometeus", "http://p:9090"], "--prometheus"),
    ],
)
def test_an_unknown_option_gets_its_commands_usage_and_the_option_meant(
    args: list[str], meant: str
) -> None:
    out = _cli(*args)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith(f"usage: training-progress-exporter {args[0]} ")
    assert f"did you mean {meant}?" in out.stderr
    assert "ambiguous" not in out.stderr


def test_no_option_is_abbreviated_anywhere() -> None:
    """allow_abbrev=False on every parser: a prefix is refused, not guessed."""
    with pytest.raises(SystemExit):
        _parser().parse_args(["top", "--exp", "http://x"])
    with pytest.raises(SystemExit):
        _parser().parse_args(["demo", "--dur", "5"])
    assert _parser().parse_args(["demo", "--duration", "5"]).duration == 5.0
