"""``training-progress-exporter demo``: the exporter plus simulated runs, no cluster needed.

Each simulated run reports through a real source, exactly as training code would, and
reaches one state of the exporter's state table (exporter/core/states.py):

=============== ======================== ====================================== ===========
run             state it shows (at)      behaviour                              through
=============== ======================== ====================================== ===========
healthy-llm     running (always)         loss keeps improving, steady pace      Kubeflow push
hung-save       stalled (~50 s)          checkpoints every 10 s; its save at    native push
                                         20 s hangs: a real thread blocked on
                                         a FIFO nobody reads (its real stack
                                         answers the exporter's request: cause
                                         checkpoint); the work since its last
                                         save is at risk
plateau-bert    plateaued (~75 s)        loss stops improving at 15 s           HTTP pull
diverging-gpt   diverged (~20 s)         loss climbs from 10 s, NaN from 40 s   native push
finished-vit    finished, then           reported completion; its "pod" keeps   status file
                finished-but-running     its 2 GPUs past the grace period
                (~45 s)
loading-t5      waiting (always)         reports, no step yet (loading data)    native push
crashed-whisper silent (~50 s)           stops reporting at 20 s                native push
straggler-sd    degraded (~60 s)         throughput falls to 40 % at 40 s;      native push
                                         counts tokens on 8 H100s (MFU 32 %,
                                         then 13 %); its deadline, met at
                                         first, will be missed
deleted-bart    gone (~30 s)             its status file is deleted at 30 s     status file
=============== ======================== ====================================== ===========

``failed`` is the one state the demo cannot show: it needs a pod that failed (Kubernetes
mode). Thresholds are shortened (:data:`DEMO_THRESHOLDS`) so every other state shows within
two minutes; run curves are pure functions of elapsed time (tested on their own).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import shutil
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from training_progress_reporter.channels import STACKS_DIRECTIVE, directives_of
from training_progress_reporter.stackcapture import capture

from ..core.model import Clock, RunKey, RunMeta
from ..daemon.app import Exporter
from ..daemon.config import Config
from ..daemon.config import apply as apply_settings
from ..plumbing.fetch import direct_opener
from ..sources.http import HttpTarget

DEMO_NAMESPACE = "demo"
# Shortened so that every state shows within two minutes (settings of the same names in
# docs/configuration.md; the defaults are minutes to hours).
DEMO_THRESHOLDS = {
    "stall_seconds": 30.0,
    "plateau_seconds": 60.0,
    "report_timeout_seconds": 30.0,
    "finished_grace_seconds": 45.0,
}
HEALTHY_TOTAL_STEPS = 400_000  # 4 steps/s: a day's run, so the demo never sees it finish
EVAL_EVERY_STEPS = 100  # 25 s, well inside the plateau window


def healthy(t: float, rng: random.Random) -> dict[str, Any]:
    """A converging run: 4 steps/s, evaluation every 100 steps, 8 GPUs.

    The loss falls by the same share every minute (about 3 %), so the run keeps improving
    by more than the plateau detector's 0.5 % per window for as long as the demo runs.
    """
    step = int(t * 4) + 1
    eval_loss = 2.5 * math.exp(-(step - step % EVAL_EVERY_STEPS) / 8000)
    loss = 2.5 * math.exp(-step / 8000) * (0.95 + rng.gauss(0, 0.005))
    metrics = [
        {"name": "loss", "value": f"{loss:.6g}"},
        {"name": "learning_rate", "value": f"{5e-5 * (1 - step / HEALTHY_TOTAL_STEPS):.3e}"},
        {"name": "grad_norm", "value": f"{1.0 + rng.random() * 0.2:.4f}"},
        {"name": "current_step", "value": str(step)},
        {"name": "total_steps", "value": str(HEALTHY_TOTAL_STEPS)},
        {"name": "current_epoch", "value": f"{step / 5000:.3f}"},
    ]
    if step >= EVAL_EVERY_STEPS:
        metrics.append({"name": "eval_loss", "value": f"{eval_loss:.6g}"})
    return {
        "trainerStatus": {
            "progressPercentage": min(100, step * 100 // HEALTHY_TOTAL_STEPS),
            "metrics": metrics,
        }
    }


# Keys of a curve's report whose values are seconds since the run began, made Unix times
# when sent (the curves are pure functions of elapsed time).
SINCE_START = "_since_start"
SAVE_EVERY = 10.0  # seconds between the hung run's checkpoints


def hung(t: float, rng: random.Random) -> dict[str, Any]:
    """Trains at 2 steps/s and saves a checkpoint every 10 s (1.5 s each); its save at 20 s
    never returns (:class:`StuckSave`). The step freezes while its heartbeat goes on, and
    what it trained since its last save (at 10 s) is at risk."""
    step = int(min(t, 20.0) * 2) + 1
    body: dict[str, Any] = {
        "step": step,
        "max_steps": 5000,
        "loss": 1.9 - step * 0.002,
        "gpus": 16,
        "framework": "pytorch",
    }
    if t >= SAVE_EVERY:
        body["last_checkpoint_step"] = int(SAVE_EVERY * 2) + 1
        body["last_checkpoint_seconds"] = 1.5
        body[SINCE_START] = {"last_checkpoint_timestamp": SAVE_EVERY}
    return body


def save_checkpoint(path: str, step: int) -> None:
    """Write the checkpoint of ``step`` to ``path``: a FIFO nobody reads, so opening it
    blocks in the kernel, as a write to a hung NFS mount does."""
    with open(path, "wb") as fh:
        fh.write(b"step %d" % step)


def train_until_the_save_hangs(path: str) -> None:
    """The hung run's training thread, at the save that never returns."""
    with contextlib.suppress(OSError):  # released when the demo stops
        save_checkpoint(path, 41)


