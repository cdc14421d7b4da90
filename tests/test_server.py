"""The exporter over real HTTP on loopback: push endpoints, /metrics, health, JSON API."""

from __future__ import annotations

import json
import socket
import threading
from typing import Any

import pytest

from .conftest import get_json, http, kubeflow_fixture_bodies

KF = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/{name}/status"
NATIVE = "/api/v1/namespaces/{ns}/runs/{name}/report"
JSON_HEADERS = {"Content-Type": "application/json", "Authorization": "Bearer token-from-pod"}


def metrics(exp: Any) -> str:
    status, body = http("GET", exp.url + "/metrics")
    assert status == 200
    return body.decode()


def sample(text: str, name: str, **labels: str) -> float | None:
    """The value of the one sample of ``name`` whose labels include ``labels``."""
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        if all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def push(
    exp: Any, body: bytes, ns: str = "team-a", name: str = "llm", kubeflow: bool = True
) -> tuple[int, Any]:
    path = (KF if kubeflow else NATIVE).format(ns=ns, name=name)
    status, resp = http("POST", exp.url + path, body, JSON_HEADERS)
    return status, json.loads(resp) if resp else None


def test_transformers_kubeflow_bodies_end_complete_on_metrics(
    exporter_factory: Any, clock: Any
) -> None:
    exp = exporter_factory()
    clock.now = 1_796_000_000.0
    for body in kubeflow_fixture_bodies():
        status, echoed = push(exp, body)
        assert status == 200
        assert echoed == {"trainerStatus": json.loads(body)["trainerStatus"]}
        clock.advance(5)
    text = metrics(exp)
    labels = {"namespace": "team-a", "pod": "llm", "job_name": "llm"}
    assert sample(text, "training_step", **labels) == 20
    assert sample(text, "training_max_steps", **labels) == 50
    assert sample(text, "training_progress_ratio", **labels) == 1.0
    assert sample(text, "training_finished", **labels) == 1.0
    assert sample(text, "training_loss", **labels) == pytest.approx(6.8996437072753904)
    assert sample(text, "training_exporter_reports_total", source="push", outcome="accepted") == 3


def test_push_is_visible_on_the_very_next_scrape(exporter_factory: Any) -> None:
    exp = exporter_factory()
    assert push(exp, b'{"step": 42, "max_steps": 100, "loss": 0.5}', kubeflow=False)[0] == 200
    assert sample(metrics(exp), "training_step", job_name="llm") == 42


@pytest.mark.parametrize(
    ("body", "status", "reason", "counter"),
    [
        (b"{not json", 422, "Invalid", "invalid_json"),
        (b'{"trainerStatus": {"progressPercentage": 250}}', 422, "Invalid", "invalid_progress"),
        (
            b'{"trainerStatus": {"metrics": [{"name": "loss", "value": 0.5}]}}',
            422,
            "Invalid",
            "invalid_metric_value",
        ),
        (b'{"trainerStatus": "done"}', 422, "Invalid", "invalid_type"),
        (b" " * (64 * 1024 + 1), 413, "RequestEntityTooLarge", "oversize"),
    ],
    ids=["malformed-json", "progress-250", "number-not-string", "wrong-type", "oversize"],
)
def test_kubeflow_endpoint_rejects_like_upstream(
    exporter_factory: Any, body: bytes, status: int, reason: str, counter: str
) -> None:
    exp = exporter_factory()
    push(
        exp,
        b'{"trainerStatus": {"metrics": [{"name": "current_step", "value": "7"}]}}',
        name="good",
    )
    got, resp = push(exp, body, name="llm")
    assert got == status
    assert resp["kind"] == "Status" and resp["status"] == "Failure"
    assert resp["reason"] == reason and resp["code"] == status and resp["message"]
    text = metrics(exp)
    assert sample(text, "training_exporter_drops_total", source="push", reason=counter) == 1
    assert sample(text, "training_exporter_reports_total", source="push", outcome="rejected") == 1
    assert sample(text, "training_step", job_name="llm") is None
    assert sample(text, "training_step", job_name="good") == 7  # the other run is untouched


def test_invalid_names_in_path_are_rejected(exporter_factory: Any) -> None:
    exp = exporter_factory()
    for ns, name in (("Team_A", "llm"), ("ns", "UPPER"), ("a" * 64, "x"), ("ns", "%22evil%22")):
        status, _ = push(exp, b"{}", ns=ns, name=name)
        assert status == 422, (ns, name)
    assert sample(metrics(exp), "training_exporter_drops_total", reason="invalid_name") == 4


