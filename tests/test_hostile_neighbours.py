"""Pods that lie about who they are. A bare pod in the victim's namespace labels itself
``trainer.kubeflow.org/trainjob-name: victim`` (or a Katib trial's name), annotates itself
to opt in, and pushes as the victim. Who a pod is comes from its owners: the exporter
refuses and counts it, and ``act`` neither acts on the victim for it nor takes it for one of
the victim's pods. Everything through the fake API server and the real ``kubernetes``
client."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import FakeClock, get_json, http
from .fakekube import FakeKube
from .kube import BODY, KF, T_START_TS, TRAINJOB, pod, put_pod, registry_of, trainjob_obj, wait

API = "trainer.kubeflow.org/v1alpha1"
VICTIM = {
    "trainer.kubeflow.org/trainjob-name": "victim",
    "jobset.sigs.k8s.io/jobset-name": "victim",
    "batch.kubernetes.io/job-completion-index": "0",
}


def rogue(name: str, labels: dict[str, str], **kw: Any) -> dict[str, Any]:
    """A bare pod wearing someone else's labels (no owner references: it made itself)."""
    return pod("ml", name, labels, **kw)


def drops(exp: Any) -> dict[tuple[str, str], int]:
    return exp.stats.snapshot().drops


def test_a_pod_wearing_a_trainjobs_labels_is_refused_and_counted(
    kube: FakeKube, k8s_exporter: Any
) -> None:
    status = {"progressPercentage": 42, "metrics": [{"name": "loss", "value": "0.5"}]}
    kube.put(API, "trainjobs", trainjob_obj("ml", "victim", status))
    put_pod(kube, pod("ml", "victim-node-0", VICTIM, ip="10.0.0.1"))
    annotations = {
        "training-progress.io/enabled": "true",
        "training-progress.io/threshold.stall_seconds": "10",
    }
    kube.put("v1", "pods", rogue("rogue-0", VICTIM, ip="127.0.0.1", annotations=annotations))
    exp = k8s_exporter(FakeClock(T_START_TS + 60), trainjob_status_writeback="status")
    wait(lambda: len(registry_of(exp)) == 1)
    assert registry_of(exp).get("ml", "rogue-0") is None
    # Its pushes as the victim are refused: it is no training pod of this node.
    answer = http("POST", exp.url + KF.format(ns="ml", name="victim"), BODY)
    assert answer[0] == 403, answer
    exp.poll_once()
    exp.poll_once()
    runs = get_json(exp.url + "/api/v1/runs")["runs"]
    # The TrainJob's own status, under the victim's pod only: no copy under pod=rogue-0.
    assert [(r["pod"], r["job_name"]) for r in runs] == [("victim-node-0", "victim")]
    assert runs[0]["thresholds"]["stall_seconds"] != 10
    # Nothing was written back over the victim's status.
    assert [w for w in kube.writes if w[0] == "PATCH"] == []
    stored = kube.objects[(API, "trainjobs")][("ml", "victim")]["status"]["trainerStatus"]
    assert stored["progressPercentage"] == 42
    assert drops(exp)[("discovery", "owner_mismatch")] == 1  # once, however many events


def test_a_pod_naming_an_owner_it_does_not_have_is_refused(
    kube: FakeKube, k8s_exporter: Any
) -> None:
    """Owner references are names and UIDs: borrowing the victim's Job by name, with a UID
    the Job does not have, does not make the pod the Job's."""
    put_pod(kube, pod("ml", "victim-node-0", VICTIM, ip="10.0.0.1"))
    forged = rogue("forged-0", VICTIM, ip="10.0.0.2")
    forged["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "victim-node-0",
            "uid": "not-its-uid",
            "controller": True,
        }
    ]
    kube.put("v1", "pods", forged)
    exp = k8s_exporter(FakeClock(T_START_TS + 60))
    wait(lambda: len(registry_of(exp)) == 1)
    wait(lambda: drops(exp).get(("discovery", "owner_mismatch")) == 1)
    assert registry_of(exp).get("ml", "forged-0") is None


