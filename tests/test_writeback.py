"""TrainJob status write-back (opt-in): progress read from another source lands in the
TrainJob through the status subresource (or the OpenShift AI annotation), in the upstream
shape, at most every 15 s and only on change, never over the job's own fresher status; and
``kubectl progress`` (through the real client) then shows it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from exporter.core.model import ProgressReport, RunKey
from exporter.core.thresholds import Thresholds
from exporter.core.tracker import Tracker
from exporter.daemon.app import Exporter
from exporter.daemon.config import Config, apply
from exporter.plumbing.settings import ConfigError
from exporter.sinks import writeback
from exporter.sinks.writeback import StatusWriter, rfc3339, trainer_status

from .conftest import T0, FakeClock, http
from .fakekube import FakeKube
from .kube import T_START_TS, TRAINJOB, pod, put_pod, trainjob_obj, wait, writes_by
from .test_kubectl_progress import plugin

API = "trainer.kubeflow.org/v1alpha1"
STATUS_PATH = f"/apis/{API}/namespaces/ml/trainjobs/llm/status"


def test_trainer_status_has_the_upstream_shape() -> None:
    tracker = Tracker()
    key = RunKey("ml", "llm-0", "llm")
    for i in range(4):
        tracker.apply(
            key,
            ProgressReport(step=100 * (i + 1), max_steps=1000, loss=0.25, metrics=(("acc", 0.9),)),
            T0 + i * 10,
        )
    (snap,) = tracker.snapshot(T0 + 30)
    body = trainer_status(snap)
    assert body["progressPercentage"] == 40
    assert body["estimatedRemainingSeconds"] == 60
    metrics = {m["name"]: m["value"] for m in body["metrics"]}
    assert metrics == {"loss": "0.25", "current_step": "400", "total_steps": "1000", "acc": "0.9"}
    assert all(isinstance(m["value"], str) for m in body["metrics"])


def test_trainer_status_carries_the_last_checkpoint() -> None:
    tracker = Tracker()
    key = RunKey("ml", "llm-0", "llm")
    tracker.apply(key, ProgressReport(step=100, max_steps=1000), T0)
    tracker.apply(
        key,
        ProgressReport(step=200, checkpoint_step=200, checkpoint_timestamp=T0 + 9.5),
        T0 + 10,
    )
    (snap,) = tracker.snapshot(T0 + 10)
    metrics = {m["name"]: m["value"] for m in trainer_status(snap)["metrics"]}
    assert metrics["last_checkpoint_step"] == "200"
    assert metrics["last_checkpoint_time"] == rfc3339(T0 + 9.5)


def test_setting_accepts_true_false_and_the_targets() -> None:
    assert (
        apply(Config(), {"trainjob_status_writeback": "true"}, "t").trainjob_status_writeback
        == "status"
    )
    assert (
        apply(Config(), {"trainjob_status_writeback": "annotation"}, "t").trainjob_status_writeback
        == "annotation"
    )
    assert Config().trainjob_status_writeback == "off"
    try:
        apply(Config(), {"trainjob_status_writeback": "everywhere"}, "t")
    except ConfigError as err:
        assert "trainjob_status_writeback" in str(err)
    else:
        raise AssertionError("an unknown target must be refused")


def start(
    kube: FakeKube, k8s_exporter: Any, target: str | None, clock: FakeClock
) -> tuple[Exporter, list[float]]:
    """An exporter in Kubernetes mode with write-back ``target`` (None: the default)."""
    put_pod(kube, pod("ml", "llm-node-0", TRAINJOB, ip="127.0.0.1"))
    kube.put(API, "trainjobs", trainjob_obj("ml", "llm"))
    exp = k8s_exporter(clock, **({} if target is None else {"trainjob_status_writeback": target}))
    mono = [0.0]
    for source in exp.sinks.values():
        if isinstance(source, StatusWriter):
            source.monotonic = lambda: mono[0]
    return exp, mono


def push(exp: Exporter, step: int, clock: FakeClock) -> None:
    body = json.dumps({"step": step, "max_steps": 1000, "loss": 1.5 - step / 1000})
    status, resp = http(
        "POST",
        exp.url + "/api/v1/namespaces/ml/runs/llm/report",
        body.encode(),
        {"Content-Type": "application/json"},
    )
    assert status == 200, resp
    clock.advance(10)


def status_patches(kube: FakeKube) -> list[Any]:
    """The exporter's writes of the TrainJob's status (server-side apply as its manager)."""
    return writes_by(kube, STATUS_PATH)


@pytest.mark.slow
def test_progress_from_a_push_is_written_back_through_the_status_subresource(
    kube: FakeKube, k8s_exporter: Any
) -> None:
    clock = FakeClock(T_START_TS + 3600)
    exp, mono = start(kube, k8s_exporter, "status", clock)
    wait(lambda: exp.ready()[0] or exp.poll_once() is not None)
    for step in (100, 200, 300, 400):
        push(exp, step, clock)
    exp.poll_once()
    (patch,) = status_patches(kube)
    status = patch["status"]["trainerStatus"]
    assert status["progressPercentage"] == 40 and status["estimatedRemainingSeconds"] > 0
    assert {"name": "current_step", "value": "400"} in status["metrics"]
    assert status["lastUpdatedTime"].endswith("Z")
    stored = kube.objects[(API, "trainjobs")][("ml", "llm")]
    assert stored["status"]["trainerStatus"] == status
    # Within 15 s: nothing more, even with new progress.
    push(exp, 500, clock)
    exp.poll_once()
    assert len(status_patches(kube)) == 1
    # After 15 s, the new progress; then, unchanged, nothing.
    mono[0] += 16
    exp.poll_once()
    assert len(status_patches(kube)) == 2
    assert status_patches(kube)[-1]["status"]["trainerStatus"]["progressPercentage"] == 50
    mono[0] += 16
    exp.poll_once()
    assert len(status_patches(kube)) == 2
    # kubectl progress (the real client through kubeconfig) shows what was written.
    shown = plugin(Path(os.environ["KUBECONFIG"]), "-n", "ml")
    assert shown.returncode == 0, shown.stderr
    assert "llm" in shown.stdout and "50" in shown.stdout
    # The job's own writer (Kubeflow's status server applies as trainer-status) takes the
    # field: from then on the exporter leaves the TrainJob alone, and counts it once.
    apply_as(
        "trainer-status", {"progressPercentage": 77, "lastUpdatedTime": "2020-01-01T00:00:00Z"}
    )
    for step in (600, 700):
        push(exp, step, clock)
        mono[0] += 16
        exp.poll_once()
    assert len(status_patches(kube)) == 2
    stored = kube.objects[(API, "trainjobs")][("ml", "llm")]
    assert stored["status"]["trainerStatus"]["progressPercentage"] == 77
    assert b'reason="other_writer",source="writeback"} 1.0' in http("GET", exp.url + "/metrics")[1]


def apply_as(manager: str, status: dict[str, Any], force: bool = True) -> None:
    """Server-side apply of ``status.trainerStatus`` as field manager ``manager``, with the
    real client, as Kubeflow Trainer's status server writes it."""
    from kubernetes import client, config

    api = client.CustomObjectsApi(config.new_client_from_config(os.environ["KUBECONFIG"]))
    group, version = API.split("/")
    api.patch_namespaced_custom_object_status(
        group,
        version,
        "ml",
        "trainjobs",
        "llm",
        {
            "apiVersion": API,
            "kind": "TrainJob",
            "metadata": {"name": "llm", "namespace": "ml"},
            "status": {"trainerStatus": status},
        },
        field_manager=manager,
        force=force,
        _content_type="application/apply-patch+yaml",
    )


