"""The demo's simulated runs reach their intended states, and the CLI runs for real."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

from exporter.demo import RUNS, Demo

from .conftest import T0, FakeClock, get_json, http


def test_demo_runs_reach_their_states_through_real_sources() -> None:
    clock = FakeClock(T0)
    demo = Demo(listen="127.0.0.1:0", clock=clock)
    demo.exporter.start(poll_loop=False)
    try:
        for t in range(0, 181, 2):
            clock.now = T0 + t
            demo.tick(float(t))
            demo.exporter.poll_once()
        doc = get_json(demo.exporter.url + "/api/v1/runs")
    finally:
        demo.stop()
    runs = {r["job_name"]: r for r in doc["runs"]}
    assert demo.errors == 0
    assert {r.name for r in RUNS} == set(runs)
    assert {name: r["state"] for name, r in runs.items()} == {
        "healthy-llm": "running",
        "hung-nccl": "stalled",
        "plateau-bert": "plateaued",
        "diverging-gpt": "diverged",
        "finished-vit": "finished",
    }
    assert {name: r["info"]["source"] for name, r in runs.items()} == {
        "healthy-llm": "push",
        "hung-nccl": "file",
        "plateau-bert": "http",
        "diverging-gpt": "push",
        "finished-vit": "file",
    }
    assert runs["hung-nccl"]["stalled_gpu_seconds"] > 0
    assert runs["healthy-llm"]["gpus"] == 8
    assert 0 < runs["healthy-llm"]["eta_seconds"] < 10_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if http("GET", url)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{url} did not come up")


def test_cli_demo_serves_metrics_and_exits_after_duration() -> None:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "exporter.cli",
            "demo",
            "--listen",
            f"127.0.0.1:{port}",
            "--duration",
            "4",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/readyz")
        time.sleep(1.5)
        body = http("GET", f"http://127.0.0.1:{port}/metrics")[1].decode()
        for run in RUNS:
            assert f'job_name="{run.name}"' in body, run.name
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert f"http://127.0.0.1:{port}/metrics" in out


def test_cli_run_standalone_with_status_dir_and_sigterm(tmp_path: Any) -> None:
    (tmp_path / "my-run.json").write_text('{"step": 12, "max_steps": 100, "loss": 0.7}')
    port = free_port()
    env = {**os.environ, "TPE_STALL_THRESHOLD": "5m"}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "exporter.cli",
            "run",
            "--listen",
            f"127.0.0.1:{port}",
            "--status-dir",
            str(tmp_path),
            "--namespace",
            "laptop",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/readyz")
        body = http("GET", f"http://127.0.0.1:{port}/metrics")[1].decode()
        assert 'training_step{job_name="my-run",namespace="laptop",pod="my-run"} 12.0' in body
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=10)
    finally:
        proc.kill()
    assert proc.returncode == 0


def test_cli_reports_bad_config_clearly(tmp_path: Any) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text("stall_threshold: soon\n")
    proc = subprocess.run(
        [sys.executable, "-m", "exporter.cli", "run", "--config", str(bad)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert "stall_threshold" in proc.stderr and "soon" in proc.stderr


def test_cli_kubernetes_mode_needs_the_node_name() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("NODE_NAME", "TPE_NODE_NAME")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "exporter.cli",
            "run",
            "--mode",
            "kubernetes",
            "--listen",
            "127.0.0.1:0",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )
    assert proc.returncode == 2 and "NODE_NAME" in proc.stderr
