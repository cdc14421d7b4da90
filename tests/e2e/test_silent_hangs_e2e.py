"""A hung job with a silent client pages as stalled, end to end in Kubernetes mode.

The exporter runs in Kubernetes mode against the fake API server (the real ``kubernetes``
client, list+watch), Prometheus loads the rules as shipped and routes to a real
Alertmanager. Four training pods run on the node, each still ``Running`` in the API server
for the whole test; each has its own loopback IP, so push authorization works as in a
cluster (the client binds that address):

* ``kf-hang``: a Kubeflow-protocol client (the body Transformers' ``KubeflowCallback``
  sends) that stops posting when its loop hangs;
* ``reporter-hang``: our stdlib reporter whose training loop hangs; its heartbeat goes on;
* ``log-hang``: a container log (CRI lines of a tqdm bar) that stops growing;
* ``healthy``: a Kubeflow client that pauses for evaluations two thirds of its stall
  threshold long (the scaled-down 20-minute evaluation of a 30-minute threshold).

Thresholds are shortened per pod by annotation (stall and report timeout 15 s), and
Prometheus loads the shipped rules with every ``for:`` cut to 2 s (promtool tests the shipped
``for:`` on both sides; tests/e2e/test_alerts_e2e.py waits it out): the healthy pod's pauses
page if they read as stalled for 2 s, where the shipped minute would hide them. Each hung pod
must raise TrainingJobStalled, and nothing else, within threshold + ``for:`` + one scrape of
its last step; the healthy pod raises nothing; the exporter says ``stalled`` for each.
"""

from __future__ import annotations

import http.client
import json
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from training_progress_reporter import ProgressReporter

from exporter.daemon.app import Exporter
from exporter.daemon.config import Config

from ..fakekube import FakeKube, fake_kube
from ..kube import put_pod
from ..rulefiles import short_rules
from .stack import Webhook, alertmanager, prometheus, query

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.waits]

NODE = "gpu-node-7"
NS = "ml"
STALL = 15.0
HANG_AT = 10.0  # seconds after start when the hung pods stop stepping
DEADLINE = 170.0
SCRAPE = 1.0  # Prometheus' scrape and evaluation interval in this stack
ANNOTATIONS = {
    "training-progress.io/threshold.stall_seconds": str(int(STALL)),
    "training-progress.io/threshold.report_timeout_seconds": str(int(STALL)),
    "training-progress.io/threshold.plateau_seconds": "600",
}
REPORTER_PATH = f"/api/v1/namespaces/{NS}/runs/reporter-hang/report"
# pod name -> (its loopback IP, the alert it must raise or None)
PODS = {
    "kf-hang": ("127.0.0.2", "TrainingJobStalled"),
    "reporter-hang": ("127.0.0.1", "TrainingJobStalled"),
    "log-hang": ("127.0.0.3", "TrainingJobStalled"),
    "healthy": ("127.0.0.4", None),
}


def _rule_for_seconds(rules: Path, alert: str) -> float:
    """The ``for:`` of ``alert`` in the rule file Prometheus loaded, in seconds."""
    doc = yaml.safe_load(rules.read_text())
    rule = next(r for g in doc["groups"] for r in g["rules"] if r.get("alert") == alert)
    value = str(rule["for"])
    return float(value[:-1]) * {"s": 1, "m": 60, "h": 3600}[value[-1]]


def pod_object(name: str, ip: str) -> dict[str, Any]:
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "namespace": NS,
            "name": name,
            "uid": f"uid-{name}",
            "labels": {
                "trainer.kubeflow.org/trainjob-name": name,
                "batch.kubernetes.io/job-completion-index": "0",
            },
            "annotations": dict(ANNOTATIONS),
        },
        "spec": {
            "nodeName": NODE,
            "containers": [
                {
                    "name": "trainer",
                    "image": "trainer:1",
                    "resources": {"limits": {"nvidia.com/gpu": "8"}},
                }
            ],
        },
        "status": {
            "phase": "Running",
            "podIP": ip,
            "startTime": started,
            "containerStatuses": [
                {"name": "trainer", "state": {"running": {"startedAt": started}}}
            ],
        },
    }


def kubeflow_body(step: int) -> bytes:
    """What Transformers' KubeflowCallback posts: trainerStatus with string metric values."""
    return json.dumps(
        {
            "trainerStatus": {
                "progressPercentage": step * 100 // 100_000,
                "metrics": [
                    {"name": "current_step", "value": str(step)},
                    {"name": "total_steps", "value": "100000"},
                    {"name": "loss", "value": f"{2.0 * 0.999**step + 0.1:.5f}"},
                ],
            }
        }
    ).encode()


