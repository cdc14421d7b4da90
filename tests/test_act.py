"""``act``: the webhook payload, the policy, the guard, owners, and the whole controller
through the real ``kubernetes`` client against the fake API server (which records every
PATCH, DELETE and Event), behind its real HTTP front."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import config as kube_config

from exporter.act.act_config import ActConfig
from exporter.act.act_config import parse as parse_config
from exporter.act.controller import Actor
from exporter.act.guard import ActionLimits, Guard
from exporter.act.job_owners import owner_of
from exporter.act.kube import KubernetesOps
from exporter.act.policy import Policy, decide
from exporter.act.webhook import WebhookError, parse_notification
from exporter.act.webhook_server import make_server
from exporter.core.workloads import Ref
from exporter.plumbing.httpd import serve_in_thread
from exporter.plumbing.settings import ConfigError

from .e2e.stack import free_port
from .fakekube import FakeKube, fake_kube
from .kube import put_pod

TOKEN = "s3cret-token"
NS = "ml"


def alert(
    name: str,
    pod: str,
    job: str,
    ns: str = NS,
    status: str = "firing",
    fingerprint: str | None = None,
    starts_at: str = "2026-11-30T10:00:00Z",
) -> dict[str, Any]:
    return {
        "status": status,
        "labels": {"alertname": name, "namespace": ns, "pod": pod, "job_name": job},
        "annotations": {"summary": "x"},
        "startsAt": starts_at,
        "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "http://prometheus/graph",
        "fingerprint": fingerprint or f"{name}-{ns}-{pod}"[:64],
    }


def notification(*alerts: dict[str, Any]) -> bytes:
    return json.dumps(
        {
            "version": "4",
            "groupKey": "{}:{}",
            "truncatedAlerts": 0,
            "status": "firing",
            "receiver": "act",
            "groupLabels": {},
            "commonLabels": {},
            "commonAnnotations": {},
            "externalURL": "http://alertmanager",
            "alerts": list(alerts),
        }
    ).encode()


# -- pure parts ---------------------------------------------------------------------------


def test_webhook_payload_is_parsed_and_bad_ones_rejected_with_a_reason() -> None:
    (a,) = parse_notification(notification(alert("TrainingJobStalled", "p-0", "j")))
    assert (a.name, a.status, a.label("pod"), a.label("missing")) == (
        "TrainingJobStalled",
        "firing",
        "p-0",
        "",
    )
    bad = {
        b"not json": "invalid_json",
        b"[]": "invalid_notification",
        json.dumps({"version": "3", "alerts": []}).encode(): "unsupported_version",
        json.dumps({"version": "4", "alerts": {}}).encode(): "invalid_notification",
        json.dumps({"version": "4", "alerts": [{"labels": {}, "status": "firing"}]}).encode(): (
            "invalid_alert"
        ),
        json.dumps({"version": "4", "alerts": [{}] * 1001}).encode(): "too_many_alerts",
        b" " * (1024 * 1024 + 1): "oversize",
    }
    for body, reason in bad.items():
        with pytest.raises(WebhookError) as err:
            parse_notification(body)
        assert err.value.reason == reason


def test_policy_opt_in_by_job_annotation_or_namespace_default() -> None:
    policy = Policy(namespaces=("team-*",), defaults={"on-stalled": "suspend"})
    ann = {"training-progress.io/on-stalled": "restart"}
    assert decide("TrainingJobStalled", "other", ann, policy).action == "restart"
    assert decide("TrainingJobStalled", "team-a", {}, policy).action == "suspend"
    # The job's own annotation wins over the default, "none" included.
    off = {"training-progress.io/on-stalled": "none"}
    assert decide("TrainingJobStalled", "team-a", off, policy).outcome == "not_opted_in"
    assert decide("TrainingJobStalled", "other", {}, policy).outcome == "not_opted_in"
    bad = {"training-progress.io/on-stalled": "delete"}  # delete is for finished jobs
    assert decide("TrainingJobStalled", "other", bad, policy).outcome == "invalid_policy"
    assert decide("TrainingLossPlateau", "team-a", ann, policy).outcome == "not_actionable"
    fin = {"training-progress.io/on-finished-but-running": "delete"}
    assert decide("TrainingFinishedButRunning", "x", fin, policy).action == "delete"


def test_guard_dedupes_cools_down_and_breaks_the_circuit() -> None:
    g = Guard(ActionLimits(per_namespace_per_hour=2, total_per_hour=3, cooldown_seconds=60))
    assert not g.handled("fp@t", 0)
    g.remember("fp@t", 1)  # handled to its end
    assert g.handled("fp@t", 2)
    assert g.admit("a", "TrainJob/x", "TrainingJobStalled", 10) is None
    assert g.cooling("a", "TrainJob/x", "TrainingJobStalled", 20)
    assert g.admit("a", "TrainJob/x", "TrainingJobStalled", 20) == "cooldown"
    assert not g.cooling("a", "TrainJob/x", "TrainingJobStalled", 71)
    assert g.admit("a", "TrainJob/y", "TrainingJobStalled", 11) is None
    assert g.breaker_open("a", 12)  # two in namespace a this hour
    assert g.admit("a", "TrainJob/w", "TrainingJobStalled", 12) == "breaker_open"
    assert not g.breaker_open("b", 12)
    g.record("b", "Job/z", "TrainingJobStalled", 13)
    assert g.breaker_open("c", 14)  # three in all
    assert not g.breaker_open("a", 3611)  # the hour rolled on
    g.undo("b", "Job/z", "TrainingJobStalled")  # it failed: the re-send is not cooling
    assert not g.cooling("b", "Job/z", "TrainingJobStalled", 14)


def test_owners_of_each_kind() -> None:
    """The job a controller reference names, and how it is suspended and its pods found."""
    tj = owner_of(Ref("TrainJob", "trainer.kubeflow.org/v1alpha1", "llm", "u"), NS)
    assert tj and (tj.kind, tj.plural, tj.name, tj.uid) == ("TrainJob", "trainjobs", "llm", "u")
    assert tj.suspend_patch() == {"spec": {"suspend": True}}
    assert tj.selector == "trainer.kubeflow.org/trainjob-name=llm"
    js = owner_of(Ref("JobSet", "jobset.x-k8s.io/v1alpha2", "js", "u"), NS)
    assert js and (js.kind, js.api_version) == ("JobSet", "jobset.x-k8s.io/v1alpha2")
    job = owner_of(Ref("Job", "batch/v1", "j", "u"), NS)
    assert job and (job.kind, job.api_version, job.selector) == (
        "Job",
        "batch/v1",
        "batch.kubernetes.io/job-name=j",
    )
    pt = owner_of(Ref("PyTorchJob", "kubeflow.org/v1", "pt", "u"), NS)
    assert pt and pt.plural == "pytorchjobs"
    assert pt.suspend_patch() == {"spec": {"runPolicy": {"suspend": True}}}
    assert owner_of(Ref("Trial", "kubeflow.org/v1beta1", "t", "u"), NS) is None  # not a job
    assert owner_of(Ref("MyTrainer", "example.com/v1", "m", "u"), NS) is None  # unknown


def test_config_file_is_validated() -> None:
    cfg = parse_config(
        {
            "dry_run": False,
            "namespaces": ["team-*"],
            "defaults": {"on-stalled": "restart"},
            "max_actions_per_hour": 3,
            "cooldown": "5m",
        }
    )
    assert not cfg.dry_run and cfg.limits.total_per_hour == 3
    assert cfg.limits.cooldown_seconds == 300 and cfg.policy.namespaces == ("team-*",)
    assert parse_config({}).dry_run  # dry-run unless turned off
    for bad in (
        {"dry_run": "no"},
        {"defaults": {"on-stalled": "delete"}},
        {"defaults": {"on-anything": "none"}},
        {"max_actions_per_hour": -1},
        {"surprise": 1},
    ):
        with pytest.raises(ConfigError):
            parse_config(bad)


# -- the controller on the fake API server --------------------------------------------------


def add_trainjob(
    kube: FakeKube, name: str, annotations: dict[str, str], pods: int = 2, phase: str = "Running"
) -> None:
    kube.put(
        "trainer.kubeflow.org/v1alpha1",
        "trainjobs",
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {
                "name": name,
                "namespace": NS,
                "uid": f"uid-{name}",
                "annotations": annotations,
            },
            "spec": {"suspend": False},
        },
    )
    for i in range(pods):
        # Made as Trainer makes them: TrainJob -> JobSet -> Job -> pod, by owner references.
        put_pod(
            kube,
            {
                "metadata": {
                    "name": f"{name}-node-0-{i}",
                    "namespace": NS,
                    "uid": f"uid-{name}-{i}",
                    "labels": {
                        "trainer.kubeflow.org/trainjob-name": name,
                        "jobset.sigs.k8s.io/jobset-name": name,
                    },
                },
                "status": {"phase": phase},
            },
        )


def add_bare_pod(kube: FakeKube, name: str, annotations: dict[str, str]) -> None:
    kube.put(
        "v1",
        "pods",
        {
            "metadata": {
                "name": name,
                "namespace": NS,
                "uid": f"uid-{name}",
                "annotations": annotations,
            },
            "status": {"phase": "Running"},
        },
    )


class Act:
    """act's HTTP front and controller, on the fake API server."""

    def __init__(self, kube: FakeKube, kubeconfig: Path, config: ActConfig) -> None:
        self.kube = kube
        self.now = 1_800_000_000.0
        client = kube_config.new_client_from_config(config_file=str(kubeconfig))
        self.actor = Actor(KubernetesOps(client), config, lambda: self.now)
        self.server = make_server("127.0.0.1", 0, self.actor, TOKEN)
        serve_in_thread(self.server)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def post(self, body: bytes, token: str | None = TOKEN) -> tuple[int, dict[str, Any]]:
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        req = urllib.request.Request(self.url + "/api/v1/alerts", body, headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read() or b"{}")

    def writes(self, kind: str | None = None) -> list[tuple[str, str, Any]]:
        return [w for w in self.kube.writes if kind is None or w[1].endswith(kind) or kind in w[1]]

    def events(self) -> list[dict[str, Any]]:
        return [b for m, p, b in self.kube.writes if m == "POST" and p.endswith("/events")]

    def metrics(self) -> str:
        with urllib.request.urlopen(self.url + "/metrics", timeout=10) as resp:
            return resp.read().decode()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def act_factory(tmp_path: Path) -> Iterator[Any]:
    made: list[Act] = []
    with fake_kube(tmp_path) as (kube, kubeconfig):

        def make(config: ActConfig | None = None) -> Act:
            a = Act(kube, kubeconfig, config or ActConfig(dry_run=False))
            made.append(a)
            return a

        yield make
        for a in made:
            a.close()


