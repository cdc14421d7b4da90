"""Kubernetes mode through the fake API server and the real ``kubernetes`` client: which pods
are training pods, discovery by list+watch, GPU accounting, push authorization, outages."""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from exporter.app import Exporter
from exporter.config import Config
from exporter.kubernetes.pods import training_pod

from .conftest import FakeClock, get_json, http
from .fakekube import FakeKube

NODE = "gpu-node-1"
T_START = "2026-11-29T10:00:00Z"
T_START_TS = 1795946400.0


def pod(
    ns: str,
    name: str,
    labels: dict[str, str] | None = None,
    *,
    ip: str = "10.0.0.5",
    gpus: str | None = "8",
    annotations: dict[str, str] | None = None,
    node: str = NODE,
    host_network: bool = False,
    phase: str = "Running",
) -> dict[str, Any]:
    resources = {"limits": {"nvidia.com/gpu": gpus}} if gpus else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "namespace": ns,
            "name": name,
            "uid": f"uid-{name}",
            "labels": dict(labels or {}),
            "annotations": annotations or {},
        },
        "spec": {
            "nodeName": node,
            "hostNetwork": host_network,
            "containers": [{"name": "trainer", "image": "x", "resources": resources}],
        },
        "status": {
            "phase": phase,
            "podIP": ip,
            "startTime": T_START,
            "containerStatuses": [
                {"name": "trainer", "state": {"running": {"startedAt": T_START}}}
            ],
        },
    }


TRAINJOB = {
    "trainer.kubeflow.org/trainjob-name": "llm",
    "batch.kubernetes.io/job-completion-index": "0",
}


@pytest.mark.parametrize(
    ("labels", "annotations", "expected"),
    [
        (TRAINJOB, {}, ("llm", "TrainJob", "0")),
        (
            {"jobset.sigs.k8s.io/jobset-name": "js", "jobset.sigs.k8s.io/job-index": "3"},
            {},
            ("js", "JobSet", "3"),
        ),
        (
            {"training.kubeflow.org/job-name": "pt", "training.kubeflow.org/replica-index": "1"},
            {},
            ("pt", "KubeflowJob", "1"),
        ),
        (
            {
                "training.kubeflow.org/job-name": "pt",
                "training.kubeflow.org/replica-type": "master",
                "training.kubeflow.org/replica-index": "0",
            },
            {},
            ("pt", "KubeflowJob", "0"),
        ),
        (
            {
                "training.kubeflow.org/job-name": "pt",
                "training.kubeflow.org/replica-type": "worker",
                "training.kubeflow.org/replica-index": "0",
            },
            {},
            ("pt", "KubeflowJob", "worker-0"),
        ),
        ({"batch.kubernetes.io/job-name": "b"}, {}, ("b", "Job", "")),
        ({"ray.io/originated-from-cr-name": "ray"}, {}, ("ray", "RayJob", "")),
        ({}, {"training-progress.io/enabled": "true"}, ("p", "Pod", "")),
        (
            {},
            {"training-progress.io/enabled": "true", "training-progress.io/job-name": "named"},
            ("named", "Pod", ""),
        ),
    ],
)
def test_training_pods_and_their_jobs(
    labels: dict[str, str], annotations: dict[str, str], expected: tuple[str, str, str]
) -> None:
    info = training_pod(pod("ns", "p", labels, annotations=annotations))
    assert info is not None and (info.job_name, info.job_kind, info.rank) == expected


def test_not_training_pods() -> None:
    assert training_pod(pod("ns", "web", {"app": "web"})) is None
    assert (
        training_pod(
            pod("ns", "p", TRAINJOB, annotations={"training-progress.io/enabled": "false"})
        )
        is None
    )


