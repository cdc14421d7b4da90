"""End to end: exporter -> real Prometheus (rules as shipped) -> real Alertmanager -> webhook.

Each bad scenario run must raise its one alert, with the right labels, and nothing else; the
healthy run must raise nothing. Time-to-alert per scenario is printed (docs/benchmarks.md).
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from exporter.app import Exporter
from exporter.config import Config
from exporter.sources.http import HttpTarget
from exporter.tracker import RunKey, RunMeta

from ..test_sources import ProgressionServer
from .scenarios import NAMESPACE, SCENARIOS, SHORT, Driver
from .stack import Webhook, alertmanager, prometheus, query

pytestmark = pytest.mark.e2e
DEADLINE_SECONDS = 200


def start_exporter(status_dir: str, progression: ProgressionServer) -> Exporter:
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
    return exporter


def test_each_bad_run_raises_its_alert_and_only_that(tmp_path: Path) -> None:
    webhook = Webhook()
    progression = ProgressionServer()
    bodies: dict[str, bytes] = {}
    # The handler reads routes through the closure; swap its dict's lookups to live bodies.
    progression.routes.clear()
    status_dir = tempfile.mkdtemp(dir=tmp_path)
    exporter = start_exporter(status_dir, progression)
    handler_routes = progression.routes

    def refresh() -> None:
        for name, body in list(bodies.items()):
            handler_routes[f"/{name}/metrics"] = (200, body, 0.0)

    driver = Driver(exporter.url, status_dir, bodies)
    expected = {sc.name: sc.alert for sc in SCENARIOS if sc.alert}
    try:
        with (
            alertmanager(tmp_path, webhook.url) as am_url,
            prometheus(tmp_path, exporter.url.removeprefix("http://"), am_url) as prom_url,
        ):
            driver.start()
            deadline = time.time() + DEADLINE_SECONDS
            while time.time() < deadline:
                refresh()
                got = {a["labels"].get("job_name") for _, a in webhook.received}
                if set(expected) <= got:
                    break
                time.sleep(0.5)
            # Give anything spurious a chance to arrive too before judging.
            for _ in range(10):
                refresh()
                time.sleep(0.5)
            firing = query(prom_url, 'ALERTS{alertstate="firing"}')
            pending = query(prom_url, 'ALERTS{job_name="healthy"}')
    finally:
        driver.stop()
        exporter.stop()
        progression.httpd.shutdown()
        webhook.close()

    assert driver.errors == []
    by_run: dict[str, list[tuple[float, dict[str, Any]]]] = {}
    for at, alert in webhook.received:
        by_run.setdefault(alert["labels"].get("job_name", "-"), []).append((at, alert))
    report = []
    for sc in SCENARIOS:
        alerts = by_run.get(sc.name, [])
        if sc.alert is None:
            assert alerts == [], f"healthy run raised {[a['labels'] for _, a in alerts]}"
            continue
        names = {a["labels"]["alertname"] for _, a in alerts}
        assert names == {sc.alert}, f"{sc.name}: expected only {sc.alert}, got {names}"
        at, alert = alerts[0]
        labels = alert["labels"]
        assert labels == {
            "alertname": sc.alert,
            "namespace": NAMESPACE,
            "pod": sc.name,
            "job_name": sc.name,
            "severity": labels["severity"],
        }, labels
        assert labels["severity"] in ("critical", "warning")
        assert alert["annotations"]["runbook_url"].endswith("#" + sc.alert.lower())
        assert f"{NAMESPACE}/{sc.name}" in alert["annotations"]["description"]
        report.append((sc.name, sc.alert, at - (driver.started + sc.bad_since)))
    unexpected = set(by_run) - set(expected)
    assert not unexpected, f"alerts for unexpected runs: {unexpected}"
    assert pending == [], pending
    assert {a["metric"]["alertname"] for a in firing} == set(expected.values())
    print("\ntime to alert (s), from the moment each run misbehaved to the webhook:")
    print(json.dumps({f"{n} ({a})": round(s, 1) for n, a, s in report}, indent=1))
