"""What a pod says about its run (pure, over pod objects as the API server sends them): which
pods are training pods and of which job, their GPUs, deadline, budget, thresholds and
endpoints, and GPU-seconds that stop with the pod's containers."""

from __future__ import annotations

from typing import Any

import pytest

from exporter.kubernetes.pods import training_pod

from .conftest import K8S_NODE
from .kube import T_START, T_START_TS, TRAINJOB, pod, refs_of


def read(p: dict[str, Any]) -> Any:
    """``training_pod`` with the owners the pod's labels imply (as discovery reads them)."""
    return training_pod(p, refs_of(p))


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
            ("pt", "PyTorchJob", "1"),
        ),
        (
            {
                "training.kubeflow.org/job-name": "pt",
                "training.kubeflow.org/replica-type": "master",
                "training.kubeflow.org/replica-index": "0",
            },
            {},
            ("pt", "PyTorchJob", "0"),
        ),
        (
            {
                "training.kubeflow.org/job-name": "pt",
                "training.kubeflow.org/replica-type": "worker",
                "training.kubeflow.org/replica-index": "0",
            },
            {},
            ("pt", "PyTorchJob", "worker-0"),
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
    info = read(pod("ns", "p", labels, annotations=annotations))
    assert info is not None and (info.job_name, info.job_kind, info.rank) == expected


def test_not_training_pods() -> None:
    assert read(pod("ns", "web", {"app": "web"})) is None
    assert (
        read(pod("ns", "p", TRAINJOB, annotations={"training-progress.io/enabled": "false"}))
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
    info = read(p)
    assert info is not None
    assert info.gpus == 3.0  # no resources on the first container; MIG request + AMD limit
    assert info.deadline_timestamp == 1796083200.0 and info.gpu_seconds_budget == 360_000
    assert info.thresholds == (("stall_seconds", 7200.0),)
    assert len(info.job_name) == 253 and info.start_timestamp == T_START_TS


def test_pod_urls_from_annotations() -> None:
    odh = read(
        pod(
            "ml",
            "p",
            TRAINJOB,
            ip="10.1.1.1",
            annotations={"trainer.opendatahub.io/progression-tracking": "true"},
        )
    )
    ours = read(
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
    bad = read(pod("ml", "p", TRAINJOB, annotations={"training-progress.io/http-port": "99999"}))
    vol = read(
        pod("ml", "p", TRAINJOB, annotations={"training-progress.io/status-volume": "../etc"})
    )
    assert odh is not None and odh.http_url == "http://10.1.1.1:28080/metrics"
    assert ours is not None and ours.http_url == "http://[fd00::5]:8000/progress"
    assert bad is not None and bad.http_url is None
    assert vol is not None and vol.status_file is None


def test_a_finished_pod_stops_accruing_gpu_seconds_when_its_containers_stop() -> None:
    done = pod("ml", "old-0", TRAINJOB, ip="10.0.0.8")
    done["status"]["phase"] = "Failed"
    done["status"]["containerStatuses"] = [
        {
            "name": "trainer",
            "state": {"terminated": {"startedAt": T_START, "finishedAt": "2026-11-29T11:00:00Z"}},
        }
    ]
    info = read(done)
    assert info is not None and info.finished and info.failed
    assert info.start_timestamp == T_START_TS and info.end_timestamp == T_START_TS + 3600
    from exporter.core.model import ProgressReport, RunKey
    from exporter.core.tracker import Tracker
    from exporter.kubernetes.watch import run_meta

    tracker = Tracker()
    key = RunKey("ml", "old-0", "llm")
    tracker.apply(key, ProgressReport(step=1), T_START_TS + 60, run_meta(info, K8S_NODE, "push"))
    # Seen hours later (an exporter restart): 8 GPUs x 1 h, not x 5 h.
    (snap,) = tracker.snapshot(T_START_TS + 5 * 3600)
    assert snap.gpu_seconds == pytest.approx(8 * 3600)