def test_gpus_annotations_and_bounds() -> None:
    p = pod(
        "ns",
        "p",
        TRAINJOB,
        gpus=None,
        annotations={
            "training-progress.io/deadline": "2026-12-01T00:00:00Z",
            "training-progress.io/gpu-hours-budget": "100",
            "training-progress.io/threshold.stall_seconds": "7200",
            "training-progress.io/threshold.bogus": "1",
        },
    )
    p["spec"]["containers"].append(
        {
            "name": "mig",
            "resources": {
                "requests": {"nvidia.com/mig-1g.10gb": "2"},
                "limits": {"amd.com/gpu": "1", "cpu": "8"},
            },
        }
    )
    p["metadata"]["labels"]["trainer.kubeflow.org/trainjob-name"] = "x" * 10_000
    info = training_pod(p)
    assert info is not None
    assert info.gpus == 3.0  # no resources on the first container; MIG request + AMD limit
    assert info.deadline_timestamp == 1796083200.0 and info.gpu_seconds_budget == 360_000
    assert info.thresholds == (("stall_seconds", 7200.0),)
    assert len(info.job_name) == 253 and info.start_timestamp == T_START_TS


def k8s_exporter(clock: FakeClock) -> Exporter:
    config = replace(Config(), listen="127.0.0.1:0", mode="kubernetes", node_name=NODE)
    exp = Exporter(config, clock=clock)
    exp.start(poll_loop=False)
    return exp