def test_annotation_target_for_openshift_ai(kube: FakeKube, k8s_exporter: Any) -> None:
    clock = FakeClock(T_START_TS + 3600)
    exp, _ = start(kube, k8s_exporter, "annotation", clock)
    wait(lambda: exp.ready()[0] or exp.poll_once() is not None)
    for step in (100, 200, 300):
        push(exp, step, clock)
    exp.poll_once()
    assert status_patches(kube) == []
    (patch,) = writes_by(kube, "/trainjobs/llm")
    body = json.loads(patch["metadata"]["annotations"]["trainer.opendatahub.io/trainerStatus"])
    assert body["progressPercentage"] == 30


def test_a_run_read_from_its_own_trainjob_status_is_not_written_back(
    kube: FakeKube, k8s_exporter: Any
) -> None:
    clock = FakeClock(T_START_TS + 3600)
    put_pod(kube, pod("ml", "llm-node-0", TRAINJOB, ip="127.0.0.1"))
    kube.put(API, "trainjobs", trainjob_obj("ml", "llm", {"progressPercentage": 45}))
    exp = k8s_exporter(clock, trainjob_status_writeback="status")
    wait(lambda: exp.ready()[0] or exp.poll_once() is not None)
    exp.poll_once()
    exp.poll_once()
    assert [w for w in kube.writes if w[0] == "PATCH"] == []


def test_writeback_is_off_by_default(kube: FakeKube, k8s_exporter: Any) -> None:
    clock = FakeClock(T_START_TS + 3600)
    exp, _ = start(kube, k8s_exporter, None, clock)
    wait(lambda: exp.ready()[0] or exp.poll_once() is not None)
    for step in (100, 200, 300):
        push(exp, step, clock)
    exp.poll_once()
    assert not any(isinstance(s, StatusWriter) for s in exp.sinks.values())
    assert exp.sinks == {}
    assert [w for w in kube.writes if w[0] == "PATCH"] == []


