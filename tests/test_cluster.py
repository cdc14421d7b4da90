"""The cluster page: exporters found through the Service's EndpointSlices (listed by the
real ``kubernetes`` client from the fake API server), several real exporters on loopback,
ones that refuse or answer junk, the merged page and JSON, the proxy and its limits, the
real CLI, and the page in headless Chromium."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from exporter.commands.cluster import ClusterView, ExporterError, clean_run, make_server, parse_runs
from exporter.core.model import ProgressReport, RunKey
from exporter.kubernetes.client import api_client
from exporter.kubernetes.endpoints import Endpoint, EndpointSliceLister, endpoints_of
from exporter.plumbing.httpd import serve_in_thread

from .conftest import http, strict_json
from .test_statuspage import CHROMIUM, SCREENSHOTS, chromium

NS = "training-progress"
SERVICE = "training-progress-exporter"
EVIL = '<script>document.title="pwned"</script>'

# The EndpointSlice of the Kubernetes documentation ("EndpointSlices", the example owned by
# the Service "example": kubernetes/website, content/en/docs/concepts/services-networking/
# endpoint-slices.md), as data, with our Service's name and port.
UPSTREAM_SLICE: dict[str, Any] = {
    "apiVersion": "discovery.k8s.io/v1",
    "kind": "EndpointSlice",
    "metadata": {"name": "example-abc", "labels": {"kubernetes.io/service-name": "example"}},
    "addressType": "IPv4",
    "ports": [{"name": "http", "protocol": "TCP", "port": 80}],
    "endpoints": [
        {
            "addresses": ["10.1.2.3"],
            "conditions": {"ready": True},
            "hostname": "pod-1",
            "nodeName": "node-1",
            "zone": "us-west2-a",
        }
    ],
}


def test_endpoints_of_the_documented_slice_and_its_edge_cases() -> None:
    assert endpoints_of([UPSTREAM_SLICE], "http") == [Endpoint("node-1", "http://10.1.2.3:80")]
    assert endpoints_of([UPSTREAM_SLICE], "metrics") == [], "no such port in the slice"
    odd = {
        "addressType": "IPv6",
        "ports": [{"name": "metrics", "port": 9465}],
        "endpoints": [
            {"addresses": ["fd00::1"], "nodeName": "gpu-a"},  # ready unset: taken as ready
            {"addresses": ["fd00::2"], "nodeName": "gpu-b", "conditions": {"ready": False}},
            {"addresses": ["fd00::3"], "conditions": {"terminating": True, "ready": True}},
            {"addresses": []},
            "junk",
            {"addresses": [7], "nodeName": "x"},
        ],
    }
    assert endpoints_of([odd, None, {"ports": "x"}], "metrics") == [
        Endpoint("[fd00::3]:9465", "http://[fd00::3]:9465", ready=False),
        Endpoint("gpu-a", "http://[fd00::1]:9465"),
        Endpoint("gpu-b", "http://[fd00::2]:9465", ready=False),
    ]


def test_an_exporters_answer_is_reduced_to_plain_bounded_values() -> None:
    run = {
        "namespace": "ml",
        "pod": "p",
        "job_name": "j",
        "state": "running",
        "loss": "NaN",  # a string where a number belongs stays a string (rendered as "-")
        "step": 5,
        "info": {"node": "n", "deep": {"x": 1}},
        "loss_history": [[1, 2]],
        "state_reason": "x" * 5000,
    }
    clean = clean_run(run)
    assert clean is not None
    assert clean["info"] == {"node": "n"} and "loss_history" not in clean
    assert len(clean["state_reason"]) == 1024 and clean["step"] == 5
    assert clean_run({**run, "pod": 5}) is None and clean_run([]) is None
    runs, malformed = parse_runs(b'{"runs": [{"namespace": 1}, ' + _json(run) + b"]}")
    assert len(runs) == 1 and malformed == 1
    for body, why in (
        (b"<html>", "not JSON"),
        (b'{"runs": NaN}', "not JSON"),
        (b'{"items": []}', 'no "runs" list'),
        (b"[" * 100_000, "not JSON"),
    ):
        with pytest.raises(ExporterError, match=why):
            parse_runs(body)


def _json(doc: Any) -> bytes:
    import json

    return json.dumps(doc).encode()


class _Junk(BaseHTTPRequestHandler):
    """Something on an exporter's address that is not an exporter."""

    def do_GET(self) -> None:
        body = b"<html>a login page</html>"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def junk_server() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Junk)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _slice(name: str, node: str, port: int, ready: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {"kubernetes.io/service-name": SERVICE},
        },
        "addressType": "IPv4",
        "ports": [{"name": "metrics", "port": port, "protocol": "TCP"}],
        "endpoints": [
            {"addresses": ["127.0.0.1"], "nodeName": node, "conditions": {"ready": ready}}
        ],
    }


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def cluster(kube: Any, exporter_factory: Any, junk_server: int) -> Iterator[dict[str, Any]]:
    """Three exporters with runs, one refusing, one answering junk, one not ready, and a
    slice of another Service: all in the fake API server, listed by the real client."""
    exporters = [exporter_factory() for _ in range(3)]
    for i, exp in enumerate(exporters):
        for j in range(2):
            key = RunKey("ml", f"gpu-{i}-job-{j}", f"job-{i}-{j}")
            for step in range(1, 8):
                exp.tracker.apply(
                    key, ProgressReport(step=step * 10, max_steps=1000, loss=2 / step), exp.clock()
                )
                exp.clock.now += 5
    exporters[2].tracker.apply(
        RunKey("ml", f"evil{EVIL}", f"job{EVIL}"), ProgressReport(step=1), exporters[2].clock()
    )
    for i, exp in enumerate(exporters):
        kube.put(
            "discovery.k8s.io/v1",
            "endpointslices",
            _slice(f"s{i}", f"gpu-{i}", exp.server.server_address[1]),
        )
    kube.put("discovery.k8s.io/v1", "endpointslices", _slice("s3", "gpu-down", _closed_port()))
    kube.put("discovery.k8s.io/v1", "endpointslices", _slice("s4", "gpu-junk", junk_server))
    kube.put(
        "discovery.k8s.io/v1",
        "endpointslices",
        _slice("s5", "gpu-draining", _closed_port(), ready=False),
    )
    other = _slice("s6", "other", exporters[0].server.server_address[1])
    other["metadata"]["labels"]["kubernetes.io/service-name"] = "someone-else"
    kube.put("discovery.k8s.io/v1", "endpointslices", other)
    lister = EndpointSliceLister(api_client(retries=0), NS, SERVICE, "metrics")
    view = ClusterView(lister, timeout=3.0, max_age=0.0)
    server = make_server("127.0.0.1", 0, view)
    serve_in_thread(server)
    yield {"url": f"http://127.0.0.1:{server.server_address[1]}", "kube": kube, "view": view}
    server.shutdown()
    server.server_close()


