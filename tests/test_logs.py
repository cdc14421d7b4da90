"""Log tailing (rotation, truncation, replacement, bounds) and the log source end to end."""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import pytest

from exporter.core.model import ReportError
from exporter.logs.inspect import inspect_path
from exporter.logs.tail import MAX_LINE, FileTail

from .conftest import T0, get_json


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


def test_a_partial_line_without_its_final_chunk_is_read_at_once_and_flushed_later(
    exporter_factory: Any, clock: Any, tmp_path: Path
) -> None:
    log = tmp_path / "bar.log"
    append(log, cri(" 40%|████      | 20/50 [00:05<00:07,  4.00it/s]", tag="P"))
    exp = exporter_factory(log_paths=(str(log),), namespace="ns")
    exp.poll_once()
    # The newest bar frame of a line still being written counts before the line ends.
    assert get_json(exp.url + "/api/v1/runs")["runs"][0]["step"] == 20
    clock.advance(6)  # the pending partial line is then read as it is
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


# -- logs as people really write them ------------------------------------------------

BAR_10 = "  5%|5         | 10/200 [00:13<05:35,  1.77s/it]"
DICT = "{'loss': '6.8', 'grad_norm': '1.1', 'learning_rate': '4e-05', 'epoch': '0.1'}"


def test_every_carriage_return_segment_is_a_candidate_in_files_and_cri(
    exporter_factory: Any, tmp_path: Path
) -> None:
    """`python train.py > train.log 2>&1`: tqdm frames end in \\r, and Trainer prints its dict
    after the last one, on the same line. A one-line reproduction."""
    plain = tmp_path / "plain.log"
    append(plain, f"{BAR_10}\r{DICT}\n")
    assert inspect_path(str(plain))["matched"] == {"tqdm": 1, "transformers": 1}
    crilog = tmp_path / "cri.log"
    append(crilog, cri(f"{BAR_10}\r{DICT}"))
    for path in (plain, crilog):
        report = inspect_path(str(path))["report"]
        assert (report["step"], report["max_steps"], report["loss"], report["epoch"]) == (
            10, 200, 6.8, 0.1,
        )  # fmt: skip
    exp = exporter_factory(log_paths=(str(tmp_path / "*.log"),), namespace="ns")
    exp.poll_once()
    runs = {r["job_name"]: r for r in get_json(exp.url + "/api/v1/runs")["runs"]}
    for name in ("plain", "cri"):
        assert (runs[name]["step"], runs[name]["loss"]) == (10, 6.8)


def test_of_many_frames_only_the_newest_of_each_bar_is_read() -> None:
    from exporter.logs.parse import parse_message

    frames = "\r".join(
        f"{i * 100 // 500:3d}%|#         | {i}/500 [00:01<00:10,  9.00it/s]" for i in range(1, 500)
    )
    found = parse_message(frames + "\rEval:  50%|#####     | 5/10 [00:01<00:01,  5.00it/s]", 0.0)
    assert [(f.bar.n, f.bar.total) for f in found if f.bar] == [(499, 500), (5, 10)]


@pytest.mark.slow
def test_a_bar_drawn_without_a_newline_is_on_metrics_within_a_second(
    exporter_factory: Any, tmp_path: Path
) -> None:
    """The unterminated tail counts: tqdm redraws its bar with \\r and ends the line only when
    the bar closes, an epoch later. With the poll loop running (1 s), a frame appended with no
    newline is on /metrics within a second; the line's final form wins once it ends."""
    import time

    from .conftest import http

    log = tmp_path / "train.log"
    append(log, "loading\n")
    exp = exporter_factory(poll_loop=True, log_paths=(str(log),), namespace="ns")

    def step() -> float | None:
        body = http("GET", exp.url + "/metrics")[1].decode()
        for line in body.splitlines():
            if line.startswith("training_step{"):
                return float(line.rsplit(" ", 1)[1])
        return None

    waits = []
    for n in (3, 4, 5):
        append(log, f"\r{n * 10:3d}%|###       | {n}/10 [00:0{n}<00:05,  1.00it/s]")
        started = time.monotonic()
        while step() != n and time.monotonic() - started < 5:
            time.sleep(0.05)
        waits.append(time.monotonic() - started)
        assert step() == n
    print(f"bar frame to /metrics: {[round(w, 2) for w in waits]} s")
    assert max(waits) < 1.0  # the log poll interval (0.5 s), a poll and a scrape
    append(log, f"\r100%|##########| 10/10 [00:10<00:00,  1.00it/s]\r{DICT}\n")
    started = time.monotonic()
    while step() != 10 and time.monotonic() - started < 5:
        time.sleep(0.05)
    assert step() == 10