def test_stalled_job_that_opted_in_is_restarted_once(act_factory: Any) -> None:
    act = act_factory()
    add_trainjob(act.kube, "llm", {"training-progress.io/on-stalled": "restart"})
    body = notification(alert("TrainingJobStalled", "llm-node-0-0", "llm"))
    status, doc = act.post(body)
    assert status == 200 and doc["taken"] == 1, doc
    deletes = [p for m, p, _ in act.kube.writes if m == "DELETE"]
    assert deletes == [
        f"/api/v1/namespaces/{NS}/pods/llm-node-0-0",
        f"/api/v1/namespaces/{NS}/pods/llm-node-0-1",
    ]
    (event,) = act.events()
    assert event["reason"] == "TrainingProgressStalledRestart"
    assert event["involvedObject"]["kind"] == "TrainJob" and event["type"] == "Warning"
    assert 'training_exporter_actions_total{action="restart",outcome="taken"} 1' in act.metrics()
    # Alertmanager re-sends the same alert: handled once.
    status, doc = act.post(body)
    assert status == 200 and doc["outcomes"][0]["outcome"] == "duplicate"
    assert len([w for w in act.kube.writes if w[0] == "DELETE"]) == 2


def test_dry_run_writes_nothing_but_events(act_factory: Any) -> None:
    act = act_factory(ActConfig(dry_run=True))
    add_trainjob(act.kube, "llm", {"training-progress.io/on-stalled": "suspend"})
    status, doc = act.post(notification(alert("TrainingJobStalled", "llm-node-0-0", "llm")))
    assert status == 200 and doc["outcomes"][0]["outcome"] == "dry_run"
    assert [m for m, _, _ in act.kube.writes] == ["POST"]
    (event,) = act.events()
    assert event["reason"] == "TrainingProgressStalledSuspendDryRun"
    assert "would suspend TrainJob/llm" in event["message"]
    assert "training_exporter_act_dry_run 1" in act.metrics()


