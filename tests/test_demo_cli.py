"""The demo's simulated runs reach their intended states, and the CLI runs for real."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bench.common import free_port
from exporter.commands.cli import _parser
from exporter.commands.demo import RUNS, Demo
from exporter.core.humanize import setting
from exporter.core.states import NAMES
from exporter.core.thresholds import SPECS, Thresholds
from exporter.daemon.config import Config
from exporter.plumbing.settings import parse_duration

from .conftest import T0, FakeClock, get_json, http

# The demo runs for its real seconds (two minutes in one test): on make test's waiting worker.
pytestmark = pytest.mark.waits


def _observed(states: list[str]) -> tuple[str, ...]:
    """The states in the order they showed, each once per stretch."""
    out: list[str] = []
    for state in states:
        if not out or out[-1] != state:
            out.append(state)
    return tuple(out)


@pytest.mark.slow
def test_demo_runs_show_their_states_within_two_minutes_through_real_sources() -> None:
    clock = FakeClock(T0)
    demo = Demo(listen="127.0.0.1:0", clock=clock)
    demo.exporter.start(poll_loop=False)
    seen: dict[str, list[str]] = {r.name: [] for r in RUNS}
    try:
        for t in range(0, 121):
            clock.now = T0 + t
            demo.tick(float(t))
            demo.exporter.poll_once()
            doc = get_json(demo.exporter.url + "/api/v1/runs")
            for r in doc["runs"]:
                seen[r["job_name"]].append(r["state"])
            if t == 119:
                last = {r["job_name"]: r for r in doc["runs"]}
            if t == 30:
                seen_early = {r["job_name"]: r for r in doc["runs"]}
    finally:
        demo.stop()
    assert demo.errors == 0
    # Every run went through exactly the states it promises, in order, within two minutes.
    assert {name: _observed(states) for name, states in seen.items()} == {
        r.name: r.shows for r in RUNS
    }
    # The healthy run never left running, at any of the 121 polls.
    assert seen["healthy-llm"] == ["running"] * 121
    assert {name: r["info"]["source"] for name, r in last.items()} == {
        "healthy-llm": "push",
        "hung-save": "push",
        "plateau-bert": "http",
        "diverging-gpt": "push",
        "finished-vit": "file",
        "loading-t5": "push",
        "crashed-whisper": "push",
        "straggler-sd": "push",
        "deleted-bart": "file",
    }
    assert last["hung-save"]["stalled_gpu_seconds"] > 0
    assert last["hung-save"]["state_reason"].startswith("stalled for ")
    # Why it is stuck, from the real stack of its stuck thread, asked for and sent.
    hung = last["hung-save"]
    said = r"rank 0 is saving a checkpoint at demo\.py:\d+ in save_checkpoint"
    assert re.fullmatch(said, hung["stall_summary"]), hung["stall_summary"]
    # It saved at 10 s. At risk: its 16 GPUs from then to the stall's onset (50 s: the last
    # step at 20 s plus the 30 s threshold), as goodput charges a stall from its onset.
    assert hung["last_checkpoint_step"] == 21
    assert hung["progress_at_risk_gpu_seconds"] == pytest.approx(16 * 40, rel=0.05)
    # Tokens, MFU and a deadline: met while it ran at 5 steps/s, missed at 2.
    straggler = last["straggler-sd"]
    assert straggler["model_flops_utilization"] == pytest.approx(0.129, abs=0.01)
    assert straggler["tokens_per_second"] == pytest.approx(2 * 65_536, rel=0.01)
    assert straggler["deadline_miss_probability"]["user"] > 0.7
    assert seen_early["straggler-sd"]["deadline_miss_probability"]["user"] < 0.1
    assert seen_early["straggler-sd"]["model_flops_utilization"] == pytest.approx(0.323, abs=0.01)
    assert last["healthy-llm"]["gpus"] == 8
    assert 0 < last["healthy-llm"]["eta_seconds"] < 200_000
    # No stale promises: runs that will not finish by themselves have no ETA.
    for name in ("hung-save", "diverging-gpt", "crashed-whisper", "finished-vit"):
        assert last[name]["eta_seconds"] is None, name


def test_readme_names_the_demo_runs_and_their_states() -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme.split("## Try it", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([a-z0-9-]+)` \| ([a-z ,>-]+?) \|", section, re.M)
    assert [(n, tuple(s.split(" -> "))) for n, s in rows] == [(r.name, r.shows) for r in RUNS]
    # Every state of the table is in the demo, but the one that needs Kubernetes.
    shown = {state for r in RUNS for state in r.shows}
    assert shown == set(NAMES) - {"failed"}
    assert "failed" in section


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


@pytest.mark.slow
def test_cli_demo_serves_metrics_and_exits_after_duration() -> None:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "exporter",
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
            "exporter",
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
        # A clean stop: sources, the server and the state file each have a few seconds.
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    # Where to look, both: what Prometheus scrapes and what a person opens.
    url = f"http://127.0.0.1:{port}"
    assert f"serving {url}/metrics, status page {url}/" in stdout.splitlines()[0], stdout


def test_cli_reports_bad_config_clearly(tmp_path: Any) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text("stall_threshold: soon\n")
    proc = subprocess.run(
        [sys.executable, "-m", "exporter", "run", "--config", str(bad)],
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
            "exporter",
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


@pytest.mark.slow
def test_cli_demo_shows_every_state_within_two_minutes_in_real_time() -> None:
    """The README's promise, as a new user meets it: `training-progress-exporter demo`, then
    watch /api/v1/runs for two minutes of wall time."""
    port = free_port()
    # -X faulthandler: a demo that does not stop is made to print every thread's stack.
    proc = subprocess.Popen(
        [
            sys.executable,
            "-X",
            "faulthandler",
            "-m",
            "exporter",
            "demo",
            "--listen",
            f"127.0.0.1:{port}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    seen: dict[str, list[str]] = {r.name: [] for r in RUNS}
    try:
        wait_http(url + "/readyz")
        started = time.monotonic()
        while time.monotonic() - started < 120:
            for r in get_json(url + "/api/v1/runs")["runs"]:
                seen[r["job_name"]].append(r["state"])
            if all(_observed(seen[r.name]) == r.shows for r in RUNS):
                break
            time.sleep(1.0)
        elapsed = time.monotonic() - started
        proc.send_signal(signal.SIGTERM)
        stopping = time.monotonic()
        try:
            out, err = proc.communicate(timeout=25)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)  # faulthandler prints the threads' stacks
            out, err = proc.communicate(timeout=10)
            pytest.fail(f"the demo did not stop within 25 s of SIGTERM; its threads:\n{err}")
        print(f"stopped {time.monotonic() - stopping:.1f} s after SIGTERM")
    finally:
        proc.kill()
    print(f"\nevery demo state shown after {elapsed:.0f} s")
    assert {name: _observed(states) for name, states in seen.items()} == {
        r.name: r.shows for r in RUNS
    }
    assert set(seen["healthy-llm"]) == {"running"} and len(seen["healthy-llm"]) > 30
    assert proc.returncode == 0, err
    assert f"status page:  {url}/" in out


def test_run_help_prints_the_real_defaults() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "exporter", "run", "--help"],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    d = Config()
    th = Thresholds()
    expected = {
        f"--{spec.name.replace('_', '-')}": setting(getattr(th, spec.name))
        if spec.kind == "duration"
        else f"{getattr(th, spec.name):g}"
        for spec in SPECS
    }
    expected |= {
        "--retention": setting(d.retention),
        "--poll-interval": setting(d.poll_interval),
        "--listen": "127.0.0.1:9465 standalone, 0.0.0.0:9465 in Kubernetes mode",
    }
    for flag, default in expected.items():
        options = text[text.index("options:") :]
        after = options[options.index(flag + " ") :]
        shown = re.search(r"\(default ([^)]+)\)", after)
        assert shown is not None and shown.group(1) == default, (flag, after[:200])
    for spec in SPECS:  # one spelling per option in the help; the old one still works
        old = f"--{spec.alias.replace('_', '-')}"
        shown_old = re.search(re.escape(old) + r"(?![\w-])", text) is not None
        assert shown_old == (spec.alias == spec.name), old
        parsed = _parser().parse_args(["run", old, "7"])
        assert getattr(parsed, spec.name) == "7"
    # What help prints parses back to the same default.
    assert parse_duration(setting(th.plateau_seconds), "x") == th.plateau_seconds == 7200


def _sample_value(body: str, name: str, source: str) -> float:
    line = next(x for x in body.splitlines() if x.startswith(f'{name}{{source="{source}"}}'))
    return float(line.split()[-1])


@pytest.mark.slow
def test_what_cannot_be_read_is_said_once_and_on_readyz(tmp_path: Any) -> None:
    """A status directory that does not exist, a log file that does not exist, an HTTP
    target nobody answers at: each a warning, once however many polls fail, the source
    down with the reason on /readyz (which stays 200: pushes still work), source_up and
    source_poll_success agreeing; once the directory and the file exist, up again."""
    port = free_port()
    status_dir, log_file = tmp_path / "status", tmp_path / "train.log"
    config = tmp_path / "c.yaml"
    config.write_text("http_targets:\n  - name: llm\n    url: http://127.0.0.1:9/progress\n")
    env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "exporter", "run", "--listen", f"127.0.0.1:{port}"),
            *("--config", str(config), "--status-dir", str(status_dir), "--log", str(log_file)),
            *("--poll-interval", "0.2s"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(url + "/readyz")
        time.sleep(1.5)  # several polls, each failing
        status, detail = http("GET", url + "/readyz")
        text = detail.decode()
        assert status == 200
        assert f"source file down: status directory {status_dir}: No such file" in text
        assert f"source log down: {log_file}: no such file" in text
        assert "source http down: http://127.0.0.1:9/progress:" in text
        body = http("GET", url + "/metrics")[1].decode()
        for source in ("file", "log", "http"):
            assert _sample_value(body, "training_exporter_source_up", source) == 0, source
            assert _sample_value(body, "training_exporter_source_poll_success", source) == 0
        status_dir.mkdir()
        log_file.write_text("step 3/10\n")
        time.sleep(1.5)
        body = http("GET", url + "/metrics")[1].decode()
        for source in ("file", "log"):
            assert _sample_value(body, "training_exporter_source_up", source) == 1, source
            assert _sample_value(body, "training_exporter_source_poll_success", source) == 1
        assert "source file down" not in http("GET", url + "/readyz")[1].decode()
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)
    finally:
        proc.kill()
    said = [line for line in stderr.splitlines() if "WARNING" in line]
    assert sum(f"status directory {status_dir}: No such file" in x for x in said) == 1, said
    assert sum(f"log {log_file}:" in x and "once it is there" in x for x in said) == 1, said
    assert sum("HTTP target http://127.0.0.1:9/progress:" in x for x in said) == 1, said
    assert any(f"status directory {status_dir}: reading it now" in x for x in said), said
    assert any(f"log {log_file}: reading it now" in x for x in said), said


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT])
def test_the_demo_leaves_nothing_behind(tmp_path: Any, how: signal.Signals) -> None:
    """Stopped by SIGTERM or Ctrl-C (SIGINT), or failing to listen, the demo removes the
    status directory it made (TMPDIR points into the test's directory to see it)."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "exporter", "demo", "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/readyz")
        assert [p.name[:9] for p in tmp_path.iterdir()] == ["tpe-demo-"]
        proc.send_signal(how)
        _, stderr = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    assert list(tmp_path.iterdir()) == []
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        failed = subprocess.run(
            [sys.executable, "-m", "exporter", "demo", "--listen", f"127.0.0.1:{taken}"],
            capture_output=True,
            text=True,
            env=env,
            timeout=30,
        )
    assert failed.returncode == 2 and "cannot listen" in failed.stderr
    assert list(tmp_path.iterdir()) == []
