"""Why a run is stuck, from real processes stuck for real (tests/fixtures/stuck/stuck.py).

Each case runs a real training loop with the real reporter against a real exporter on
loopback. The exporter's clock is the test's: once the process says it blocks, the test moves
the clock past the stall threshold, so the run is stalled exactly then; the reporter's next
heartbeat gets the ``stacks`` directive (every rank's, for the three gloo processes) and
posts every thread's stack. The test reads the exporter's stacks endpoint and its metrics.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from exporter.views.collector import render_runs_text
from exporter.views.stackviews import summary

from .conftest import FakeClock, get_json, http

pytestmark = pytest.mark.slow
SCRIPT = Path(__file__).parent / "fixtures" / "stuck" / "stuck.py"
STALL = 30 * 60.0  # the default stall threshold


class Stuck:
    """One stuck.py process tree, stopped (killed) after the test."""

    def __init__(self, mode: str, url: str, ranks: int, tmp: Path) -> None:
        args = [sys.executable, str(SCRIPT), mode, url]
        if mode == "collective":
            args.append(str(tmp / "rendezvous"))
        self.ranks = ranks
        self.proc = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "TMPDIR": str(tmp)},  # what it writes stays in the test's
        )
        self.output: list[str] = []

    def wait_blocking(self, timeout: float = 120.0) -> None:
        """Until every rank printed ``blocking``; fails with what the processes printed
        (never waits on a pipe without a bound)."""
        assert self.proc.stdout is not None
        out = self.proc.stdout
        lines: queue.Queue[str] = queue.Queue()

        def read() -> None:
            for raw in iter(out.readline, b""):
                lines.put(raw.decode(errors="replace"))

        threading.Thread(target=read, daemon=True).start()
        deadline = time.time() + timeout
        seen = set()
        while len(seen) < self.ranks:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.time()))
            except queue.Empty:
                raise AssertionError(
                    f"not every rank blocked within {timeout:g} s: {sorted(seen)}; "
                    f"exit {self.proc.poll()}; printed:\n{''.join(self.output)}"
                ) from None
            self.output.append(line)
            seen.update(re.findall(r"blocking rank=(\d+)", line))

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)


@pytest.fixture
def stuck(tmp_path: Path) -> Iterator[Any]:
    started: list[Stuck] = []

    def make(mode: str, url: str, ranks: int = 1) -> Stuck:
        s = Stuck(mode, url, ranks, tmp_path)
        started.append(s)
        return s

    yield make
    for s in started:
        s.stop()


def _stacks_when_stalled(
    exporter_factory: Any, clock: FakeClock, stuck: Any, mode: str, ranks: int = 1
) -> dict[str, Any]:
    exp = exporter_factory()
    run = f"stuck-{mode}"
    push = f"{exp.url}/api/v1/namespaces/default/runs/{run}/report"
    proc = stuck(mode, push, ranks)
    proc.wait_blocking()
    # The last step's report is in once the step stays put for a while (a Trainer runs the
    # batches its DataLoader worker read ahead before it waits).
    runs = f"{exp.url}/api/v1/runs"
    before, steady_since = None, time.time()
    while time.time() - steady_since < 1.5:
        step = [r["step"] for r in get_json(runs)["runs"] if r["pod"] == run]
        if step != before:
            before, steady_since = step, time.time()
        time.sleep(0.2)
    clock.advance(STALL + 60)  # the run has been stalled for a minute
    deadline = time.time() + 30
    url = f"{exp.url}/api/v1/runs/default/{run}/stacks"
    while True:
        doc = get_json(url)
        if doc["state"] == "stalled" and len(doc["stall"]) == ranks:
            break
        assert time.time() < deadline, doc
        time.sleep(0.2)
    doc["metrics"] = render_runs_text(exp.tracker.snapshot(clock()))
    return dict(doc)


def _info_lines(metrics: str) -> list[str]:
    return [line for line in metrics.splitlines() if line.startswith("training_stall_info{")]


def test_a_sleep_in_the_training_code_names_its_line(
    exporter_factory: Any, clock: FakeClock, stuck: Any
) -> None:
    doc = _stacks_when_stalled(exporter_factory, clock, stuck, "sleep")
    (d,) = doc["stall"]
    assert d["cause"] == "unknown" and d["source"] == "reporter"
    assert d["frame"].startswith("stuck.py:") and d["frame"].endswith(" in single")
    assert d["code"] == "time.sleep(3600)"
    (st,) = doc["stacks"]
    main = st["threads"][0]
    assert main["name"] == "MainThread"
    assert [f["function"] for f in main["frames"]][-2:] == ["main", "single"]
    # The reporter's own thread is not among them, and no local value is sent.
    assert all("progress-reporter" not in t["name"] for t in st["threads"])
    assert all(
        set(f) == {"file", "line", "function", "code"} for t in st["threads"] for f in t["frames"]
    )
    (line,) = _info_lines(doc["metrics"])
    assert 'cause="unknown"' in line and 'rank="0"' in line and 'source="reporter"' in line
    assert doc["stall_summary"].startswith("rank 0 is at stuck.py:")


def test_a_dataloader_whose_worker_hangs_is_data(
    exporter_factory: Any, clock: FakeClock, stuck: Any
) -> None:
    doc = _stacks_when_stalled(exporter_factory, clock, stuck, "data")
    (d,) = doc["stall"]
    assert d["cause"] == "data", doc["stacks"]
    assert "torch/utils/data/" in json.dumps(doc["stacks"])
    assert doc["stall_summary"].startswith("rank 0 waits for data at stuck.py:")


def test_a_save_to_a_hung_file_is_checkpoint(
    exporter_factory: Any, clock: FakeClock, stuck: Any
) -> None:
    doc = _stacks_when_stalled(exporter_factory, clock, stuck, "checkpoint")
    (d,) = doc["stall"]
    assert d["cause"] == "checkpoint", doc["stacks"]
    # The innermost frame of the script's own code is the file's write that never returns;
    # the training code's call is in the stack.
    assert d["frame"].endswith(" in write"), d
    codes = [f["code"] for f in doc["stacks"][0]["threads"][0]["frames"]]
    assert any(c.startswith("torch.save(") for c in codes), codes


def test_a_real_trainer_whose_dataloader_hangs_is_data_through_our_callback(
    exporter_factory: Any, clock: FakeClock, stuck: Any
) -> None:
    """Transformers' Trainer with our ProgressCallback, its reporter the callback's own: the
    directive reaches it and the stacks show Trainer waiting in its DataLoader."""
    pytest.importorskip("transformers")
    doc = _stacks_when_stalled(exporter_factory, clock, stuck, "trainer")
    (d,) = doc["stall"]
    assert d["cause"] == "data", doc["stacks"]
    functions = [f["function"] for f in doc["stacks"][0]["threads"][0]["frames"]]
    assert "train" in functions and "_inner_training_loop" in functions, functions


def test_a_lightning_step_that_waits_on_a_lock_names_its_line_through_our_callback(
    exporter_factory: Any, clock: FakeClock, stuck: Any
) -> None:
    pytest.importorskip("lightning")
    doc = _stacks_when_stalled(exporter_factory, clock, stuck, "lightning")
    (d,) = doc["stall"]
    assert d["cause"] == "unknown" and d["frame"].endswith(" in training_step"), d
    assert d["code"].startswith("lock.acquire()")
    functions = [f["function"] for f in doc["stacks"][0]["threads"][0]["frames"]]
    assert "fit" in functions, functions


def test_gloo_names_the_blocking_rank_and_the_others_collective(
    exporter_factory: Any, clock: FakeClock, stuck: Any
) -> None:
    doc = _stacks_when_stalled(exporter_factory, clock, stuck, "collective", ranks=3)
    by_rank = {d["rank"]: d for d in doc["stall"]}
    assert set(by_rank) == {"0", "1", "2"}
    assert by_rank["1"]["cause"] == "unknown"
    assert by_rank["1"]["frame"].endswith(" in ddp_rank") and by_rank["1"]["code"].startswith(
        "time.sleep(3600)"
    )
    for rank in ("0", "2"):
        assert by_rank[rank]["cause"] == "collective", by_rank[rank]
        assert by_rank[rank]["op"] == "all_reduce"
        assert by_rank[rank]["code"] == "torch.distributed.all_reduce(grad)"
    # The Flight Recorder: ranks 0 and 2 are in all_reduce #5; rank 1 finished #4 only.
    assert by_rank["0"]["seq"] == by_rank["2"]["seq"] == 5, by_rank
    assert by_rank["1"]["completed"] == 4, by_rank["1"]
    text = doc["stall_summary"]
    assert text.startswith("rank 1 is at stuck.py:") and text.endswith(
        "its last collective finished #4; ranks 0, 2 wait in all_reduce #5"
    ), text
    info = _info_lines(doc["metrics"])
    assert len(info) == 3
    assert sum('cause="collective"' in line and 'op="all_reduce"' in line for line in info) == 2
    # The goodput split charges the stall to the blocking rank's cause.
    split = [
        line
        for line in doc["metrics"].splitlines()
        if line.startswith("training_stall_gpu_seconds_total{") and 'stall_cause="unknown"' in line
    ]
    assert split, doc["metrics"]
    assert summary(()) == ""


def test_the_views_say_why(exporter_factory: Any, clock: FakeClock, stuck: Any) -> None:
    """The status page, top's why line and kubectl progress stacks, on a real stuck run."""
    from exporter.commands.kubectl_progress import format_stacks
    from exporter.commands.top import render
    from exporter.commands.toprows import rows_from_exporter

    exp = exporter_factory()
    push = f"{exp.url}/api/v1/namespaces/default/runs/views/report"
    stuck("sleep", push).wait_blocking()
    time.sleep(1.0)
    clock.advance(STALL + 60)
    deadline = time.time() + 30
    while not get_json(f"{exp.url}/api/v1/runs/default/views/stacks")["stall"]:
        assert time.time() < deadline
        time.sleep(0.2)
    page = http("GET", f"{exp.url}/runs/default/views")[1].decode()
    assert "Why it is stuck:" in page and "stuck.py:" in page and "time.sleep(3600)" in page
    index = http("GET", f"{exp.url}/")[1].decode()
    assert "rank 0 is at stuck.py:" in index
    rows = rows_from_exporter(get_json(f"{exp.url}/api/v1/runs"))
    (row,) = rows
    assert row.why.startswith("rank 0 is at stuck.py:")
    text = render(rows, width=200)
    assert "└ why: rank 0 is at stuck.py:" in text
    doc = get_json(f"{exp.url}/api/v1/runs/default/views/stacks")
    out = format_stacks("views", [doc], clock())
    assert "rank 0 (reporter, " in out and "in single    time.sleep(3600)" in out
