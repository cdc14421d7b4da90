"""Combining log lines into one run (structured beats bars; one training bar among download,
evaluation and nested bars), and ``inspect`` on real files, including bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from exporter.logs.accumulate import LogAccumulator
from exporter.logs.inspect import inspect_path
from exporter.logs.parse import parse_message

from .conftest import strict_json

NOW = 1_800_000_000.0


def feed(lines: list[str], step_seconds: float = 1.0) -> LogAccumulator:
    """Each line as the log source reads it (terminal codes read, then taken out)."""
    acc = LogAccumulator()
    for i, line in enumerate(lines):
        for found in parse_message(line, NOW):
            acc.feed(found, i * step_seconds)
    return acc


def bar(n: int, total: int, prefix: str = "", rest: str = "") -> str:
    pct = n * 100 // total
    return f"{prefix}{pct:3d}%|{'█' * (pct // 10):10s}| {n}/{total} [00:01<00:09,  4.00it/s{rest}]"


def test_download_bar_then_training_bar_with_evaluation_bars() -> None:
    lines = [bar(n, 1000, "Downloading: ") for n in range(0, 1001, 100)]  # finishes early
    for step in range(1, 301):
        lines.append(bar(step, 500))
        if step % 100 == 0:  # an evaluation bar restarts from 0 each time
            lines += [bar(n, 20, "Evaluating: ") for n in range(0, 21, 5)]
    report = feed(lines).report()
    assert (report.step, report.max_steps) == (300, 500)


def test_a_batch_bar_under_an_epoch_bar_counts_every_batch() -> None:
    lines = []
    for epoch in range(1, 4):
        # Inner: restarts each epoch, drawn below the outer bar (tqdm moves the cursor up).
        lines += [bar(b, 50, "batches: ") + "\x1b[A" for b in range(0, 51, 10)]
        lines.append(bar(epoch, 5, "epochs: "))
    acc = feed(lines)
    chosen = acc.training_bar()
    assert chosen is not None and chosen[0] == ("batches", 50)
    # Cumulative: three epochs of 50 batches; the epoch bar says there are 5 of them.
    assert (acc.report().step, acc.report().max_steps) == (150, 250)


def test_structured_step_beats_bars() -> None:
    lines = [bar(40, 500), '{"step": 7, "max_steps": 70, "loss": 1.5}', bar(41, 500)]
    report = feed(lines).report()
    assert (report.step, report.max_steps, report.loss) == (7, 70, 1.5)


def test_lightning_bars_give_a_global_step() -> None:
    lines = []
    for epoch in range(3):
        loss = f"0.{9 - epoch}"
        lines += [
            f"Epoch {epoch}: {b * 10:3d}%|██ | {b}/10 [00:01<00:01, 9.0it/s, train_loss={loss}]"
            for b in range(1, 11)
        ]
    report = feed(lines).report()
    # The fractional epoch is epochs done, as Trainer counts it: 3 at the end of the third.
    assert (report.step, report.epoch, report.loss) == (2 * 10 + 10, 3.0, 0.7)


def test_keras_epochs_and_progbar() -> None:
    lines = [
        "Epoch 1/4",
        "100/100 [==============================] - 2s - loss: 0.9",
        "Epoch 2/4",
        " 50/100 [==============>...............] - ETA: 1s - loss: 0.7",
    ]
    report = feed(lines).report()
    assert (report.epoch, report.max_epochs, report.loss) == (1.5, 4.0, 0.7)


def cri(msg: str, tag: str = "F", stream: str = "stdout", t: int = 0) -> str:
    return f"2026-11-29T18:20:{t:02d}.123456789Z {stream} {tag} {msg}\n"


def test_inspect_a_cri_log(tmp_path: Path) -> None:
    log = tmp_path / "0.log"
    body = [
        cri("Loading data...", t=1),
        cri(bar(10, 50)[:12], tag="P", t=2),
        cri(bar(10, 50)[12:], t=2),
        cri("{'loss': '6.9', 'grad_norm': '1.0', 'learning_rate': '5e-05', 'epoch': '0.2'}", t=3),
        cri(bar(20, 50), stream="stderr", t=4),
        cri("\x00\xff binary \x1b[0m garbage", t=5),
    ]
    log.write_text("".join(body))
    doc = inspect_path(str(log), NOW)
    assert doc["kind"] == "log" and doc["lines"] == 5  # the two P chunks are one message
    assert doc["matched"] == {"tqdm": 2, "transformers": 1}
    assert (
        doc["report"]["step"] == 20
        and doc["report"]["max_steps"] == 50
        and doc["report"]["loss"] == 6.9
    )
    assert doc["training_bar"]["total"] == 50


def test_inspect_names_a_diverged_loss_as_nan_not_as_nothing(tmp_path: Path) -> None:
    """A loss of nan (the divergence it is) is null in JSON, which has no NaN, and named in
    ``non_finite`` as the runs API does; the text form says NaN. A missing loss stays
    missing: no ``non_finite`` then."""
    from exporter.logs.inspect import as_text

    log = tmp_path / "train.log"
    log.write_text("step 10 loss 2.5 grad_norm 1.0\nstep 20 loss nan grad_norm inf\n")
    doc = inspect_path(str(log), NOW)
    report = doc["report"]
    assert (report["step"], report["loss"], report["grad_norm"]) == (20, None, None)
    assert report["non_finite"] == {"loss": "NaN", "grad_norm": "+Inf"}
    assert strict_json(json.dumps(doc, allow_nan=False))["report"]["non_finite"]
    text = as_text(doc)
    assert "loss NaN" in text and "grad_norm +Inf" in text and "non_finite" not in text
    log.write_text("step 10 grad_norm 1.0 tps 5.0\n")
    assert "non_finite" not in inspect_path(str(log), NOW)["report"]


def test_inspect_a_status_file_and_bad_paths(tmp_path: Path) -> None:
    status = tmp_path / "run.json"
    status.write_text(
        '{"trainerStatus": {"metrics": [{"name": "current_step", "value": "5"},'
        ' {"name": "loss", "value": "NaN"}]}}'
    )
    doc = inspect_path(str(status), NOW)
    assert (doc["kind"], doc["format"], doc["report"]["step"]) == ("status-file", "kubeflow", 5)
    huge = tmp_path / "huge.log"
    with open(huge, "wb") as fh:
        fh.write(b"x" * (10 * 1024 * 1024))  # a 10 MB line without a newline
        fh.write(b"\n" + bar(3, 9).encode() + b"\n")
    assert inspect_path(str(huge), NOW)["report"]["step"] == 3
    proc = subprocess.run(
        [sys.executable, "-m", "exporter", "inspect", str(status), str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    docs = strict_json(proc.stdout)  # one JSON value: an array for two paths
    assert docs[0]["report"]["step"] == 5 and "error" in docs[1]
    assert docs[0]["report"]["loss"] is None  # NaN: null, JSON has no NaN