@dataclass
class Client:
    """One simulated training process; ``last_step_at`` is when its step last advanced."""

    name: str
    last_step_at: float = 0.0
    errors: list[str] = field(default_factory=list)
    longest_pause: float = 0.0  # the longest time between two of its step advances


class Clients:
    """Drives the four pods' training processes until stopped."""

    def __init__(self, exporter_url: str, log_dir: Path) -> None:
        self.exporter_url = exporter_url
        self.port = int(exporter_url.rsplit(":", 1)[1])
        self.log_file = log_dir / f"{NS}_log-hang_uid-log-hang" / "trainer" / "0.log"
        self.log_file.parent.mkdir(parents=True)
        self.stop = threading.Event()
        self.clients = {name: Client(name) for name in PODS}
        self.started = 0.0
        self.reporter: ProgressReporter | None = None

    def _kubeflow_post(self, name: str, step: int) -> None:
        conn = http.client.HTTPConnection(
            "127.0.0.1", self.port, timeout=5, source_address=(PODS[name][0], 0)
        )
        try:
            conn.request(
                "POST",
                f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{NS}/trainjobs/{name}/status",
                kubeflow_body(step),
                {"Content-Type": "application/json", "Authorization": "Bearer token"},
            )
            response = conn.getresponse()
            response.read()  # closing with the answer unread would reset the connection
            status = response.status
            if status != 200:
                self.clients[name].errors.append(f"HTTP {status}")
        finally:
            conn.close()

    def _kf_hang(self) -> None:
        step = 0
        while not self.stop.is_set():
            t = time.time() - self.started
            if t < HANG_AT:  # then the loop hangs: the callback never runs again
                step += 5
                self._kubeflow_post("kf-hang", step)
                self.clients["kf-hang"].last_step_at = time.time()
            self.stop.wait(1.0)

    def _healthy(self) -> None:
        step = 0
        while not self.stop.is_set():
            t = time.time() - self.started
            # Evaluations: 10 s of silence every 25 s, two thirds of the stall threshold.
            if t % 25 < 15:
                step += 5
                self._kubeflow_post("healthy", step)
                client, now = self.clients["healthy"], time.time()
                if client.last_step_at:
                    client.longest_pause = max(client.longest_pause, now - client.last_step_at)
                client.last_step_at = now
            self.stop.wait(1.0)

    def _reporter_hang(self) -> None:
        reporter = ProgressReporter(
            total_steps=100_000,
            interval=1.0,
            heartbeat_seconds=2.0,
            channels=["exporter"],
            environ={"TPE_REPORT_URL": f"{self.exporter_url}{REPORTER_PATH}"},
        )
        self.reporter = reporter
        step = 0
        while not self.stop.is_set() and time.time() - self.started < HANG_AT:
            step += 5
            reporter.update(step=step, loss=2.0 - step * 0.001)
            self.clients["reporter-hang"].last_step_at = time.time()
            self.stop.wait(0.5)
        # The loop hangs here; the reporter's own thread keeps sending heartbeats.

    def _log_hang(self) -> None:
        step = 0
        with open(self.log_file, "a", encoding="utf-8") as log:
            while not self.stop.is_set() and time.time() - self.started < HANG_AT:
                step += 5
                stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000000000Z", time.gmtime())
                frame = f"{step * 100 // 5000:3d}%|█         | {step}/5000 [00:05<10:00,  9.99it/s]"
                log.write(f"{stamp} stderr F {frame}\n")
                log.flush()
                self.clients["log-hang"].last_step_at = time.time()
                self.stop.wait(0.5)
        # The process hangs: its log stops growing; the pod still runs.

    def start(self) -> None:
        self.started = time.time()
        for target in (self._kf_hang, self._healthy, self._reporter_hang, self._log_hang):
            threading.Thread(target=target, daemon=True).start()

    def close(self) -> None:
        self.stop.set()
        if self.reporter is not None:
            self.reporter.close(timeout=2)


@dataclass
class Stack:
    prometheus_url: str
    webhook: Webhook
    clients: Clients
    exporter: Exporter
    kube: FakeKube
    rules: Path  # the rule file Prometheus loaded