class StuckSave:
    """A real thread stuck in a checkpoint save (:func:`save_checkpoint`). Asked for its
    stacks, the hung run sends this thread's, captured by the reporter's own code: the
    exporter finds the cause (``checkpoint``) and the frame in a real stack, as it would
    in a training process."""

    def __init__(self, directory: str) -> None:
        self.path = os.path.join(directory, "ckpt-41.pt")
        os.mkfifo(self.path, 0o600)
        self.thread = threading.Thread(
            target=train_until_the_save_hangs, args=(self.path,), name="MainThread", daemon=True
        )
        self.thread.start()

    def stacks(self) -> bytes:
        """The stacks body (docs/report-format.md#stacks) of the stuck thread alone."""
        others = {i for i in sys._current_frames() if i != self.thread.ident}
        return capture(0, exclude=others)

    def release(self) -> None:
        """Let the save finish: open the FIFO's other end, so the thread's open returns."""
        with contextlib.suppress(OSError):
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
            self.thread.join(timeout=5)
            os.close(fd)


def plateau(t: float, rng: random.Random) -> dict[str, Any]:
    """Loss improves for 15 s, then wanders without ever beating its best."""
    step = int(t * 3) + 1
    best = 0.9 + 0.8 * math.exp(-min(t, 15.0) / 4)
    loss = best + 0.1 + abs(rng.gauss(0, 0.01)) if t > 15 else best
    return {
        "currentStep": step,
        "totalSteps": 30000,
        "progressPercentage": step * 100 // 30000,
        "trainMetrics": {"loss": round(loss, 5), "learning_rate": 2e-5},
    }


def diverging(t: float, rng: random.Random) -> dict[str, Any]:
    """Loss grows after 10 s and becomes NaN after 40 s."""
    step = int(t * 2) + 1
    loss: float = 2.0 * math.exp(max(0.0, t - 10) / 8)
    if t > 40:
        loss = float("nan")
    return {
        "step": step,
        "max_steps": 8000,
        "loss": loss,
        "grad_norm": loss * 3,
        "gpus": 4,
        "framework": "deepspeed",
    }


def loading(t: float, rng: random.Random) -> dict[str, Any]:
    """Up and reporting, but still loading its data set: no step yet."""
    return {"max_steps": 12000, "gpus": 4, "framework": "jax"}


def crashed(t: float, rng: random.Random) -> dict[str, Any] | None:
    """Reports for 20 s, then its process dies: nothing arrives any more (standalone, so
    nothing tells the exporter whether it lives: silent, not stalled)."""
    if t > 20:
        return None
    step = int(t * 3) + 1
    return {"step": step, "max_steps": 9000, "loss": 3.0 - t * 0.01, "gpus": 2}


STRAGGLER_TOKENS_PER_STEP = 65_536  # 32 sequences of 2,048 tokens
STRAGGLER_FLOPS_PER_TOKEN = 7.8e9  # 6 x 1.3 B parameters
STRAGGLER_DEADLINE = 5 * 3600.0  # seconds after it began: 3.3 h of work at 5 steps/s


