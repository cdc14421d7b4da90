"""Pod discovery through the fake API server and the real ``kubernetes`` client: list+watch,
bookmarks, the kubelet's ``/pods``, an API server outage, a thousand pods, and pod phases."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from .conftest import FakeClock, get_json, http
from .fakekube import FakeKube
from .kube import BODY, KF, T_START_TS, TRAINJOB, own, pod, put_pod, registry_of, wait


def test_watch_adds_and_deletes_and_gpu_seconds_survive_a_restart(
    kube: FakeKube, k8s_exporter: Any
) -> None:
    clock = FakeClock(T_START_TS + 600)
    put_pod(kube, pod("ml", "llm-0", TRAINJOB, ip="127.0.0.1"))
    exp = k8s_exporter(clock)
    wait(lambda: len(registry_of(exp)) == 1)
    assert http("POST", exp.url + KF.format(ns="ml", name="llm"), BODY)[0] == 200
    put_pod(
        kube,
        pod(
            "ml",
            "llm-1",
            {**TRAINJOB, "batch.kubernetes.io/job-completion-index": "1"},
            ip="10.0.0.9",
        ),
    )
    wait(lambda: len(registry_of(exp)) == 2)  # arrived by watch, not by a relist
    assert exp.discovery.resolver.registry.get("ml", "llm-1").rank == "1"  # type: ignore[attr-defined]
    before = get_json(exp.url + "/api/v1/runs")["runs"][0]["gpu_seconds"]
    exp.stop()
    restarted = k8s_exporter(clock)
    wait(lambda: len(registry_of(restarted)) == 2)
    assert http("POST", restarted.url + KF.format(ns="ml", name="llm"), BODY)[0] == 200
    after = get_json(restarted.url + "/api/v1/runs")["runs"][0]["gpu_seconds"]
    kube.delete("v1", "pods", "ml", "llm-0")
    wait(lambda: get_json(restarted.url + "/api/v1/runs")["runs"][0]["gone"])
    assert before == after == pytest.approx(8 * 600)


@pytest.mark.slow
def test_api_server_outage_serves_last_state_then_recovers(
    kube: FakeKube, k8s_exporter: Any
) -> None:
    put_pod(kube, pod("ml", "llm-0", TRAINJOB, ip="127.0.0.1"))
    exp = k8s_exporter(FakeClock(T_START_TS))
    watcher = exp.discovery.stop.__self__  # type: ignore[attr-defined]
    exp.poll_once()
    wait(lambda: len(registry_of(exp)) == 1)
    kube.down = True
    wait(lambda: "degraded" in exp.ready()[1], timeout=15)
    assert http("GET", exp.url + "/readyz")[0] == 200
    assert http("POST", exp.url + KF.format(ns="ml", name="llm"), BODY)[0] == 200  # last known pods
    relists = watcher.relists
    for i in range(1100):  # history moves on while we are away: our resourceVersion expires
        put_pod(kube, pod("ml", f"other-{i}", {"app": "web"}, ip="10.9.0.1"))
    put_pod(kube, pod("ml", "llm-new", TRAINJOB, ip="10.0.0.7"))
    kube.down = False
    wait(lambda: exp.ready()[1].startswith("ok"), timeout=40)
    wait(lambda: registry_of(exp).get("ml", "llm-new") is not None)
    assert watcher.relists > relists  # 410 Gone -> relisted


@pytest.mark.slow
def test_kubelet_pods_discovery(kube: FakeKube, k8s_exporter: Any, env_proxy: list[str]) -> None:
    """pod_discovery: kubelet reads the node's pods from the kubelet's /pods, not the API;
    with every proxy variable set in its environment, neither the kubelet's calls nor the
    API server's (each with a token) go through that proxy."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    pods = {
        "kind": "PodList",
        "apiVersion": "v1",
        "items": [
            own(kube, pod("ml", "llm-0", TRAINJOB, ip="127.0.0.1")),
            pod("ml", "web", {"app": "web"}),
        ],
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
    exp = k8s_exporter(
        FakeClock(T_START_TS),
        pod_discovery="kubelet",
        kubelet_url=f"http://127.0.0.1:{kubelet.server_address[1]}",
    )
    try:
        wait(lambda: exp.discovery.ready()[0])
        assert "from the kubelet" in exp.discovery.ready()[1]
        assert http("POST", exp.url + KF.format(ns="ml", name="llm"), BODY)[0] == 200
        # The API server was not asked for pods, only for the pod's owners.
        assert not [r for r in kube.requests if "/pods" in r]
        assert kube.requests and env_proxy == []
    finally:
        kubelet.shutdown()