@pytest.mark.slow
def test_the_cluster_page_shows_every_node_and_says_which_could_not_be_read(
    cluster: dict[str, Any],
) -> None:
    url = cluster["url"]
    doc = strict_json(http("GET", url + "/api/v1/runs")[1])
    by_node = {e["node"]: e for e in doc["exporters"]}
    assert set(by_node) == {"gpu-0", "gpu-1", "gpu-2", "gpu-down", "gpu-junk", "gpu-draining"}
    assert [by_node[f"gpu-{i}"]["runs"] for i in range(3)] == [2, 2, 3]
    assert by_node["gpu-down"]["status"] == "error"
    assert "cannot connect" in by_node["gpu-down"]["error"]
    assert "not JSON" in by_node["gpu-junk"]["error"]
    assert by_node["gpu-draining"]["status"] == "not ready"
    assert len(doc["runs"]) == 7
    assert {r["exporter_node"] for r in doc["runs"]} == {"gpu-0", "gpu-1", "gpu-2"}
    status, page = http("GET", url + "/")
    text = page.decode()
    assert status == 200
    assert "7 runs from 3 of 6 exporters" in text
    failures = text.split("<div class=failures>")[1].split("</div>")[0]
    for node in ("gpu-down", "gpu-junk", "gpu-draining"):
        assert f"node {node} (http://127.0.0.1:" in failures
    for i in range(3):
        assert f'href="nodes/gpu-{i}/runs/ml/gpu-{i}-job-0"' in text
        assert f"<td>gpu-{i}</td>" in text
    assert EVIL not in text and "&lt;script&gt;" in text