def straggler(t: float, rng: random.Random) -> dict[str, Any]:
    """5 steps/s for 40 s, then 2 steps/s (a slow node): 40 % of its typical pace. It counts
    the tokens it trains on, with its model's FLOPs per token and its 8 H100s: MFU 32 %,
    then 13 %. Its deadline, 5 h after it began, is met at 5 steps/s (3.3 h) and missed at
    2 (8.3 h)."""
    step = int(t * 5) if t <= 40 else 200 + int((t - 40) * 2)
    return {
        "step": step + 1,
        "max_steps": 60000,
        "loss": 1.2 + 1.5 * math.exp(-t / 300),
        "gpus": 8,
        "framework": "pytorch",
        "tokens": (step + 1) * STRAGGLER_TOKENS_PER_STEP,
        "model_flops_per_token": STRAGGLER_FLOPS_PER_TOKEN,
        "gpu_model": "NVIDIA H100 80GB HBM3",
        SINCE_START: {"deadline": STRAGGLER_DEADLINE},
    }


def deleted(t: float, rng: random.Random) -> dict[str, Any] | None:
    """Its status file is removed at 30 s (the job was deleted): the run is gone."""
    if t > 30:
        return None
    step = int(t * 2) + 1
    return {"step": step, "max_steps": 4000, "loss": 2.2 - t * 0.01, "gpus": 1}


def finished(t: float, rng: random.Random) -> dict[str, Any]:
    """Reached its last step and said so; the pod keeps its 2 GPUs."""
    return {
        "step": 3000,
        "max_steps": 3000,
        "loss": 0.21,
        "eval_loss": 0.24,
        "final": True,
        "gpus": 2,
        "framework": "transformers",
    }


# The body to send at elapsed time t; None: send nothing (a status file: remove it).
Curve = Callable[[float, random.Random], "dict[str, Any] | None"]


@dataclass(frozen=True)
class DemoRun:
    name: str
    curve: Curve
    channel: str  # kubeflow | native | file | http
    shows: tuple[str, ...]  # the states it shows, in order (the README's demo table)


RUNS = (
    DemoRun("healthy-llm", healthy, "kubeflow", ("running",)),
    DemoRun("hung-save", hung, "native", ("running", "stalled")),
    DemoRun("plateau-bert", plateau, "http", ("running", "plateaued")),
    DemoRun("diverging-gpt", diverging, "native", ("running", "diverged")),
    DemoRun("finished-vit", finished, "file", ("finished", "finished-but-running")),
    DemoRun("loading-t5", loading, "native", ("waiting",)),
    DemoRun("crashed-whisper", crashed, "native", ("running", "silent")),
    DemoRun("straggler-sd", straggler, "native", ("running", "degraded")),
    DemoRun("deleted-bart", deleted, "file", ("running", "gone")),
)


def _json(obj: Any) -> bytes:
    # allow_nan: the native format accepts NaN, which Python's json writes as NaN.
    return json.dumps(obj, allow_nan=True).encode()


def post(url: str, body: bytes) -> bytes:
    """The exporter's answer to POSTing ``body`` to ``url``."""
    req = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "Authorization": "Bearer demo"},
    )
    with direct_opener().open(req, timeout=5) as resp:  # loopback: never through a user's proxy
        return bytes(resp.read(1 << 16))


def write_atomic(directory: str, name: str, body: bytes) -> None:
    """Write a status file the way training code should: temp file, fsync, rename."""
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".part")
    with os.fdopen(fd, "wb") as fh:
        fh.write(body)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, os.path.join(directory, name))


class _ProgressionServer:
    """Serves the http-channel runs' latest JSON like an OpenDataHub pod on :28080."""

    def __init__(self) -> None:
        self.bodies: dict[str, bytes] = {}
        bodies = self.bodies

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                body = bodies.get(self.path.strip("/").split("/")[0])
                if body is None:  # not training yet: nothing to serve, as a real pod
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/{name}/metrics"


