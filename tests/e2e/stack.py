"""Real Prometheus and Alertmanager on loopback, for end-to-end tests.

Debian's packages (`prometheus`, `prometheus-alertmanager`) are installed by the test
command. Each process gets its own temporary directory and free port, and is stopped (and
its log attached to the failure) when the test ends.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.common import free_port

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS = shutil.which("prometheus")
ALERTMANAGER = shutil.which("prometheus-alertmanager")


def require_binaries() -> None:
    """Skip with a reason where the binaries are missing; in CI, fail instead."""
    missing = [
        n
        for n, p in (("prometheus", PROMETHEUS), ("prometheus-alertmanager", ALERTMANAGER))
        if not p
    ]
    if missing:
        message = f"{', '.join(missing)} not installed (make test-deps installs them)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def wait_ready(url: str, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} not ready after {timeout} s")


@contextmanager
def process(args: list[str], log: Path, ready_url: str) -> Iterator[subprocess.Popen[bytes]]:
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_ready(ready_url, proc)
        yield proc
    except BaseException:
        print(log.read_text(errors="replace")[-4000:])
        raise
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


class Webhook:
    """An Alertmanager webhook receiver: records every alert it is sent, with arrival time."""

    def __init__(self) -> None:
        self.received: list[tuple[float, dict[str, Any]]] = []
        lock = threading.Lock()
        received = self.received

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with lock:
                    for alert in body.get("alerts", []):
                        received.append((time.time(), alert))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@contextmanager
def alertmanager(
    tmp: Path, webhook_url: str, config: dict[str, Any] | None = None
) -> Iterator[str]:
    """Alertmanager routing every alert to ``webhook_url`` within a second (or configured
    with ``config``); yields its URL."""
    require_binaries()
    assert ALERTMANAGER
    config = config or {
        "route": {
            "receiver": "test",
            "group_by": ["alertname", "namespace", "job_name"],
            "group_wait": "1s",
            "group_interval": "1s",
            "repeat_interval": "1h",
        },
        "receivers": [
            {"name": "test", "webhook_configs": [{"url": webhook_url, "send_resolved": False}]}
        ],
    }
    (tmp / "alertmanager.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    args = [
        ALERTMANAGER,
        f"--config.file={tmp / 'alertmanager.yml'}",
        f"--storage.path={tmp / 'am-data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--cluster.listen-address=",
    ]
    with process(args, tmp / "alertmanager.log", url + "/-/ready"):
        yield url


@contextmanager
def prometheus(
    tmp: Path,
    exporter_target: str,
    alertmanager_url: str | None = None,
    interval: str = "1s",
    extra_targets: dict[str, str] | None = None,
    rule_files: list[Path] | None = None,
    extra_scrape_configs: list[dict[str, Any]] | None = None,
) -> Iterator[str]:
    """Prometheus scraping the exporter with honor_labels and loading alerts/ as shipped
    (or ``rule_files``); ``extra_targets`` with honor_labels too, ``extra_scrape_configs``
    as given."""
    require_binaries()
    assert PROMETHEUS
    rules = rule_files or sorted((ROOT / "alerts").glob("*.rules.yaml"))
    config: dict[str, Any] = {
        "global": {"scrape_interval": interval, "evaluation_interval": interval},
        "rule_files": [str(p) for p in rules],
        "scrape_configs": [
            {
                "job_name": "training-progress-exporter",
                "honor_labels": True,
                "static_configs": [{"targets": [exporter_target]}],
            }
        ]
        + [
            {"job_name": name, "honor_labels": True, "static_configs": [{"targets": [t]}]}
            for name, t in (extra_targets or {}).items()
        ]
        + list(extra_scrape_configs or []),
    }
    if alertmanager_url:
        target = urllib.parse.urlparse(alertmanager_url).netloc
        config["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": [target]}]}]}
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    args = [
        PROMETHEUS,
        f"--config.file={tmp / 'prometheus.yml'}",
        f"--storage.tsdb.path={tmp / 'prom-data'}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    with process(args, tmp / "prometheus.log", url + "/-/ready"):
        yield url


def query(prometheus_url: str, expr: str) -> list[dict[str, Any]]:
    """An instant query; raises on a PromQL error."""
    q = urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(f"{prometheus_url}/api/v1/query?{q}", timeout=10) as resp:
        doc = json.loads(resp.read())
    assert doc["status"] == "success", doc
    result: list[dict[str, Any]] = doc["data"]["result"]
    return result