def test_native_push_reports_dropped_values(exporter_factory: Any) -> None:
    exp = exporter_factory()
    status, resp = push(
        exp,
        json.dumps(
            {"step": 1e18, "loss": "NaN", "progress": 3, "metrics": {'a"b': 1, "ok": 2}}
        ).encode(),
        kubeflow=False,
    )
    assert status == 200
    assert sorted(resp["dropped"]) == [
        "invalid_metric_name",
        "progress_clamped",
        "step_out_of_range",
    ]
    text = metrics(exp)
    assert sample(text, "training_loss", job_name="llm") != sample(
        text, "training_loss", job_name="llm"
    )  # NaN
    assert sample(text, "training_metric", job_name="llm", metric="ok") == 2
    assert sample(text, "training_exporter_drops_total", reason="step_out_of_range") == 1


def test_ten_thousand_metric_names_from_one_run(exporter_factory: Any) -> None:
    exp = exporter_factory()
    for batch in range(40):
        body = json.dumps({"metrics": {f"m{batch}_{i}": i for i in range(250)}}).encode()
        assert push(exp, body, kubeflow=False)[0] == 200
    text = metrics(exp)
    assert text.count('training_metric{job_name="llm"') == 32
    assert sample(text, "training_exporter_drops_total", reason="metric_cap") == 10_000 - 32


def test_unknown_routes_and_chunked_bodies(exporter_factory: Any) -> None:
    exp = exporter_factory()
    assert http("GET", exp.url + "/nope")[0] == 404
    assert http("POST", exp.url + "/api/v1/whatever", b"{}")[0] == 404
    host, port = exp.server.server_address[:2]
    with socket.create_connection((host, port), timeout=5) as sock:
        sock.sendall(
            b"POST " + NATIVE.format(ns="a", name="b").encode() + b" HTTP/1.1\r\n"
            b"Host: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
        )
        assert sock.recv(200).startswith(b"HTTP/1.1 411")


def test_health_readiness_and_index(exporter_factory: Any) -> None:
    exp = exporter_factory()
    assert http("GET", exp.url + "/healthz") == (200, b"ok\n")
    assert http("GET", exp.url + "/readyz")[0] == 503
    exp.poll_once()
    assert http("GET", exp.url + "/readyz")[0] == 200
    status, body = http("GET", exp.url + "/")
    assert status == 200 and b'href="metrics"' in body


def test_api_runs_json(exporter_factory: Any, clock: Any) -> None:
    exp = exporter_factory()
    push(
        exp,
        b'{"step": 5, "max_steps": 10, "loss": NaN, "gpus": 2, "framework": "jax"}',
        kubeflow=False,
    )
    clock.advance(10)
    doc = get_json(exp.url + "/api/v1/runs")
    assert doc["time"] == clock.now
    (run,) = doc["runs"]
    assert (run["namespace"], run["pod"], run["job_name"]) == ("team-a", "llm", "llm")
    assert run["state"] == "diverged" and run["state_reason"] == "loss is not finite"
    # JSON has no NaN (get_json parses strictly): null, and non_finite says what it was.
    assert run["loss"] is None and run["non_finite"] == {"loss": "NaN"}
    assert all(v is not None for _, v in run["loss_history"][:-1])
    assert run["progress_ratio"] == 0.5
    assert run["gpu_seconds"] == 20.0
    assert run["info"]["framework"] == "jax" and run["info"]["source"] == "push"


def test_openmetrics_negotiation(exporter_factory: Any) -> None:
    exp = exporter_factory()
    push(exp, b'{"step": 1}', kubeflow=False)
    status, body = http(
        "GET",
        exp.url + "/metrics",
        headers={"Accept": "application/openmetrics-text; version=1.0.0"},
    )
    assert status == 200 and body.rstrip().endswith(b"# EOF")


def test_concurrent_pushes_from_many_runs_stay_separate(exporter_factory: Any) -> None:
    exp = exporter_factory()
    errors: list[str] = []

    def worker(n: int) -> None:
        for step in range(1, 21):
            status, _ = push(
                exp,
                json.dumps({"step": step * n, "loss": float(n)}).encode(),
                name=f"run-{n}",
                kubeflow=False,
            )
            if status != 200:
                errors.append(f"{n}:{status}")

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(1, 17)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    text = metrics(exp)
    for n in range(1, 17):
        assert sample(text, "training_step", job_name=f"run-{n}") == 20 * n
        assert sample(text, "training_loss", job_name=f"run-{n}") == float(n)