@pytest.mark.slow
def test_a_runs_page_and_timeline_are_proxied_from_its_exporter_and_nothing_else(
    cluster: dict[str, Any],
) -> None:
    url = cluster["url"]
    status, page = http("GET", url + "/nodes/gpu-1/runs/ml/gpu-1-job-0")
    assert status == 200 and b"ml/job-1-0" in page
    status, body = http("GET", url + "/nodes/gpu-1/api/v1/runs/ml/gpu-1-job-0/timeline")
    assert status == 200 and strict_json(body)["pod"] == "gpu-1-job-0"
    assert http("GET", url + "/nodes/gpu-1/static/uPlot.iife.min.js")[0] == 200
    # The run is on gpu-1, not gpu-0: gpu-0's exporter says so.
    assert http("GET", url + "/nodes/gpu-0/runs/ml/gpu-1-job-0")[0] == 404
    for path in (
        "/nodes/gpu-1/metrics",  # only a run's page and timeline
        "/nodes/gpu-1/api/v1/runs",
        "/nodes/gpu-1/runs/ml/../../metrics",
        "/nodes/nobody/runs/ml/x",  # not an exporter the EndpointSlices list
        "/nodes/127.0.0.1:22/runs/ml/x",
    ):
        assert http("GET", url + path)[0] == 404, path
    assert http("GET", url + "/nodes/gpu-down/runs/ml/x")[0] == 502
    status, body = http("GET", url + "/nodes/gpu-1/")  # redirected to the cluster page
    assert status == 200 and b"Training runs in the cluster" in body


@pytest.mark.slow
def test_the_page_says_when_the_exporters_cannot_be_found(cluster: dict[str, Any]) -> None:
    cluster["kube"].down = True
    try:
        status, page = http("GET", cluster["url"] + "/")
        assert status == 200 and b"finding the exporters failed: listing EndpointSlices" in page
        assert http("GET", cluster["url"] + "/readyz")[0] == 503
    finally:
        cluster["kube"].down = False
    assert http("GET", cluster["url"] + "/readyz")[0] == 200


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is installed by the test command")
def test_the_real_cli_serves_the_cluster_page_to_headless_chromium(exporter_factory: Any) -> None:
    """``training-progress-exporter cluster --exporter ...`` against two exporters on
    loopback and one that is down; Chromium draws the page and a proxied run's charts."""
    exporters = [exporter_factory() for _ in range(2)]
    for i, exp in enumerate(exporters):
        for j in range(3):
            key = RunKey("vision" if j else "llm", f"trainer-{i}{j}-0", f"finetune-{i}{j}")
            for step in range(1, 40):
                loss = 2.5 / (1 + step / 10) + (0.02 if step % 3 else 0)
                exp.tracker.apply(
                    key, ProgressReport(step=step * 25, max_steps=4000, loss=loss), exp.clock()
                )
                exp.clock.now += 5
                exp.tracker.snapshot(exp.clock())
    port = _closed_port()
    args = [
        f"gpu-node-{i}=http://127.0.0.1:{e.server.server_address[1]}"
        for i, e in enumerate(exporters)
    ]
    args.append(f"gpu-node-9=http://127.0.0.1:{_closed_port()}")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "exporter",
            "cluster",
            f"--listen=127.0.0.1:{port}",
            "--timeout=2",
            *(f"--exporter={a}" for a in args),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        assert "3 exporters given" in banner, banner + proc.stderr.read() if proc.poll() else banner
        url = f"http://127.0.0.1:{port}/"
        dom = chromium("--dump-dom", url)
        SCREENSHOTS.mkdir(exist_ok=True)
        shot = SCREENSHOTS / "cluster-page.png"
        chromium(f"--screenshot={shot}", "--window-size=1400,1000", url)
        detail = url + "nodes/gpu-node-1/runs/vision/trainer-11-0"
        detail_dom = chromium("--dump-dom", detail)
        detail_shot = SCREENSHOTS / "cluster-run-detail.png"
        chromium(f"--screenshot={detail_shot}", "--window-size=1400,1000", detail)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    rows = [row for row in dom.split("<tr>") if "</a></td>" in row]
    assert len(rows) == 6
    assert {n for row in rows for n in ("gpu-node-0", "gpu-node-1") if f"<td>{n}</td>" in row} == {
        "gpu-node-0",
        "gpu-node-1",
    }
    assert "node gpu-node-9 (http://127.0.0.1:" in dom and "cannot connect" in dom
    charts = detail_dom.split('id="charts"')[1].split("</section>")[0]
    assert charts.count("<canvas") == 3 and 'data-state="running"' in charts
    assert shot.stat().st_size > 20_000 and detail_shot.stat().st_size > 30_000


