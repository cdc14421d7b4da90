"""The stdlib reporter: stdlib-only import, channels against the real exporter, ranks, and
never getting in training's way (exporter down, slow, or failing)."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import training_progress_reporter
from training_progress_reporter import KUBEFLOW_MARKER, ProgressReporter, global_rank

from exporter.core.wire import parse_kubeflow

from .conftest import get_json, self_signed_cert

ROOT = Path(__file__).parent.parent


def _assembler() -> Any:
    """reporter/assemble.py, a build script rather than a module of either package."""
    spec = importlib.util.spec_from_file_location("assemble", ROOT / "reporter" / "assemble.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


assemble = _assembler()


class Capture:
    """A real HTTP endpoint recording every request; its status and delay are adjustable."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], Any]] = []
        self.status = 200
        self.delay = 0.0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                time.sleep(outer.delay)
                outer.requests.append((self.path, dict(self.headers), json.loads(body)))
                try:
                    self.send_response(outer.status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except OSError:
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/report"


@pytest.fixture
def capture() -> Iterator[Capture]:
    c = Capture()
    yield c
    c.httpd.shutdown()
    c.httpd.server_close()


def test_importing_the_reporter_pulls_in_no_runtime_dependency() -> None:
    code = (
        "import sys, exporter, training_progress_reporter, exporter.integrations;"
        "deps = ('prometheus_client', 'kubernetes', 'yaml', 'transformers', 'lightning', 'torch');"
        "bad = [m for m in deps if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_single_file_alone_runs_on_a_bare_interpreter(tmp_path: Path) -> None:
    """The joined file (``python reporter/assemble.py --out``), copied into an image with no
    site-packages at all (-S -I), is imported with the installed package's own line and
    reports, with every name the package exports."""
    assert assemble.main(["--out", str(tmp_path / "training_progress_reporter.py")]) == 0
    code = (
        f"import sys; sys.path.insert(0, {str(tmp_path)!r});"
        "import training_progress_reporter as t; assert t.__file__.startswith(sys.path[0]);"
        "from training_progress_reporter import ProgressReporter;"
        f"names = {sorted(training_progress_reporter.__all__)!r};"
        "missing = [n for n in names if not hasattr(t, n)];"
        "assert not missing, missing;"
        "r = ProgressReporter(total_steps=10, channels=['stdout'], interval=0.05);"
        "r.update(step=3, loss=0.5); r.finish(timeout=5)"
    )
    proc = subprocess.run(
        [sys.executable, "-S", "-I", "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith(KUBEFLOW_MARKER)]
    body = json.loads(lines[-1][len(KUBEFLOW_MARKER) :])
    report = parse_kubeflow(body, time.time()).report
    assert (report.step, report.max_steps, report.loss, report.final) == (3, 10, 0.5, True)


def test_the_assembler_refuses_what_would_make_the_file_differ(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module importing outside the standard library, a name defined twice, or a relative
    import of a name no earlier module defines: each refused, with the module named."""
    package = ROOT / "reporter" / "training_progress_reporter"
    for name in (*assemble.MODULES, "__init__"):
        shutil.copy(package / f"{name}.py", tmp_path)
    monkeypatch.setattr(assemble, "PACKAGE", tmp_path)
    assemble.assemble()  # the copies join as the originals do
    cases = {
        "import yaml\n": "not in the standard library",
        "def global_rank() -> int:\n    return 0\n": "defined in both",
        "from .reporter import ProgressReporter\n": "which no module before it defines",
    }
    for text, reason in cases.items():
        channels = (package / "channels.py").read_text()
        head, _, rest = channels.partition("from typing import")
        if text.startswith("def"):
            broken = channels + "\n\n" + text
        else:
            broken = head + text + "from typing import" + rest
        (tmp_path / "channels.py").write_text(broken)
        with pytest.raises(assemble.AssemblyError, match=reason):
            assemble.assemble()


@pytest.mark.slow
def test_pip_install_into_a_bare_venv_gives_a_working_reporter(tmp_path: Path) -> None:
    """The reporter's own distribution, as a training image installs it: no dependency at
    all comes with it, and importing it imports no framework (the callbacks import theirs
    only when their own module is imported)."""
    wheel_dir = tmp_path / "wheel"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheel_dir),
            str(ROOT / "reporter"),
        ],
        check=True,
        timeout=300,
        capture_output=True,
    )
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    (wheel,) = wheel_dir.glob("*.whl")
    assert wheel.name.startswith("training_progress_reporter-")
    before = subprocess.run(
        [str(py), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True
    ).stdout
    # No index: anything it depended on would fail to install here.
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-index", str(wheel)],
        check=True,
        timeout=300,
        capture_output=True,
    )
    after = subprocess.run(
        [str(py), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True
    ).stdout
    added = set(after.split()) - set(before.split())
    assert [a.split("==")[0] for a in added] == ["training-progress-reporter"], added
    code = (
        "import sys; from training_progress_reporter import ProgressReporter;"
        "r = ProgressReporter(total_steps=4, channels=['stdout'], interval=0.05);"
        "r.update(step=4, loss=1.25); r.finish(timeout=5);"
        "assert 'torch' not in sys.modules and 'exporter' not in sys.modules"
    )
    proc = subprocess.run([str(py), "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert KUBEFLOW_MARKER in proc.stdout and '"value":"1.25"' in proc.stdout


@pytest.mark.slow
def test_the_old_import_path_still_works_with_a_deprecation_warning() -> None:
    code = (
        "import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
        "try:\n    import exporter.reporter\nexcept DeprecationWarning as w:\n    print(w)\n"
        "warnings.simplefilter('ignore')\n"
        "import exporter.reporter as old, training_progress_reporter as new\n"
        "assert old.ProgressReporter is new.ProgressReporter\n"
        "assert old.STDOUT_MARKER == new.KUBEFLOW_MARKER\n"
        "import exporter.integrations.transformers as t\n"
        "import training_progress_reporter.transformers as n\n"
        "assert t.ProgressCallback is n.ProgressCallback\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "training_progress_reporter" in proc.stdout  # the warning names the new import


def test_native_push_to_the_real_exporter(exporter_factory: Any) -> None:
    exp = exporter_factory()
    env = {"TPE_REPORT_URL": f"{exp.url}/api/v1/namespaces/ml/runs/bert/report"}
    r = ProgressReporter(total_steps=100, environ=env, interval=0.05, framework="pytorch")
    assert r.channels == ["exporter"]
    for step in range(1, 11):
        r.update(step=step, loss=2.0 / step, learning_rate=1e-4, tokens_per_second=5000 + step)
    r.finish(timeout=5)
    (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    assert (run["job_name"], run["step"], run["max_steps"], run["finished"]) == (
        "bert",
        10,
        100,
        True,
    )
    assert run["loss"] == pytest.approx(0.2)
    assert run["metrics"] == {"tokens_per_second": 5010.0}
    assert run["info"]["framework"] == "pytorch"
    assert r.errors == 0


def test_kubeflow_channel_sends_upstream_body_with_token(capture: Capture, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("secret-token\n")
    env = {"KUBEFLOW_TRAINER_SERVER_URL": capture.url, "KUBEFLOW_TRAINER_SERVER_TOKEN": str(token)}
    r = ProgressReporter(total_steps=50, environ=env, interval=0.05)
    r.update(step=20, loss=float("nan"), epoch=0.4)
    r.finish(timeout=5)
    _, headers, body = capture.requests[-1]
    assert headers["Authorization"] == "Bearer secret-token"
    report = parse_kubeflow(body, time.time()).report  # the upstream schema, accepted
    assert (report.step, report.max_steps, report.epoch, report.progress) == (20, 50, 0.4, 1.0)
    assert report.loss != report.loss  # NaN survives as the string "nan"


def test_status_file_channel_is_read_by_the_file_source(
    exporter_factory: Any, tmp_path: Path
) -> None:
    exp = exporter_factory(status_dir=str(tmp_path), namespace="local")
    r = ProgressReporter(
        total_steps=8, environ={"TPE_STATUS_FILE": str(tmp_path / "vit.json")}, interval=0.05
    )
    r.update(step=8, loss=0.1)
    r.finish(timeout=5)
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".tmp-")]  # renamed into place
    exp.poll_once()
    (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    assert (run["namespace"], run["job_name"], run["step"], run["finished"]) == (
        "local",
        "vit",
        8,
        True,
    )


def test_stdout_is_the_fallback_channel() -> None:
    out = io.StringIO()
    r = ProgressReporter(total_steps=5, environ={}, interval=0.05, stdout=out)
    assert r.channels == ["stdout"]
    r.update(step=5)
    r.finish(timeout=5)
    line = out.getvalue().splitlines()[-1]
    assert line.startswith(KUBEFLOW_MARKER + " ")
    report = parse_kubeflow(json.loads(line[len(KUBEFLOW_MARKER) :]), time.time()).report
    assert (report.step, report.max_steps, report.final) == (5, 5, True)


@pytest.mark.parametrize(
    ("env", "rank"),
    [
        ({}, 0),
        ({"RANK": "3"}, 3),
        ({"OMPI_COMM_WORLD_RANK": "1"}, 1),
        ({"PMI_RANK": "2"}, 2),
        ({"SLURM_PROCID": "5"}, 5),
        ({"JAX_PROCESS_ID": "1"}, 1),
        ({"LOCAL_RANK": "0", "GROUP_RANK": "0"}, 0),
        ({"LOCAL_RANK": "0", "NODE_RANK": "1"}, 1),
        ({"LOCAL_RANK": "2"}, 1),
        ({"RANK": "0", "OMPI_COMM_WORLD_RANK": "4"}, 0),
    ],
)
def test_global_rank(env: dict[str, str], rank: int) -> None:
    assert global_rank(env) == rank


def test_only_rank_zero_reports(capture: Capture) -> None:
    env = {"TPE_REPORT_URL": capture.url, "RANK": "1"}
    r = ProgressReporter(total_steps=5, environ=env, interval=0.05)
    r.update(step=1)
    r.finish(timeout=2)
    assert not r.enabled and capture.requests == []
    forced = ProgressReporter(total_steps=5, environ=env, interval=0.05, all_ranks=True)
    forced.update(step=1)
    forced.finish(timeout=5)
    assert len(capture.requests) >= 1


@pytest.mark.slow
def test_updates_are_coalesced_and_rate_limited(capture: Capture) -> None:
    r = ProgressReporter(total_steps=100_000, environ={"TPE_REPORT_URL": capture.url}, interval=0.5)
    started = time.monotonic()
    step = 0
    while time.monotonic() - started < 1.2:
        step += 1
        r.update(step=step, loss=1.0)
    r.finish(timeout=5)
    # The first report at once, about one per 0.5 s, and the final one: never one per update.
    assert 2 <= len(capture.requests) <= 5, len(capture.requests)
    assert capture.requests[-1][2]["step"] == step and capture.requests[-1][2]["final"] is True


@pytest.mark.slow
def test_exporter_down_never_slows_or_breaks_training() -> None:
    r = ProgressReporter(
        total_steps=10, environ={"TPE_REPORT_URL": "http://127.0.0.1:9/x"}, interval=0.01
    )
    started = time.monotonic()
    for step in range(10_000):
        r.update(step=step, loss=0.5)
    elapsed = time.monotonic() - started
    t0 = time.monotonic()
    r.finish(timeout=1.0)
    assert time.monotonic() - t0 < 3.0
    assert elapsed < 1.0  # 10,000 updates, no I/O on this thread
    assert r.errors >= 1


@pytest.mark.slow
def test_slow_exporter_finish_is_bounded(capture: Capture) -> None:
    capture.delay = 5.0
    r = ProgressReporter(
        total_steps=10, environ={"TPE_REPORT_URL": capture.url}, interval=0.05, timeout=10
    )
    r.update(step=1)
    time.sleep(0.2)  # the first send is now stuck in the 5 s response
    t0 = time.monotonic()
    r.update(step=2)
    r.finish(timeout=1.0)
    assert time.monotonic() - t0 < 1.5


@pytest.mark.slow
def test_failing_exporter_is_retried_with_backoff_until_it_recovers(
    capture: Capture, caplog: pytest.LogCaptureFixture
) -> None:
    """Retried with backoff; one warning when the channel starts failing, however many
    tries fail, and one when it goes through again."""
    capture.status = 500
    r = ProgressReporter(total_steps=10, environ={"TPE_REPORT_URL": capture.url}, interval=0.05)
    r.update(step=1, loss=1.0)
    deadline = time.monotonic() + 5
    while r.errors < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert r.errors >= 2
    capture.status = 200
    r.update(step=2, loss=0.9)
    r.finish(timeout=5)
    assert capture.requests[-1][2]["step"] == 2
    said = [rec.getMessage() for rec in caplog.records if rec.name == "training_progress_reporter"]
    assert len(said) == 2, said
    assert "exporter channel fail (SendError: POST " in said[0]
    assert "/report answered 500 Internal Server Error" in said[0]
    assert said[1] == "progress reports on the exporter channel go through again"
    # Backoff: after the first failure the next try waits at least 1 s, not the 0.05 s interval.
    assert len(capture.requests) <= 4


@pytest.mark.slow
def test_a_closed_port_is_said_once_on_stderr(tmp_path: Path) -> None:
    """A training script whose reporter points at a closed port, with no logging set up:
    one warning on stderr (Python's last-resort handler), not one per retry, not silence."""
    script = tmp_path / "train.py"
    script.write_text(
        "import time\n"
        "from training_progress_reporter import ProgressReporter\n"
        "r = ProgressReporter(total_steps=100, interval=0.05)\n"
        "for step in range(30):\n"
        "    r.update(step=step)\n"
        "    time.sleep(0.1)\n"
        "r.finish(timeout=1)\n"
        "print('errors', r.errors)\n"
    )
    proc = subprocess.run(
        [sys.executable, str(script)],
        env={
            **os.environ,
            "TPE_REPORT_URL": "http://127.0.0.1:9/api/v1/namespaces/a/runs/b/report",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout.split()[-1]) >= 2  # retried more than once
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "exporter channel fail (SendError: POST http://127.0.0.1:9/api/v1/" in lines[0]
    assert "refused" in lines[0]


def test_a_typo_in_the_url_is_named_in_the_warning(
    exporter_factory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The real exporter answers 404 to a misspelt path: the one warning names the URL
    that was wrong and the status, not only "HTTP Error 404"."""
    exp = exporter_factory()
    typo = f"{exp.url}/api/v1/namespace/ml/runs/bert/report"  # "namespace", not "namespaces"
    r = ProgressReporter(total_steps=10, environ={"TPE_REPORT_URL": typo}, interval=0.05)
    with caplog.at_level("WARNING", logger="training_progress_reporter"):
        r.update(step=1)
        r.finish(timeout=2)
    warnings = [rec.getMessage() for rec in caplog.records if "channel fail" in rec.getMessage()]
    assert len(warnings) == 1 and f"POST {typo} answered 404" in warnings[0], warnings
    assert r.errors >= 1


@pytest.mark.slow
def test_process_exit_without_finish_still_flushes(capture: Capture, tmp_path: Path) -> None:
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r});"
        "from training_progress_reporter import ProgressReporter;"
        f"env = {{'TPE_REPORT_URL': {capture.url!r}}};"
        "r = ProgressReporter(total_steps=9, environ=env, interval=30);"
        "r.update(step=1); import time; time.sleep(0.3); r.update(step=7, loss=0.25)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert capture.requests[-1][2]["step"] == 7


@pytest.mark.slow
def test_kubeflow_channel_verifies_tls_with_the_given_ca(tmp_path: Path) -> None:
    """HTTPS with a CA file, as the Kubeflow controller injects it."""
    import ssl

    cert, key = self_signed_cert(tmp_path)
    server = Capture()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.httpd.socket = context.wrap_socket(server.httpd.socket, server_side=True)
    url = server.url.replace("http://", "https://")
    token = tmp_path / "token"
    token.write_text("t")
    try:
        trusted = ProgressReporter(
            total_steps=3,
            interval=0.05,
            environ={
                "KUBEFLOW_TRAINER_SERVER_URL": url,
                "KUBEFLOW_TRAINER_SERVER_TOKEN": str(token),
                "KUBEFLOW_TRAINER_SERVER_CA_CERT": str(cert),
            },
        )
        trusted.update(step=3)
        trusted.finish(timeout=5)
        assert (
            trusted.errors == 0
            and server.requests[-1][2]["trainerStatus"]["progressPercentage"] == 100
        )
        sent = len(server.requests)
        untrusted = ProgressReporter(
            total_steps=3,
            interval=0.05,
            environ={
                "KUBEFLOW_TRAINER_SERVER_URL": url,
                "KUBEFLOW_TRAINER_SERVER_TOKEN": str(token),
            },
        )
        untrusted.update(step=3)
        untrusted.finish(timeout=3)
        assert untrusted.errors >= 1 and len(server.requests) == sent  # unknown CA: refused
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()


@pytest.mark.slow
def test_heartbeat_resends_the_latest_values_while_the_loop_hangs(capture: Capture) -> None:
    """A hung training loop calls update() no more; the reporter's thread keeps sending the
    same values every heartbeat_seconds, so the exporter sees a live process with a frozen
    step (stalled), not a silent one."""
    env = {"TPE_REPORT_URL": capture.url}
    reporter = ProgressReporter(
        total_steps=100, interval=0.1, heartbeat_seconds=0.5, environ=env, channels=["exporter"]
    )
    reporter.update(step=7, loss=1.5)
    time.sleep(2.2)  # the loop hangs
    sent = [body for _, _, body in capture.requests]
    reporter.close()
    assert 4 <= len(sent) <= 6, sent  # the first report, then one heartbeat every 0.5 s
    assert all(b["step"] == 7 and b["loss"] == 1.5 and b["max_steps"] == 100 for b in sent[1:])
    stamps = [b["timestamp"] for b in sent]
    assert stamps == sorted(stamps) and stamps[-1] - stamps[0] >= 1.4


@pytest.mark.slow
def test_heartbeat_is_off_with_zero_and_set_by_the_environment(capture: Capture) -> None:
    off = ProgressReporter(
        interval=0.1,
        environ={"TPE_REPORT_URL": capture.url, "TPE_REPORT_HEARTBEAT": "0"},
        channels=["exporter"],
    )
    off.update(step=1)
    time.sleep(0.4)
    sent = len(capture.requests)
    assert capture.requests[-1][2]["step"] == 1
    time.sleep(0.8)  # no change, no heartbeat: nothing more is sent
    off.close()
    assert len(capture.requests) == sent
    assert (
        ProgressReporter(environ={"TPE_REPORT_HEARTBEAT": "15"}, channels=[]).heartbeat_seconds
        == 15
    )
    assert ProgressReporter(environ={}, channels=[]).heartbeat_seconds == 60
    junk = ProgressReporter(environ={"TPE_REPORT_HEARTBEAT": "soon"}, channels=[])
    assert junk.heartbeat_seconds == 60


@pytest.mark.slow
def test_the_heartbeat_goes_on_after_finish_while_the_process_lives(capture: Capture) -> None:
    """A finished process that keeps its GPUs keeps saying so (finished-but-running needs
    that evidence in standalone mode); close() (at exit) stops it."""
    env = {"TPE_REPORT_URL": capture.url, "CUDA_VISIBLE_DEVICES": "0,1"}
    reporter = ProgressReporter(total_steps=10, interval=0.05, heartbeat_seconds=0.3, environ=env)
    reporter.update(step=10, loss=0.2)
    t0 = time.monotonic()
    reporter.finish(timeout=5)
    assert time.monotonic() - t0 < 2.0  # finish() waits for its own send, not the heartbeat
    assert capture.requests[-1][2]["final"] is True
    time.sleep(1.0)
    finals = [b for _, _, b in capture.requests if b.get("final")]
    reporter.close()
    assert len(finals) >= 3, finals  # the final report, then heartbeats of it
    body = finals[-1]
    assert body["gpus"] == 2.0 and body["step"] == 10
    assert isinstance(body["start_time"], float) and body["start_time"] <= time.time()
    assert len({b["start_time"] for _, _, b in capture.requests}) == 1  # one process, one start
    after = len(capture.requests)
    time.sleep(0.6)
    assert len(capture.requests) == after  # closed: quiet, as an exited process


def test_gpus_come_from_the_argument_update_or_what_the_process_sees() -> None:
    from training_progress_reporter.environment import detect_gpus

    assert detect_gpus({"CUDA_VISIBLE_DEVICES": "0,1,2,3"}) == 4.0
    assert detect_gpus({"CUDA_VISIBLE_DEVICES": ""}) == 0.0
    assert detect_gpus({"CUDA_VISIBLE_DEVICES": "0,-1,2"}) == 1.0  # CUDA stops at -1
    out = io.StringIO()
    reporter = ProgressReporter(
        gpus=8, environ={"CUDA_VISIBLE_DEVICES": "0"}, stdout=out, channels=["stdout"]
    )
    reporter.update(step=1, gpus=4)  # a known argument, not a custom metric
    _, report, _ = reporter._snapshot()
    reporter.close()
    assert report["gpus"] == 4.0 and "gpus" not in report.get("metrics", {})


def test_the_heartbeat_after_finish_stops_once_nobody_answers(capture: Capture) -> None:
    env = {"TPE_REPORT_URL": capture.url}
    reporter = ProgressReporter(interval=0.05, heartbeat_seconds=0.2, environ=env)
    reporter.update(step=5)
    reporter.finish(timeout=5)
    assert reporter._thread is not None and reporter._thread.is_alive()  # heartbeating
    capture.status = 503  # the exporter went away
    reporter._thread.join(timeout=3)
    assert not reporter._thread.is_alive()
