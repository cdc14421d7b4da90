"""File and HTTP sources against real files, FIFOs, symlinks and real HTTP servers."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from exporter.commands.demo import write_atomic
from exporter.core.model import RunKey
from exporter.core.tracker import Tracker, TrackerConfig
from exporter.plumbing.ingest import Ingestor
from exporter.plumbing.stats import ExporterStats
from exporter.sources.file import StatusDirSource
from exporter.sources.http import HttpSource, HttpTarget

from .conftest import FakeClock


def setup_file_source(
    tmp_path: Path, clock: FakeClock
) -> tuple[StatusDirSource, Tracker, ExporterStats]:
    tracker = Tracker(TrackerConfig(retention=60))
    stats = ExporterStats()
    source = StatusDirSource(
        str(tmp_path), "local", Ingestor(tracker, stats, clock), max_bytes=64 * 1024
    )
    return source, tracker, stats


def steps(tracker: Tracker, now: float) -> dict[str, int | None]:
    return {s.key.pod: s.step for s in tracker.snapshot(now)}


def test_status_files_one_run_per_file(tmp_path: Path, clock: FakeClock) -> None:
    source, tracker, stats = setup_file_source(tmp_path, clock)
    write_atomic(str(tmp_path), "run-a.json", b'{"step": 3, "max_steps": 10}')
    write_atomic(
        str(tmp_path),
        "run-b.json",
        b'{"trainerStatus": {"metrics": [{"name": "current_step", "value": "4"}]}}',
    )
    write_atomic(str(tmp_path), "run-c.json", b'{"currentStep": 5, "totalSteps": 9}')
    (tmp_path / "notes.txt").write_text("ignored")
    source.poll()
    assert steps(tracker, clock()) == {"run-a": 3, "run-b": 4, "run-c": 5}
    assert {s.key.namespace for s in tracker.snapshot(clock())} == {"local"}
    assert stats.snapshot().source_up == {"file": True}


def test_unchanged_files_are_not_reparsed(tmp_path: Path, clock: FakeClock) -> None:
    source, _, stats = setup_file_source(tmp_path, clock)
    write_atomic(str(tmp_path), "r.json", b'{"step": 1}')
    for _ in range(5):
        source.poll()
    assert stats.snapshot().reports == {("file", "accepted"): 1}


def test_half_written_file_keeps_previous_report_and_counts(
    tmp_path: Path, clock: FakeClock
) -> None:
    source, tracker, stats = setup_file_source(tmp_path, clock)
    path = tmp_path / "r.json"
    path.write_bytes(b'{"step": 10, "loss": 0.5}')
    source.poll()
    path.write_bytes(b'{"step": 11, "lo')  # a writer that did not use atomic rename
    source.poll()
    snap = tracker.snapshot(clock())[0]
    assert (snap.step, snap.loss) == (10, 0.5)
    assert stats.snapshot().drops == {("file", "invalid_json"): 1}
    assert "r.json" in source.last_errors
    path.write_bytes(b'{"step": 12, "loss": 0.4}')
    source.poll()
    assert tracker.snapshot(clock())[0].step == 12
    assert source.last_errors == {}


def test_symlink_fifo_directory_and_huge_files_are_refused(
    tmp_path: Path, clock: FakeClock
) -> None:
    source, tracker, stats = setup_file_source(tmp_path, clock)
    secret = tmp_path.parent / f"{tmp_path.name}-secret.json"
    secret.write_text('{"step": 999}')
    (tmp_path / "shadow.json").symlink_to("/etc/shadow")
    (tmp_path / "escape.json").symlink_to(secret)
    os.mkfifo(tmp_path / "pipe.json")
    (tmp_path / "dir.json").mkdir()
    with open(tmp_path / "huge.json", "wb") as fh:
        fh.truncate(1 << 30)  # 1 GiB, sparse: must be refused by size, never read
    write_atomic(str(tmp_path), "good.json", b'{"step": 1}')
    started = time.monotonic()
    source.poll()
    assert time.monotonic() - started < 2  # the FIFO did not block, the 1 GiB was not read
    assert steps(tracker, clock()) == {"good": 1}
    drops = stats.snapshot().drops
    assert drops[("file", "symlink")] == 2
    assert drops[("file", "not_regular_file")] == 2  # the FIFO and the directory
    assert drops[("file", "oversize")] == 1


def test_vanished_file_retires_run_after_retention(tmp_path: Path, clock: FakeClock) -> None:
    source, tracker, _ = setup_file_source(tmp_path, clock)
    write_atomic(str(tmp_path), "r.json", b'{"step": 5}')
    source.poll()
    os.unlink(tmp_path / "r.json")
    clock.advance(10)
    source.poll()
    snap = tracker.snapshot(clock())[0]
    assert snap.gone and snap.step == 5
    clock.advance(61)
    tracker.expire(clock())
    assert tracker.snapshot(clock()) == []


def test_missing_status_dir_marks_source_down(tmp_path: Path, clock: FakeClock) -> None:
    tracker, stats = Tracker(), ExporterStats()
    source = StatusDirSource(str(tmp_path / "absent"), "x", Ingestor(tracker, stats, clock))
    source.poll()
    assert stats.snapshot().source_up == {"file": False}


class ProgressionServer:
    """A real HTTP server standing in for a training pod's :28080 progression endpoint."""

    def __init__(self) -> None:
        self.routes: dict[str, tuple[int, bytes, float]] = {}
        routes = self.routes

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                status, body, delay = routes.get(self.path, (404, b"{}", 0.0))
                time.sleep(delay)
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"


