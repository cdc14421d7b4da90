"""Log tailing (rotation, truncation, replacement, bounds) and the log source end to end."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from exporter.logs.inspect import inspect_path
from exporter.logs.tail import MAX_LINE, FileTail
from exporter.model import ReportError

from .conftest import get_json


def append(path: Path, text: str | bytes) -> None:
    with open(path, "ab") as fh:
        fh.write(text.encode() if isinstance(text, str) else text)


def test_lines_partial_lines_rotation_and_truncation(tmp_path: Path) -> None:
    log = tmp_path / "0.log"
    append(log, "a\nb\npartial")
    tail = FileTail(str(log))
    assert tail.read() == [b"a", b"b"]
    append(log, " line\nc\n")
    assert tail.read() == [b"partial line", b"c"]
    append(log, "written just before rotation\n")
    os.rename(log, tmp_path / "0.log.20261129-101010")  # the kubelet rotates...
    append(log, "first line of the new file\n")  # ...and the runtime starts a new one
    assert tail.read() == [b"written just before rotation", b"first line of the new file"]
    with open(log, "wb") as fh:  # truncated in place
        fh.write(b"x\n")
    assert tail.read() == [b"x"]
    os.unlink(log)
    with pytest.raises(ReportError) as exc:
        tail.read()
        tail.read()
    assert exc.value.reason == "vanished"


def test_a_restart_reads_only_the_end_of_a_big_file(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    append(log, "".join(f"line {i}\n" for i in range(300_000)))  # ~3.5 MB
    tail = FileTail(str(log), backfill=1024)
    lines = tail.read()
    assert lines[-1] == b"line 299999" and len(lines) < 200
    assert all(line.startswith(b"line ") for line in lines)  # the cut first line was skipped


def test_symlinks_directories_and_endless_lines_are_refused_or_bounded(tmp_path: Path) -> None:
    link = tmp_path / "link.log"
    link.symlink_to("/etc/passwd")
    with pytest.raises(ReportError) as exc:
        FileTail(str(link)).read()
    assert exc.value.reason == "symlink"
    (tmp_path / "dir.log").mkdir()
    with pytest.raises(ReportError) as exc:
        FileTail(str(tmp_path / "dir.log")).read()
    assert exc.value.reason == "not_regular_file"
    log = tmp_path / "long.log"
    append(log, b"x" * (10 * 1024 * 1024))  # 10 MB without a newline
    tail = FileTail(str(log), backfill=20 * 1024 * 1024)
    assert tail.read() == [] and tail.dropped_long_lines == 1 and len(tail._buffer) <= MAX_LINE
    append(log, b"\nok\n")
    assert tail.read()[-1] == b"ok"
    # A followed file replaced by a symlink out of place is not followed either.
    good = tmp_path / "good.log"
    append(good, "1\n")
    tail = FileTail(str(good))
    tail.read()
    os.unlink(good)
    good.symlink_to("/etc/shadow")
    with pytest.raises(ReportError) as exc:
        tail.read()
        tail.read()
    assert exc.value.reason == "symlink"


def cri(msg: str, tag: str = "F", stream: str = "stdout") -> str:
    return f"2026-11-29T18:20:54.123456789Z {stream} {tag} {msg}\n"


def test_log_source_end_to_end(exporter_factory: Any, tmp_path: Path) -> None:
    log = tmp_path / "bert.log"
    append(
        log,
        cri("Loading checkpoint shards")
        + cri(" 16%|█▌        | 8/", tag="P")
        + cri("50 [00:02<00:10,  3.98it/s]")
        + cri("{'loss': '6.903', 'learning_rate': '4.6e-05', 'epoch': '0.1'}")
        + cri("\x00\xff\xfe binary garbage")
        + "not a CRI line at all\n",
    )
    exp = exporter_factory(log_paths=(str(tmp_path / "*.log"),), namespace="local")
    exp.poll_once()
    (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    assert (run["job_name"], run["step"], run["max_steps"], run["loss"]) == ("bert", 8, 50, 6.903)
    assert run["info"]["source"] == "log"
    # An appended line shows on the next poll (the poll interval is 1 s by default).
    append(log, cri(" 20%|██        | 10/50 [00:03<00:09,  3.98it/s]"))
    exp.poll_once()
    assert get_json(exp.url + "/api/v1/runs")["runs"][0]["step"] == 10
    text = exp.url + "/metrics"
    from .conftest import http

    body = http("GET", text)[1].decode()
    assert 'training_exporter_log_matches_total{parser="tqdm"} 2.0' in body
    assert 'training_exporter_log_matches_total{parser="transformers"} 1.0' in body


def test_structured_reports_win_and_partial_floods_are_bounded(
    exporter_factory: Any, tmp_path: Path
) -> None:
    from .conftest import http

    log = tmp_path / "job.log"
    append(log, cri('{"step": 3, "loss": 2.0}'))
    exp = exporter_factory(log_paths=(str(log),), namespace="ns")
    assert (
        http("POST", exp.url + "/api/v1/namespaces/ns/runs/job/report", b'{"step": 99}')[0] == 200
    )
    exp.poll_once()
    assert get_json(exp.url + "/api/v1/runs")["runs"][0]["step"] == 99  # the push wins
    assert exp.stats.snapshot().drops[("log", "structured_wins")] == 1
    append(log, "".join(cri("x" * 100, tag="P") for _ in range(100_000)))  # never a final chunk
    exp.poll_once()
    exp.poll_once()
    from exporter.logs.cri import MAX_PARTIAL
    from exporter.logs.source import LogSource

    (source,) = [s for s in exp.sources.values() if isinstance(s, LogSource)]
    held = [n for f in source._files.values() for n in f.cri.held()]
    assert held and max(held) <= MAX_PARTIAL  # memory stays bounded


def test_a_partial_line_without_its_final_chunk_is_flushed_after_a_timeout(
    exporter_factory: Any, clock: Any, tmp_path: Path
) -> None:
    log = tmp_path / "bar.log"
    append(log, cri(" 40%|████      | 20/50 [00:05<00:07,  4.00it/s]", tag="P"))
    exp = exporter_factory(log_paths=(str(log),), namespace="ns")
    exp.poll_once()
    assert get_json(exp.url + "/api/v1/runs")["runs"] == []  # still waiting for the rest
    clock.advance(6)
    exp.poll_once()
    assert get_json(exp.url + "/api/v1/runs")["runs"][0]["step"] == 20


def test_inspect_reads_a_file_exactly_as_the_live_source_does(
    exporter_factory: Any, clock: Any, tmp_path: Path
) -> None:
    """One CRI joiner for both: a bar split into P chunks with a final F, then a newer bar
    only ever written as P chunks (the kubelet had no newline yet)."""
    log = tmp_path / "run.log"
    append(log, cri(" 40%|████      | 20/", tag="P"))
    append(log, cri("50 [00:05<00:07,  4.00it/s]", tag="F"))
    append(log, cri(" 60%|██████    | 30/50 [00:07<00:05,  4.00it/s]", tag="P"))
    exp = exporter_factory(log_paths=(str(log),), namespace="ns")
    exp.poll_once()
    clock.advance(6)  # the pending partial line is read as it is after 5 s
    exp.poll_once()
    (live,) = get_json(exp.url + "/api/v1/runs")["runs"]
    inspected = inspect_path(str(log))
    assert (live["step"], live["max_steps"]) == (30, 50)
    assert (inspected["report"]["step"], inspected["report"]["max_steps"]) == (30, 50)