def forged_child(name: str, owner: dict[str, Any], ip: str) -> dict[str, Any]:
    """A bare pod naming ``owner`` (a real object, its real UID) as its direct controller,
    wearing the Trainer's labels but no JobSet's: a shape no controller makes (#56 F1)."""
    forged = rogue(
        name,
        {"trainer.kubeflow.org/trainjob-name": owner["metadata"]["name"]},
        ip=ip,
        annotations={"training-progress.io/enabled": "true"},
    )
    forged["metadata"]["ownerReferences"] = [
        {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
            "controller": True,
        }
    ]
    return forged


def test_a_pod_naming_the_victims_trainjob_with_its_real_uid_is_refused(
    kube: FakeKube, k8s_exporter: Any
) -> None:
    """F1 (#56): the Trainer never makes a pod a TrainJob owns directly. A bare pod whose
    controller reference names the victim TrainJob with its real UID is refused and counted
    (``owner_chain``): its push is 403, the victim's status is not written over, and its run
    is not the victim's."""
    status = {"progressPercentage": 42, "metrics": [{"name": "loss", "value": "0.5"}]}
    victim = trainjob_obj("ml", "victim", status)
    kube.put(API, "trainjobs", victim)
    put_pod(kube, pod("ml", "victim-node-0", VICTIM, ip="10.0.0.1"))
    kube.put("v1", "pods", forged_child("rogue-0", victim, "127.0.0.1"))
    exp = k8s_exporter(FakeClock(T_START_TS + 60), trainjob_status_writeback="status")
    wait(lambda: len(registry_of(exp)) == 1)
    wait(lambda: drops(exp).get(("discovery", "owner_chain")) == 1)
    assert registry_of(exp).get("ml", "rogue-0") is None
    body = b'{"trainerStatus": {"progressPercentage": 99}}'
    assert http("POST", exp.url + KF.format(ns="ml", name="victim"), body)[0] == 403
    exp.poll_once()
    runs = get_json(exp.url + "/api/v1/runs")["runs"]
    assert [(r["pod"], r["job_name"]) for r in runs] == [("victim-node-0", "victim")]
    stored = kube.objects[(API, "trainjobs")][("ml", "victim")]["status"]["trainerStatus"]
    assert stored["progressPercentage"] == 42


def test_a_pod_wearing_a_katib_trials_label_is_not_that_trial(
    kube: FakeKube, k8s_exporter: Any
) -> None:
    labels = {"katib.kubeflow.org/trial": "exp-1-abc", "katib.kubeflow.org/experiment": "exp-1"}
    kube.put(
        "v1",
        "pods",
        rogue("rogue-trial", labels, annotations={"training-progress.io/enabled": "true"}),
    )
    put_pod(kube, pod("ml", "real-trial-0", labels, ip="10.0.0.3"))
    exp = k8s_exporter(FakeClock(T_START_TS + 60))
    wait(lambda: len(registry_of(exp)) == 1)
    real = registry_of(exp).get("ml", "real-trial-0")
    assert (real.trial, real.experiment) == ("exp-1-abc", "exp-1")  # from its owners
    assert registry_of(exp).get("ml", "rogue-trial") is None
    assert drops(exp)[("discovery", "owner_mismatch")] == 1


def test_a_bare_pod_that_opts_in_is_its_own_job(kube: FakeKube, k8s_exporter: Any) -> None:
    """Our opt-in annotation still works for a pod no workload made."""
    kube.put(
        "v1",
        "pods",
        rogue(
            "notebook-0", {}, ip="10.0.0.4", annotations={"training-progress.io/enabled": "true"}
        ),
    )
    exp = k8s_exporter(FakeClock(T_START_TS + 60))
    wait(lambda: len(registry_of(exp)) == 1)
    info = registry_of(exp).get("ml", "notebook-0")
    assert (info.job_name, info.job_kind) == ("notebook-0", "Pod")


