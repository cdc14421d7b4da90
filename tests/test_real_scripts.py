"""A corpus of real training scripts, each run for real on CPU while the exporter follows its
log, in the two forms logs take: a plain file (``python train.py > log 2>&1``, both streams
on one descriptor) and containerd's CRI lines (streams apart, ``P`` chunks of 16 KiB).

For each, against what the script itself recorded at its end (its truth file): the final
step and total (or "unknown": the log never states it), the loss, and every state the run
passed through while it trained, sampled live from ``/api/v1/runs``. None may be false: a
healthy run is never stalled, diverged or degraded, and "finished" only where the log shows
the end. Then ``inspect`` of the same file must read the same. Thresholds are short (stall
after 3 s) so that a step that froze while training went on would show.

The scripts: ``tests/fixtures/scripts/`` (plain PyTorch with real tqdm, prints, a re-run, a
resume) and ``tests/fixtures/logs/programs/`` (Transformers' Trainer with evaluation,
Lightning with both bars and stopped by ``max_steps`` over an iterable dataset, Keras 3 with
its bar and with ``verbose=2``, Accelerate, a tqdm loop). docs/logs.md has the table.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from exporter.core.thresholds import Thresholds
from exporter.daemon.app import Exporter
from exporter.daemon.config import Config
from exporter.logs.inspect import inspect_path

from .conftest import get_json
from .fixtures.logs.capture import cri_entries, stamp

# serial: make test runs these alone: real scripts against real-time thresholds; a test beside
# them on the same two cores starves them into pauses that are then read, rightly, as stalls.
pytestmark = [pytest.mark.slow, pytest.mark.serial]

HERE = Path(__file__).parent / "fixtures"
SCRIPTS = HERE / "scripts"
PROGRAMS = HERE / "logs" / "programs"
# name -> (program, attempts): a re-run and a resume run twice into the same log.
CORPUS: dict[str, tuple[Path, int]] = {
    **{p.stem: (p, 1) for p in sorted(SCRIPTS.glob("[!_]*.py"))},
    **{
        name: (PROGRAMS / f"{name}.py", 1)
        for name in (
            "pytorch_tqdm",
            "accelerate_tqdm",
            "transformers_trainer",
            "lightning_tqdm",
            "lightning_rich",
            "lightning_max_steps",
            "lightning_max_steps_rich",
            "keras_fit",
            "keras_verbose2",
        )
    },
}
CORPUS["rerun"] = (SCRIPTS / "rerun.py", 2)
CORPUS["resume"] = (SCRIPTS / "resume.py", 2)
# Programs recorded for tests/test_log_captures.py whose truth files predate "done": Keras
# states its epochs (Epoch i/N) and Trainer and Lightning print their end.
TRAINING_STATES = {"waiting", "running"}
# As in the defaults, the report timeout is the stall threshold: a run that went quiet is
# silent then, not stalled (the states are sampled only until a second after the end).
THRESHOLDS = Thresholds(
    stall_seconds=3.0,
    report_timeout_seconds=3.0,
    plateau_seconds=3600.0,
    finished_grace_seconds=1.0,
)


def _thresholds(name: str, form: str) -> Thresholds:
    """Short, but not shorter than the quiet the form itself brings: in CRI form a bar
    line shorter than 16 KiB reaches the log only when it closes (stderr is line-buffered;
    containerd writes a line at its newline or at 16 KiB), so a Trainer run shows only its
    log dicts meanwhile. A framework's first step (a model's warm-up, four scripts at once on
    two cores) can take longer than a plain loop's. Between two attempts the process is gone
    for seconds (a restart)."""
    program, attempts = CORPUS[name]
    th = THRESHOLDS
    if form == "cri":
        th = replace(THRESHOLDS, stall_seconds=15.0, report_timeout_seconds=15.0)
    elif program.parent == PROGRAMS:
        th = replace(THRESHOLDS, stall_seconds=10.0, report_timeout_seconds=10.0)
    if attempts == 1:
        return th
    return replace(th, stall_seconds=20.0, report_timeout_seconds=20.0)


def _environment(truth: Path, attempt: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "TRUTH_PATH": str(truth),
            "ATTEMPT": str(attempt),
            "KERAS_BACKEND": "torch",
            "TOKENIZERS_PARALLELISM": "false",
            "CUDA_VISIBLE_DEVICES": "",
            "HF_HUB_OFFLINE": "1",
            "PYTHONPATH": str(SCRIPTS),
        }
    )
    env.pop("TERM", None)
    return env


def _run(program: Path, form: str, log: Path, truth: Path, attempt: int) -> subprocess.Popen[bytes]:
    """Start ``program`` writing its log in ``form``; the file is rewritten (truncated), as
    ``python train.py > train.log`` does on a re-run."""
    env = _environment(truth, attempt)
    cwd = program.parent
    if form == "file":
        out = open(log, "wb")  # noqa: SIM115 - the child holds it; closed when it ends
        proc = subprocess.Popen(
            [sys.executable, str(program)], stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd
        )
        out.close()
        return proc
    proc = subprocess.Popen(
        [sys.executable, str(program)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
    )

    def write() -> None:
        with open(log, "wb") as out:
            for stream, tag, message in cri_entries(proc):
                out.write(f"{stamp()} {stream} {tag} ".encode() + message + b"\n")
                out.flush()

    threading.Thread(target=write, daemon=True).start()
    return proc


def _runs(exp: Exporter) -> Iterator[dict[str, Any]]:
    yield from get_json(exp.url + "/api/v1/runs")["runs"]


def _follow(name: str, form: str, tmp: Path) -> dict[str, Any]:
    """Run the script (each attempt) while an exporter follows its log; return what was seen."""
    program, attempts = CORPUS[name]
    log, truth = tmp / f"{name}.log", tmp / f"{name}.{form}.truth.json"
    log.write_bytes(b"")
    truth.unlink(missing_ok=True)
    config = replace(
        Config(),
        listen="127.0.0.1:0",
        mode="standalone",
        log_paths=(str(log),),
        poll_interval=0.25,
        thresholds=_thresholds(name, form),
    )
    exp = Exporter(config, clock=time.time)
    exp.start(poll_loop=True)
    states: list[str] = []
    after: list[str] = []  # the states once the last attempt ended
    attempt_numbers: set[int] = set()
    try:
        for attempt in range(1, attempts + 1):
            proc = _run(program, form, log, truth, attempt)
            deadline = time.monotonic() + 240
            while proc.poll() is None and time.monotonic() < deadline:
                # Until the script wrote its truth (its training is over: what follows is
                # its interpreter shutting down, seconds on a loaded machine).
                seen = states if attempt < attempts or not truth.exists() else after
                for run in _runs(exp):
                    seen.append(run["state"])
                    attempt_numbers.add(run["attempt"])
                time.sleep(0.2)
            assert proc.wait(timeout=5) in (0, 1), f"{name} exited {proc.returncode}"
            time.sleep(0.5)  # the CRI writer drains the pipes
        # The last lines, then the log quiet for the report timeout: a run whose end the log
        # showed is finished by then, and one whose total it never stated is silent.
        # (In CRI form, a second only: the file form shows how a run settles.)
        settle = _thresholds(name, form).report_timeout_seconds if form == "file" else 0.0
        end = time.monotonic() + settle + 1.0
        while time.monotonic() < end:
            for run in _runs(exp):
                after.append(run["state"])
                attempt_numbers.add(run["attempt"])
            time.sleep(0.25)
        runs = list(_runs(exp))
        assert len(runs) == 1, [(r["job_name"], r["state"], r["info"]) for r in runs]
        (final,) = runs
    finally:
        exp.stop()
    return {
        "states": states,
        "after": after,
        "final": final,
        "attempts": attempt_numbers,
        "truth": json.loads(truth.read_text()),
        "inspected": inspect_path(str(log))["report"],
    }


def _done(name: str, truth: dict[str, Any]) -> bool:
    """Whether the log shows the run's end (so ``finished`` is true of it)."""
    if "done" in truth:
        return bool(truth["done"])
    if name == "keras_fit":
        return True  # "Epoch 3/3" and the epoch's last batch
    return truth["max_steps"] is not None and truth["step"] == truth["max_steps"]


