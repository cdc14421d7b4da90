"""Shared fixtures: a controllable clock, fixture paths, and a live exporter on loopback."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from exporter.daemon.app import Exporter
from exporter.daemon.config import Config

FIXTURES = Path(__file__).parent / "fixtures"
GOLDEN = Path(__file__).parent / "golden"
T0 = 1_795_000_000.0  # 2026-11-18, a fixed "now" for pure tests
K8S_NODE = "gpu-node-1"  # the node Kubernetes-mode exporters run on (tests/kube.py)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under ``--dist loadgroup`` (make test) a worker takes a whole module, so a module's
    fixtures are built once. The tests marked ``waits`` (the e2e stacks, which wait out
    their alerts' ``for:``, and the demo's real minutes: 7 minutes in all, at 5 % of a core)
    are one group: one of make test's three workers runs them in turn while the other two
    run the rest on the two cores, and the e2e session stack is built once. Two workers
    spent half the run with both waiting (the suite used 105 % of 200 %). Runs before
    pytest-xdist reads the groups."""
    for item in items:
        if item.get_closest_marker("waits") is not None:
            item.add_marker(pytest.mark.xdist_group("waits"))
        elif item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))


class FakeClock:
    """A clock tests move by hand, so nothing in a test sleeps to make time pass."""

    def __init__(self, start: float = T0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def kubeflow_fixture_bodies() -> list[bytes]:
    path = FIXTURES / "kubeflow_transformers_5.23_50steps.jsonl"
    return [line.encode() for line in path.read_text().splitlines() if line.strip()]


def http(
    method: str, url: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, bytes]:
    """One HTTP request; returns (status, body) for any status code."""
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    # Never through a proxy of the environment: the tests' own requests go where they say
    # (env_proxy below sets one to catch the exporter's).
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with direct.open(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


@pytest.fixture
def env_proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """A proxy named by every proxy variable of the environment (no NO_PROXY), recording
    each request it gets and answering 502: whatever reaches it went through a proxy of the
    environment, with the Authorization header it carried."""
    seen: list[str] = []

    class Proxy(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _any(self) -> None:
            seen.append(f"{self.command} {self.path} {self.headers.get('Authorization')}")
            self.send_response(502)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_CONNECT = _any

    server = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "GRPC_PROXY"):
        monkeypatch.setenv(name, url)
        monkeypatch.setenv(name.lower(), url)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    yield seen
    server.shutdown()
    server.server_close()


INSTALL_HINT = "make test-deps installs it (scripts/install-test-deps.sh)"


def need_module(name: str, extra: str) -> ModuleType:
    """``name`` imported, or the calling test module skipped with the extra that brings it
    (the fast loop works from the ``test`` extra alone). Where ``CI`` is set, a missing
    module fails instead: CI installs every extra, and nothing there may skip quietly."""
    try:
        return importlib.import_module(name)
    except ImportError:
        why = f"{name} is not installed: the {extra} extra (pip install -e '.[{extra}]'); "
        if os.environ.get("CI"):
            pytest.fail(why + INSTALL_HINT)
        pytest.skip(why + INSTALL_HINT, allow_module_level=True)


def need_tool(name: str, comes_with: str) -> str:
    """The path of command ``name``, or the test skipped saying what installs it (failed
    where ``CI`` is set, as :func:`need_module`)."""
    found = shutil.which(name)
    if found:
        return found
    why = f"{name} is not on PATH: it comes with {comes_with}; {INSTALL_HINT}"
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


def strict_json(text: str | bytes) -> Any:
    """``text`` parsed as JSON is: Python's parser takes ``NaN`` and ``Infinity``, which
    JavaScript's ``JSON.parse`` and every strict parser reject."""

    def refuse(word: str) -> Any:
        raise ValueError(f"not JSON: {word}")

    return json.loads(text, parse_constant=refuse)


def get_json(url: str) -> Any:
    status, body = http("GET", url)
    assert status == 200, body
    return strict_json(body)


@pytest.fixture
def exporter_factory(clock: FakeClock) -> Iterator[Any]:
    """Start exporters on a free loopback port with the fake clock; stopped after the test."""
    started: list[Exporter] = []

    def make(poll_loop: bool = False, **overrides: Any) -> Exporter:
        config = replace(Config(), listen="127.0.0.1:0", mode="standalone", **overrides)
        exp = Exporter(config, clock=clock)
        exp.start(poll_loop=poll_loop)
        started.append(exp)
        return exp

    yield make
    for exp in started:
        exp.stop()


@pytest.fixture
def kube(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The fake API server, with KUBECONFIG pointing at it (Kubernetes-mode tests)."""
    from .fakekube import fake_kube

    with fake_kube(tmp_path) as (fake, kubeconfig):
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        yield fake


@pytest.fixture
def k8s_exporter(kube: Any) -> Iterator[Any]:
    """Start Kubernetes-mode exporters against the fake API server (node ``gpu-node-1``,
    loopback, port 0, polled by the test): ``k8s_exporter(clock, **config overrides)``. Each
    is stopped after the test, whatever happened (a test may stop one itself first)."""
    started: list[Exporter] = []

    def make(clock: FakeClock | None = None, **overrides: Any) -> Exporter:
        settings = {"listen": "127.0.0.1:0", "mode": "kubernetes", "node_name": K8S_NODE}
        config = replace(Config(), **(settings | overrides))
        exp = Exporter(config, clock=clock or FakeClock())
        started.append(exp)
        exp.start(poll_loop=False)
        return exp

    yield make
    for exp in started:
        exp.stop()


def self_signed_cert(directory: Path) -> tuple[Path, Path]:
    """(certificate, key) for 127.0.0.1, made by openssl; the certificate is its own CA."""
    import shutil
    import subprocess

    openssl = shutil.which("openssl")
    assert openssl, "openssl is part of the base system"
    cert, key = directory / "tls.crt", directory / "tls.key"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


@pytest.fixture(autouse=True)
def _reporters_end_with_their_test(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every ProgressReporter a test makes (directly, or through a Trainer or Lightning
    callback) is closed when the test ends. Its heartbeat goes on after finish() while the
    process lives, and the test process lives on: left running, it would push to a port
    that a later test's exporter may have taken (a run nobody made)."""
    from training_progress_reporter import reporter as reporter_module

    made: list[Any] = []
    original = reporter_module.ProgressReporter.__init__

    def record(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(reporter_module.ProgressReporter, "__init__", record)
    yield
    for reporter in made:
        reporter.close(timeout=1.0)
