"""Resizing for a deadline (#57): what change each kind allows within its own bounds
(exporter/act/resize.py), the sequence that never resizes without a fresh checkpoint
(exporter/act/resizer.py), and act's decisions on the fake API server through the real
``kubernetes`` client (a JobSet's JSON patch, a TrainJob's recommendation, opt-in by the
job alone, dry run). The whole path with a real Prometheus and Alertmanager:
tests/e2e/test_resize_e2e.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from exporter.act.act_config import ActConfig
from exporter.act.act_config import parse as parse_config
from exporter.act.policy import Policy, decide
from exporter.act.resize import Change, NoChange, plan
from exporter.act.resizer import ResizeSteps, run_resize
from exporter.plumbing.settings import ConfigError

from .kube import put_pod
from .test_act import NS, act_factory, alert, notification

__all__ = ["act_factory"]


def pytorchjob(workers: int = 2, low: int = 1, high: int = 4, master: int = 0) -> dict[str, Any]:
    specs: dict[str, Any] = {"Worker": {"replicas": workers}}
    if master:
        specs["Master"] = {"replicas": master}
    return {
        "spec": {
            "elasticPolicy": {"minReplicas": low, "maxReplicas": high},
            "pytorchReplicaSpecs": specs,
        }
    }


def test_an_elastic_pytorchjob_scales_its_workers_within_its_elastic_policy() -> None:
    change = plan("PyTorchJob", pytorchjob(), 3)
    assert change == Change("scale", {"spec": {"replicas": 3}}, 2, 3)
    # A Master counts as a node: 4 nodes needed are 3 workers beside it.
    assert plan("PyTorchJob", pytorchjob(master=1), 4) == Change(
        "scale", {"spec": {"replicas": 3}}, 3, 4
    )
    beyond = plan("PyTorchJob", pytorchjob(), 5)
    assert isinstance(beyond, NoChange) and beyond.reason == "beyond_bounds"
    below = plan("PyTorchJob", pytorchjob(low=2), 1)
    assert isinstance(below, NoChange) and below.reason == "beyond_bounds"
    same = plan("PyTorchJob", pytorchjob(), 2)
    assert isinstance(same, NoChange) and same.reason == "no_change"
    rigid = plan("PyTorchJob", {"spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 2}}}}, 3)
    assert isinstance(rigid, NoChange) and rigid.reason == "not_elastic"


def jobset(parallelism: int = 2, bounds: tuple[str, str] | None = ("1", "8")) -> dict[str, Any]:
    annotations = {}
    if bounds is not None:
        annotations = {
            "training-progress.io/min-nodes": bounds[0],
            "training-progress.io/max-nodes": bounds[1],
        }
    return {
        "metadata": {"annotations": annotations},
        "spec": {
            "replicatedJobs": [
                {
                    "name": "node",
                    "replicas": 1,
                    "template": {"spec": {"parallelism": parallelism, "completions": parallelism}},
                }
            ]
        },
    }


def test_a_jobset_changes_parallelism_and_completions_together_within_its_annotations() -> None:
    change = plan("JobSet", jobset(), 4)
    assert isinstance(change, Change) and change.how == "json-patch"
    assert change.body == [
        {"op": "test", "path": "/spec/replicatedJobs/0/template/spec/parallelism", "value": 2},
        {"op": "replace", "path": "/spec/replicatedJobs/0/template/spec/parallelism", "value": 4},
        {"op": "replace", "path": "/spec/replicatedJobs/0/template/spec/completions", "value": 4},
    ]
    unbounded = plan("JobSet", jobset(bounds=None), 4)
    assert isinstance(unbounded, NoChange) and unbounded.reason == "recommend_only"
    beyond = plan("JobSet", jobset(bounds=("1", "3")), 4)
    assert isinstance(beyond, NoChange) and beyond.reason == "beyond_bounds"


def test_a_trainjob_is_only_recommended_a_size() -> None:
    found = plan("TrainJob", {"spec": {"trainer": {"numNodes": 2}}}, 4)
    assert isinstance(found, NoChange) and found.reason == "recommend_only"
    assert "4 nodes recommended" in found.message


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def steps(clock: Clock, saves_after: float | None) -> tuple[ResizeSteps, list[str]]:
    """A run that saves ``saves_after`` seconds after being asked (None: never)."""
    log: list[str] = []
    asked: list[float] = []

    def newest() -> float | None:
        if saves_after is None or not asked or clock.now < asked[0] + saves_after:
            return asked[0] - 600 if asked else None  # only an old checkpoint
        return asked[0] + saves_after

    return (
        ResizeSteps(
            ask_checkpoint=lambda value: (asked.append(clock.now), log.append(f"ask {value}")),
            newest_checkpoint=newest,
            apply=lambda: log.append("apply"),
            record=lambda outcome, message, warning: log.append(f"{outcome}: {message}"),
        ),
        log,
    )


def test_the_change_comes_only_after_a_checkpoint_newer_than_the_request() -> None:
    clock = Clock()
    s, log = steps(clock, saves_after=42)
    assert run_resize(s, "resize x", 600, clock, clock.sleep) == "taken"
    assert log[0].startswith("ask act-") and log[1] == "apply" and log[2].startswith("taken")
    assert 42 <= clock.now - 1_800_000_000.0 < 50  # waited for it, polled every 5 s


def test_no_checkpoint_within_the_wait_is_no_change_and_says_why() -> None:
    clock = Clock()
    s, log = steps(clock, saves_after=None)
    assert run_resize(s, "resize x", 60, clock, clock.sleep) == "no_checkpoint"
    assert "apply" not in log and log[-1].startswith("no_checkpoint: no checkpoint newer")
    assert clock.now - 1_800_000_000.0 == pytest.approx(60)


def test_only_the_jobs_own_annotation_opts_it_in_to_a_resize() -> None:
    policy = Policy(("*",), {"on-stalled": "restart"})
    none = decide("TrainingDeadlineNeedsResize", "ml", {}, policy)
    assert none.outcome == "not_opted_in" and "only the job's own annotation" in none.why
    mine = decide(
        "TrainingDeadlineNeedsResize",
        "ml",
        {"training-progress.io/on-deadline-resize": "scale"},
        policy,
    )
    assert (mine.action, mine.outcome) == ("scale", "act")
    with pytest.raises(ConfigError, match="has no default"):
        parse_config({"namespaces": ["*"], "defaults": {"on-deadline-resize": "scale"}})
    cfg = parse_config({"prometheus_url": "http://prometheus:9090", "checkpoint_wait": "2m"})
    assert (cfg.prometheus_url, cfg.checkpoint_wait) == ("http://prometheus:9090", 120.0)
    with pytest.raises(ConfigError, match="checkpoint_wait"):
        parse_config({"checkpoint_wait": "1s"})


def resize_alert(pod: str, job: str, nodes: str) -> dict[str, Any]:
    doc = alert("TrainingDeadlineNeedsResize", pod, job)
    doc["labels"].update(nodes_needed=nodes, direction="up")
    return doc


def add_jobset(kube: Any, name: str, annotations: dict[str, str]) -> None:
    obj = jobset()
    obj["metadata"] = {
        "name": name, "namespace": NS, "uid": f"uid-jobset-{name}", "annotations": annotations
    }  # fmt: skip
    obj["apiVersion"], obj["kind"] = "jobset.x-k8s.io/v1alpha2", "JobSet"
    kube.put("jobset.x-k8s.io/v1alpha2", "jobsets", obj)
    put_pod(
        kube,
        {
            "metadata": {
                "name": f"{name}-node-0-0",
                "namespace": NS,
                "uid": f"uid-{name}-pod",
                "labels": {"jobset.sigs.k8s.io/jobset-name": name},
            },
            "status": {"phase": "Running"},
        },
    )


def test_act_recommends_a_size_on_a_trainjob_and_refuses_an_invalid_count(
    act_factory: Any,
) -> None:
    from .test_act import add_trainjob

    act = act_factory()
    add_trainjob(act.kube, "llm", {"training-progress.io/on-deadline-resize": "scale"})
    status, doc = act.post(notification(resize_alert("llm-node-0-0", "llm", "4")))
    assert status == 200 and doc["outcomes"][0]["action"] == "recommend", doc
    (patch,) = [b for m, p, b in act.kube.writes if m == "PATCH" and p.endswith("/trainjobs/llm")]
    assert patch == {"metadata": {"annotations": {"training-progress.io/recommended-nodes": "4"}}}
    (event,) = act.events()
    assert event["reason"] == "TrainingProgressDeadlineResizeRecommend"
    bad = resize_alert("llm-node-0-0", "llm", "lots")
    bad["fingerprint"] = "other"
    status, doc = act.post(notification(bad))
    assert doc["outcomes"][0]["outcome"] == "not_actionable"


def test_act_resizes_a_bounded_jobset_after_a_checkpoint_and_dry_run_only_says_so(
    act_factory: Any,
) -> None:
    """No Prometheus URL: no checkpoint can be seen, so no resize (and it says so). With one
    in dry run: an Event, nothing written."""
    act = act_factory()
    add_jobset(act.kube, "sweep", {"training-progress.io/on-deadline-resize": "scale",
                                   "training-progress.io/min-nodes": "1",
                                   "training-progress.io/max-nodes": "8"})  # fmt: skip
    status, doc = act.post(notification(resize_alert("sweep-node-0-0", "sweep", "4")))
    assert doc["outcomes"][0]["outcome"] == "no_checkpoint", doc
    assert not [w for w in act.kube.writes if w[0] == "PATCH"]
    dry = act_factory(ActConfig(dry_run=True, prometheus_url="http://127.0.0.1:9"))
    add_jobset(dry.kube, "sweep2", {"training-progress.io/on-deadline-resize": "scale",
                                    "training-progress.io/min-nodes": "1",
                                    "training-progress.io/max-nodes": "8"})  # fmt: skip
    status, doc = dry.post(notification(resize_alert("sweep2-node-0-0", "sweep2", "4")))
    assert status == 200 and doc["outcomes"][0]["outcome"] == "dry_run", doc
    assert (
        "would ask for a checkpoint, wait for it, then resize JobSet/sweep2 from 2 to 4"
        in (doc["outcomes"][0]["message"])
    )
    assert not [w for w in dry.kube.writes if w[0] == "PATCH"]


def test_the_jobset_patch_lands_through_the_real_client_and_a_stale_one_is_refused(
    act_factory: Any,
) -> None:
    """KubernetesOps.json_patch on the fake API server: the JSON patch changes parallelism
    and completions together; the same patch again fails its test (the size changed)."""
    from exporter.act.job_owners import owner_of
    from exporter.act.kube import ClusterError
    from exporter.core.workloads import Ref

    act = act_factory()
    add_jobset(act.kube, "sweep", {})
    obj = act.kube.objects[("jobset.x-k8s.io/v1alpha2", "jobsets")][(NS, "sweep")]
    bounds = {"training-progress.io/min-nodes": "1", "training-progress.io/max-nodes": "8"}
    change = plan("JobSet", {**obj, "metadata": {"annotations": bounds}}, 3)
    assert isinstance(change, Change)
    owner = owner_of(Ref("JobSet", "jobset.x-k8s.io/v1alpha2", "sweep", "uid-jobset-sweep"), NS)
    assert owner is not None
    ops = act.actor.cluster
    ops.json_patch(owner, change.body)  # type: ignore[attr-defined]
    spec = act.kube.objects[("jobset.x-k8s.io/v1alpha2", "jobsets")][(NS, "sweep")]["spec"]
    assert spec["replicatedJobs"][0]["template"]["spec"] == {"parallelism": 3, "completions": 3}
    with pytest.raises(ClusterError, match="422"):
        ops.json_patch(owner, change.body)  # type: ignore[attr-defined]
    assert json.dumps(spec)  # still a plain object


def test_the_resize_rbac_is_its_own_component_bound_nowhere() -> None:
    """deploy/components/act-resize: only the writes a resize makes (patch of pods, of a
    PyTorchJob's scale, of JobSets and TrainJobs), and no binding but the per-namespace
    example; the Alertmanager receiver routes the resize alert to act."""
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parent.parent / "deploy"
    component = root / "components" / "act-resize"
    kustomization = yaml.safe_load((component / "kustomization.yaml").read_text())
    assert kustomization["kind"] == "Component" and kustomization["resources"] == ["rbac.yaml"]
    (role,) = list(yaml.safe_load_all((component / "rbac.yaml").read_text()))
    assert role["kind"] == "ClusterRole"
    granted = {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"]
               for r in rule["resources"] for v in rule["verbs"]}  # fmt: skip
    assert granted == {
        ("", "pods", "patch"),
        ("kubeflow.org", "pytorchjobs/scale", "get"),
        ("kubeflow.org", "pytorchjobs/scale", "patch"),
        ("jobset.x-k8s.io", "jobsets", "patch"),
        ("trainer.kubeflow.org", "trainjobs", "patch"),
    }
    binding = yaml.safe_load((component / "rolebinding-per-namespace.yaml").read_text())
    assert binding["kind"] == "RoleBinding"
    assert binding["roleRef"]["name"] == "training-progress-act-resize"
    receiver = (root / "alertmanager" / "act-receiver.yaml").read_text()
    assert "TrainingDeadlineNeedsResize" in receiver
