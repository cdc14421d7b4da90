"""Each source polls on its own schedule: a slow one delays no other (node_exporter's reason
for running collectors concurrently), and every poll reports its duration and success."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from exporter.core.model import RunKey, RunMeta
from exporter.plumbing.schedule import Scheduler
from exporter.sources.http import HttpTarget

from .conftest import get_json, http


def test_a_slow_job_delays_no_other_and_every_run_is_reported() -> None:
    done: list[tuple[str, float, bool]] = []
    release = threading.Event()

    def boom() -> None:
        raise RuntimeError("a source bug")

    scheduler = Scheduler(
        {"slow": lambda: release.wait(5), "fast": lambda: None, "broken": boom},
        interval=0.05,
        done=lambda *x: done.append(x),
    )
    scheduler.start()
    time.sleep(0.6)
    fast_runs = sum(1 for name, _, _ in done if name == "fast")
    assert not scheduler.all_ran()  # the slow one has not finished its first run
    release.set()
    scheduler.stop()
    assert fast_runs >= 5
    assert all(ok is False for name, _, ok in done if name == "broken")
    assert any(name == "slow" and seconds >= 0.5 for name, seconds, _ in done)
    assert scheduler.all_ran()


class _Trickle(BaseHTTPRequestHandler):
    """A pod whose progress endpoint sends its body at a byte every 0.3 s."""

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        body = b'{"currentStep": 5, "totalSteps": 100}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        for i in range(len(body)):
            try:
                self.wfile.write(body[i : i + 1])
                self.wfile.flush()
            except OSError:
                return
            time.sleep(0.3)


@pytest.mark.slow
def test_a_trickling_http_target_does_not_hold_back_status_files(
    exporter_factory: Any, tmp_path: Path
) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    target = HttpTarget(
        RunKey("standalone", "slow", "slow"),
        f"http://127.0.0.1:{server.server_address[1]}/metrics",
        RunMeta(source="http"),
    )
    try:
        exp = exporter_factory(
            poll_loop=True,
            status_dir=str(tmp_path),
            http_targets=(target,),
            poll_interval=0.1,
            http_timeout=30.0,
        )
        (tmp_path / "fast.json").write_text('{"step": 1, "max_steps": 10}')
        deadline = time.monotonic() + 3
        steps: list[int] = []
        while time.monotonic() < deadline:
            runs = {r["pod"]: r for r in get_json(exp.url + "/api/v1/runs")["runs"]}
            if "fast" in runs:
                steps.append(runs["fast"]["step"])
                if steps[-1] == 1:
                    (tmp_path / "fast.json").write_text('{"step": 2, "max_steps": 10}')
                if steps[-1] == 2:
                    break
            time.sleep(0.05)
        # Both versions of the file were read within 3 s, while the HTTP pull took 11 s.
        assert steps and steps[-1] == 2, steps
        metrics = http("GET", exp.url + "/metrics")[1].decode()
        assert 'training_exporter_source_poll_success{source="file"} 1.0' in metrics
        assert 'training_exporter_source_poll_duration_seconds{source="file"}' in metrics
    finally:
        server.shutdown()