def test_a_deadline_is_suspended_for_only_when_even_the_lower_bound_passes_it(
    act_factory: Any,
) -> None:
    """TrainingWillMissDeadline says how sure it is (deadline_passed_by): a job is
    suspended only when even its ETA's lower bound passes the deadline; when only the
    estimate does, it is told (an Event), not suspended."""
    act = act_factory(ActConfig(dry_run=False))
    add_trainjob(act.kube, "maybe", {"training-progress.io/on-deadline": "suspend"})
    add_trainjob(act.kube, "surely", {"training-progress.io/on-deadline": "suspend"})
    maybe = alert("TrainingWillMissDeadline", "maybe-node-0-0", "maybe")
    maybe["labels"]["deadline_passed_by"] = "estimate"
    surely = alert("TrainingWillMissDeadline", "surely-node-0-0", "surely")
    surely["labels"]["deadline_passed_by"] = "lower_bound"
    status, doc = act.post(notification(maybe, surely))
    assert status == 200
    assert [(o["action"], o["outcome"]) for o in doc["outcomes"]] == [
        ("notify", "taken"),
        ("suspend", "taken"),
    ]
    patches = [p for m, p, _ in act.kube.writes if m == "PATCH"]
    assert patches == [f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{NS}/trainjobs/surely"]
    events = {e["involvedObject"]["name"]: e for e in act.events()}
    assert events["maybe"]["reason"] == "TrainingProgressWillMissDeadlineNotify"
    assert "lower bound does not" in events["maybe"]["message"]
    assert events["surely"]["reason"] == "TrainingProgressWillMissDeadlineSuspend"


def test_a_job_that_did_not_opt_in_is_untouched(act_factory: Any) -> None:
    act = act_factory()
    add_trainjob(act.kube, "quiet", {})
    status, doc = act.post(notification(alert("TrainingJobStalled", "quiet-node-0-0", "quiet")))
    assert status == 200 and doc["outcomes"][0]["outcome"] == "not_opted_in"
    assert act.kube.writes == []


def test_namespace_allow_list_gives_the_cluster_default(act_factory: Any) -> None:
    policy = Policy(namespaces=(NS,), defaults={"on-stalled": "suspend"})
    act = act_factory(ActConfig(dry_run=False, policy=policy))
    add_trainjob(act.kube, "llm", {})
    act.post(notification(alert("TrainingJobStalled", "llm-node-0-0", "llm")))
    (patch,) = [(p, b) for m, p, b in act.kube.writes if m == "PATCH"]
    assert patch == (
        f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{NS}/trainjobs/llm",
        {"spec": {"suspend": True}},
    )
    obj = act.kube.objects[("trainer.kubeflow.org/v1alpha1", "trainjobs")][(NS, "llm")]
    assert obj["spec"]["suspend"] is True


def test_suspend_patches_each_owner_kind(act_factory: Any) -> None:
    act = act_factory()
    ann = {"training-progress.io/on-over-budget": "suspend"}
    act.kube.put(
        "batch/v1",
        "jobs",
        {"metadata": {"name": "bj", "namespace": NS, "uid": "u1", "annotations": ann}, "spec": {}},
    )
    act.kube.put(
        "kubeflow.org/v1",
        "pytorchjobs",
        {"metadata": {"name": "pt", "namespace": NS, "uid": "u2", "annotations": ann}, "spec": {}},
    )
    for name, labels, refs in (
        (
            "bj-0",
            {"batch.kubernetes.io/job-name": "bj"},
            [
                {
                    "kind": "Job",
                    "apiVersion": "batch/v1",
                    "name": "bj",
                    "uid": "u1",
                    "controller": True,
                }
            ],
        ),
        (
            "pt-master-0",
            {"training.kubeflow.org/job-name": "pt"},
            [
                {
                    "kind": "PyTorchJob",
                    "apiVersion": "kubeflow.org/v1",
                    "name": "pt",
                    "uid": "u2",
                    "controller": True,
                }
            ],
        ),
    ):
        act.kube.put(
            "v1",
            "pods",
            {
                "metadata": {
                    "name": name,
                    "namespace": NS,
                    "labels": labels,
                    "ownerReferences": refs,
                },
                "status": {"phase": "Running"},
            },
        )
    act.post(
        notification(
            alert("TrainingOverGPUBudget", "bj-0", "bj"),
            alert("TrainingOverGPUBudget", "pt-master-0", "pt"),
        )
    )
    patches = sorted((p, json.dumps(b)) for m, p, b in act.kube.writes if m == "PATCH")
    assert patches == [
        (f"/apis/batch/v1/namespaces/{NS}/jobs/bj", '{"spec": {"suspend": true}}'),
        (
            f"/apis/kubeflow.org/v1/namespaces/{NS}/pytorchjobs/pt",
            '{"spec": {"runPolicy": {"suspend": true}}}',
        ),
    ]
    reasons = sorted(e["reason"] for e in act.events())
    assert reasons == ["TrainingProgressOverBudgetSuspend"] * 2


def test_finished_but_running_deletes_only_the_lingering_pods(act_factory: Any) -> None:
    act = act_factory()
    add_trainjob(
        act.kube, "done", {"training-progress.io/on-finished-but-running": "delete"}, pods=1
    )
    act.kube.put(
        "v1",
        "pods",
        {
            "metadata": {
                "name": "done-node-0-9",
                "namespace": NS,
                "labels": {"trainer.kubeflow.org/trainjob-name": "done"},
            },
            "status": {"phase": "Succeeded"},
        },
    )
    act.post(notification(alert("TrainingFinishedButRunning", "done-node-0-0", "done")))
    deletes = [p for m, p, _ in act.kube.writes if m == "DELETE"]
    assert deletes == [f"/api/v1/namespaces/{NS}/pods/done-node-0-0"]


def test_bare_pods_can_be_deleted_not_suspended(act_factory: Any) -> None:
    act = act_factory()
    add_bare_pod(act.kube, "solo", {"training-progress.io/on-deadline": "suspend"})
    add_bare_pod(act.kube, "solo2", {"training-progress.io/on-stalled": "restart"})
    late = alert("TrainingWillMissDeadline", "solo", "solo")
    late["labels"]["deadline_passed_by"] = "lower_bound"  # sure enough to suspend
    _status, doc = act.post(notification(late, alert("TrainingJobStalled", "solo2", "solo2")))
    outcomes = [o["outcome"] for o in doc["outcomes"]]
    assert outcomes == ["unsupported_owner", "taken"]
    assert [p for m, p, _ in act.kube.writes if m == "DELETE"] == [
        f"/api/v1/namespaces/{NS}/pods/solo2"
    ]
    # The two alerts are acted on at once (one worker each): their Events come in any order.
    reasons = sorted(e["reason"] for e in act.events())
    assert reasons == [
        "TrainingProgressStalledRestart",
        "TrainingProgressWillMissDeadlineSuspendSkipped",
    ]


def test_circuit_breaker_stops_the_next_action(act_factory: Any) -> None:
    limits = ActionLimits(per_namespace_per_hour=2, total_per_hour=10)
    act = act_factory(ActConfig(dry_run=False, limits=limits))
    for name in ("a", "b", "c"):
        add_trainjob(act.kube, name, {"training-progress.io/on-stalled": "suspend"}, pods=1)
    _, doc = act.post(
        notification(*(alert("TrainingJobStalled", f"{n}-node-0-0", n) for n in ("a", "b", "c")))
    )
    # The alerts are handled at once: which one finds the breaker open is a race, that
    # exactly one does is not.
    outcomes = sorted(o["outcome"] for o in doc["outcomes"])
    assert outcomes == ["breaker_open", "taken", "taken"]
    assert len([w for w in act.kube.writes if w[0] == "PATCH"]) == 2
    reasons = [e["reason"] for e in act.events()]
    assert reasons.count("TrainingProgressStalledSuspendSkipped") == 1
    (skipped,) = [o["job"] for o in doc["outcomes"] if o["outcome"] == "breaker_open"]
    late = skipped.split("/")[1]
    # An hour later the breaker has closed again.
    act.now += 3601
    _status, doc = act.post(
        notification(
            alert("TrainingJobStalled", f"{late}-node-0-0", late, starts_at="2026-11-30T11:00:00Z")
        )
    )
    assert doc["outcomes"][0]["outcome"] == "taken"


def test_webhook_needs_the_token_and_a_valid_body(act_factory: Any) -> None:
    act = act_factory()
    add_trainjob(act.kube, "llm", {"training-progress.io/on-stalled": "restart"})
    body = notification(alert("TrainingJobStalled", "llm-node-0-0", "llm"))
    for token in (None, "wrong", TOKEN + "x", ""):
        status, _ = act.post(body, token)
        assert status == 401
    status, doc = act.post(b"{not json", TOKEN)
    assert status == 400 and "invalid_json" in doc["message"]
    assert act.kube.writes == []
    text = act.metrics()
    assert 'training_exporter_act_notifications_total{outcome="unauthorized"} 4' in text
    assert 'training_exporter_act_notifications_total{outcome="rejected"} 1' in text


def test_api_outage_answers_503_so_alertmanager_retries(act_factory: Any) -> None:
    act = act_factory()
    add_trainjob(act.kube, "llm", {"training-progress.io/on-stalled": "restart"})
    body = notification(alert("TrainingJobStalled", "llm-node-0-0", "llm"))
    act.kube.down = True
    status, _ = act.post(body)
    assert status == 503
    act.kube.down = False
    status, doc = act.post(body)  # the retry is not a duplicate
    assert status == 200 and doc["taken"] == 1


def test_resolved_and_unknown_alerts_do_nothing(act_factory: Any) -> None:
    act = act_factory()
    add_trainjob(act.kube, "llm", {"training-progress.io/on-stalled": "restart"})
    _status, doc = act.post(
        notification(
            alert("TrainingJobStalled", "llm-node-0-0", "llm", status="resolved"),
            alert("TrainingLossPlateau", "llm-node-0-0", "llm"),
            alert("TrainingJobStalled", "gone-pod", "gone"),
        )
    )
    assert [o["outcome"] for o in doc["outcomes"]] == ["resolved", "not_actionable", "not_found"]
    assert act.kube.writes == []


def test_invalid_annotation_is_reported_on_the_job(act_factory: Any) -> None:
    act = act_factory()
    add_trainjob(act.kube, "llm", {"training-progress.io/on-stalled": "explode"})
    _, doc = act.post(notification(alert("TrainingJobStalled", "llm-node-0-0", "llm")))
    assert doc["outcomes"][0]["outcome"] == "invalid_policy"
    (event,) = act.events()
    assert event["type"] == "Warning" and "explode" in event["message"]
    assert [m for m, _, _ in act.kube.writes] == ["POST"]


def test_act_metrics_are_documented(act_factory: Any) -> None:
    act = act_factory()
    add_trainjob(act.kube, "llm", {"training-progress.io/on-stalled": "restart"})
    act.post(notification(alert("TrainingJobStalled", "llm-node-0-0", "llm")))
    families = {line.split()[2] for line in act.metrics().splitlines() if line.startswith("# TYPE")}
    assert families == {
        "training_exporter_actions_total",
        "training_exporter_act_notifications_total",
        "training_exporter_act_leader",
        "training_exporter_act_dry_run",
    }
    docs = (Path(__file__).parent.parent / "docs" / "act.md").read_text()
    for name in families:
        assert name in docs


@pytest.mark.slow
def test_cli_act_serves_the_webhook_with_its_config(tmp_path: Path) -> None:
    with fake_kube(tmp_path) as (kube, kubeconfig):
        add_trainjob(kube, "llm", {"training-progress.io/on-stalled": "restart"})
        token = tmp_path / "token"
        token.write_text(TOKEN + "\n")
        conf = tmp_path / "act.yaml"
        conf.write_text("dry_run: false\ncooldown: 1m\n")
        env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        empty = tmp_path / "empty"
        empty.write_text("")
        bad = subprocess.run(
            [sys.executable, "-m", "exporter", "act", "--token-file", str(empty)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert bad.returncode == 2 and "empty" in bad.stderr
        port = free_port()
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "exporter",
                "act",
                "--token-file",
                str(token),
                "--config",
                str(conf),
                "--listen",
                f"127.0.0.1:{port}",
            ],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None
            assert "(acting) serving" in proc.stdout.readline()
            url = f"http://127.0.0.1:{port}/api/v1/alerts"
            body = notification(alert("TrainingJobStalled", "llm-node-0-0", "llm"))
            req = urllib.request.Request(url, body, {"Authorization": f"Bearer {TOKEN}"})
            deadline = time.time() + 30
            while True:
                try:
                    with urllib.request.urlopen(req, timeout=10) as resp:
                        doc = json.loads(resp.read())
                    break
                except OSError:
                    if time.time() > deadline:
                        raise
                    time.sleep(0.2)
            assert doc["taken"] == 1
            assert len([w for w in kube.writes if w[0] == "DELETE"]) == 2
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def test_labels_that_cannot_name_a_pod_never_reach_the_api(act_factory: Any) -> None:
    act = act_factory()
    add_trainjob(act.kube, "llm", {"training-progress.io/on-stalled": "restart"})
    before = len(act.kube.requests)
    hostile = [
        alert("TrainingJobStalled", "../../../nodes/x", "llm"),
        alert("TrainingJobStalled", "llm-node-0-0", "llm", ns="ML/../kube-system"),
        alert("TrainingJobStalled", "", "llm", fingerprint="empty-pod"),
        alert("TrainingJobStalled", "llm-node-0-0\n", "llm", fingerprint="newline"),
    ]
    status, doc = act.post(notification(*hostile))
    assert status == 200
    assert [o["outcome"] for o in doc["outcomes"]] == ["not_found"] * 4
    assert act.kube.requests[before:] == [] and act.kube.writes == []


def test_an_api_error_while_listing_the_pods_leaves_the_alert_to_the_retry(
    act_factory: Any,
) -> None:
    """Before: the alert was remembered before its pods were listed, so the failed list
    made every re-send a duplicate and the action was lost."""
    act = act_factory()
    add_trainjob(act.kube, "llm", {"training-progress.io/on-stalled": "restart"})
    body = notification(alert("TrainingJobStalled", "llm-node-0-0", "llm"))
    act.kube.fail["labelSelector"] = 1  # the list of the job's pods fails once
    status, _ = act.post(body)
    assert status == 503
    assert [m for m, _, _ in act.kube.writes if m == "DELETE"] == []
    status, doc = act.post(body)  # Alertmanager's retry
    assert status == 200 and doc["outcomes"][0]["outcome"] == "taken", doc
    assert len([m for m, _, _ in act.kube.writes if m == "DELETE"]) == 2


@pytest.mark.slow
def test_a_slow_job_holds_no_other_notification(act_factory: Any) -> None:
    """Reading one job's pod takes 3 s; a notification about another job, sent meanwhile,
    is answered at once (before: one lock for every notification)."""
    act = act_factory()
    add_trainjob(act.kube, "slow", {"training-progress.io/on-stalled": "restart"}, pods=1)
    add_trainjob(act.kube, "fast", {"training-progress.io/on-stalled": "restart"}, pods=1)
    act.kube.delay["/pods/slow-node-0-0"] = 3.0
    slow = threading.Thread(
        target=act.post, args=(notification(alert("TrainingJobStalled", "slow-node-0-0", "slow")),)
    )
    slow.start()
    time.sleep(0.3)
    start = time.monotonic()
    status, doc = act.post(notification(alert("TrainingJobStalled", "fast-node-0-0", "fast")))
    took = time.monotonic() - start
    slow.join(30)
    assert status == 200 and doc["outcomes"][0]["outcome"] == "taken"
    assert took < 1.5, took


@pytest.mark.slow
def test_each_api_call_has_one_deadline_retries_included(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An API server that accepts connections and never answers: one call gives up at its
    deadline, not at four times it (the client's own retries are off)."""
    from exporter.act.kube import ClusterError
    from exporter.kubernetes.client import api_client

    silent = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        silent.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(silent.accept()[0])
            except OSError:
                continue

    threading.Thread(target=accept, daemon=True).start()
    port = silent.getsockname()[1]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {}}]\n"
    )
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    try:
        ops = KubernetesOps(api_client(retries=0), timeout=1.0)
        start = time.monotonic()
        with pytest.raises(ClusterError):
            ops.pod(NS, "p")
        took = time.monotonic() - start
    finally:
        stop.set()
        for s in held:
            s.close()
        silent.close()
    assert 0.9 < took < 2.0, took


def test_a_pod_naming_the_victims_trainjob_with_its_real_uid_cannot_make_act_act(
    act_factory: Any,
) -> None:
    """F1 (#56): a bare pod whose controller reference names the victim TrainJob with its
    real UID (a shape the Trainer never makes), alerting, with the victim opted in to
    restarts: refused (``owner_chain``), and none of the victim's pods is deleted."""
    act = act_factory()
    add_trainjob(act.kube, "victim", {"training-progress.io/on-stalled": "restart"})
    act.kube.put(
        "v1",
        "pods",
        {
            "metadata": {
                "name": "rogue-0",
                "namespace": NS,
                "uid": "uid-rogue",
                "labels": {"trainer.kubeflow.org/trainjob-name": "victim"},
                "ownerReferences": [
                    {
                        "apiVersion": "trainer.kubeflow.org/v1alpha1",
                        "kind": "TrainJob",
                        "name": "victim",
                        "uid": "uid-victim",
                        "controller": True,
                    }
                ],
            },
            "status": {"phase": "Running"},
        },
    )
    status, doc = act.post(notification(alert("TrainingJobStalled", "rogue-0", "victim")))
    assert status == 200 and doc["outcomes"][0]["outcome"] == "owner_chain", doc
    assert [w for w in act.kube.writes if w[0] in ("PATCH", "DELETE")] == []


def test_a_pod_wearing_a_jobs_labels_cannot_make_act_touch_the_job(act_factory: Any) -> None:
    """A bare pod labelled as the victim TrainJob's, opted in on itself: its alert is
    refused (its owners are not the victim), and the victim, which never opted in, is
    neither suspended nor restarted."""
    act = act_factory()
    add_trainjob(act.kube, "victim", {})  # never opted in
    act.kube.put(
        "v1",
        "pods",
        {
            "metadata": {
                "name": "rogue-0",
                "namespace": NS,
                "uid": "uid-rogue",
                "labels": {
                    "trainer.kubeflow.org/trainjob-name": "victim",
                    "jobset.sigs.k8s.io/jobset-name": "victim",
                },
                "annotations": {"training-progress.io/on-stalled": "suspend"},
            },
            "status": {"phase": "Running"},
        },
    )
    status, doc = act.post(notification(alert("TrainingJobStalled", "rogue-0", "victim")))
    assert status == 200 and doc["outcomes"][0]["outcome"] == "owner_mismatch", doc
    # The victim's own pod, alerting: the rogue's annotation does not opt the victim in.
    status, doc = act.post(notification(alert("TrainingJobStalled", "victim-node-0-0", "victim")))
    assert doc["outcomes"][0]["outcome"] == "not_opted_in", doc
    assert [w for w in act.kube.writes if w[0] in ("PATCH", "DELETE")] == []


def test_a_restart_deletes_only_the_pods_the_job_owns(act_factory: Any) -> None:
    """The victim opted in to restarts; a bare pod wears its labels. The restart lists the
    job's pods by label and keeps only those the job owns."""
    act = act_factory()
    add_trainjob(act.kube, "llm", {"training-progress.io/on-stalled": "restart"})
    act.kube.put(
        "v1",
        "pods",
        {
            "metadata": {
                "name": "stowaway",
                "namespace": NS,
                "uid": "uid-stowaway",
                "labels": {
                    "trainer.kubeflow.org/trainjob-name": "llm",
                    "jobset.sigs.k8s.io/jobset-name": "llm",
                },
            },
            "status": {"phase": "Running"},
        },
    )
    status, doc = act.post(notification(alert("TrainingJobStalled", "llm-node-0-0", "llm")))
    assert status == 200 and doc["outcomes"][0]["outcome"] == "taken", doc
    deleted = sorted(p.rsplit("/", 1)[1] for m, p, _ in act.kube.writes if m == "DELETE")
    assert deleted == ["llm-node-0-0", "llm-node-0-1"]
