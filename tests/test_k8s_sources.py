"""The pod-driven sources in Kubernetes mode: status files through the kubelet's directory,
HTTP pulls from annotated pods, TrainJob status, container logs, checkpoint directives."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from .conftest import K8S_NODE, FakeClock, get_json, http
from .fakekube import FakeKube
from .kube import (
    T_START_TS,
    TRAINJOB,
    pod,
    put_pod,
    registry_of,
    trainjob_obj,
    trainjob_source,
    wait,
)


def test_status_files_through_the_kubelet_pods_directory(
    kube: FakeKube, tmp_path: Path, k8s_exporter: Any
) -> None:
    root = tmp_path / "kubelet"
    annotations = {"training-progress.io/status-volume": "progress"}
    cases = {}
    for name in ("good", "shadow", "linkdir", "fifo", "huge"):
        p = pod(
            "ml",
            name,
            {"batch.kubernetes.io/job-name": name},
            ip=f"10.0.1.{len(cases) + 1}",
            annotations=annotations,
        )
        put_pod(kube, p)
        volume = root / "pods" / f"uid-{name}" / "volumes" / "kubernetes.io~empty-dir" / "progress"
        cases[name] = volume
    for name, volume in cases.items():
        if name == "linkdir":
            volume.parent.mkdir(parents=True)
            volume.symlink_to("/etc")  # the volume replaced by a link out of place
            continue
        volume.mkdir(parents=True)
    (cases["good"] / "progress.json").write_text('{"step": 42, "max_steps": 100}')
    (cases["shadow"] / "progress.json").symlink_to("/etc/shadow")
    os.mkfifo(cases["fifo"] / "progress.json")
    with open(cases["huge"] / "progress.json", "wb") as fh:
        fh.truncate(1 << 30)
    exp = k8s_exporter(FakeClock(T_START_TS), kubelet_root=str(root))
    wait(lambda: len(registry_of(exp)) == 5)
    started = time.monotonic()
    exp.poll_once()
    assert time.monotonic() - started < 2
    runs = get_json(exp.url + "/api/v1/runs")["runs"]
    drops = exp.stats.snapshot().drops
    assert [(r["pod"], r["step"], r["info"]["source"]) for r in runs] == [("good", 42, "file")]
    assert drops[("file", "symlink")] == 2  # the file link and the volume link
    assert drops[("file", "not_regular_file")] == 1 and drops[("file", "oversize")] == 1


def test_http_pull_from_an_annotated_pod(kube: FakeKube, k8s_exporter: Any) -> None:
    from .test_sources import ProgressionServer

    server = ProgressionServer()
    server.routes["/progress"] = (200, b'{"currentStep": 7, "totalSteps": 70}', 0.0)
    port = server.httpd.server_address[1]
    put_pod(
        kube,
        pod(
            "ml",
            "pull-0",
            TRAINJOB,
            ip="127.0.0.1",
            annotations={
                "training-progress.io/http-port": str(port),
                "training-progress.io/http-path": "/progress",
            },
        ),
    )
    exp = k8s_exporter(FakeClock(T_START_TS))
    try:
        wait(lambda: len(registry_of(exp)) == 1)
        exp.poll_once()
        (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    finally:
        server.httpd.shutdown()
    assert (run["pod"], run["job_name"], run["step"], run["max_steps"]) == ("pull-0", "llm", 7, 70)
    assert run["info"]["source"] == "http" and run["gpus"] == 8


def test_trainjob_status_is_exported_by_the_rank0_node_only(
    kube: FakeKube, k8s_exporter: Any
) -> None:
    api = "trainer.kubeflow.org/v1alpha1"
    put_pod(kube, pod("ml", "llm-node-0", TRAINJOB, ip="10.0.0.1"))
    put_pod(
        kube,
        pod(
            "ml",
            "elsewhere-node-0",
            {
                "trainer.kubeflow.org/trainjob-name": "far",
                "batch.kubernetes.io/job-completion-index": "0",
            },
            node="other-node",
        ),
    )
    put_pod(kube, pod("ml", "odh-node-0", {"trainer.kubeflow.org/trainjob-name": "odh"}))
    put_pod(kube, pod("ml", "bad-node-0", {"trainer.kubeflow.org/trainjob-name": "bad"}))
    kube.put(
        api,
        "trainjobs",
        trainjob_obj(
            "ml",
            "llm",
            {
                "progressPercentage": 45,
                "metrics": [
                    {"name": "current_step", "value": "450"},
                    {"name": "total_steps", "value": "1000"},
                ],
            },
        ),
    )
    kube.put(api, "trainjobs", trainjob_obj("ml", "far", {"progressPercentage": 10}))
    kube.put(
        api,
        "trainjobs",
        trainjob_obj(
            "ml",
            "odh",
            annotations={
                "trainer.opendatahub.io/trainerStatus": json.dumps(
                    {"currentStep": 3, "totalSteps": 9}
                )
            },
        ),
    )
    kube.put(api, "trainjobs", trainjob_obj("ml", "bad", {"progressPercentage": "lots"}))
    clock = FakeClock(T_START_TS)
    exp = k8s_exporter(clock)
    wait(lambda: len(registry_of(exp)) == 3)
    exp.poll_once()
    runs = {r["job_name"]: r for r in get_json(exp.url + "/api/v1/runs")["runs"]}
    source = trainjob_source(exp)
    first = runs["llm"]["last_report_timestamp_seconds"]
    clock.advance(60)
    source._next = 0.0  # the 15 s rate limit, for the test
    exp.poll_once()  # unchanged TrainJob: no new report
    again = get_json(exp.url + "/api/v1/runs")["runs"]
    drops = exp.stats.snapshot().drops
    assert set(runs) == {"llm", "odh"}  # "far" belongs to the other node; "bad" is malformed
    assert (runs["llm"]["pod"], runs["llm"]["step"], runs["llm"]["max_steps"]) == (
        "llm-node-0",
        450,
        1000,
    )
    assert runs["llm"]["info"]["source"] == "trainjob" and runs["odh"]["step"] == 3
    assert [r["last_report_timestamp_seconds"] for r in again if r["job_name"] == "llm"] == [first]
    assert drops[("trainjob", "invalid_progress")] == 1


def test_trainjob_source_is_off_without_the_crd(kube: FakeKube, k8s_exporter: Any) -> None:
    exp = k8s_exporter(FakeClock(T_START_TS))
    wait(lambda: exp.discovery.ready()[0])
    exp.poll_once()
    assert trainjob_source(exp).available is False
    assert ("trainjob", "unreachable") not in exp.stats.snapshot().drops


def test_trainjob_source_reads_only_its_nodes_jobs(kube: FakeKube, k8s_exporter: Any) -> None:
    """One GET per TrainJob whose rank-0 pod is here; the only LIST is the CRD probe (one item)."""
    api = "trainer.kubeflow.org/v1alpha1"
    put_pod(kube, pod("ml", "llm-node-0", TRAINJOB, ip="10.0.0.1"))
    for i in range(50):  # the rest of the cluster's TrainJobs, none of them on this node
        kube.put(api, "trainjobs", trainjob_obj("other", f"far-{i}", {"progressPercentage": 1}))
    kube.put(api, "trainjobs", trainjob_obj("ml", "llm", {"progressPercentage": 45}))
    exp = k8s_exporter(FakeClock(T_START_TS))
    wait(lambda: len(registry_of(exp)) == 1)
    discovered = len(kube.requests)  # discovery read the pod's owners (the TrainJob) once
    source = trainjob_source(exp)
    for _ in range(3):
        source._next = 0.0  # the 15 s rate limit, for the test
        exp.poll_once()
    (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    assert run["job_name"] == "llm" and run["progress_ratio"] == 0.45
    reads = [r for r in kube.requests[discovered:] if "trainjobs" in r]
    lists = [r for r in reads if r.split("?")[0].endswith("/trainjobs")]
    assert len(lists) == 1 and "limit=1" in lists[0]
    assert [r.split("?")[0] for r in reads if r not in lists] == [
        f"/apis/{api}/namespaces/ml/trainjobs/llm"
    ] * 3


def test_container_logs_of_training_pods(kube: FakeKube, tmp_path: Path, k8s_exporter: Any) -> None:
    logs = tmp_path / "pods"
    put_pod(kube, pod("ml", "llm-0", TRAINJOB, ip="10.0.0.1"))
    put_pod(kube, pod("ml", "evil-0", {"batch.kubernetes.io/job-name": "evil"}, ip="10.0.0.2"))
    container = logs / "ml_llm-0_uid-llm-0" / "trainer"
    container.mkdir(parents=True)
    line = "2026-11-29T18:20:54.123456789Z stderr F {msg}\n"
    (container / "0.log").write_text(
        line.format(msg=" 50%|█████     | 25/50 [00:05<00:05,  5.00it/s]")
    )
    (container / "1.log").write_text(
        line.format(msg=" 10%|█         | 5/50 [00:01<00:09,  5.00it/s]")
    )
    (container / "1.log.20261129-182000.gz").write_bytes(b"\x1f\x8b not followed")
    (logs / "ml_evil-0_uid-evil-0").symlink_to("/etc")  # a pod log dir that is a link: refused
    exp = k8s_exporter(FakeClock(T_START_TS), log_root=str(logs))
    wait(lambda: len(registry_of(exp)) == 2)
    exp.poll_once()
    runs = get_json(exp.url + "/api/v1/runs")["runs"]
    # The container restarted: its current log is 1.log.
    assert [(r["pod"], r["step"], r["max_steps"], r["info"]["source"]) for r in runs] == [
        ("llm-0", 5, 50, "log")
    ]


def test_without_host_paths_the_log_and_volume_sources_are_off(
    kube: FakeKube, k8s_exporter: Any
) -> None:
    """The restricted overlay sets log_root and kubelet_root empty: what
    needs a hostPath is off, pushes, HTTP pulls and TrainJob status are not."""
    exp = k8s_exporter(FakeClock(T_START_TS), log_root="", kubelet_root="")
    assert "log" not in exp.sources and "kubelet_file" not in exp.sources
    assert "http" in exp.sources
    exp.poll_once()
    wait(lambda: exp.ready()[0])  # every remaining source ran; the exporter is ready
    default = k8s_exporter(FakeClock(T_START_TS))
    assert {"log", "kubelet_file"} <= set(default.sources)


def test_checkpoint_directives_from_trainjob_annotation_pod_deletion_and_cordon(
    kube: FakeKube, k8s_exporter: Any
) -> None:
    """The rank-0 pod pushes natively; each of these makes the next answer say checkpoint,
    once: a new annotation value on its TrainJob, its node cordoned, its pod being deleted."""
    api = "trainer.kubeflow.org/v1alpha1"
    put_pod(kube, pod("ml", "llm-0", TRAINJOB, ip="127.0.0.1"))
    kube.put("v1", "nodes", {"metadata": {"name": K8S_NODE}, "spec": {}})
    kube.put(api, "trainjobs", trainjob_obj("ml", "llm"))
    clock = FakeClock(T_START_TS + 3600)
    exp = k8s_exporter(clock)
    url = exp.url + "/api/v1/namespaces/ml/runs/llm/report"
    step = [0]

    def push_and_poll() -> list[str]:
        step[0] += 10
        body = json.dumps({"step": step[0], "max_steps": 100_000}).encode()
        status, resp = http("POST", url, body, {"Content-Type": "application/json"})
        assert status == 200, resp
        clock.advance(1)
        return list(json.loads(resp)["directives"])

    def refresh() -> None:
        for source in exp.sources.values():
            if hasattr(source, "_next"):
                source._next = 0.0  # the sources' rate limits, for the test
        exp.poll_once()

    wait(lambda: len(registry_of(exp)) == 1)
    refresh()
    assert [push_and_poll() for _ in range(3)] == [[], [], []]
    kube.put(
        api,
        "trainjobs",
        trainjob_obj(
            "ml", "llm", annotations={"training-progress.io/checkpoint": "before-upgrade"}
        ),
    )
    refresh()
    assert [push_and_poll() for _ in range(2)] == [["checkpoint"], []]
    kube.put("v1", "nodes", {"metadata": {"name": K8S_NODE}, "spec": {"unschedulable": True}})
    refresh()
    assert [push_and_poll() for _ in range(2)] == [["checkpoint"], []]
    deleting = pod("ml", "llm-0", TRAINJOB, ip="127.0.0.1")
    deleting["metadata"]["deletionTimestamp"] = "2026-11-30T10:00:00Z"
    put_pod(kube, deleting)
    wait(lambda: any(p.deleting for p in registry_of(exp).all()))
    assert [push_and_poll() for _ in range(2)] == [["checkpoint"], []]