@pytest.mark.slow
def test_thousand_pods_custom_gpu_resources_and_a_pod_deleted_mid_report(
    kube: FakeKube, k8s_exporter: Any
) -> None:
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
        put_pod(kube, p)
    put_pod(kube, pod("ml", "llm-0", TRAINJOB, ip="127.0.0.1"))
    exp = k8s_exporter(FakeClock(T_START_TS), gpu_resources=("example.com/npu",))
    wait(
        lambda: len(registry_of(exp)) == 1001, timeout=60
    )  # correctness, not speed: a loaded 2-core CI is slow
    assert registry_of(exp).get("team-3", "w-3").gpus == 4  # only the configured resource
    assert registry_of(exp).get("ml", "llm-0").gpus == 0
    # MODIFIED: the pod's labels change its job; BOOKMARKs keep the watch's place.
    moved = pod(
        "ml",
        "llm-0",
        {**TRAINJOB, "trainer.kubeflow.org/trainjob-name": "llm2"},
        ip="127.0.0.1",
    )
    put_pod(kube, moved)
    wait(lambda: registry_of(exp).get("ml", "llm-0").job_name == "llm2")
    # The pod is deleted while its report is on the way: refused, counted, nothing crashes.
    kube.delete("v1", "pods", "ml", "llm-0")
    wait(lambda: registry_of(exp).get("ml", "llm-0") is None)
    late = http("POST", exp.url + KF.format(ns="ml", name="llm2"), BODY)
    drops = exp.stats.snapshot().drops
    assert late[0] == 403 and drops[("push", "unknown_source")] == 1


@pytest.mark.slow
def test_watch_bookmarks_move_the_resource_version(kube: FakeKube, tmp_path: Path) -> None:
    from kubernetes import client, config, watch

    put_pod(kube, pod("ml", "a", TRAINJOB))
    api = client.CoreV1Api(config.new_client_from_config(config_file=os.environ["KUBECONFIG"]))
    rv = json.loads(api.list_pod_for_all_namespaces(_preload_content=False).data)["metadata"][
        "resourceVersion"
    ]
    put_pod(kube, pod("ml", "b", TRAINJOB))
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


def test_pod_phase_decides_liveness_stalled_then_failed(kube: FakeKube, k8s_exporter: Any) -> None:
    """A run whose pushes stopped is stalled while its pod runs (the exporter knows it lives
    from the API server), and failed once the pod's phase says Failed."""
    clock = FakeClock(T_START_TS + 600)
    put_pod(
        kube,
        pod(
            "ml",
            "llm-0",
            TRAINJOB,
            ip="127.0.0.1",
            annotations={"training-progress.io/threshold.stall_seconds": "60"},
        ),
    )
    exp = k8s_exporter(clock)
    wait(lambda: len(registry_of(exp)) == 1)
    assert http("POST", exp.url + KF.format(ns="ml", name="llm"), BODY)[0] == 200
    (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    assert run["state"] == "running"
    clock.now += 3600  # an hour of silence: longer than the report timeout, too
    (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    assert run["state"] == "stalled", run["state_reason"]
    assert run["state_reason"] == "stalled for 1h00m (threshold 1m)"
    assert run["state_since_timestamp_seconds"] == T_START_TS + 600 + 60
    put_pod(kube, pod("ml", "llm-0", TRAINJOB, ip="127.0.0.1", phase="Failed"))
    wait(lambda: get_json(exp.url + "/api/v1/runs")["runs"][0]["state"] == "failed")
    metrics = http("GET", exp.url + "/metrics")[1].decode()
    assert 'training_run_state{job_name="llm",namespace="ml",pod="llm-0",state="failed"} 1.0' in (
        metrics
    )