class Demo:
    """The exporter and the simulated runs, driven by one ticker thread."""

    def __init__(
        self, listen: str = "127.0.0.1:9465", seed: int = 7, clock: Clock = time.time
    ) -> None:
        self.status_dir = tempfile.mkdtemp(prefix="tpe-demo-")
        try:
            self._build(listen, seed, clock)
        except BaseException:
            shutil.rmtree(self.status_dir, ignore_errors=True)
            raise

    def _build(self, listen: str, seed: int, clock: Clock) -> None:
        self.progression = _ProgressionServer()
        targets = tuple(
            HttpTarget(
                RunKey(DEMO_NAMESPACE, r.name, r.name),
                self.progression.url(r.name),
                RunMeta(source="http", gpus=8.0),
            )
            for r in RUNS
            if r.channel == "http"
        )
        base = replace(
            Config(),
            listen=listen,
            mode="standalone",
            namespace=DEMO_NAMESPACE,
            status_dir=self.status_dir,
            http_targets=targets,
            # The healthy run's demo ETA should settle within seconds, not minutes.
            rate_window=30.0,
        )
        self.config = apply_settings(base, DEMO_THRESHOLDS, "demo")
        self.exporter = Exporter(self.config, clock=clock)
        self.clock = clock
        checkpoints = os.path.join(self.status_dir, "checkpoints")  # no *.json: not read
        os.mkdir(checkpoints, 0o700)
        self.stuck = StuckSave(checkpoints)
        self.rng = random.Random(seed)
        self._stop = threading.Event()
        self.started = time.time()
        self.errors = 0

    def tick(self, t: float) -> None:
        """Send every run's report for elapsed time ``t`` through its channel."""
        base = self.exporter.url
        began = self.clock() - t
        for run in RUNS:
            report = run.curve(t, self.rng)
            if report is None:
                if run.channel == "file":
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(os.path.join(self.status_dir, f"{run.name}.json"))
                continue
            for key, seconds in report.pop(SINCE_START, {}).items():
                report[key] = began + seconds
            body = _json(report)
            try:
                if run.channel == "kubeflow":
                    post(
                        f"{base}/apis/trainer.kubeflow.org/v1alpha1/namespaces/{DEMO_NAMESPACE}"
                        f"/trainjobs/{run.name}/status",
                        body,
                    )
                    if t < 1.5:  # standalone pushes carry no pod: say how many GPUs once
                        post(
                            f"{base}/api/v1/namespaces/{DEMO_NAMESPACE}/runs/{run.name}/report",
                            _json({"gpus": 8, "framework": "transformers"}),
                        )
                elif run.channel == "native":
                    path = f"{base}/api/v1/namespaces/{DEMO_NAMESPACE}/runs/{run.name}"
                    answer = post(f"{path}/report", body)
                    # Asked for its stacks, the hung run sends its stuck thread's, as the
                    # reporter would from a training process.
                    if run.curve is hung and STACKS_DIRECTIVE in directives_of(answer):
                        post(f"{path}/stacks", self.stuck.stacks())
                elif run.channel == "file":
                    write_atomic(self.status_dir, f"{run.name}.json", body)
                else:
                    self.progression.bodies[run.name] = body
            except OSError:
                self.errors += 1

    def _drive(self, interval: float) -> None:
        while not self._stop.is_set():
            self.tick(time.time() - self.started)
            self._stop.wait(interval)

    def start(self, interval: float = 1.0) -> None:
        # The pulled runs have their first body before the exporter's first pull: an
        # unanswered target is a warning now, and the demo should start without one.
        for run in RUNS:
            if run.channel == "http" and (report := run.curve(0.0, self.rng)) is not None:
                self.progression.bodies[run.name] = _json(report)
        self.exporter.start()
        self.started = time.time()
        threading.Thread(
            target=self._drive, args=(interval,), name="demo-driver", daemon=True
        ).start()

    def stop(self) -> None:
        """Stop the runs, the exporter and the progression server, and remove the status
        directory the demo made: it leaves nothing behind, however it was stopped."""
        self._stop.set()
        try:
            self.stuck.release()
            self.exporter.stop()
            self.progression.httpd.shutdown()
            self.progression.httpd.server_close()
        finally:
            shutil.rmtree(self.status_dir, ignore_errors=True)

    def banner(self) -> str:
        url = self.exporter.url
        th = ", ".join(
            f"{k.removesuffix('_seconds').replace('_', ' ')} {v:.0f}s"
            for k, v in DEMO_THRESHOLDS.items()
        )
        shows = [f"  {r.name:<16} {' -> '.join(r.shows)}" for r in RUNS]
        return "\n".join(
            [
                f"training-progress-exporter demo: {len(RUNS)} simulated runs in namespace "
                f"'{DEMO_NAMESPACE}'",
                f"  status page:  {url}/",
                f"  metrics:      {url}/metrics",
                f"  runs (JSON):  {url}/api/v1/runs",
                f"  health:       {url}/healthz  {url}/readyz",
                f"  status files: {self.status_dir}",
                f"Thresholds are shortened for the demo ({th}); within two minutes:",
                *shows,
                "Try:",
                f"  training-progress-exporter top --exporter {url}",
                f"  curl -s {url}/metrics | grep -E '^training_run_state.* 1.0$'",
                "Press Ctrl-C to stop.",
            ]
        )
