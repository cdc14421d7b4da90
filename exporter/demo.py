"""``training-progress-exporter demo``: the exporter plus simulated runs, no cluster needed.

Each simulated run reports through a real source, exactly as training code would:

============== =========================================== ===============================
run            behaviour                                   arrives through
============== =========================================== ===============================
healthy-llm    converging loss, periodic evaluation        Kubeflow push (KubeflowCallback)
hung-nccl      steps stop after 20 s, reports continue     status file (atomic rename)
plateau-bert   steps advance, loss stops improving         HTTP pull (OpenDataHub JSON)
diverging-gpt  loss climbs, then NaN                       native push
finished-vit   reported completion, pod still running      status file
============== =========================================== ===============================

The stall and plateau thresholds are shortened (60 s, 90 s) so every state shows within
two minutes. Run curves are pure functions of elapsed time (tested on their own).
"""

from __future__ import annotations

import json
import math
import os
import random
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .app import Exporter
from .config import Config
from .sources.http import HttpTarget
from .tracker import RunKey, RunMeta

DEMO_NAMESPACE = "demo"
DEMO_STALL_THRESHOLD = 60.0
DEMO_PLATEAU_WINDOW = 90.0


def healthy(t: float, rng: random.Random) -> dict[str, Any]:
    """A converging run: 4 steps/s of 20,000, eval every 400 steps, 8 GPUs."""
    step = int(t * 4) + 1
    loss = 0.35 + 2.4 * math.exp(-step / 600) + rng.gauss(0, 0.01)
    body: dict[str, Any] = {
        "trainerStatus": {
            "progressPercentage": min(100, step * 100 // 20000),
            "metrics": [
                {"name": "loss", "value": f"{loss:.5f}"},
                {"name": "learning_rate", "value": f"{5e-5 * (1 - step / 20000):.3e}"},
                {"name": "grad_norm", "value": f"{1.0 + rng.random() * 0.2:.4f}"},
                {"name": "current_step", "value": str(step)},
                {"name": "total_steps", "value": "20000"},
                {"name": "current_epoch", "value": f"{step / 5000:.3f}"},
            ],
        }
    }
    if step >= 400:
        eval_loss = 0.4 + 2.4 * math.exp(-(step - step % 400) / 600)
        body["trainerStatus"]["metrics"].append({"name": "eval_loss", "value": f"{eval_loss:.5f}"})
    return body


def hung(t: float, rng: random.Random) -> dict[str, Any]:
    """Advances for 20 s, then the step freezes (a NCCL deadlock) while a heartbeat goes on."""
    step = int(min(t, 20.0) * 2) + 1
    return {
        "step": step,
        "max_steps": 5000,
        "loss": 1.9 - step * 0.002,
        "gpus": 16,
        "framework": "pytorch",
    }


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


Curve = Callable[[float, random.Random], dict[str, Any]]


@dataclass(frozen=True)
class DemoRun:
    name: str
    curve: Curve
    channel: str  # kubeflow | native | file | http


RUNS = (
    DemoRun("healthy-llm", healthy, "kubeflow"),
    DemoRun("hung-nccl", hung, "file"),
    DemoRun("plateau-bert", plateau, "http"),
    DemoRun("diverging-gpt", diverging, "native"),
    DemoRun("finished-vit", finished, "file"),
)


def _json(obj: Any) -> bytes:
    # allow_nan: the native format accepts NaN, which Python's json writes as NaN.
    return json.dumps(obj, allow_nan=True).encode()


def post(url: str, body: bytes) -> int:
    req = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "Authorization": "Bearer demo"},
    )
    with urllib.request.urlopen(req, timeout=5) as resp:
        return int(resp.status)


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
                body = bodies.get(self.path.strip("/").split("/")[0], b"{}")
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
        self, listen: str = "127.0.0.1:9465", seed: int = 7, clock: Callable[[], float] = time.time
    ) -> None:
        self.status_dir = tempfile.mkdtemp(prefix="tpe-demo-")
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
        self.config = replace(
            Config(),
            listen=listen,
            mode="standalone",
            namespace=DEMO_NAMESPACE,
            status_dir=self.status_dir,
            http_targets=targets,
            stall_threshold=DEMO_STALL_THRESHOLD,
            plateau_window=DEMO_PLATEAU_WINDOW,
            # The healthy run's demo ETA should settle within seconds, not minutes.
            rate_window=30.0,
        )
        self.exporter = Exporter(self.config, clock=clock)
        self.rng = random.Random(seed)
        self._stop = threading.Event()
        self.started = time.time()
        self.errors = 0

    def tick(self, t: float) -> None:
        """Send every run's report for elapsed time ``t`` through its channel."""
        base = self.exporter.url
        for run in RUNS:
            body = _json(run.curve(t, self.rng))
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
                    post(f"{base}/api/v1/namespaces/{DEMO_NAMESPACE}/runs/{run.name}/report", body)
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
        self.exporter.start()
        self.started = time.time()
        threading.Thread(
            target=self._drive, args=(interval,), name="demo-driver", daemon=True
        ).start()

    def stop(self) -> None:
        self._stop.set()
        self.exporter.stop()
        self.progression.httpd.shutdown()

    def banner(self) -> str:
        url = self.exporter.url
        return "\n".join(
            [
                f"training-progress-exporter demo: {len(RUNS)} simulated runs in namespace "
                f"'{DEMO_NAMESPACE}'",
                f"  metrics:      {url}/metrics",
                f"  runs (JSON):  {url}/api/v1/runs",
                f"  health:       {url}/healthz  {url}/readyz",
                f"  status files: {self.status_dir}",
                f"Stall threshold {DEMO_STALL_THRESHOLD:.0f}s and plateau window "
                f"{DEMO_PLATEAU_WINDOW:.0f}s are shortened for the demo: within two minutes",
                "hung-nccl shows as stalled, plateau-bert as plateaued, diverging-gpt as diverged",
                "and finished-vit as finished. Try:",
                f"  curl -s {url}/metrics | grep -E '^training_(progress_ratio|eta_seconds|loss)'",
                "Press Ctrl-C to stop.",
            ]
        )
