"""End to end: exporter -> real Prometheus -> real Alertmanager -> ``act`` -> the fake API
server (the real ``kubernetes`` client on the wire; every PATCH, DELETE and Event recorded).

Each policy gets its own namespace and a run that develops its fault at a known time:
a step that freezes (stalled -> restart), a run that finishes while its pod lingers
(finished-but-running -> delete), GPU-hours past a tiny budget (over budget -> suspend), and
an ETA past its deadline (will miss deadline -> suspend). Beside them: a stalled job that did
not opt in (untouched), the same stall routed to a dry-run ``act`` (Events only), and three
opted-in stalls in one namespace against a breaker of two. Alertmanager re-sends every 3 s,
so every action must also survive replays.

Per-run thresholds are shortened in the reports; the rules are the shipped ones with each
``for:`` cut to 2 s (the shipped ``for:`` values are tested by promtool on both sides).
The time from each fault to its action is printed, for whoever reads the test log.
"""

from __future__ import annotations

import json
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from kubernetes import config as kube_config

from exporter.act.act_config import ActConfig
from exporter.act.controller import Actor
from exporter.act.guard import ActionLimits
from exporter.act.kube import KubernetesOps
from exporter.act.webhook_server import make_server
from exporter.daemon.app import Exporter
from exporter.daemon.config import Config
from exporter.plumbing.httpd import serve_in_thread

from ..fakekube import FakeKube, fake_kube
from ..kube import put_pod
from ..rulefiles import short_rules
from .stack import alertmanager, prometheus, query

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.waits]

TOKEN = "e2e-act-token"
SHORT = {"stall_seconds": 10, "finished_grace_seconds": 2, "report_timeout_seconds": 60}
DEADLINE = 90.0  # seconds for everything to happen


@dataclass(frozen=True)
class Case:
    namespace: str
    name: str
    kind: str  # TrainJob | Job
    annotation: dict[str, str]
    fault: str  # stall | finish | budget | deadline


CASES = (
    Case("e2e-stalled", "stuck", "TrainJob", {"on-stalled": "restart"}, "stall"),
    Case("e2e-finished", "lingering", "TrainJob", {"on-finished-but-running": "delete"}, "finish"),
    Case("e2e-budget", "spender", "Job", {"on-over-budget": "suspend"}, "budget"),
    Case("e2e-deadline", "late", "TrainJob", {"on-deadline": "suspend"}, "deadline"),
    Case("e2e-stalled", "unopted", "TrainJob", {}, "stall"),
    Case("e2e-dry", "dry", "TrainJob", {"on-stalled": "restart"}, "stall"),
    Case("e2e-breaker", "b1", "TrainJob", {"on-stalled": "suspend"}, "stall"),
    Case("e2e-breaker", "b2", "TrainJob", {"on-stalled": "suspend"}, "stall"),
    Case("e2e-breaker", "b3", "TrainJob", {"on-stalled": "suspend"}, "stall"),
)
FAULT_AFTER = 4.0  # seconds of healthy progress before the fault


def report(case: Case, t: float, start: float) -> dict[str, Any]:
    """The native report ``case`` sends ``t`` seconds after it started."""
    frozen = case.fault == "stall" and t > FAULT_AFTER
    step = int(min(t, FAULT_AFTER) * 10) if frozen else int(t * 10)
    body: dict[str, Any] = {
        "step": step,
        "max_steps": 1_000_000,
        "loss": 2.0 - step * 1e-4,
        "gpus": 8,
        "thresholds": SHORT,
    }
    if case.fault == "finish" and t > FAULT_AFTER:
        body.update(step=int(FAULT_AFTER * 10), max_steps=int(FAULT_AFTER * 10), final=True)
    if case.fault == "budget":
        body["gpu_hours_budget"] = 8 * FAULT_AFTER / 3600  # spent FAULT_AFTER s in
    if case.fault == "deadline":
        body["deadline"] = start + FAULT_AFTER  # the ETA is a day away
    return body


def fault_time(case: Case, start: float) -> float:
    """When the fault happened: the step froze, the run finished, the budget ran out; a
    deadline already in the past at the first reports is missed from the start."""
    return start if case.fault == "deadline" else start + FAULT_AFTER