def test_owner_lookups_are_cached_per_owner(kube: FakeKube, k8s_exporter: Any) -> None:
    """Eight ranks of one TrainJob: its Job, JobSet and TrainJob are read once each."""
    for rank in range(8):
        put_pod(
            kube,
            pod(
                "ml",
                f"llm-node-0-{rank}",
                {**TRAINJOB, "batch.kubernetes.io/job-completion-index": str(rank)},
                ip=f"10.0.1.{rank}",
            ),
        )
    exp = k8s_exporter(FakeClock(T_START_TS + 60))
    wait(lambda: len(registry_of(exp)) == 8)
    owner_reads = [
        r for r in kube.requests if "/jobs/" in r or "/jobsets/" in r or "/trainjobs/" in r
    ]
    assert len(owner_reads) == 3, owner_reads
    jobs = {registry_of(exp).get("ml", f"llm-node-0-{r}").job_name for r in range(8)}
    assert jobs == {"llm"}


SHAPES_MADE = [
    ("TrainJob", "JobSet", "Job"),  # Kubeflow Trainer v2
    ("JobSet", "Job"),
    ("Job",),
    ("PyTorchJob",),  # the Training Operator v1 kinds make pods themselves
    ("MPIJob",),
    ("RayJob", "RayCluster"),  # KubeRay: the cluster's pods
    ("RayJob", "Job"),  # ... and the submitter Job's
    ("Experiment", "Trial", "Job"),  # Katib
    ("Experiment", "Trial", "PyTorchJob"),
    ("Experiment", "Trial", "TrainJob", "JobSet", "Job"),
    ("CronJob", "Job"),  # a kind we do not know may own anything: the chain stops there
]
SHAPES_INVENTED = [
    ("TrainJob",),  # F1: a pod the TrainJob never made
    ("JobSet",),
    ("Trial",),
    ("RayJob",),
    ("TrainJob", "Job"),
    ("Experiment", "Job"),
    ("PyTorchJob", "Job"),
]


def _chain_of(kinds: tuple[str, ...], uid: bool = True) -> tuple[Any, ...]:
    """The pod and its owners, top kind first in ``kinds``, each referencing the next."""
    from exporter.core.workloads import KINDS, chain

    objs: dict[tuple[str, str], dict[str, Any]] = {}
    above: dict[str, Any] | None = None
    for i, kind in enumerate(kinds):
        meta: dict[str, Any] = {"name": f"o{i}", "namespace": "ml", "uid": f"u{i}"}
        if above is not None:
            meta["ownerReferences"] = [above]
        objs[(kind, f"o{i}")] = {"metadata": meta}
        version = KINDS[kind].api_version if kind in KINDS else "batch/v1"
        above = {
            "kind": kind,
            "apiVersion": version,
            "name": f"o{i}",
            "controller": True,
            **({"uid": f"u{i}"} if uid else {}),
        }
    pod_meta = {"name": "p", "namespace": "ml", "ownerReferences": [above]}
    return chain(pod_meta, lambda kind, ns, name: objs.get((kind.kind, name)))


def test_the_chains_controllers_make_are_read_and_invented_ones_refused() -> None:
    """Every shape a controller makes reads to its whole chain; a hop no controller makes,
    or a reference without a UID, is refused as ``owner_chain``."""
    from exporter.core.workloads import ChainInvented

    for shape in SHAPES_MADE:
        refs = _chain_of(shape)
        assert tuple(r.kind for r in refs) == shape[::-1], shape
    for shape in SHAPES_INVENTED:
        with pytest.raises(ChainInvented) as refused:
            _chain_of(shape)
        assert refused.value.reason == "owner_chain", shape
    with pytest.raises(ChainInvented, match="no uid"):
        _chain_of(("JobSet", "Job"), uid=False)
