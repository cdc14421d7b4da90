"""The Kubeflow SDK's own ``update_trainjob_status`` reporting to our Kubeflow endpoint.

The SDK pins ``kubernetes<36``, older than what this project's environment may hold, so it is
installed in a venv of its own (from the package registry), and called there unchanged.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import get_json

KUBEFLOW_SDK = "kubeflow==0.5.0"
pytestmark = pytest.mark.slow  # pip-installs the SDK into a venv of its own


@pytest.fixture(scope="module")
def sdk_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("kubeflow-sdk") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    proc = subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", KUBEFLOW_SDK],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail(f"could not install {KUBEFLOW_SDK}: {proc.stderr[-2000:]}")
        pytest.skip(
            f"could not install {KUBEFLOW_SDK} (no package registry?): {proc.stderr[-300:]}"
        )
    return py


def test_update_trainjob_status_reaches_the_exporter(
    sdk_python: Path, exporter_factory: Any, tmp_path: Path
) -> None:
    exp = exporter_factory()
    token = tmp_path / "token"
    token.write_text("standalone")
    env = {
        **os.environ,
        "KUBEFLOW_TRAINER_SERVER_URL": (
            f"{exp.url}/apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs/sdk-job/status"
        ),
        "KUBEFLOW_TRAINER_SERVER_TOKEN": str(token),
    }
    code = (
        "import sys; from kubeflow.trainer import update_trainjob_status;"
        "ok = update_trainjob_status(progress_percent=40, estimated_remaining_seconds=30,"
        " metrics={'loss': 0.5, 'current_step': 20, 'total_steps': 50, 'accuracy': 0.75});"
        "sys.exit(0 if ok else 3)"
    )
    proc = subprocess.run(
        [str(sdk_python), "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    assert (run["namespace"], run["job_name"], run["step"], run["max_steps"]) == (
        "ml",
        "sdk-job",
        20,
        50,
    )
    assert run["loss"] == 0.5 and run["metrics"] == {"accuracy": 0.75}
    assert run["progress_ratio"] == 0.4


SDK_READS_TRAINJOB = """
import json, sys
from kubernetes import client, config
from kubeflow_trainer_api import models
config.load_kube_config(config_file=sys.argv[1])
# The call and the model TrainerClient().get_job() uses, up to its runtime lookup.
obj = client.CustomObjectsApi().get_namespaced_custom_object(
    "trainer.kubeflow.org", "v1alpha1", "ml", "trainjobs", "llm")
status = models.TrainerV1alpha1TrainJob.from_dict(obj).status.trainer_status
print(json.dumps({"progress": status.progress_percentage,
                  "metrics": {m.name: m.value for m in status.metrics or []}}))
"""


def test_the_sdk_reads_back_what_the_exporter_wrote_for_a_tqdm_only_job(
    sdk_python: Path,
    kube: Any,
    k8s_exporter: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Write-back: a job that only printed tqdm bars; the Kubeflow SDK's own client and
    generated TrainJob model read its progress from the (fake) API server."""
    from exporter.sinks import writeback

    # The quiet log finishes the run after the first write: write again at once.
    monkeypatch.setattr(writeback, "MIN_INTERVAL", 0.0)
    from .conftest import FakeClock
    from .kube import T_START_TS
    from .test_writeback import tqdm_only_job

    tqdm_only_job(kube, k8s_exporter, tmp_path / "pods", FakeClock(T_START_TS + 3600))
    proc = subprocess.run(
        [str(sdk_python), "-c", SDK_READS_TRAINJOB, os.environ["KUBECONFIG"]],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    read = json.loads(proc.stdout)
    assert read["progress"] == 100
    assert read["metrics"]["current_step"] == "300" and read["metrics"]["total_steps"] == "300"


SDK_JOB_FIELDS = """
import dataclasses, json
from kubeflow.trainer import TrainerClient
from kubeflow.trainer.types import types
# What TrainerClient().get_job() returns: its declared type, and the type itself.
returned = TrainerClient.get_job.__annotations__.get("return")
print(json.dumps({"returns": str(returned),
                  "fields": [f.name for f in dataclasses.fields(types.TrainJob)]}))
"""


def test_the_sdk_get_job_has_no_progress_field(sdk_python: Path) -> None:
    """docs/kubernetes.md says so: Kubeflow SDK 0.5's get_job() returns a TrainJob with no
    progress field; only the generated model reads status.trainerStatus."""
    proc = subprocess.run(
        [str(sdk_python), "-c", SDK_JOB_FIELDS], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = json.loads(proc.stdout)
    assert "TrainJob" in found["returns"]
    assert "name" in found["fields"] and "status" in found["fields"]
    assert not [f for f in found["fields"] if "progress" in f or "trainer_status" in f]
