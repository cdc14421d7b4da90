"""End to end, a resize for a deadline (#57): a Kubernetes-mode exporter -> a real
Prometheus (the shipped rules, ``for:`` cut to 2 s) -> a real Alertmanager -> ``act`` -> the
fake API server (the real ``kubernetes`` client on the wire).

Two elastic PyTorchJobs (``elasticPolicy`` 1..4 workers) run 2 workers each, their rank-0 pod
pushing native reports at a pace that misses the deadline on 2 nodes: the exporter reads
their node count from the PyTorchJob, states the nodes the deadline needs, and
``TrainingDeadlineNeedsResize`` fires. Both opted in (``on-deadline-resize: scale``):

- ``bert`` saves when told (its push's answer carries the checkpoint directive, as the
  reporter's ``should_checkpoint()`` does): act annotates its pod, the exporter tells the
  run, the run reports a checkpoint newer than the request, Prometheus sees it, and only
  then act patches the PyTorchJob's ``/scale`` subresource to the workers needed;
- ``stubborn`` never saves: act waits its ``checkpoint_wait`` and does not resize it, with
  the reason in an Event.

torchrun agents re-forming a real job at the new size: tests/e2e/test_elastic_e2e.py.
"""

from __future__ import annotations

import http.client
import json
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from kubernetes import config as kube_config

from exporter.act.act_config import ActConfig
from exporter.act.controller import Actor
from exporter.act.kube import KubernetesOps
from exporter.act.webhook_server import make_server
from exporter.daemon.app import Exporter
from exporter.daemon.config import Config
from exporter.plumbing.httpd import serve_in_thread

from ..conftest import K8S_NODE
from ..fakekube import FakeKube, fake_kube
from ..kube import pod, put_pod
from ..rulefiles import short_rules
from .stack import alertmanager, prometheus, query

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.waits]

TOKEN = "e2e-resize-token"
NAMESPACE = "e2e-resize"
PACE = 10.0  # steps a second, on 2 workers
LEFT = 7200.0  # seconds of training left at that pace when the run starts
DEADLINE_IN = 6000.0  # the deadline, from the start: missed on 2 nodes, made on more
WAIT = 12.0  # act's checkpoint_wait
WITHIN = 120.0


def pytorchjob(
    name: str, namespace: str = NAMESPACE, low: int = 1, high: int = 4
) -> dict[str, Any]:
    """An elastic PyTorchJob of 2 workers (``low``..``high``) that opted in to resizes."""
    worker = {
        "replicas": 2,
        "restartPolicy": "OnFailure",
        "template": {"spec": {"containers": [{"name": "pytorch", "image": "x"}]}},
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {
            "namespace": namespace,
            "name": name,
            "uid": f"uid-pytorchjob-{name}",
            "annotations": {"training-progress.io/on-deadline-resize": "scale"},
        },
        "spec": {
            "elasticPolicy": {"minReplicas": low, "maxReplicas": high, "rdzvBackend": "c10d"},
            "pytorchReplicaSpecs": {"Worker": worker},
        },
    }


@dataclass
class Run:
    name: str
    saves_when_told: bool
    ip: str  # its pod's IP: pushes are matched to their pod by source address
    checkpoint_at: float = 0.0
    told_at: float | None = None


@dataclass
class Stack:
    kube: FakeKube
    actor: Actor
    runs: dict[str, Run]
    prometheus_url: str
    start: float


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with ExitStack() as es, tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        kube, kubeconfig = es.enter_context(fake_kube(tmp))
        runs = {
            "bert": Run("bert", True, "127.0.0.2"),
            "stubborn": Run("stubborn", False, "127.0.0.3"),
        }
        for name, run in runs.items():
            kube.put("kubeflow.org/v1", "pytorchjobs", pytorchjob(name))
            labels = {
                "training.kubeflow.org/job-name": name,
                "training.kubeflow.org/replica-type": "worker",
                "training.kubeflow.org/replica-index": "0",
            }
            put_pod(kube, pod(NAMESPACE, f"{name}-worker-0", labels, ip=run.ip, gpus="8"))
        exporter, actor, prom = act_stack(es, tmp, kubeconfig, checkpoint_wait=WAIT)
        start = time.time()
        for run in runs.values():
            run.checkpoint_at = start
        stop = threading.Event()

        def drive() -> None:
            while not stop.wait(0.5):
                t = time.time() - start
                for run in runs.values():
                    body = {
                        "step": int(t * PACE),
                        "max_steps": int(LEFT * PACE),
                        "loss": 2.0,
                        "deadline": start + DEADLINE_IN,
                        "last_checkpoint_timestamp": run.checkpoint_at,
                    }
                    answer = push(exporter.url, run, body)
                    if "checkpoint" in (answer.get("directives") or []):
                        run.told_at = time.time()
                        if run.saves_when_told:
                            run.checkpoint_at = time.time()

        driver = threading.Thread(target=drive, daemon=True)
        driver.start()
        es.callback(driver.join)
        es.callback(stop.set)
        deadline = time.time() + WITHIN
        while time.time() < deadline and not (kube.scaled and _gave_up(kube)):
            time.sleep(0.5)
        yield Stack(kube, actor, runs, prom, start)


