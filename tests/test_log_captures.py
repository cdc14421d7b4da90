"""Real captures: each framework run here on CPU by
``tests/fixtures/logs/capture.py``, kept as a combined file (``> log 2>&1``) and as containerd's
CRI lines with separate streams. For each, the final step, total, loss and epoch the exporter
reads must be what the program itself knew at the end (its ``.truth.json``), and ``inspect``
must agree with a live tail that read the file as it grew."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from exporter.logs.inspect import inspect_path

from .conftest import get_json

CAPTURES = Path(__file__).parent / "fixtures" / "logs"
TRUTHS = sorted(CAPTURES.glob("*.truth.json"))


def _capture(truth: Path) -> Path:
    return truth.with_name(truth.name.replace(".truth.json", ".log"))


def _close(read: float | None, truth: float) -> bool:
    """Printed values are rounded (tqdm: 3 significant digits, Trainer: 4, Lightning's bar:
    3 decimals)."""
    return read is not None and abs(read - truth) <= max(5e-4, abs(truth) * 5e-3)


@pytest.mark.parametrize("truth_path", TRUTHS, ids=[p.name[: -len(".truth.json")] for p in TRUTHS])
def test_a_capture_reads_as_what_the_program_knew(truth_path: Path) -> None:
    truth = json.loads(truth_path.read_text())
    report = inspect_path(str(_capture(truth_path)))["report"]
    for field in ("step", "max_steps"):
        if truth[field] is not None:
            assert report.get(field) == truth[field], (field, report)
    if truth["epoch"] is not None:
        assert report.get("epoch") == pytest.approx(truth["epoch"], abs=0.01), report
    if truth["loss"] is not None:
        assert _close(report.get("loss"), truth["loss"]), (report.get("loss"), truth["loss"])
    # Every capture is of a finished run: nothing remains (a rate once read as a time did).
    assert report.get("eta_seconds") in (None, 0.0), report


def test_every_framework_is_captured_in_both_forms() -> None:
    names = {p.name.split(".")[0] for p in TRUTHS}
    assert names >= {
        "transformers_trainer", "pytorch_tqdm", "accelerate_tqdm", "lightning_tqdm",
        "lightning_rich", "keras_fit", "deepspeed_loop",
    }  # fmt: skip
    for name in names:
        assert {p.name.split(".")[1] for p in TRUTHS if p.name.startswith(name + ".")} == {
            "combined", "cri",
        }  # fmt: skip


def _pieces(size: int, chunking: str) -> list[tuple[int, int]]:
    """Where the writes of a growing file end between two polls: every 4 KiB, or writes of
    mixed sizes (a byte to 5 KB) drawn from a seeded generator, so that a poll falls inside
    a frame, a multi-byte character or a line's first frames at places no one chose."""
    if chunking == "4k":
        return [(lo, min(size, lo + 4096)) for lo in range(0, size, 4096)]
    rnd = random.Random(chunking)
    out, lo = [], 0
    while lo < size:
        hi = min(size, lo + rnd.choice((1, 7, 50, 200, 1000, 5000)))
        out.append((lo, hi))
        lo = hi
    return out


# Seeded writes of mixed sizes found a poll inside a three-byte "█" read as a bar starting
# over (step 1500 of 300 for the tqdm loop, where inspect read 300).
CHUNKINGS = ("4k", *(f"mixed-{i}" for i in range(1, 8)))


@pytest.mark.parametrize("chunking", CHUNKINGS)
@pytest.mark.parametrize("truth_path", TRUTHS, ids=[p.name[: -len(".truth.json")] for p in TRUTHS])
def test_inspect_agrees_with_a_live_tail_of_the_growing_file(
    truth_path: Path, chunking: str, exporter_factory: Any, clock: Any, tmp_path: Path
) -> None:
    data = _capture(truth_path).read_bytes()
    log = tmp_path / "run.log"
    log.write_bytes(b"")
    exp = exporter_factory(log_paths=(str(log),), namespace="ns")
    for lo, hi in _pieces(len(data), chunking):  # the file grows between polls
        with open(log, "ab") as fh:
            fh.write(data[lo:hi])
        exp.poll_once()
        clock.advance(1)
    clock.advance(10)  # partial lines still pending are read as they are
    exp.poll_once()
    (live,) = get_json(exp.url + "/api/v1/runs")["runs"]
    inspected = inspect_path(str(log))["report"]
    for field in ("step", "max_steps", "epoch", "loss"):
        assert live.get(field) == inspected.get(field), (field, live.get(field), inspected)