def populate(kube: FakeKube) -> None:
    for c in CASES:
        ann = {f"training-progress.io/{k}": v for k, v in c.annotation.items()}
        if c.kind == "TrainJob":
            api, plural, label = (
                "trainer.kubeflow.org/v1alpha1",
                "trainjobs",
                "trainer.kubeflow.org/trainjob-name",
            )
        else:
            api, plural, label = "batch/v1", "jobs", "batch.kubernetes.io/job-name"
        kube.put(
            api,
            plural,
            {
                "metadata": {
                    "name": c.name,
                    "namespace": c.namespace,
                    "uid": f"u-{c.name}",
                    "annotations": ann,
                },
                "spec": {"suspend": False},
            },
        )
        # The standalone exporter names the run's pod after the run; its owners are made
        # as the job's controllers make them (put_pod).
        put_pod(
            kube,
            {
                "metadata": {
                    "name": c.name,
                    "namespace": c.namespace,
                    "uid": f"p-{c.name}",
                    "labels": {label: c.name},
                },
                "status": {"phase": "Running"},
            },
        )


def am_config(live: str, dry: str) -> dict[str, Any]:
    def receiver(name: str, url: str) -> dict[str, Any]:
        return {
            "name": name,
            "webhook_configs": [
                {
                    "url": url,
                    "send_resolved": False,
                    "http_config": {"authorization": {"type": "Bearer", "credentials": TOKEN}},
                }
            ],
        }

    return {
        "route": {
            "receiver": "act",
            "group_by": ["alertname", "namespace", "job_name"],
            "group_wait": "1s",
            "group_interval": "1s",
            "repeat_interval": "3s",  # replays: act must act once per alert
            "routes": [{"matchers": ['namespace="e2e-dry"'], "receiver": "act-dry"}],
        },
        "receivers": [receiver("act", live), receiver("act-dry", dry)],
    }


def done(kube: FakeKube) -> bool:
    """Whether every action the stack expects has happened."""
    writes = list(kube.writes)
    acted = {(m, p.rsplit("/", 1)[-1]) for m, p, _ in writes}
    reasons = [b.get("reason", "") for m, _, b in writes if m == "POST"]
    breaker = sum(m == "PATCH" and "e2e-breaker" in p for m, p, _ in writes)
    return (
        {("DELETE", "stuck"), ("DELETE", "lingering"), ("PATCH", "spender"), ("PATCH", "late")}
        <= acted
        and breaker == 2
        and any(r.endswith("Skipped") for r in reasons)
        and any(r.endswith("DryRun") for r in reasons)
    )


@dataclass
class Stack:
    kube: FakeKube
    live: Actor
    dry: Actor
    act_url: str
    prometheus_url: str
    start: float


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with ExitStack() as es, tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        kube, kubeconfig = es.enter_context(fake_kube(tmp))
        populate(kube)
        actors = []
        urls = []
        for dry_run in (False, True):
            client = kube_config.new_client_from_config(config_file=str(kubeconfig))
            limits = ActionLimits(per_namespace_per_hour=2, total_per_hour=20)
            actor = Actor(
                KubernetesOps(client), ActConfig(dry_run=dry_run, limits=limits), time.time
            )
            server = make_server("127.0.0.1", 0, actor, TOKEN)
            serve_in_thread(server)
            es.callback(server.server_close)
            es.callback(server.shutdown)
            actors.append(actor)
            urls.append(f"http://127.0.0.1:{server.server_address[1]}/api/v1/alerts")
        exporter = Exporter(
            replace(Config(), listen="127.0.0.1:0", mode="standalone", poll_interval=0.5)
        )
        exporter.start()
        es.callback(exporter.stop)
        am = es.enter_context(alertmanager(tmp, urls[0], am_config(urls[0], urls[1])))
        prom = es.enter_context(
            prometheus(tmp, exporter.url.removeprefix("http://"), am, rule_files=[short_rules(tmp)])
        )
        start = time.time()
        stop = threading.Event()

        def drive() -> None:
            while not stop.wait(0.5):
                t = time.time() - start
                for c in CASES:
                    body = json.dumps(report(c, t, start)).encode()
                    url = f"{exporter.url}/api/v1/namespaces/{c.namespace}/runs/{c.name}/report"
                    req = urllib.request.Request(url, body, {"Content-Type": "application/json"})
                    with urllib.request.urlopen(req, timeout=5) as resp:
                        assert resp.status == 200

        driver = threading.Thread(target=drive, daemon=True)
        driver.start()
        es.callback(driver.join)
        es.callback(stop.set)
        deadline = time.time() + DEADLINE
        while time.time() < deadline and not done(kube):
            time.sleep(0.5)
        time.sleep(7)  # a few more re-sends from Alertmanager: none may act again
        assert query(prom, "up") != []
        yield Stack(kube, actors[0], actors[1], urls[0], prom, start)