FIXTURES = Path(__file__).parent / "fixtures" / "logs"


def tqdm_only_job(
    kube: FakeKube, k8s_exporter: Any, log_root: Path, clock: FakeClock, quiet: bool = True
) -> Exporter:
    """A TrainJob whose rank-0 pod only printed a tqdm bar (a real capture, as the kubelet
    stores it), read by an exporter with write-back on; returns the exporter, polled. With
    ``quiet``, the log then stays quiet for the report timeout: a bar at its end alone does
    not finish a run until then (the same bar ends the first of several epochs)."""
    put_pod(kube, pod("ml", "llm-node-0", TRAINJOB, ip="10.0.0.9"))
    kube.put(API, "trainjobs", trainjob_obj("ml", "llm"))
    path = log_root / "ml_llm-node-0_uid-llm-node-0" / "trainer"
    path.mkdir(parents=True)
    shutil.copy(FIXTURES / "pytorch_tqdm.cri.log", path / "0.log")
    exp = k8s_exporter(clock, log_root=str(log_root), trainjob_status_writeback="status")
    wait(lambda: exp.ready()[0] or exp.poll_once() is not None)
    exp.poll_once()
    exp.poll_once()
    if quiet:
        clock.advance(Thresholds().report_timeout_seconds + 1)
        exp.poll_once()
    return exp


def test_a_bar_at_its_end_is_finished_once_the_log_stays_quiet(
    kube: FakeKube, tmp_path: Path, k8s_exporter: Any
) -> None:
    tqdm_only_job(kube, k8s_exporter, tmp_path / "pods", FakeClock(T_START_TS + 3600), quiet=False)
    (patch,) = status_patches(kube)
    # 300/300, but the pod runs on: the next epoch's bar may be on its way.
    assert patch["status"]["trainerStatus"]["progressPercentage"] == 99


@pytest.mark.slow
def test_kubectl_reads_the_progress_of_a_job_that_only_printed_tqdm_bars(
    kube: FakeKube, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, k8s_exporter: Any
) -> None:
    # The quiet log finishes the run after the first write: write again at once.
    monkeypatch.setattr(writeback, "MIN_INTERVAL", 0.0)
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl is on these machines (make test-deps)"
    tqdm_only_job(kube, k8s_exporter, tmp_path / "pods", FakeClock(T_START_TS + 3600))
    patch = status_patches(kube)[-1]
    # 300/300, and nothing more for the report timeout: done.
    assert patch["status"]["trainerStatus"]["progressPercentage"] == 100
    shown = subprocess.run(
        [
            kubectl,
            "--kubeconfig",
            os.environ["KUBECONFIG"],
            "get",
            "trainjob",
            "llm",
            "-n",
            "ml",
            "-o",
            "jsonpath={.status.trainerStatus.progressPercentage}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (shown.returncode, shown.stdout) == (0, "100"), shown.stderr
    listed = plugin(Path(os.environ["KUBECONFIG"]), "-n", "ml", "-o", "json")
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)
    assert (row["job_name"], row["progress"]) == ("llm", 1.0)


def test_the_api_stand_in_refuses_a_patch_of_a_stale_resource_version(kube: FakeKube) -> None:
    """What write-back relies on from the API server, through the real client: the status
    subresource changes status only, and a stale resourceVersion is a 409 Conflict."""
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException

    obj = kube.put(API, "trainjobs", trainjob_obj("ml", "llm"))
    stale = str(obj["metadata"]["resourceVersion"])  # before the next change
    api = client.CustomObjectsApi(config.new_client_from_config(os.environ["KUBECONFIG"]))
    group, version = API.split("/")
    api.patch_namespaced_custom_object_status(
        group,
        version,
        "ml",
        "trainjobs",
        "llm",
        {"spec": {"suspend": True}, "status": {"trainerStatus": {"progressPercentage": 5}}},
    )
    stored = kube.objects[(API, "trainjobs")][("ml", "llm")]
    assert stored["status"]["trainerStatus"] == {"progressPercentage": 5}
    assert "spec" not in stored or "suspend" not in stored.get("spec", {})
    try:
        api.patch_namespaced_custom_object(
            group,
            version,
            "ml",
            "trainjobs",
            "llm",
            {"metadata": {"resourceVersion": stale, "annotations": {"a": "b"}}},
        )
    except ApiException as err:
        assert err.status == 409
    else:
        raise AssertionError("a stale resourceVersion must be a conflict")