def test_an_exporter_is_asked_directly_and_its_redirects_are_not_followed(
    exporter_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A proxy in the environment is not used for the pod network, and an address that
    answers with a redirect (to an exporter that would answer) is an error, not followed."""
    exp = exporter_factory()
    exp.tracker.apply(RunKey("ml", "a-0", "a"), ProgressReport(step=1), exp.clock())
    target = f"http://127.0.0.1:{exp.server.server_address[1]}/api/v1/runs"

    class Redirect(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(302)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    try:
        view = ClusterView(
            lambda: [
                Endpoint("direct", f"http://127.0.0.1:{exp.server.server_address[1]}"),
                Endpoint("redirects", f"http://127.0.0.1:{server.server_address[1]}"),
            ],
            timeout=3.0,
        )
        by_name = {r.endpoint.name: r for r in view.gather().exporters}
    finally:
        server.shutdown()
        server.server_close()
    assert by_name["direct"].error is None and len(by_name["direct"].runs) == 1
    assert by_name["redirects"].error == "answered 302 Found"


class _Hostile(BaseHTTPRequestHandler):
    """Exporters that lie about their size or their pace: ``/slow`` sends its headers, then
    a byte every 2 s; ``/huge`` 40 MiB of ``[],``; ``/tiny`` a document of 31 MiB with
    millions of tiny values (under the byte cap)."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        kind = self.path.split("/")[1]
        if kind == "slow":
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            try:
                for _ in range(60):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(2)
            except OSError:
                return
            return
        chunk = b"[]," * 1024 if kind == "huge" else b"0," * 1024
        total = 40 * 1024 * 1024 if kind == "huge" else 31 * 1024 * 1024
        head = b'{"time": 1, "runs": [' if kind == "tiny" else b""
        self.send_response(200)
        self.send_header("Content-Length", str(len(head) + total))
        self.end_headers()
        try:
            self.wfile.write(head)
            for _ in range(total // len(chunk)):
                self.wfile.write(chunk)
        except OSError:
            return

    def log_message(self, *_: Any) -> None:
        pass


@pytest.mark.slow
def test_a_slow_or_huge_exporter_costs_the_page_its_deadline_and_a_bounded_memory(
    exporter_factory: Any,
) -> None:
    """#56 F4 and F5: beside a healthy exporter, one that sends a byte every 2 s, one that
    answers 40 MiB of ``[],`` and one that answers 31 MiB of tiny values: the page answers
    within its deadline (5 s per exporter, all asked at once), names each one with why,
    shows the healthy node's run, and the process's peak memory grows by a bounded amount
    (before: 1.6 GB for 60 MiB of ``[],``)."""
    exp = exporter_factory()
    exp.tracker.apply(RunKey("ml", "a-0", "a"), ProgressReport(step=1), exp.clock())
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    view = ClusterView(
        lambda: [
            Endpoint("healthy", f"http://127.0.0.1:{exp.server.server_address[1]}"),
            Endpoint("slow", base + "/slow"),
            Endpoint("huge", base + "/huge"),
            Endpoint("tiny", base + "/tiny"),
        ],
        timeout=5.0,
        max_age=0.0,
    )
    page = make_server("127.0.0.1", 0, view)
    serve_in_thread(page)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        started = time.monotonic()
        status, body = http("GET", f"http://127.0.0.1:{page.server_address[1]}/")
        took = time.monotonic() - started
        doc = strict_json(http("GET", f"http://127.0.0.1:{page.server_address[1]}/api/v1/runs")[1])
    finally:
        page.shutdown()
        page.server_close()
        server.shutdown()
        server.server_close()
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert status == 200 and took < 9.0, took
    text = body.decode()
    assert 'href="nodes/healthy/runs/ml/a-0"' in text
    errors = {e["node"]: e["error"] for e in doc["exporters"]}
    assert errors["healthy"] is None
    assert errors["slow"] == "no answer within 5 s"
    assert "over" in errors["huge"] and "bytes" in errors["huge"]
    assert "JSON values, more than" in errors["tiny"] and "not parsed" in errors["tiny"]
    for node in ("slow", "huge", "tiny"):
        assert f"node {node} ({base}/{node})" in text
    assert grown_mib < 120, grown_mib


def test_the_page_asks_for_runs_without_their_histories(exporter_factory: Any) -> None:
    """``/api/v1/runs?history=0``: the same runs without their loss histories (which the
    cluster page drops), a third of the bytes at 10,000 runs; without it, histories."""
    exp = exporter_factory()
    key = RunKey("ml", "a-0", "a")
    for step in range(1, 40):
        exp.tracker.apply(key, ProgressReport(step=step, loss=1 / step), exp.clock())
        exp.clock.now += 5
    full = strict_json(http("GET", exp.url + "/api/v1/runs")[1])["runs"][0]
    slim = strict_json(http("GET", exp.url + "/api/v1/runs?history=0")[1])["runs"][0]
    assert len(full["loss_history"]) > 10 and slim["loss_history"] == []
    assert {k: v for k, v in full.items() if k != "loss_history"} == {
        k: v for k, v in slim.items() if k != "loss_history"
    }
    # One run's document, what the cluster page renders a run's page from.
    assert strict_json(http("GET", exp.url + "/api/v1/runs/ml/a-0")[1]) == slim
    assert http("GET", exp.url + "/api/v1/runs/ml/nobody")[0] == 404


class _Scripting(BaseHTTPRequestHandler):
    """An exporter whose run page carries its own inline script, one that would read the
    cluster-wide runs through the page's origin (#56 F6)."""

    PAGE = (
        b"<!doctype html><html><head><title>run</title></head><body><p id=p>a run</p>"
        b"<script>document.title='pwned';fetch('../../../../api/v1/runs')"
        b".then(r=>r.text()).then(t=>{document.getElementById('p').textContent=t})</script>"
        b"</body></html>"
    )

    RUN: ClassVar[dict[str, Any]] = {
        "namespace": "ml",
        "pod": "x-0",
        "job_name": "<script>document.title='pwned'</script>",
        "state": "stalled",
        "state_reason": '<meta http-equiv="refresh" content="0;url=http://evil.example/">',
        "stall": [{"rank": "0", "frame": "<img src=x onerror=alert(1)>", "code": "<b>x</b>"}],
        "metrics": {"<i>m</i>": 1.0},
    }

    def do_GET(self) -> None:
        if self.path == "/api/v1/runs?history=0":
            body = _json({"runs": [self.RUN]})
        elif self.path == "/api/v1/runs/ml/x-0":
            body = _json(self.RUN)
        else:
            body = self.PAGE
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        pass


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is installed by the test command")
def test_a_proxied_page_runs_no_script_of_its_exporter() -> None:
    """Through the cluster page, in a real browser: a run's page is rendered by the cluster
    page from the exporter's JSON, never from its HTML, so the exporter's own page (an
    inline script that would read the cluster-wide runs) is never served, and what its JSON
    says (a script, a meta refresh, an img onerror) is shown as text. Every page goes out
    with a policy allowing inline code only by the hashes of the pages' own, and nosniff."""
    evil = ThreadingHTTPServer(("127.0.0.1", 0), _Scripting)
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    view = ClusterView(
        lambda: [Endpoint("evil", f"http://127.0.0.1:{evil.server_address[1]}")], max_age=0.0
    )
    page = make_server("127.0.0.1", 0, view)
    serve_in_thread(page)
    base = f"http://127.0.0.1:{page.server_address[1]}"
    console: list[str] = []
    try:
        dom = chromium("--dump-dom", base + "/nodes/evil/runs/ml/x-0", console=console)
        req = urllib.request.Request(base + "/nodes/evil/runs/ml/x-0")
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req) as resp:
            policy = resp.headers["Content-Security-Policy"]
            sniff = resp.headers["X-Content-Type-Options"]
    finally:
        page.shutdown()
        page.server_close()
        evil.shutdown()
        evil.server_close()
    title = dom.split("<title>")[1].split("</title>")[0]
    assert title.startswith("ml/&lt;script&gt;"), title  # shown as text, never run
    assert '<p id="p">a run</p>' not in dom  # the exporter's HTML was never served
    assert "&lt;script&gt;document.title" in dom and "&lt;meta http-equiv" in dom
    assert "&lt;img src=x onerror" in dom and "&lt;b&gt;x&lt;/b&gt;" in dom
    assert "<meta http-equiv" not in dom and "<img src=x" not in dom
    refused = [line for line in console if "Content Security Policy" in line]
    assert refused == [], refused  # nothing of the page's own was refused either
    assert "unsafe-inline" not in policy and "script-src 'self' 'sha256-" in policy
    assert sniff == "nosniff"


def test_the_cluster_page_is_paged_like_a_nodes(cluster: dict[str, Any]) -> None:
    """#56 item 5: the cluster page shows a page of the runs (``?page``, ``?per_page``,
    ``?sort``) with the count of all, as a node's page does."""
    text = http("GET", cluster["url"] + "/?per_page=2&page=2&sort=name")[1].decode()
    assert "7 runs from 3 of 6 exporters" in text and "page 2 of 4" in text
    rows = text.split("<tbody>")[1].split("</tbody>")[0].count("<tr>")
    assert rows == 2
    assert 'href="?page=3&amp;per_page=2&amp;sort=name">next</a>' in text


@contextmanager
def _page_from(query: Any, prom: str = "http://prom:9090") -> Iterator[str]:
    """The cluster page reading runs through ``query`` (as from the Prometheus at ``prom``),
    served on loopback for the block: its URL."""
    from exporter.commands.cluster_prometheus import PrometheusView
    from exporter.views.assets import load_assets

    view = PrometheusView(prom, query, max_age=0, assets=load_assets())
    server = make_server("127.0.0.1", 0, view)
    serve_in_thread(server)
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _series(name: str, value: str, **labels: str) -> dict[str, Any]:
    return {"metric": {"__name__": name, **labels}, "value": [1.0, value]}


def test_the_page_from_prometheus_says_when_prometheus_cannot_be_read_and_escapes_labels() -> None:
    from exporter.commands.cluster_prometheus import PAGE_QUERY

    down = {"now": True}
    run = {"namespace": "ml", "pod": EVIL, "job_name": "llm"}

    def query(expr: str) -> list[dict[str, Any]]:
        if down["now"]:
            raise RuntimeError("Prometheus at http://prom:9090: no answer within 10 s")
        if expr == PAGE_QUERY:
            return [
                _series("training_run_state", "1", state="running", **run),
                _series("training_run_state", "0", state="stalled", **run),
                _series("training_run_info", "1", node="gpu-7", **run),
                _series("training_step", "42", **run),
                _series("training_loss", "NaN", **run),
            ]
        return []

    with _page_from(query) as url:
        status, page = http("GET", url + "/")
        assert status == 200 and b"The runs could not be read:" in page
        assert b"no answer within 10 s" in page
        assert http("GET", url + "/readyz")[0] == 503
        # Never the exporters' proxy in this mode: there is no exporter to go to.
        assert http("GET", url + "/nodes/gpu-7/runs/ml/x")[0] == 404
        down["now"] = False
        status, page = http("GET", url + "/")
        assert status == 200 and b"1 runs from Prometheus at http://prom:9090" in page
        assert EVIL.encode() not in page and b"&lt;script&gt;" in page
        doc = strict_json(http("GET", url + "/api/v1/runs")[1])
        (got,) = doc["runs"]
        assert (got["state"], got["step"], got["loss"], got["exporter_node"]) == (
            "running",
            42.0,
            None,
            "gpu-7",
        )
        assert http("GET", url + "/readyz")[0] == 200


def test_a_fleet_whose_reasons_do_not_fit_shows_its_runs_without_them() -> None:
    """When a query after the runs' own fails or is refused (a fleet of silent runs whose
    reasons' series outgrow --max-samples), the runs still show, and the page says what they
    are shown without and why."""
    from exporter.commands.cluster_prometheus import PAGE_QUERY, WHY_QUERY

    run = {"namespace": "ml", "pod": "p-0", "job_name": "llm"}

    def query(expr: str) -> list[dict[str, Any]]:
        if expr == PAGE_QUERY:
            return [
                _series("training_run_state", "1", state="silent", **run),
                _series("training_step", "7", **run),
            ]
        if expr == WHY_QUERY:
            return []
        raise RuntimeError(
            "Prometheus at http://prom:9090: answer holds 70000 samples, more than 60000"
        )

    with _page_from(query) as url:
        status, page = http("GET", url + "/")
        (got,) = strict_json(http("GET", url + "/api/v1/runs")[1])["runs"]
        ready = http("GET", url + "/readyz")[0]
    assert status == 200 and b"1 runs from Prometheus at http://prom:9090" in page
    assert b"Not everything could be read:" in page
    assert b"the runs are shown without the reasons of the runs needing attention" in page
    assert b"more than 60000" in page
    assert (got["state"], got["step"]) == ("silent", 7.0)
    assert ready == 200  # the page serves its runs


def test_a_prometheus_that_answers_malformed_samples_costs_those_samples_not_the_page() -> None:
    """What a proxy or an impostor at the Prometheus URL sends (samples that are not maps,
    labels that are not strings, values that are not pairs, a step of 1e400) is left out or
    read as unknown: the page and the run's page still answer."""
    from exporter.commands.cluster_prometheus import prometheus_query

    run = {"namespace": "a", "pod": "b", "job_name": "c"}
    good = [
        {
            "metric": {"__name__": "training_run_state", "state": "running", **run},
            "value": [1, "1"],
        },
        {"metric": {"__name__": "training_step", **run}, "value": [1, "1e400"]},
    ]
    bad = [
        "x",
        1,
        None,
        {"metric": "x", "value": [1, "2"]},
        {"metric": {"a": 1}, "value": [1, "2"]},
        {"metric": {"__name__": "training_loss", **run}, "value": "oops"},
    ]
    body = json.dumps({"status": "success", "data": {"result": [*bad, *good]}}).encode()

    class Liar(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    liar = ThreadingHTTPServer(("127.0.0.1", 0), Liar)
    threading.Thread(target=liar.serve_forever, daemon=True).start()
    prom = f"http://127.0.0.1:{liar.server_address[1]}"
    try:
        with _page_from(prometheus_query(prom), prom) as url:
            assert http("GET", url + "/")[0] == 200
            (got,) = strict_json(http("GET", url + "/api/v1/runs")[1])["runs"]
            assert (got["pod"], got["state"], got["step"]) == ("b", "running", None)
            assert http("GET", url + "/runs/a/b")[0] == 200
    finally:
        liar.shutdown()
        liar.server_close()


@pytest.mark.slow
def test_a_hostile_prometheus_costs_the_page_its_deadline_and_a_bounded_memory() -> None:
    """#56 F4 and F5 for ``cluster --prometheus`` (before: 60 MiB of ``[],`` took the page to
    1.5 GB, 200,000 samples to 0.9 GB): a Prometheus that drips, answers tiny values or more
    samples than ``--max-samples`` is named on the page within its deadline, its answer never
    parsed; the costliest answer it accepts keeps the page (its own process, VmHWM) under
    its 256Mi limit."""
    from bench.hostile_prometheus import measure
    from exporter.commands.cluster_prometheus import MAX_QUERY_SAMPLES

    seen = {
        mode: measure(mode)
        for mode in ("slow", "tiny", f"samples-{MAX_QUERY_SAMPLES + 1}", "runs-20000")
    }
    assert all(m.status == 200 for m in seen.values())
    assert seen["slow"].seconds < 9.0 and seen["slow"].problem == "no answer within 5 s"
    assert "JSON arrays and objects, more than" in seen["tiny"].problem
    assert "not parsed" in seen["tiny"].problem
    over = seen[f"samples-{MAX_QUERY_SAMPLES + 1}"].problem
    assert over == f"answer holds {MAX_QUERY_SAMPLES + 1} samples, more than {MAX_QUERY_SAMPLES}"
    assert seen["runs-20000"].shown == "20000 runs" and not seen["runs-20000"].problem
    for mode in ("slow", "tiny", f"samples-{MAX_QUERY_SAMPLES + 1}"):
        assert "The runs could not be read:" in seen[mode].page
        assert seen[mode].peak_mib < 100, (mode, seen[mode].peak_mib)
    assert seen["runs-20000"].peak_mib < 256, seen["runs-20000"].peak_mib
    print({mode: (round(m.seconds, 2), m.peak_mib) for mode, m in seen.items()})