@pytest.fixture
def progression() -> Iterator[ProgressionServer]:
    server = ProgressionServer()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


def target(server: ProgressionServer, name: str) -> HttpTarget:
    return HttpTarget(RunKey("ns", name, name), server.url(f"/{name}/metrics"))


def test_http_source_pulls_opendatahub_json(
    progression: ProgressionServer, clock: FakeClock
) -> None:
    progression.routes["/a/metrics"] = (
        200,
        json.dumps(
            {
                "currentStep": 450,
                "totalSteps": 1000,
                "progressPercentage": 45,
                "trainMetrics": {"loss": 0.25},
                "evalMetrics": {"eval_loss": 0.3},
            }
        ).encode(),
        0.0,
    )
    tracker, stats = Tracker(), ExporterStats()
    source = HttpSource(lambda: [target(progression, "a")], Ingestor(tracker, stats, clock))
    source.poll()
    (snap,) = tracker.snapshot(clock())
    assert (snap.step, snap.max_steps, snap.loss, snap.eval_loss) == (450, 1000, 0.25, 0.3)
    assert snap.meta.source == "http"
    assert stats.snapshot().source_up == {"http": True}


def test_http_failures_keep_previous_values_and_are_counted(
    progression: ProgressionServer, clock: FakeClock
) -> None:
    tracker, stats = Tracker(), ExporterStats()
    names = ["ok", "err", "slow", "big", "bad"]
    targets = [target(progression, n) for n in names]
    targets.append(HttpTarget(RunKey("ns", "down", "down"), "http://127.0.0.1:9/metrics"))
    source = HttpSource(lambda: targets, Ingestor(tracker, stats, clock), timeout=0.5)
    for n in names:
        progression.routes[f"/{n}/metrics"] = (200, b'{"step": 1}', 0.0)
    source.poll()
    progression.routes["/ok/metrics"] = (200, b'{"step": 2}', 0.0)
    progression.routes["/err/metrics"] = (500, b"oops", 0.0)
    progression.routes["/slow/metrics"] = (200, b'{"step": 2}', 3.0)
    progression.routes["/big/metrics"] = (200, b" " * 70_000, 0.0)
    progression.routes["/bad/metrics"] = (200, b"<html>", 0.0)
    started = time.monotonic()
    source.poll()
    assert time.monotonic() - started < 2.5  # bounded by the timeout, fetched concurrently
    assert steps(tracker, clock()) == {"ok": 2, "err": 1, "slow": 1, "big": 1, "bad": 1}
    drops = stats.snapshot().drops
    assert drops[("http", "http_status")] == 1
    assert drops[("http", "timeout")] == 1
    assert drops[("http", "oversize")] == 1
    assert drops[("http", "invalid_json")] == 1
    assert drops[("http", "unreachable")] == 2
    assert stats.snapshot().source_up == {"http": False}
    source.close()


@pytest.mark.slow
def test_http_targets_pulled_concurrently(progression: ProgressionServer, clock: FakeClock) -> None:
    tracker = Tracker()
    names = [f"r{i}" for i in range(8)]
    for n in names:
        progression.routes[f"/{n}/metrics"] = (200, b'{"step": 3}', 0.5)
    source = HttpSource(
        lambda: [target(progression, n) for n in names],
        Ingestor(tracker, ExporterStats(), clock),
        timeout=2,
        workers=8,
    )
    started = time.monotonic()
    source.poll()
    assert time.monotonic() - started < 2.0  # 8 x 0.5 s serially would be 4 s
    assert len(tracker) == 8
    source.close()


def test_removed_http_target_retires_its_run(
    progression: ProgressionServer, clock: FakeClock
) -> None:
    progression.routes["/a/metrics"] = (200, b'{"step": 1}', 0.0)
    tracker = Tracker(TrackerConfig(retention=5))
    current = [target(progression, "a")]
    source = HttpSource(lambda: current, Ingestor(tracker, ExporterStats(), clock))
    source.poll()
    current.clear()
    source.poll()
    assert tracker.snapshot(clock())[0].gone
    source.close()


@pytest.mark.slow
def test_a_pass_over_unchanged_files_grows_linearly_with_their_number(tmp_path: Path) -> None:
    """Four times the files must cost about four times the CPU, not
    sixteen (the pass compared names against a list: 10,000 files, 1.7 s a pass)."""

    def cost(count: int) -> float:
        directory = tmp_path / str(count)
        directory.mkdir()
        for i in range(count):
            (directory / f"run-{i:05d}.json").write_text('{"step": 1}')
        clock = FakeClock()
        tracker = Tracker(TrackerConfig(max_runs=10_000))
        source = StatusDirSource(
            str(directory), "x", Ingestor(tracker, ExporterStats(), clock), max_files=10_000
        )
        source.poll()  # parses every file once
        assert len(tracker) == count
        best = float("inf")
        for _ in range(3):
            started = time.process_time()
            source.poll()
            best = min(best, time.process_time() - started)
        return best

    small, large = cost(2000), cost(8000)
    assert large < 8 * small, (small, large)  # linear: ~4x; quadratic: ~16x