def _close(read: float | None, truth: float) -> bool:
    """Printed values are rounded (tqdm: 3 significant digits, Trainer: 4, Lightning: 3
    decimals)."""
    return read is not None and abs(read - truth) <= max(5e-4, abs(truth) * 5e-3)


# Scripts mostly wait (on imports, on their steps, on the settling log): four at a time keep
# two cores busy without starving the exporters (the corpus takes about as long as its
# slowest scripts).
PARALLEL = 4


@pytest.fixture(scope="module")
def followed(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Any]:
    """Every script in both forms, followed live: (name, form) -> what was seen (or the
    error it raised, re-raised by its own test)."""
    root = tmp_path_factory.mktemp("scripts")
    jobs = {}
    with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        for name in sorted(CORPUS, key=lambda n: CORPUS[n][0].parent != PROGRAMS):
            for form in ("file", "cri"):
                workdir = root / f"{name}-{form}"
                workdir.mkdir()
                jobs[name, form] = pool.submit(_follow, name, form, workdir)
    out: dict[tuple[str, str], Any] = {}
    for key, future in jobs.items():
        try:
            out[key] = future.result()
        except Exception as exc:  # reported by the script's own test
            out[key] = exc
    return out


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_a_real_script_reads_as_it_ran_with_no_false_state(
    name: str, followed: dict[tuple[str, str], Any]
) -> None:
    for form in ("file", "cri"):
        got = followed[name, form]
        if isinstance(got, Exception):
            raise got
        truth, final, inspected = got["truth"], got["final"], got["inspected"]
        done = _done(name, truth)
        allowed = TRAINING_STATES | ({"finished"} if done else set())
        where = f"{name} ({form})"
        assert set(got["states"]) <= allowed, (where, sorted(set(got["states"])))
        ended = "finished" if done else "silent"
        # Once training is over the step stops: stalled is true of it until the run goes
        # quiet for the report timeout (nothing in standalone mode says the process ended).
        settled = allowed | {ended} | ({"stalled"} if not done else set())
        assert set(got["after"]) <= settled, (where, sorted(set(got["after"])))
        if form == "file":
            assert final["state"] == ended, (where, final)
        for read in (final, inspected):
            if truth["step"] is not None:
                assert read.get("step") == truth["step"], (where, read)
            # A total the log never states is unknown, never a bar's own length.
            assert read.get("max_steps") == truth["max_steps"], (where, read)
            if truth["loss"] is not None:
                assert _close(read.get("loss"), truth["loss"]), (where, read, truth)
        if CORPUS[name][1] > 1:
            assert max(got["attempts"]) >= 2, (where, got["attempts"])


def test_the_corpus_covers_the_shapes_real_scripts_print() -> None:
    assert len(CORPUS) >= 15
    assert {
        "tqdm_epochs_plain", "tqdm_epochs_desc", "tqdm_epochs_of_n", "tqdm_epochs_colon",
        "tqdm_train_eval", "tqdm_trange_nested", "print_steps", "rerun", "resume",
        "transformers_trainer", "lightning_tqdm", "lightning_rich", "keras_fit",
        "accelerate_tqdm",
    } <= set(CORPUS)  # fmt: skip
