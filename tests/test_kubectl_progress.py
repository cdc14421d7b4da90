"""``kubectl progress`` against the fake Kubernetes API (real client), and the fake API
server itself speaking list/watch/410 to the real ``kubernetes`` client."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from .conftest import strict_json
from .fakekube import fake_kube

TRAINJOBS = ("trainer.kubeflow.org/v1alpha1", "trainjobs")


def trainjob(
    ns: str, name: str, status: dict | None, created: str = "2026-11-29T10:00:00Z"
) -> dict:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"namespace": ns, "name": name, "creationTimestamp": created},
        "status": status or {},
    }


def plugin(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    env.pop("TPE_PROMETHEUS_URL", None)
    exe = shutil.which("kubectl-progress")
    cmd = [exe] if exe else [sys.executable, "-m", "exporter.commands.kubectl_progress"]
    return subprocess.run([*cmd, *args], env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.slow
def test_plugin_reads_trainjob_status_through_the_api(tmp_path: Path) -> None:
    with fake_kube(tmp_path) as (kube, kubeconfig):
        kube.put(
            *TRAINJOBS,
            trainjob(
                "default",
                "llm",
                {
                    "trainerStatus": {
                        "progressPercentage": 45,
                        "estimatedRemainingSeconds": 3600,
                        "metrics": [{"name": "loss", "value": "0.2347"}],
                    }
                },
            ),
        )
        kube.put(
            *TRAINJOBS,
            trainjob(
                "default",
                "done",
                {
                    "trainerStatus": {"progressPercentage": 100},
                    "conditions": [{"type": "Complete", "status": "True"}],
                },
            ),
        )
        kube.put(*TRAINJOBS, trainjob("default", "new", None))
        kube.put(
            *TRAINJOBS,
            trainjob(
                "other",
                "bert",
                {
                    "trainerStatus": {
                        "progressPercentage": 3,
                        "metrics": [{"name": "loss", "value": "NaN"}],
                    }
                },
            ),
        )
        out = plugin(kubeconfig)
        everywhere = plugin(kubeconfig, "-A")
        as_json = plugin(kubeconfig, "-n", "other", "-o", "json")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == [
        "NAME",
        "STATE",
        "PROGRESS%",
        "ETA",
        "DEADLINE",
        "LOSS",
        "GPU-HOURS",
        "STUCK-RANK",
        "AGE",
    ]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["llm"][1:7] == ["running", "45", "1h00m", "-", "0.2347", "-"]
    assert rows["done"][1:3] == ["finished", "100"]
    assert rows["new"][1:3] == ["waiting", "-"]
    assert "bert" not in rows  # the kubeconfig context's namespace only
    assert everywhere.stdout.splitlines()[0].startswith("NAMESPACE")
    assert any(line.split()[:2] == ["other", "bert"] for line in everywhere.stdout.splitlines())
    (bert,) = strict_json(as_json.stdout)  # its NaN loss is null: JSON has no NaN
    assert (bert["job_name"], bert["progress"], bert["loss"]) == ("bert", 0.03, None)
    assert any("/apis/trainer.kubeflow.org/v1alpha1/trainjobs" in r for r in kube.requests)


@pytest.mark.slow
def test_plugin_reports_api_errors_in_one_line(tmp_path: Path) -> None:
    with fake_kube(tmp_path) as (_, kubeconfig):
        pass  # server stopped: connection refused
    out = plugin(kubeconfig)
    assert out.returncode == 1 and out.stderr.startswith("kubectl progress:")


def test_fake_api_server_speaks_list_watch_and_410_to_the_real_client(tmp_path: Path) -> None:
    from kubernetes import client, config, watch

    with fake_kube(tmp_path) as (kube, kubeconfig):
        kube.history = 5
        config.load_kube_config(config_file=str(kubeconfig))
        core = client.CoreV1Api()
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"namespace": "ml", "name": "p0"},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x"}]},
        }
        kube.put("v1", "pods", pod)
        listed = core.list_namespaced_pod("ml")
        assert [p.metadata.name for p in listed.items] == ["p0"]
        rv = listed.metadata.resource_version

        def changes() -> None:
            kube.put("v1", "pods", {**pod, "metadata": {"namespace": "ml", "name": "p1"}})
            kube.delete("v1", "pods", "ml", "p0")

        threading.Timer(0.3, changes).start()
        events = []
        for event in watch.Watch().stream(
            core.list_namespaced_pod, "ml", resource_version=rv, timeout_seconds=2
        ):
            events.append((event["type"], event["object"].metadata.name))
            if len(events) == 2:
                break
        assert events == [("ADDED", "p1"), ("DELETED", "p0")]
        for i in range(10):  # push the old resourceVersion out of the kept history
            kube.put("v1", "pods", {**pod, "metadata": {"namespace": "ml", "name": f"q{i}"}})
        with pytest.raises(client.ApiException) as exc:
            list(
                watch.Watch().stream(
                    core.list_namespaced_pod, "ml", resource_version=rv, timeout_seconds=1
                )
            )
        assert exc.value.status == 410