def push(url: str, run: Run, body: dict[str, Any]) -> dict[str, Any]:
    """A native push from the run's pod address; the exporter's answer."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=5, source_address=(run.ip, 0))
    try:
        path = f"/api/v1/namespaces/{NAMESPACE}/runs/{run.name}/report"
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        raw = resp.read()
        assert resp.status == 200, (resp.status, raw)
        return dict(json.loads(raw or b"{}"))
    finally:
        conn.close()


def act_stack(
    es: ExitStack, tmp: Path, kubeconfig: Path, checkpoint_wait: float, **exporter: Any
) -> tuple[Exporter, Actor, str]:
    """The resize loop on loopback, stopped with ``es``: an exporter in Kubernetes mode on
    the fake API (``exporter``: its settings beyond the defaults), act acting for real, and
    Alertmanager routing the short rules' alerts from a real Prometheus to it. Returns the
    exporter, the actor and Prometheus' URL."""
    os.environ["KUBECONFIG"] = str(kubeconfig)
    es.callback(os.environ.pop, "KUBECONFIG", None)
    settings = {"listen": "127.0.0.1:0", "mode": "kubernetes", "node_name": K8S_NODE}
    running = Exporter(replace(Config(), poll_interval=0.5, **settings, **exporter))
    running.start()
    es.callback(running.stop)
    client = kube_config.new_client_from_config(config_file=str(kubeconfig))
    actor = Actor(KubernetesOps(client), ActConfig(dry_run=False), time.time)
    server = make_server("127.0.0.1", 0, actor, TOKEN)
    serve_in_thread(server)
    es.callback(server.server_close)
    es.callback(server.shutdown)
    url = f"http://127.0.0.1:{server.server_address[1]}/api/v1/alerts"
    am = es.enter_context(alertmanager(tmp, url, am_config(url)))
    prom = es.enter_context(
        prometheus(tmp, running.url.removeprefix("http://"), am, rule_files=[short_rules(tmp)])
    )
    actor.config = replace(actor.config, prometheus_url=prom, checkpoint_wait=checkpoint_wait)
    return running, actor, prom


def am_config(url: str) -> dict[str, Any]:
    return {
        "route": {
            "receiver": "act",
            "group_by": ["alertname", "namespace", "job_name"],
            "group_wait": "1s",
            "group_interval": "1s",
            "repeat_interval": "3s",
        },
        "receivers": [
            {
                "name": "act",
                "webhook_configs": [
                    {
                        "url": url,
                        "send_resolved": False,
                        "http_config": {"authorization": {"type": "Bearer", "credentials": TOKEN}},
                    }
                ],
            }
        ],
    }


def _events(kube: FakeKube, name: str) -> list[str]:
    return [
        b.get("reason", "")
        for m, _, b in list(kube.writes)
        if m == "POST" and (b or {}).get("involvedObject", {}).get("name") == name
    ]


def _gave_up(kube: FakeKube) -> bool:
    return any(r.endswith("NoCheckpoint") for r in _events(kube, "stubborn"))


def test_the_nodes_needed_are_exported_and_the_alert_fires(stack: Stack) -> None:
    nodes = query(stack.prometheus_url, f'training_nodes{{namespace="{NAMESPACE}"}}')
    assert {float(s["value"][1]) for s in nodes} == {2.0}
    fired = query(
        stack.prometheus_url,
        f'ALERTS{{alertname="TrainingDeadlineNeedsResize",namespace="{NAMESPACE}"}}',
    )
    assert fired and all(s["metric"]["direction"] == "up" for s in fired), fired


def test_a_job_is_scaled_only_after_a_checkpoint_newer_than_the_request(stack: Stack) -> None:
    (scaled,) = [s for s in stack.kube.scaled if s[1] == "bert"]
    _, _, replicas, job = scaled
    assert 2 < replicas <= 4  # within its elasticPolicy
    assert job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == replicas
    bert = stack.runs["bert"]
    assert bert.told_at is not None and bert.checkpoint_at >= bert.told_at
    # The order on the wire: the pod's checkpoint annotation, then the /scale patch.
    paths = [p for m, p, _ in stack.kube.writes if m == "PATCH" and "bert" in p]
    annotate = next(i for i, p in enumerate(paths) if p.endswith("/pods/bert-worker-0"))
    scale = next(i for i, p in enumerate(paths) if p.endswith("/pytorchjobs/bert/scale"))
    assert annotate < scale, paths
    reasons = _events(stack.kube, "bert")
    assert "TrainingProgressDeadlineResizeScaleStarted" in reasons
    assert "TrainingProgressDeadlineResizeScale" in reasons, reasons
    assert stack.actor.stats.snapshot()[0].get(("scale", "taken")) == 1


def test_a_job_whose_checkpoint_never_comes_is_not_scaled(stack: Stack) -> None:
    assert not [s for s in stack.kube.scaled if s[1] == "stubborn"]
    assert stack.runs["stubborn"].told_at is not None  # it was asked
    assert _gave_up(stack.kube), _events(stack.kube, "stubborn")
    assert stack.actor.stats.snapshot()[0].get(("scale", "no_checkpoint"), 0) >= 1