@pytest.fixture(scope="module")
def hang_stack() -> Iterator[Stack]:
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        kube, kubeconfig = stack.enter_context(fake_kube(tmp))
        env = stack.enter_context(pytest.MonkeyPatch.context())
        env.setenv("KUBECONFIG", str(kubeconfig))
        env.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        for name, (ip, _) in PODS.items():
            put_pod(kube, pod_object(name, ip))
        log_dir = tmp / "pods"
        config = replace(
            Config(),
            listen="127.0.0.1:0",
            mode="kubernetes",
            node_name=NODE,
            log_root=str(log_dir),
            kubelet_root=str(tmp / "kubelet"),
            poll_interval=0.5,
            rate_window=8.0,
        )
        exporter = Exporter(config)
        exporter.start()
        stack.callback(exporter.stop)
        clients = Clients(exporter.url, log_dir)
        stack.callback(clients.close)
        webhook = Webhook()
        stack.callback(webhook.close)
        am_url = stack.enter_context(alertmanager(tmp, webhook.url))
        rules = short_rules(tmp)
        prom_url = stack.enter_context(
            prometheus(tmp, exporter.url.removeprefix("http://"), am_url, rule_files=[rules])
        )
        deadline = time.time() + 30
        registry = exporter.discovery.resolver.registry  # type: ignore[attr-defined]
        while len(registry) < len(PODS):
            assert time.time() < deadline, "the exporter never saw the pods"
            time.sleep(0.2)
        clients.start()
        expected = {name for name, (_, alert) in PODS.items() if alert}
        deadline = time.time() + DEADLINE
        settle = 0
        while time.time() < deadline and settle < 8:
            got = {a["labels"].get("job_name") for _, a in webhook.received}
            # And the healthy pod's first evaluation pause (15 to 25 s) over and judged.
            if expected <= got and clients.clients["healthy"].longest_pause > 9:
                settle += 1  # a few more seconds: anything spurious may arrive too
            time.sleep(0.5)
        yield Stack(prom_url, webhook, clients, exporter, kube, rules)


def test_each_silent_hang_pages_as_stalled_within_threshold_plus_for(hang_stack: Stack) -> None:
    webhook, clients = hang_stack.webhook, hang_stack.clients
    for_seconds = _rule_for_seconds(hang_stack.rules, "TrainingJobStalled")
    assert for_seconds == 2.0
    by_run: dict[str, list[tuple[float, dict[str, Any]]]] = {}
    for at, alert in list(webhook.received):
        by_run.setdefault(alert["labels"].get("job_name", "-"), []).append((at, alert))
    timings = {}
    for name, (_, alert) in PODS.items():
        client = clients.clients[name]
        assert client.errors == [], (name, client.errors)
        got = by_run.get(name, [])
        if alert is None:
            assert got == [], f"{name} raised {[a['labels'] for _, a in got]}"
            continue
        assert {a["labels"]["alertname"] for _, a in got} == {alert}, (name, got)
        at, first = min(got, key=lambda x: x[0])
        assert first["labels"]["severity"] == "critical"
        assert "still reports or its" in first["annotations"]["description"]
        elapsed = at - client.last_step_at
        timings[name] = round(elapsed, 1)
        # Threshold + for: + one scrape, plus the evaluation, Alertmanager's 1 s group wait
        # and the source's poll.
        assert STALL + for_seconds <= elapsed <= STALL + for_seconds + SCRAPE + 4.0, (name, elapsed)
    print("\ntime to TrainingJobStalled (s) from the last step, Kubernetes mode:")
    print(json.dumps(timings, indent=1))


def test_exporter_and_prometheus_say_stalled_for_each_hung_pod(hang_stack: Stack) -> None:
    runs = {r["pod"]: r for r in json.loads(_get(hang_stack.exporter.url + "/api/v1/runs"))["runs"]}
    for name, (_, alert) in PODS.items():
        expected = "stalled" if alert else "running"
        assert runs[name]["state"] == expected, (name, runs[name]["state_reason"])
        series = query(
            hang_stack.prometheus_url, f'training_run_state{{pod="{name}", state="{expected}"}}'
        )
        assert [s["value"][1] for s in series] == ["1"], (name, series)
    # The reporter's heartbeat keeps its run reporting although its step froze.
    reporter = runs["reporter-hang"]
    assert (
        reporter["last_report_timestamp_seconds"] > reporter["last_step_timestamp_seconds"] + STALL
    )
    # The other two went quiet: stalled because their pods run, not merely silent.
    for name in ("kf-hang", "log-hang"):
        r = runs[name]
        assert time.time() - r["last_report_timestamp_seconds"] > STALL, name
    assert not query(hang_stack.prometheus_url, 'ALERTS{alertname="TrainingReportsStopped"}')
    # No stale promise: a stalled run exports no ETA.
    assert all(runs[n]["eta_seconds"] is None for n, (_, a) in PODS.items() if a)
    assert runs["healthy"]["eta_seconds"] is not None
    # The healthy pod paused for an evaluation (10 s, two thirds of its threshold) while
    # Prometheus watched with a 2 s for:, and did not page (checked above).
    assert 9 < hang_stack.clients.clients["healthy"].longest_pause < STALL


def _get(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.read().decode()
