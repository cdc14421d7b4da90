"""The e2e scenario runs: one healthy run and one run per alert, fed through real sources.

Each run is a pure function of elapsed seconds giving the report to send (or None: send
nothing), the channel it goes through, and the one alert it must raise. Thresholds are
shortened per run (the native report's ``thresholds``) so the whole scenario takes about two
minutes against rules loaded exactly as shipped.
"""

from __future__ import annotations

import json
import math
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from training_progress_reporter import ProgressReporter

from exporter.commands.demo import write_atomic

NAMESPACE = "e2e"
SHORT = {
    "stall_seconds": 15,
    "plateau_seconds": 20,
    "report_timeout_seconds": 15,
    "finished_grace_seconds": 10,
    "divergence_ratio": 3,
    "throughput_drop_ratio": 0.7,
}


def healthy(t: float) -> dict[str, Any] | None:
    report: dict[str, Any] = {
        "step": int(t * 5),
        "max_steps": 100_000,
        # Improving by the same share (3 %) every plateau window however long the stack
        # lives: a curve with a floor flattens within minutes, and a healthy run on a
        # loaded machine late in the suite was (rightly) seen to plateau.
        "loss": 2 * math.exp(-t / 600),
        "learning_rate": 3e-4 * (1 - t / 1000),
        "grad_norm": 1.0 + 0.1 * math.sin(t),
        "gpus": 8,
        "thresholds": SHORT,
    }
    if int(t) % 10 == 0:
        report["eval_loss"] = 2.1 * math.exp(-t / 600)
    # Tokens (4,096 a step) on a 1.3B-parameter model on H100s: its MFU is known.
    report["tokens"] = int(t * 5) * 4096
    report["model_flops_per_token"] = 6 * 1.3e9
    report["gpu_model"] = "NVIDIA-H100-80GB-HBM3"
    # A checkpoint every 20 s, restated by every report (as the reporter does).
    saved = 20 * int(t // 20)
    report["last_checkpoint_step"] = saved * 5
    report["last_checkpoint_timestamp"] = time.time() - (t - saved)
    # A deadline a day after its start: met with room (its chance to miss ~0, 1 GPU makes it).
    report["deadline"] = time.time() - t + 86_400
    return report


def hung(t: float) -> dict[str, Any] | None:
    # Advances for 10 s, then the step freezes while heartbeats go on.
    return {
        "step": int(min(t, 10) * 5),
        "max_steps": 100_000,
        "loss": 2 - min(t, 10) * 0.05,
        "gpus": 16,
        "thresholds": SHORT,
    }


def plateau(t: float) -> dict[str, Any] | None:
    # OpenDataHub JSON over HTTP; loss improves for 10 s, then stays above its best.
    best = 1.0 + math.exp(-min(t, 10) / 3)
    loss = best if t <= 10 else best + 0.05
    return {"currentStep": int(t * 3), "totalSteps": 100_000, "trainMetrics": {"loss": loss}}


def diverging(t: float) -> dict[str, Any] | None:
    # Kubeflow body, as Transformers' KubeflowCallback sends it; NaN loss from 10 s.
    loss = "nan" if t > 10 else f"{2 + t * 0.1:.4f}"
    return {
        "trainerStatus": {
            "progressPercentage": 1,
            "metrics": [
                {"name": "current_step", "value": str(int(t * 4))},
                {"name": "total_steps", "value": "100000"},
                {"name": "loss", "value": loss},
            ],
        }
    }


def finished(t: float) -> dict[str, Any] | None:
    return {
        "step": 500,
        "max_steps": 500,
        "loss": 0.2,
        "final": True,
        "gpus": 2,
        "thresholds": SHORT,
    }


def halves(t: float) -> dict[str, Any] | None:
    # 10 steps/s for 40 s, then 5 steps/s.
    step = int(t * 10) if t <= 40 else 400 + int((t - 40) * 5)
    return {
        "step": step,
        "max_steps": 100_000,
        "loss": 3 * math.exp(-t / 80) + 0.1,
        "gpus": 8,
        "thresholds": SHORT,
    }


def silent(t: float) -> dict[str, Any] | None:
    # Reports for 10 s, then nothing at all (the pod would still be running).
    if t > 10:
        return None
    return {
        "step": int(t * 5),
        "max_steps": 100_000,
        "loss": 2 - t * 0.05,
        "gpus": 4,
        "thresholds": SHORT,
    }


def reporter_hang(t: float) -> dict[str, Any] | None:
    # Our stdlib reporter, for real: update() is called until the loop hangs at 10 s; its
    # background thread's heartbeat goes on. Standalone, so only the heartbeat tells the
    # exporter the process lives: stalled, not silent.
    if t > 10:
        return None
    return {"step": int(t * 5), "loss": 2 - t * 0.05}


def idle(t: float) -> dict[str, Any] | None:
    # Steps advance (a CPU-bound input pipeline) while dcgm-exporter shows its GPUs at 1 %.
    return {
        "step": int(t),
        "max_steps": 100_000,
        "loss": 3 - t * 0.005,
        "gpus": 4,
        "thresholds": {**SHORT, "gpu_idle_seconds": 10},
    }


# One job of three ranks, each rank's pod a run of its own (pulled over HTTP, the way the
# exporter reads each pod on its own node); rank 2 hangs at 10 s, the others go on. Its
# stall threshold is long, so the stuck rank pages as the stuck rank, not as a stalled job.
RANKED_JOB = "ranked"
RANKED_STUCK = 2
RANKS: tuple[tuple[str, str, str], ...] = tuple(
    (f"{RANKED_JOB}-{r}", str(r), f"node-{'abc'[r]}") for r in range(3)
)


def ranked(t: float, rank: int) -> dict[str, Any]:
    frozen = min(t, 10) if rank == RANKED_STUCK else t
    return {
        "step": int(frozen * 4) - rank,
        "max_steps": 100_000,
        "loss": 2 - frozen * 0.01,
        "gpus": 8,
        "thresholds": {
            **SHORT,
            "stall_seconds": 600,
            "plateau_seconds": 600,
            "rank_lag_seconds": 5,
        },
    }


@dataclass(frozen=True)
class Scenario:
    name: str
    report: Callable[[float], dict[str, Any] | None]
    channel: str  # native | kubeflow | file | http | reporter
    alert: str | None  # the one alert it must raise
    bad_since: float  # seconds after start when it starts misbehaving


SCENARIOS = (
    Scenario("healthy", healthy, "native", None, 0),
    Scenario("hung", hung, "native", "TrainingJobStalled", 10),
    Scenario("plateau", plateau, "http", "TrainingLossPlateau", 10),
    Scenario("diverging", diverging, "kubeflow", "TrainingLossDiverged", 10),
    Scenario("finished", finished, "file", "TrainingFinishedButRunning", 0),
    Scenario("halves", halves, "native", "TrainingThroughputDegraded", 40),
    Scenario("silent", silent, "native", "TrainingReportsStopped", 10),
    Scenario("reporter-hang", reporter_hang, "reporter", "TrainingJobStalled", 10),
    Scenario("idle", idle, "native", "TrainingGPUsIdle", 0),
    # Its runs are the ranks (RANKS); ``report`` stands for rank 0 only.
    Scenario(RANKED_JOB, lambda t: ranked(t, 0), "ranks", "TrainingRankStalled", 10),
)


class Driver:
    """Sends every scenario's report once a second through its channel."""

    def __init__(self, exporter_url: str, status_dir: str, http_bodies: dict[str, bytes]) -> None:
        self.exporter_url = exporter_url
        self.status_dir = status_dir
        self.http_bodies = http_bodies
        self.started = time.time()
        self.errors: list[str] = []
        self._stop = threading.Event()
        # The "reporter" channel: a real ProgressReporter per scenario, heartbeat every 2 s.
        self.reporters = {
            sc.name: ProgressReporter(
                total_steps=100_000,
                interval=1.0,
                heartbeat_seconds=2.0,
                # The simulated job's GPUs: on this CPU machine the reporter would see none
                # (torch, once imported by another test, says 0) and say so.
                gpus=2,
                channels=["exporter"],
                environ={
                    "TPE_REPORT_URL": f"{exporter_url}/api/v1/namespaces/{NAMESPACE}"
                    f"/runs/{sc.name}/report"
                },
            )
            for sc in SCENARIOS
            if sc.channel == "reporter"
        }

    def _post(self, path: str, body: bytes) -> None:
        req = urllib.request.Request(
            self.exporter_url + path,
            data=body,
            method="POST",
            headers={"Content-Type": "application/json", "Authorization": "Bearer e2e"},
        )
        with urllib.request.urlopen(req, timeout=5) as resp:
            resp.read()

    def tick(self, t: float) -> None:
        for sc in SCENARIOS:
            report = sc.report(t)
            if report is None:
                continue
            body = json.dumps(report).encode()
            try:
                if sc.channel == "native":
                    self._post(f"/api/v1/namespaces/{NAMESPACE}/runs/{sc.name}/report", body)
                elif sc.channel == "kubeflow":
                    self._post(
                        f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{NAMESPACE}"
                        f"/trainjobs/{sc.name}/status",
                        body,
                    )
                elif sc.channel == "reporter":
                    reporter = self.reporters[sc.name]
                    if t < 1:  # thresholds travel in the run's first native report
                        self._post(
                            f"/api/v1/namespaces/{NAMESPACE}/runs/{sc.name}/report",
                            json.dumps({"gpus": 2, "thresholds": SHORT}).encode(),
                        )
                    reporter.update(**report)
                elif sc.channel == "ranks":
                    for r, (pod, _, _) in enumerate(RANKS):
                        self.http_bodies[pod] = json.dumps(ranked(t, r)).encode()
                elif sc.channel == "file":
                    # Rewritten each tick, as the reporter's heartbeat rewrites it while the
                    # process lives (after finish() too: the evidence a finished run holds on).
                    write_atomic(self.status_dir, f"{sc.name}.json", body)
                else:
                    self.http_bodies[sc.name] = body
            except OSError as exc:
                self.errors.append(f"{sc.name}: {exc}")

    def _run(self) -> None:
        while not self._stop.is_set():
            self.tick(time.time() - self.started)
            self._stop.wait(1.0)

    def start(self) -> None:
        self.started = time.time()
        threading.Thread(target=self._run, name="scenario-driver", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
        for reporter in self.reporters.values():
            reporter.close(timeout=2)
