"""Stacks read from logs with no code change: real faulthandler dumps and tracebacks printed
by real processes, and PyTorch's NCCL watchdog lines as a real job printed them.

The NCCL lines are copied as data from a real run's log posted in
https://github.com/XPixelGroup/BasicSR/issues/737 (PyTorch 2.x ``ProcessGroupNCCL.cpp``, a
4-rank job whose all_reduce #808 timed out): they cannot be produced here (no GPU, no NCCL).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from exporter.core.stacks import COLLECTIVE, FROM_FAULTHANDLER, FROM_TRACEBACK, UNKNOWN, diagnose
from exporter.logs.stackdump import StackDumpReader

from .conftest import FakeClock, get_json, need_module

NCCL_BASICSR_737 = [
    "[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, "
    "NumelOut=9801523, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.",
    "[rank1]:[E626 06:24:44.906457629 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) "
    "Rank 1] Exception (either an error or timeout) detected by watchdog at work: 808, last "
    "enqueued NCCL work: 811, last completed NCCL work: 807.",
    "[rank0]:[E626 06:24:44.159932949 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, "
    "NumelOut=9801523, Timeout(ms)=600000) ran for 600030 milliseconds before timing out.",
]

# A training loop with a real tqdm bar that hangs at step 5; faulthandler's watchdog dumps
# every thread's stack to stderr once it has hung for a second.
HANG = textwrap.dedent(
    """
    import faulthandler, sys, threading, time
    from tqdm import tqdm

    def wait_for_batch(event):
        event.wait()

    def main():
        event = threading.Event()
        for step in tqdm(range(100), mininterval=0):
            time.sleep(0.05)
            if step == 5:
                faulthandler.dump_traceback_later(1.0)
                wait_for_batch(event)

    main()
    """
)

CRASH = textwrap.dedent(
    """
    def load(path):
        return open(path).read()

    def main():
        load("/no/such/shard-00042.bin")

    main()
    """
)


def _run(tmp_path: Path, source: str, seconds: float) -> list[str]:
    script = tmp_path / "train.py"
    script.write_text(source)
    proc = subprocess.Popen(
        [sys.executable, str(script)], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL
    )
    try:
        proc.wait(seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
    _, err = proc.communicate()
    return err.decode().replace("\r", "\n").splitlines()


def _cri(lines: list[str]) -> str:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000000000Z", time.gmtime())
    return "".join(f"{stamp} stderr F {line}\n" for line in lines)


def _feed(lines: list[str], rank: str = "") -> list[Any]:
    reader = StackDumpReader(rank)
    out = []
    for line in lines:
        out += reader.feed(line, lambda: 1000.0)
    out += reader.end_of_batch()
    out += reader.end_of_batch()
    return out


def test_a_real_faulthandler_dump_gives_the_frame(tmp_path: Path) -> None:
    need_module("tqdm", "ml")  # the script draws a real tqdm bar
    lines = _run(tmp_path, HANG, 4.0)
    (stacks,) = _feed(lines, rank="3")
    assert stacks.source == FROM_FAULTHANDLER and stacks.rank == "3"
    d = diagnose(stacks)
    assert d.cause == UNKNOWN
    assert d.frame.startswith("train.py:") and d.frame.endswith(" in wait_for_batch"), d
    # Outermost first, as a traceback: the script, main, then the wait.
    thread = stacks.threads[-1]
    assert [f.function for f in thread.frames if "train.py" in f.file] == [
        "<module>",
        "main",
        "wait_for_batch",
    ]


def test_a_real_traceback_gives_the_frame_and_its_code(tmp_path: Path) -> None:
    lines = _run(tmp_path, CRASH, 30.0)
    (stacks,) = _feed(lines)
    assert stacks.source == FROM_TRACEBACK
    d = diagnose(stacks)
    assert d.frame.endswith(" in load") and d.code == "return open(path).read()", d


def test_the_nccl_watchdog_names_the_collective_and_its_sequence_number() -> None:
    found = _feed(NCCL_BASICSR_737)
    assert [(s.rank, s.collective) for s in found] == [
        ("1", found[0].collective),
        ("0", found[1].collective),
    ]
    d = diagnose(found[0])
    assert (d.cause, d.op, d.seq, d.rank) == (COLLECTIVE, "all_reduce", 808, "1")


def test_a_dump_in_a_log_explains_a_stall_with_no_reporter(
    tmp_path: Path, exporter_factory: Any, clock: FakeClock
) -> None:
    need_module("tqdm", "ml")  # the script draws a real tqdm bar
    lines = _run(tmp_path, HANG, 4.0)
    log = tmp_path / "hang.log"
    log.write_text(_cri(lines))
    exp = exporter_factory(log_paths=(str(log),), namespace="ml")
    exp.poll_once()
    exp.poll_once()  # a dump is complete once a poll brought nothing more
    clock.advance(31 * 60)
    doc = get_json(f"{exp.url}/api/v1/runs/ml/hang/stacks")
    # Standalone, nothing tells whether the process lives: silent (stalled in Kubernetes
    # mode, where its pod runs); the dump since its last step explains it either way.
    assert doc["state"] == "silent", doc["state_reason"]
    (d,) = doc["stall"]
    assert d["source"] == "faulthandler" and d["frame"].endswith(" in wait_for_batch")
    assert "waits" not in doc["stall_summary"] and "wait_for_batch" in doc["stall_summary"]


@pytest.mark.parametrize(
    "line",
    [
        "Thread 0x00007f (most recent call first):",
        '  File "x.py", line 1 in f',
        "Traceback (most recent call last):",
        "[rank1]:" + "x" * 70_000,
        "[Rank 99999999] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1",
    ],
)
def test_partial_and_hostile_lines_give_nothing_or_bounded_stacks(line: str) -> None:
    found = _feed([line] * 5000)
    for s in found:
        assert len(s.threads) <= 32 and all(len(t.frames) <= 64 for t in s.threads)
