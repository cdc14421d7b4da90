"""One live stack per e2e session: exporter, Prometheus (rules as shipped), Alertmanager,
a webhook, a dcgm-exporter stand-in, and the scenario driver running until every expected
alert has arrived. The alert and dashboard tests both judge this one stack."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from exporter.app import Exporter
from exporter.config import Config
from exporter.model import RunKey, RunMeta
from exporter.sources.http import HttpTarget

from ..test_sources import ProgressionServer
from .scenarios import NAMESPACE, SCENARIOS, SHORT, Driver
from .stack import Webhook, alertmanager, prometheus, query

DEADLINE_SECONDS = 200
# What dcgm-exporter exposes, in both label forms it appears with: namespace/pod (scraped
# with honor_labels or relabeled) and exported_namespace/exported_pod (scraped as a target).
DCGM_TEXT = (
    "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
    f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",namespace="{NAMESPACE}",pod="healthy"}} 91\n'
    f'DCGM_FI_DEV_GPU_UTIL{{gpu="1",exported_namespace="{NAMESPACE}",exported_pod="hung"}} 0\n'
).encode()


class _Published(dict[str, bytes]):
    """Bodies set here are served at once by the progression endpoint ``/NAME/metrics``."""

    def __init__(self, server: ProgressionServer) -> None:
        super().__init__()
        self.server = server

    def __setitem__(self, name: str, body: bytes) -> None:
        super().__setitem__(name, body)
        self.server.routes[f"/{name}/metrics"] = (200, body, 0.0)


@dataclass
class LiveStack:
    prometheus_url: str
    webhook: Webhook
    driver: Driver
    exporter: Exporter


def _dcgm_stand_in() -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(DCGM_TEXT)))
            self.end_headers()
            self.wfile.write(DCGM_TEXT)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    import threading

    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture(scope="session")
def live_stack() -> Iterator[LiveStack]:
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        webhook = Webhook()
        stack.callback(webhook.close)
        progression = ProgressionServer()
        stack.callback(progression.httpd.shutdown)
        dcgm = _dcgm_stand_in()
        stack.callback(dcgm.shutdown)
        status_dir = str(tmp / "status")
        Path(status_dir).mkdir()
        targets = tuple(
            HttpTarget(
                RunKey(NAMESPACE, sc.name, sc.name),
                progression.url(f"/{sc.name}/metrics"),
                RunMeta(source="http", gpus=4.0, thresholds=tuple(sorted(SHORT.items()))),
            )
            for sc in SCENARIOS
            if sc.channel == "http"
        )
        config = replace(
            Config(),
            listen="127.0.0.1:0",
            mode="standalone",
            namespace=NAMESPACE,
            status_dir=status_dir,
            http_targets=targets,
            poll_interval=0.5,
            # A short rate window so a throughput change shows within seconds, not minutes.
            rate_window=8.0,
        )
        exporter = Exporter(config)
        exporter.start()
        stack.callback(exporter.stop)
        # The driver publishes each HTTP run's latest body straight to the endpoint, so the
        # endpoints stay current for every e2e module of the session, not only during setup.
        bodies = _Published(progression)
        driver = Driver(exporter.url, status_dir, bodies)
        stack.callback(driver.stop)
        am_url = stack.enter_context(alertmanager(tmp, webhook.url))
        prom_url = stack.enter_context(
            prometheus(
                tmp,
                exporter.url.removeprefix("http://"),
                am_url,
                extra_targets={"dcgm-exporter": f"127.0.0.1:{dcgm.server_address[1]}"},
            )
        )
        driver.start()
        expected = {sc.name for sc in SCENARIOS if sc.alert}
        deadline = time.time() + DEADLINE_SECONDS
        settle = 0
        while time.time() < deadline and settle < 10:
            got = {a["labels"].get("job_name") for _, a in webhook.received}
            if expected <= got:
                settle += 1  # keep going a few seconds: anything spurious may arrive too
            time.sleep(0.5)
        assert query(prom_url, "up") != []
        yield LiveStack(prom_url, webhook, driver, exporter)
