"""Forwarding Kubeflow pushes upstream (``kubeflow_forward_url``): the exporter records the
push, sends it on to Kubeflow Trainer's endpoint with the pod's token (over TLS with the
Kubeflow CA), and relays the upstream answer."""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from .conftest import get_json, http, self_signed_cert

KF = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs/llm/status"
BODY = json.dumps(
    {
        "trainerStatus": {
            "progressPercentage": 12,
            "metrics": [{"name": "current_step", "value": "12"}],
        }
    }
).encode()


class Upstream:
    """Kubeflow Trainer's status endpoint, stood in: records each push, answers as told."""

    def __init__(
        self,
        status: int = 200,
        tls: tuple[Path, Path] | None = None,
        location: str | None = None,
        delay: float = 0.0,
    ) -> None:
        self.received: list[tuple[str, str | None, bytes]] = []
        self.status = status
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.received.append((self.path, self.headers.get("Authorization"), body))
                answer = json.dumps({"upstream": True, "echo": json.loads(body)}).encode()
                time.sleep(delay)  # a slow upstream
                self.send_response(outer.status)
                if location is not None:
                    self.send_header("Location", location)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        scheme = "http"
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(str(tls[0]), str(tls[1]))
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
            scheme = "https"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"{scheme}://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    up = Upstream()
    yield up
    up.close()


def push(exp: Any, body: bytes = BODY, path: str = KF) -> tuple[int, Any]:
    status, resp = http(
        "POST",
        exp.url + path,
        body,
        {"Content-Type": "application/json", "Authorization": "Bearer pod-token"},
    )
    return status, json.loads(resp) if resp else None


def test_a_kubeflow_push_is_recorded_forwarded_and_answered_by_upstream(
    exporter_factory: Any, upstream: Upstream
) -> None:
    exp = exporter_factory(kubeflow_forward_url=upstream.url)
    status, answer = push(exp)
    assert status == 200 and answer == {"upstream": True, "echo": json.loads(BODY)}
    assert upstream.received == [(KF, "Bearer pod-token", BODY)]
    (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    assert run["job_name"] == "llm" and run["step"] == 12


def test_the_upstream_refusal_is_relayed_and_the_push_still_recorded(
    exporter_factory: Any,
) -> None:
    up = Upstream(status=403)
    try:
        exp = exporter_factory(kubeflow_forward_url=up.url)
        status, answer = push(exp)
    finally:
        up.close()
    assert status == 403 and answer["upstream"] is True
    (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    assert run["step"] == 12


def test_an_unreachable_upstream_is_a_502_and_the_push_still_recorded(
    exporter_factory: Any,
) -> None:
    up = Upstream()
    url = up.url
    up.close()  # nothing listens there any more
    exp = exporter_factory(kubeflow_forward_url=url)
    status, answer = push(exp)
    assert status == 502 and answer["kind"] == "Status" and answer["reason"] == "BadGateway"
    (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    assert run["step"] == 12


def test_only_accepted_kubeflow_pushes_are_forwarded(
    exporter_factory: Any, upstream: Upstream
) -> None:
    exp = exporter_factory(kubeflow_forward_url=upstream.url)
    native = "/api/v1/namespaces/ml/runs/llm/report"
    assert push(exp, json.dumps({"step": 3}).encode(), native)[0] == 200
    bad_name = KF.replace("/llm/", "/Not_A_Name/")
    assert push(exp, BODY, bad_name)[0] == 422
    assert push(exp, b'{"trainerStatus": {"progressPercentage": 250}}')[0] == 422
    assert upstream.received == []


@pytest.mark.slow
def test_forwarding_over_tls_verifies_the_kubeflow_ca(
    exporter_factory: Any, tmp_path: Path
) -> None:
    cert, key = self_signed_cert(tmp_path)
    up = Upstream(tls=(cert, key))
    try:
        trusted = exporter_factory(kubeflow_forward_url=up.url, kubeflow_forward_ca=str(cert))
        assert push(trusted)[0] == 200 and len(up.received) == 1
        untrusted = exporter_factory(kubeflow_forward_url=up.url)  # the system CAs only
        status, answer = push(untrusted)
        assert status == 502 and "CERTIFICATE_VERIFY_FAILED" in answer["message"]
        assert len(up.received) == 1
    finally:
        up.close()


def test_a_proxy_in_the_environment_gets_no_push_and_no_token(
    exporter_factory: Any, upstream: Upstream, env_proxy: list[str]
) -> None:
    """HTTP_PROXY, HTTPS_PROXY and ALL_PROXY in the exporter's environment: the push and the
    pod's token go to the configured Kubeflow endpoint only."""
    exp = exporter_factory(kubeflow_forward_url=upstream.url)
    status, answer = push(exp)
    assert status == 200 and answer["upstream"] is True
    assert upstream.received == [(KF, "Bearer pod-token", BODY)]
    assert env_proxy == []


@pytest.mark.slow
def test_a_redirect_is_not_followed_and_the_token_goes_nowhere_else(
    exporter_factory: Any, upstream: Upstream
) -> None:
    """An upstream answering 302 to another host must not get the pod's token sent there,
    nor the job told 200."""
    trap = upstream  # where the redirect points: it must receive nothing
    redirecting = Upstream(status=302, location=trap.url + "/steal")
    try:
        exp = exporter_factory(kubeflow_forward_url=redirecting.url)
        status, answer = push(exp)
    finally:
        redirecting.close()
    assert status == 502 and answer["reason"] == "BadGateway" and "redirect" in answer["message"]
    assert trap.received == []
    assert len(redirecting.received) == 1  # asked once, as configured
    (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    assert run["step"] == 12  # recorded all the same


@pytest.mark.slow
def test_a_slow_upstream_holds_no_other_push(exporter_factory: Any) -> None:
    """Eight Kubeflow pushes wait on an upstream that takes 3 s each; native pushes of
    another namespace meanwhile answer at once (before: the push workers were all held)."""
    slow = Upstream(delay=3.0)
    try:
        exp = exporter_factory(kubeflow_forward_url=slow.url)
        waiting = [threading.Thread(target=push, args=(exp,)) for _ in range(8)]
        for t in waiting:
            t.start()
        time.sleep(0.3)  # the forwards are in flight
        native = "/api/v1/namespaces/other/runs/fast/report"
        took = []
        for step in range(5):
            start = time.monotonic()
            assert push(exp, json.dumps({"step": step + 1}).encode(), native)[0] == 200
            took.append(time.monotonic() - start)
        for t in waiting:
            t.join(30)
    finally:
        slow.close()
    assert max(took) < 1.0, took