def writes_for(stack: Stack, namespace: str, name: str) -> list[tuple[float, str, str, Any]]:
    out = []
    for at, (method, path, body) in zip(stack.kube.write_times, stack.kube.writes, strict=True):
        involved = (body or {}).get("involvedObject", {}) if method == "POST" else {}
        if f"/namespaces/{namespace}/" in path and (
            path.rsplit("/", 1)[-1] == name or involved.get("name") == name
        ):
            out.append((at, method, path, body))
    return out


def test_each_policy_acts_once_on_its_job(stack: Stack) -> None:
    expectations = {
        "stuck": (
            "DELETE",
            "/api/v1/namespaces/e2e-stalled/pods/stuck",
            "TrainingProgressStalledRestart",
        ),
        "lingering": (
            "DELETE",
            "/api/v1/namespaces/e2e-finished/pods/lingering",
            "TrainingProgressFinishedButRunningDelete",
        ),
        "spender": (
            "PATCH",
            "/apis/batch/v1/namespaces/e2e-budget/jobs/spender",
            "TrainingProgressOverBudgetSuspend",
        ),
        "late": (
            "PATCH",
            "/apis/trainer.kubeflow.org/v1alpha1/namespaces/e2e-deadline/trainjobs/late",
            "TrainingProgressWillMissDeadlineSuspend",
        ),
    }
    timings = []
    for case in CASES:
        if case.name not in expectations:
            continue
        method, path, reason = expectations[case.name]
        writes = writes_for(stack, case.namespace, case.name)
        acts = [w for w in writes if w[1] == method]
        events = [w for w in writes if w[1] == "POST"]
        assert [(m, p) for _, m, p, _ in acts] == [(method, path)], (case.name, writes)
        assert [b["reason"] for *_, b in events] == [reason], (case.name, writes)
        if method == "PATCH":
            assert acts[0][3]["spec"]["suspend"] is True
        timings.append((case.name, acts[0][0] - fault_time(case, stack.start)))
    print("\nfault -> action (s): " + ", ".join(f"{n} {s:.1f}" for n, s in timings))
    for name, seconds in timings:
        assert 0 < seconds < 60, name
    # Alertmanager re-sent the firing alerts every 3 s: each was acted on once.
    actions = stack.live.stats.snapshot()[0]
    assert actions.get(("none", "duplicate"), 0) >= 4


def test_an_unopted_job_is_untouched(stack: Stack) -> None:
    assert writes_for(stack, "e2e-stalled", "unopted") == []
    fired = query(stack.prometheus_url, 'ALERTS{alertstate="firing", job_name="unopted"}')
    assert fired, "the unopted job's stall alert must fire (and be left alone)"


def test_dry_run_writes_nothing_but_events(stack: Stack) -> None:
    writes = writes_for(stack, "e2e-dry", "dry")
    assert [m for _, m, _, _ in writes] == ["POST"]
    assert writes[0][3]["reason"] == "TrainingProgressStalledRestartDryRun"
    assert stack.dry.stats.snapshot()[0].get(("restart", "dry_run")) == 1


def test_the_breaker_stops_the_third_action_in_a_namespace(stack: Stack) -> None:
    patches = [p for m, p, _ in stack.kube.writes if m == "PATCH" and "e2e-breaker" in p]
    assert len(patches) == 2
    skipped = [
        b
        for m, p, b in stack.kube.writes
        if m == "POST" and "e2e-breaker" in p and b["reason"].endswith("Skipped")
    ]
    assert len(skipped) == 1 and "circuit breaker" in skipped[0]["message"]


def test_webhook_without_the_token_gets_401(stack: Stack) -> None:
    before = len(stack.kube.writes)
    body = json.dumps({"version": "4", "alerts": []}).encode()
    for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": TOKEN}):
        req = urllib.request.Request(stack.act_url, body, headers, method="POST")
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=5)
        assert err.value.code == 401
    assert len(stack.kube.writes) == before