def test_a_bar_line_longer_than_the_line_limit_keeps_its_newest_frames(tmp_path: Path) -> None:
    log = tmp_path / "long.log"
    frames = "".join(
        f"\r{i % 100:3d}%|#         | {i}/100000 [00:01<00:10,  9.00it/s]" for i in range(40_000)
    )
    append(log, frames + "\n")  # ~2.3 MB in one line, over MAX_LINE
    assert len(frames) > MAX_LINE
    assert inspect_path(str(log))["report"]["step"] == 39_999
    tail = FileTail(str(log))
    (line,) = tail.read()
    assert line.endswith(b"39999/100000 [00:01<00:10,  9.00it/s]") and len(line) < MAX_LINE
    assert tail.dropped_long_lines == 0


def test_names_keep_dots_and_a_missing_file_is_one_log_line(
    exporter_factory: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    caplog.set_level(logging.INFO, logger="exporter.logs.source")
    append(tmp_path / "llama-3.1.log", f"{BAR_10}\n")
    later = tmp_path / "later.log"
    exp = exporter_factory(log_paths=(str(tmp_path / "llama-3.1.log"), str(later)), namespace="ns")
    for _ in range(5):
        exp.poll_once()
    (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    assert run["job_name"] == "llama-3.1"
    waiting = [r for r in caplog.records if "later.log" in r.getMessage()]
    assert len(waiting) == 1 and "reading it once it is there" in waiting[0].getMessage()
    assert exp.stats.snapshot().drops.get(("log", "vanished"), 0) == 1  # not one per poll
    append(later, f"{BAR_10}\n")
    exp.poll_once()
    names = sorted(r["job_name"] for r in get_json(exp.url + "/api/v1/runs")["runs"])
    assert names == ["later", "llama-3.1"]
    (tmp_path / "llama-3.1.log").unlink()  # standalone: the file is the run
    exp.poll_once()
    states = {r["job_name"]: r["state"] for r in get_json(exp.url + "/api/v1/runs")["runs"]}
    assert states["llama-3.1"] == "gone"


def test_a_cri_line_caught_half_written_is_not_read_as_a_bar(
    exporter_factory: Any, tmp_path: Path
) -> None:
    log = tmp_path / "pod.log"
    append(log, cri(" 40%|████      | 20/50 [00:05<00:07,  4.00it/s]"))
    append(log, cri(" 60%|██████    | 30/50 [00:07<00:05,  4.00it/s]")[:-1])  # no newline yet
    exp = exporter_factory(log_paths=(str(log),), namespace="ns")
    exp.poll_once()
    (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    assert run["step"] == 20  # not 30 from a bar whose prefix would be the CRI timestamp
    append(log, "\n")
    exp.poll_once()
    assert get_json(exp.url + "/api/v1/runs")["runs"][0]["step"] == 30


def test_every_second_of_a_16_kib_chunk_of_frames_is_a_rate_sample() -> None:
    """containerd writes a tqdm line 16 KiB at a time: some 200 frames over tens of seconds.
    Each second of the bar's own clock in the chunk is a sample (an evaluation shows as the
    gap it left in that clock), not only the last few frames' seconds."""
    from exporter.logs.lines import MAX_MESSAGE
    from exporter.logs.parse import parse_message

    frames = []
    n = 0
    for second in range(40):
        if second == 20:
            continue  # a pause: the clock jumps, no frame in that second
        for _ in range(6):
            n += 1
            pct, clock = n * 100 // 600, f"00:{second:02d}"
            frames.append(f"train: {pct:3d}%|#  | {n}/600 [{clock}<01:00, 5.00it/s, loss=6.9]")
    chunk = "\r" + "\r".join(frames)
    assert 13_000 < len(chunk) < MAX_MESSAGE
    (found,) = parse_message(chunk, 0.0)
    assert found.bar is not None and found.bar.n == n
    seconds = [elapsed for elapsed, _ in found.frames]
    assert seconds == [float(s) for s in range(40) if s != 20]
    assert found.frames[0] == (0.0, 1)  # the first frame of each second


def test_a_line_still_being_written_is_read_from_where_the_last_poll_left_it(
    tmp_path: Path,
) -> None:
    """A tqdm line without a newline grows at every poll. Each poll reads the frames drawn
    since the last one (from the last carriage return it saw), so every second of the bar's
    clock becomes one sample, none twice, whatever the length the line has reached."""
    from exporter.core.tracker import Tracker
    from exporter.logs.source import LogSource, standalone_targets
    from exporter.plumbing.ingest import Ingestor
    from exporter.plumbing.stats import ExporterStats

    log = tmp_path / "train.log"
    tracker = Tracker()
    now = [T0]
    source = LogSource(
        standalone_targets([str(log)], "ns"),
        Ingestor(tracker, ExporterStats(), lambda: now[0]),
        files_are_runs=True,
    )
    n = 0
    for poll in range(6):
        text = ""
        for second in range(poll * 10, poll * 10 + 10):
            for _ in range(4):
                n += 1
                text += f"\r{n * 100 // 1000:3d}%|#  | {n}/1000 [00:{second:02d}<03:00,  4.00it/s]"
        append(log, text)
        now[0] = T0 + poll * 10 + 10
        source.poll()
    (run,) = tracker._runs.values()
    times = [t - T0 for t, _ in run.samples]
    steps = [s for _, s in run.samples]
    assert steps == sorted(set(steps)) and steps[-1] == n
    # Ticks two to three seconds apart (close ones merged) over the whole minute.
    assert times[0] < 2 and times[-1] == 60
    assert all(1 <= b - a <= 3 for a, b in itertools.pairwise(times))


def test_per_epoch_bars_read_live_count_every_epoch_once(
    exporter_factory: Any, clock: Any, tmp_path: Path
) -> None:
    """A fresh bar per epoch (no description), read while it is drawn, in both forms: the
    step is cumulative and a bar's frames already read while its line was being written are
    not counted again when the line ends, whatever stdout line comes in the same poll."""
    for form in ("file", "cri"):
        log = tmp_path / f"{form}.log"
        append(log, "")
        exp = exporter_factory(log_paths=(str(log),), namespace="ns")
        for epoch in range(3):
            frames = [f"\r{n * 10:3d}%|#  | {n}/10 [00:0{n}<00:01,  9.00it/s]" for n in range(11)]
            if form == "file":
                append(log, "".join(frames[:6]))
                exp.poll_once()
                append(log, "".join(frames[6:]) + "\n" + f"epoch {epoch} done\n")
            else:
                append(log, cri("".join(frames[:6]), "P", "stderr") + "\n")
                exp.poll_once()
                append(log, cri(f"epoch {epoch} done") + "\n")
                append(log, cri("".join(frames[6:]), "F", "stderr") + "\n")
            exp.poll_once()
            clock.advance(2)
        (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
        assert (run["step"], run.get("max_steps")) == (30, None), (form, run)
        assert run["epoch"] == 3.0 and run["state"] == "running", (form, run)


def test_a_later_epoch_of_unprinted_size_keeps_the_run_moving_not_stalled(
    exporter_factory: Any, clock: Any, tmp_path: Path
) -> None:
    """PyTorch's CIFAR-10 tutorial prints ``[epoch, batch] loss`` and never the epoch's size:
    in its second epoch the step is unknown, but the count moving on within the epoch moves
    the run's epoch on (placed by the first epoch's last count), so a second epoch longer than
    the stall threshold is running, not stalled; a count that stands still is stalled."""
    from exporter.core.thresholds import Thresholds

    log = tmp_path / "cifar.log"
    exp = exporter_factory(
        log_paths=(str(tmp_path / "*.log"),),
        namespace="local",
        thresholds=Thresholds(stall_seconds=60, plateau_seconds=10**6),
    )
    for i in (2000, 4000, 6000, 8000):
        append(log, f"[1, {i:5d}] loss: 2.1\n")
        exp.poll_once()
        clock.advance(40)
    for i in (2000, 4000, 6000, 8000):  # 160 s of a second epoch, past the 60 s threshold
        append(log, f"[2, {i:5d}] loss: 1.5\n")
        exp.poll_once()
        clock.advance(40)
    (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    assert (run["state"], run["loss"], run["epoch"]) == ("running", 1.5, 2.0)
    for _ in range(3):  # the same count again: no progress for 120 s
        clock.advance(40)
        append(log, "[2,  8000] loss: 1.5\n")
        exp.poll_once()
    (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    assert run["state"] == "stalled"