def wait(cond: Any, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


KF = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/{name}/status"
BODY = json.dumps({"trainerStatus": {"metrics": [{"name": "current_step", "value": "5"}]}}).encode()


def test_push_authorization_by_pod_ip(kube: FakeKube) -> None:
    kube.put("v1", "pods", pod("ml", "llm-0", TRAINJOB, ip="127.0.0.1"))
    kube.put("v1", "pods", pod("ml", "elsewhere", TRAINJOB, ip="127.0.0.1", node="other-node"))
    exp = k8s_exporter(FakeClock(T_START_TS + 3600))
    try:
        wait(lambda: exp.ready()[0] or exp.poll_once() is not None)
        ok = http("POST", exp.url + KF.format(ns="ml", name="llm"), BODY)
        other_ns = http("POST", exp.url + KF.format(ns="other", name="llm"), BODY)
        other_job = http("POST", exp.url + KF.format(ns="ml", name="not-mine"), BODY)
        runs = get_json(exp.url + "/api/v1/runs")["runs"]
        text = http("GET", exp.url + "/metrics")[1].decode()
    finally:
        exp.stop()
    assert ok[0] == 200, ok[1]
    assert other_ns[0] == 403 and json.loads(other_ns[1])["reason"] == "Forbidden"
    assert other_job[0] == 403
    (run,) = runs
    assert (run["namespace"], run["pod"], run["job_name"], run["step"]) == ("ml", "llm-0", "llm", 5)
    assert (
        run["info"]["job_kind"] == "TrainJob"
        and run["info"]["node"] == NODE
        and run["info"]["rank"] == "0"
    )
    # GPU-seconds from the pod's start (an hour ago), not from when the exporter first saw it.
    assert run["gpus"] == 8 and run["gpu_seconds"] == pytest.approx(8 * 3600)
    assert 'training_exporter_drops_total{reason="namespace_mismatch",source="push"} 1.0' in text
    assert 'training_exporter_drops_total{reason="job_mismatch",source="push"} 1.0' in text


def test_unknown_ip_and_host_network_are_refused(kube: FakeKube) -> None:
    kube.put("v1", "pods", pod("ml", "llm-0", TRAINJOB, ip="10.1.2.3"))
    exp = k8s_exporter(FakeClock(T_START_TS))
    try:
        wait(lambda: exp.discovery.ready()[0])
        unknown = http("POST", exp.url + KF.format(ns="ml", name="llm"), BODY)
        kube.put("v1", "pods", pod("ml", "host-0", TRAINJOB, ip="127.0.0.1", host_network=True))
        wait(lambda: "host-0" in json.dumps(exp.discovery.ready()) or len(_registry(exp)) == 2)
        host = http("POST", exp.url + KF.format(ns="ml", name="llm"), BODY)
    finally:
        exp.stop()
    assert unknown[0] == 403 and "10.1.2.3" not in json.loads(unknown[1])["message"]
    assert host[0] == 403 and "host network" in json.loads(host[1])["message"]


def _registry(exp: Exporter) -> Any:
    return exp.discovery.resolver.registry  # type: ignore[attr-defined]


def test_watch_adds_and_deletes_and_gpu_seconds_survive_a_restart(kube: FakeKube) -> None:
    clock = FakeClock(T_START_TS + 600)
    kube.put("v1", "pods", pod("ml", "llm-0", TRAINJOB, ip="127.0.0.1"))
    exp = k8s_exporter(clock)
    try:
        wait(lambda: len(_registry(exp)) == 1)
        assert http("POST", exp.url + KF.format(ns="ml", name="llm"), BODY)[0] == 200
        kube.put(
            "v1",
            "pods",
            pod(
                "ml",
                "llm-1",
                {**TRAINJOB, "batch.kubernetes.io/job-completion-index": "1"},
                ip="10.0.0.9",
            ),
        )
        wait(lambda: len(_registry(exp)) == 2)  # arrived by watch, not by a relist
        assert exp.discovery.resolver.registry.get("ml", "llm-1").rank == "1"  # type: ignore[attr-defined]
        before = get_json(exp.url + "/api/v1/runs")["runs"][0]["gpu_seconds"]
    finally:
        exp.stop()
    restarted = k8s_exporter(clock)
    try:
        wait(lambda: len(_registry(restarted)) == 2)
        assert http("POST", restarted.url + KF.format(ns="ml", name="llm"), BODY)[0] == 200
        after = get_json(restarted.url + "/api/v1/runs")["runs"][0]["gpu_seconds"]
        kube.delete("v1", "pods", "ml", "llm-0")
        wait(lambda: get_json(restarted.url + "/api/v1/runs")["runs"][0]["gone"])
    finally:
        restarted.stop()
    assert before == after == pytest.approx(8 * 600)


def test_api_server_outage_serves_last_state_then_recovers(kube: FakeKube) -> None:
    kube.put("v1", "pods", pod("ml", "llm-0", TRAINJOB, ip="127.0.0.1"))
    exp = k8s_exporter(FakeClock(T_START_TS))
    watcher = exp.discovery.stop.__self__  # type: ignore[attr-defined]
    try:
        exp.poll_once()
        wait(lambda: len(_registry(exp)) == 1)
        kube.down = True
        wait(lambda: "degraded" in exp.ready()[1], timeout=15)
        assert http("GET", exp.url + "/readyz")[0] == 200
        assert (
            http("POST", exp.url + KF.format(ns="ml", name="llm"), BODY)[0] == 200
        )  # last known pods
        relists = watcher.relists
        for i in range(1100):  # history moves on while we are away: our resourceVersion expires
            kube.put("v1", "pods", pod("ml", f"other-{i}", {"app": "web"}, ip="10.9.0.1"))
        kube.put("v1", "pods", pod("ml", "llm-new", TRAINJOB, ip="10.0.0.7"))
        kube.down = False
        wait(lambda: exp.ready()[1].startswith("ok"), timeout=40)
        wait(lambda: _registry(exp).get("ml", "llm-new") is not None)
        assert watcher.relists > relists  # 410 Gone -> relisted
    finally:
        exp.stop()


def k8s_exporter_with(clock: FakeClock, **overrides: Any) -> Exporter:
    config = replace(Config(), listen="127.0.0.1:0", mode="kubernetes", node_name=NODE, **overrides)
    exp = Exporter(config, clock=clock)
    exp.start(poll_loop=False)
    return exp


def test_pod_urls_from_annotations() -> None:
    odh = training_pod(
        pod(
            "ml",
            "p",
            TRAINJOB,
            ip="10.1.1.1",
            annotations={"trainer.opendatahub.io/progression-tracking": "true"},
        )
    )
    ours = training_pod(
        pod(
            "ml",
            "p",
            TRAINJOB,
            ip="fd00::5",
            annotations={
                "training-progress.io/http-port": "8000",
                "training-progress.io/http-path": "/progress",
            },
        )
    )
    bad = training_pod(
        pod("ml", "p", TRAINJOB, annotations={"training-progress.io/http-port": "99999"})
    )
    vol = training_pod(
        pod("ml", "p", TRAINJOB, annotations={"training-progress.io/status-volume": "../etc"})
    )
    assert odh is not None and odh.http_url == "http://10.1.1.1:28080/metrics"
    assert ours is not None and ours.http_url == "http://[fd00::5]:8000/progress"
    assert bad is not None and bad.http_url is None
    assert vol is not None and vol.status_file is None


def test_status_files_through_the_kubelet_pods_directory(kube: FakeKube, tmp_path: Path) -> None:
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
        kube.put("v1", "pods", p)
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
    exp = k8s_exporter_with(FakeClock(T_START_TS), kubelet_root=str(root))
    try:
        wait(lambda: len(_registry(exp)) == 5)
        started = time.monotonic()
        exp.poll_once()
        assert time.monotonic() - started < 2
        runs = get_json(exp.url + "/api/v1/runs")["runs"]
        drops = exp.stats.snapshot().drops
    finally:
        exp.stop()
    assert [(r["pod"], r["step"], r["info"]["source"]) for r in runs] == [("good", 42, "file")]
    assert drops[("file", "symlink")] == 2  # the file link and the volume link
    assert drops[("file", "not_regular_file")] == 1 and drops[("file", "oversize")] == 1


def test_http_pull_from_an_annotated_pod(kube: FakeKube) -> None:
    from .test_sources import ProgressionServer

    server = ProgressionServer()
    server.routes["/progress"] = (200, b'{"currentStep": 7, "totalSteps": 70}', 0.0)
    port = server.httpd.server_address[1]
    kube.put(
        "v1",
        "pods",
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
        wait(lambda: len(_registry(exp)) == 1)
        exp.poll_once()
        (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    finally:
        exp.stop()
        server.httpd.shutdown()
    assert (run["pod"], run["job_name"], run["step"], run["max_steps"]) == ("pull-0", "llm", 7, 70)
    assert run["info"]["source"] == "http" and run["gpus"] == 8


def trainjob_obj(
    ns: str, name: str, status: Any = None, annotations: dict[str, str] | None = None
) -> dict:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"namespace": ns, "name": name, "annotations": annotations or {}},
        "status": {"trainerStatus": status} if status is not None else {},
    }


def trainjob_source(exp: Exporter) -> Any:
    from exporter.sources.trainjob import TrainJobSource

    (source,) = [s for s in exp.sources.values() if isinstance(s, TrainJobSource)]
    return source


def test_trainjob_status_is_exported_by_the_rank0_node_only(kube: FakeKube) -> None:
    api = "trainer.kubeflow.org/v1alpha1"
    kube.put("v1", "pods", pod("ml", "llm-node-0", TRAINJOB, ip="10.0.0.1"))
    kube.put(
        "v1",
        "pods",
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
    kube.put("v1", "pods", pod("ml", "odh-node-0", {"trainer.kubeflow.org/trainjob-name": "odh"}))
    kube.put("v1", "pods", pod("ml", "bad-node-0", {"trainer.kubeflow.org/trainjob-name": "bad"}))
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
    try:
        wait(lambda: len(_registry(exp)) == 3)
        exp.poll_once()
        runs = {r["job_name"]: r for r in get_json(exp.url + "/api/v1/runs")["runs"]}
        source = trainjob_source(exp)
        first = runs["llm"]["last_report_timestamp_seconds"]
        clock.advance(60)
        source._next = 0.0  # the 15 s rate limit, for the test
        exp.poll_once()  # unchanged TrainJob: no new report
        again = get_json(exp.url + "/api/v1/runs")["runs"]
        drops = exp.stats.snapshot().drops
    finally:
        exp.stop()
    assert set(runs) == {"llm", "odh"}  # "far" belongs to the other node; "bad" is malformed
    assert (runs["llm"]["pod"], runs["llm"]["step"], runs["llm"]["max_steps"]) == (
        "llm-node-0",
        450,
        1000,
    )
    assert runs["llm"]["info"]["source"] == "trainjob" and runs["odh"]["step"] == 3
    assert [r["last_report_timestamp_seconds"] for r in again if r["job_name"] == "llm"] == [first]
    assert drops[("trainjob", "invalid_progress")] == 1


def test_trainjob_source_is_off_without_the_crd(kube: FakeKube) -> None:
    exp = k8s_exporter(FakeClock(T_START_TS))
    try:
        wait(lambda: exp.discovery.ready()[0])
        exp.poll_once()
        assert trainjob_source(exp).available is False
        assert ("trainjob", "unreachable") not in exp.stats.snapshot().drops
    finally:
        exp.stop()


def test_host_network_pods_need_a_token_that_names_them(kube: FakeKube) -> None:
    kube.put("v1", "pods", pod("ml", "host-0", TRAINJOB, ip="127.0.0.1", host_network=True))
    kube.put(
        "v1",
        "pods",
        pod(
            "team-b",
            "other-host-0",
            {"batch.kubernetes.io/job-name": "other"},
            ip="127.0.0.1",
            host_network=True,
        ),
    )
    kube.tokens["good"] = ("ml", "trainer", "host-0", ["training-progress-exporter"])
    kube.tokens["other-pod"] = ("team-b", "trainer", "other-host-0", ["training-progress-exporter"])
    kube.tokens["wrong-audience"] = ("ml", "trainer", "host-0", ["https://kubernetes.default.svc"])
    exp = k8s_exporter(FakeClock(T_START_TS))
    url = exp.url + KF.format(ns="ml", name="llm")
    try:
        wait(lambda: len(_registry(exp)) == 2)
        results = {
            token: http("POST", url, BODY, {"Authorization": f"Bearer {token}"} if token else {})[0]
            for token in ("", "good", "other-pod", "wrong-audience", "forged")
        }
        reviews = [r for r in kube.requests if r.startswith("POST")]
        http("POST", url, BODY, {"Authorization": "Bearer good"})  # cached: no new review
        again = [r for r in kube.requests if r.startswith("POST")]
    finally:
        exp.stop()
    assert results == {"": 403, "good": 200, "other-pod": 403, "wrong-audience": 403, "forged": 403}
    assert len(again) == len(reviews)


def test_kubelet_pods_discovery(kube: FakeKube) -> None:
    """pod_discovery: kubelet reads the node's pods from the kubelet's /pods, not the API."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    pods = {
        "kind": "PodList",
        "apiVersion": "v1",
        "items": [pod("ml", "llm-0", TRAINJOB, ip="127.0.0.1"), pod("ml", "web", {"app": "web"})],
    }

    class Kubelet(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            body = json.dumps(pods).encode() if self.path == "/pods" else b"{}"
            self.send_response(200 if self.path == "/pods" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    kubelet = ThreadingHTTPServer(("127.0.0.1", 0), Kubelet)
    threading.Thread(target=kubelet.serve_forever, daemon=True).start()
    exp = k8s_exporter_with(
        FakeClock(T_START_TS),
        pod_discovery="kubelet",
        kubelet_url=f"http://127.0.0.1:{kubelet.server_address[1]}",
    )
    try:
        wait(lambda: exp.discovery.ready()[0])
        assert "from the kubelet" in exp.discovery.ready()[1]
        assert http("POST", exp.url + KF.format(ns="ml", name="llm"), BODY)[0] == 200
        assert not [r for r in kube.requests if "/pods" in r]  # the API server was not asked
    finally:
        exp.stop()
        kubelet.shutdown()


def test_thousand_pods_custom_gpu_resources_and_a_pod_deleted_mid_report(kube: FakeKube) -> None:
    for i in range(1000):
        p = pod(
            f"team-{i % 10}",
            f"w-{i}",
            {"batch.kubernetes.io/job-name": f"j{i}"},
            ip=f"10.2.{i // 250}.{i % 250}",
            gpus=None,
        )
        p["spec"]["containers"][0]["resources"] = {
            "limits": {"example.com/npu": "4", "nvidia.com/gpu": "1"}
        }
        kube.put("v1", "pods", p)
    kube.put("v1", "pods", pod("ml", "llm-0", TRAINJOB, ip="127.0.0.1"))
    exp = k8s_exporter_with(FakeClock(T_START_TS), gpu_resources=("example.com/npu",))
    try:
        wait(lambda: len(_registry(exp)) == 1001, timeout=20)
        assert _registry(exp).get("team-3", "w-3").gpus == 4  # only the configured resource
        assert _registry(exp).get("ml", "llm-0").gpus == 0
        # MODIFIED: the pod's labels change its job; BOOKMARKs keep the watch's place.
        moved = pod(
            "ml",
            "llm-0",
            {**TRAINJOB, "trainer.kubeflow.org/trainjob-name": "llm2"},
            ip="127.0.0.1",
        )
        kube.put("v1", "pods", moved)
        wait(lambda: _registry(exp).get("ml", "llm-0").job_name == "llm2")
        # The pod is deleted while its report is on the way: refused, counted, nothing crashes.
        kube.delete("v1", "pods", "ml", "llm-0")
        wait(lambda: _registry(exp).get("ml", "llm-0") is None)
        late = http("POST", exp.url + KF.format(ns="ml", name="llm2"), BODY)
        drops = exp.stats.snapshot().drops
    finally:
        exp.stop()
    assert late[0] == 403 and drops[("push", "unknown_source")] == 1


def test_watch_bookmarks_move_the_resource_version(kube: FakeKube, tmp_path: Path) -> None:
    from kubernetes import client, config, watch

    kube.put("v1", "pods", pod("ml", "a", TRAINJOB))
    api = client.CoreV1Api(config.new_client_from_config(config_file=os.environ["KUBECONFIG"]))
    rv = json.loads(api.list_pod_for_all_namespaces(_preload_content=False).data)["metadata"][
        "resourceVersion"
    ]
    kube.put("v1", "pods", pod("ml", "b", TRAINJOB))
    kinds = [
        e["type"]
        for e in watch.Watch().stream(
            api.list_pod_for_all_namespaces,
            resource_version=rv,
            timeout_seconds=1,
            allow_watch_bookmarks=True,
            deserialize=False,
        )
    ]
    assert kinds == ["ADDED", "BOOKMARK"]


def test_container_logs_of_training_pods(kube: FakeKube, tmp_path: Path) -> None:
    logs = tmp_path / "pods"
    kube.put("v1", "pods", pod("ml", "llm-0", TRAINJOB, ip="10.0.0.1"))
    kube.put(
        "v1", "pods", pod("ml", "evil-0", {"batch.kubernetes.io/job-name": "evil"}, ip="10.0.0.2")
    )
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
    exp = k8s_exporter_with(FakeClock(T_START_TS), log_root=str(logs))
    try:
        wait(lambda: len(_registry(exp)) == 2)
        exp.poll_once()
        runs = get_json(exp.url + "/api/v1/runs")["runs"]
    finally:
        exp.stop()
    # The container restarted: its current log is 1.log.
    assert [(r["pod"], r["step"], r["max_steps"], r["info"]["source"]) for r in runs] == [
        ("llm-0", 5, 50, "log")
    ]


def test_pod_phase_decides_liveness_stalled_then_failed(kube: FakeKube) -> None:
    """A run whose pushes stopped is stalled while its pod runs (the exporter knows it lives
    from the API server), and failed once the pod's phase says Failed."""
    clock = FakeClock(T_START_TS + 600)
    kube.put(
        "v1",
        "pods",
        pod(
            "ml",
            "llm-0",
            TRAINJOB,
            ip="127.0.0.1",
            annotations={"training-progress.io/threshold.stall_seconds": "60"},
        ),
    )
    exp = k8s_exporter(clock)
    try:
        wait(lambda: len(_registry(exp)) == 1)
        assert http("POST", exp.url + KF.format(ns="ml", name="llm"), BODY)[0] == 200
        (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
        assert run["state"] == "running"
        clock.now += 3600  # an hour of silence: longer than the report timeout, too
        (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
        assert run["state"] == "stalled", run["state_reason"]
        assert run["state_reason"] == "stalled for 1h00m (threshold 1m)"
        assert run["state_since_timestamp_seconds"] == T_START_TS + 600 + 60
        kube.put("v1", "pods", pod("ml", "llm-0", TRAINJOB, ip="127.0.0.1", phase="Failed"))
        wait(lambda: get_json(exp.url + "/api/v1/runs")["runs"][0]["state"] == "failed")
        metrics = http("GET", exp.url + "/metrics")[1].decode()
    finally:
        exp.stop()
    assert 'training_run_state{job_name="llm",namespace="ml",pod="llm-0",state="failed"} 1.0' in (
        metrics
    )


def test_only_a_live_pod_owns_its_ip(kube: FakeKube) -> None:
    """Issue 12, item 3: a finished pod keeps its IP in the API; the node may already have
    given it to another pod. Before, the first match won: a stranger pushed as the finished
    pod (200, a run with its 8 GPUs that never expired), and a new training pod on the
    reused IP was locked out (403)."""
    done = pod("ml", "old-0", {"batch.kubernetes.io/job-name": "old"}, ip="127.0.0.1")
    done["status"]["phase"] = "Succeeded"
    done["status"]["containerStatuses"] = [
        {
            "name": "trainer",
            "state": {"terminated": {"startedAt": T_START, "finishedAt": "2026-11-29T11:00:00Z"}},
        }
    ]
    kube.put("v1", "pods", done)
    exp = k8s_exporter(FakeClock(T_START_TS + 7200))
    try:
        wait(lambda: len(_registry(exp)) == 1)
        # A stranger on the finished pod's IP: refused, and no run appears.
        status, body = http("POST", exp.url + KF.format(ns="ml", name="old"), BODY)
        assert status == 403 and b"no training pod on this node has IP" in body
        assert get_json(exp.url + "/api/v1/runs")["runs"] == []
        # A new training pod gets the IP: it reports.
        kube.put("v1", "pods", pod("ml", "new-0", TRAINJOB, ip="127.0.0.1"))
        wait(lambda: len(_registry(exp)) == 2)
        assert http("POST", exp.url + KF.format(ns="ml", name="llm"), BODY)[0] == 200
        # Two live pods claiming one IP: nobody can tell who sends.
        kube.put("v1", "pods", pod("ml", "twin-0", TRAINJOB, ip="127.0.0.1"))
        wait(lambda: len(_registry(exp)) == 3)
        status, body = http("POST", exp.url + KF.format(ns="ml", name="llm"), BODY)
        assert status == 403 and b"claimed by 2 pods" in body
    finally:
        exp.stop()


def test_a_finished_pod_stops_accruing_gpu_seconds_when_its_containers_stop() -> None:
    done = pod("ml", "old-0", TRAINJOB, ip="10.0.0.8")
    done["status"]["phase"] = "Failed"
    done["status"]["containerStatuses"] = [
        {
            "name": "trainer",
            "state": {"terminated": {"startedAt": T_START, "finishedAt": "2026-11-29T11:00:00Z"}},
        }
    ]
    info = training_pod(done)
    assert info is not None and info.finished and info.failed
    assert info.start_timestamp == T_START_TS and info.end_timestamp == T_START_TS + 3600
    from exporter.kubernetes.watch import run_meta
    from exporter.model import ProgressReport, RunKey
    from exporter.tracker import Tracker

    tracker = Tracker()
    key = RunKey("ml", "old-0", "llm")
    tracker.apply(key, ProgressReport(step=1), T_START_TS + 60, run_meta(info, NODE, "push"))
    # Seen hours later (an exporter restart): 8 GPUs x 1 h, not x 5 h.
    (snap,) = tracker.snapshot(T_START_TS + 5 * 3600)
    assert snap.gpu_seconds == pytest.approx(8 * 3600)


def test_random_tokens_cannot_amplify_into_token_reviews(kube: FakeKube) -> None:
    """300 pushes with random tokens from a host-network IP (issue 12, item 8): at most the
    per-address burst reaches the API server, the rest are 429; a good token that was
    reviewed before the flood still works, and replaying a rejected token costs nothing."""
    kube.put("v1", "pods", pod("ml", "host-0", TRAINJOB, ip="127.0.0.1", host_network=True))
    kube.tokens["good"] = ("ml", "trainer", "host-0", ["training-progress-exporter"])
    exp = k8s_exporter(FakeClock(T_START_TS))
    url = exp.url + KF.format(ns="ml", name="llm")

    def reviews() -> int:
        return len([r for r in kube.requests if r.startswith("POST")])

    try:
        wait(lambda: len(_registry(exp)) == 1)
        assert http("POST", url, BODY, {"Authorization": "Bearer good"})[0] == 200
        before = reviews()
        statuses = [
            http("POST", url, BODY, {"Authorization": f"Bearer random-{i}"})[0] for i in range(300)
        ]
        flood = reviews() - before
        replay = http("POST", url, BODY, {"Authorization": "Bearer random-0"})[0]
        good = http("POST", url, BODY, {"Authorization": "Bearer good"})[0]
        after = reviews()
        drops = exp.stats.snapshot().drops
    finally:
        exp.stop()
    assert flood <= 10  # the burst; before: 300
    assert statuses.count(403) == flood and statuses.count(429) == 300 - flood
    assert replay == 403 and good == 200 and after == before + flood  # both from the cache
    assert drops[("push", "review_rate_limited")] == 300 - flood
    assert drops[("push", "token_rejected")] == flood + 1


def test_without_host_paths_the_log_and_volume_sources_are_off(kube: FakeKube) -> None:
    """The restricted overlay (issue 15, item 3) sets log_root and kubelet_root empty: what
    needs a hostPath is off, pushes, HTTP pulls and TrainJob status are not."""
    exp = k8s_exporter_with(FakeClock(T_START_TS), log_root="", kubelet_root="")
    try:
        assert "log" not in exp.sources and "kubelet_file" not in exp.sources
        assert "http" in exp.sources
        exp.poll_once()
        wait(lambda: exp.ready()[0])  # every remaining source ran; the exporter is ready
    finally:
        exp.stop()
    default = k8s_exporter_with(FakeClock(T_START_TS))
    try:
        assert {"log", "kubelet_file"} <= set(default.sources)
    finally:
        default.stop()


def test_checkpoint_directives_from_trainjob_annotation_pod_deletion_and_cordon(
    kube: FakeKube,
) -> None:
    """The rank-0 pod pushes natively; each of these makes the next answer say checkpoint,
    once: a new annotation value on its TrainJob, its node cordoned, its pod being deleted."""
    api = "trainer.kubeflow.org/v1alpha1"
    kube.put("v1", "pods", pod("ml", "llm-0", TRAINJOB, ip="127.0.0.1"))
    kube.put("v1", "nodes", {"metadata": {"name": NODE}, "spec": {}})
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

    try:
        wait(lambda: len(_registry(exp)) == 1)
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
        kube.put("v1", "nodes", {"metadata": {"name": NODE}, "spec": {"unschedulable": True}})
        refresh()
        assert [push_and_poll() for _ in range(2)] == [["checkpoint"], []]
        deleting = pod("ml", "llm-0", TRAINJOB, ip="127.0.0.1")
        deleting["metadata"]["deletionTimestamp"] = "2026-11-30T10:00:00Z"
        kube.put("v1", "pods", deleting)
        wait(lambda: any(p.deleting for p in _registry(exp).all()))
        assert [push_and_poll() for _ in range(2)] == [["checkpoint"], []]
    finally:
        exp.stop()


def test_trainjob_source_reads_only_its_nodes_jobs(kube: FakeKube) -> None:
    """One GET per TrainJob whose rank-0 pod is here; the only LIST is the CRD probe (one item)."""
    api = "trainer.kubeflow.org/v1alpha1"
    kube.put("v1", "pods", pod("ml", "llm-node-0", TRAINJOB, ip="10.0.0.1"))
    for i in range(50):  # the rest of the cluster's TrainJobs, none of them on this node
        kube.put(api, "trainjobs", trainjob_obj("other", f"far-{i}", {"progressPercentage": 1}))
    kube.put(api, "trainjobs", trainjob_obj("ml", "llm", {"progressPercentage": 45}))
    exp = k8s_exporter(FakeClock(T_START_TS))
    try:
        wait(lambda: len(_registry(exp)) == 1)
        source = trainjob_source(exp)
        for _ in range(3):
            source._next = 0.0  # the 15 s rate limit, for the test
            exp.poll_once()
        (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    finally:
        exp.stop()
    assert run["job_name"] == "llm" and run["progress_ratio"] == 0.45
    reads = [r for r in kube.requests if "trainjobs" in r]
    lists = [r for r in reads if r.split("?")[0].endswith("/trainjobs")]
    assert len(lists) == 1 and "limit=1" in lists[0]
    assert [r.split("?")[0] for r in reads if r not in lists] == [
        f"/apis/{api}/namespaces/ml/trainjobs/llm"
    ] * 3
