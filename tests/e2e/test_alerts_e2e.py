"""End to end: exporter -> real Prometheus (rules as shipped) -> real Alertmanager -> webhook.

Each bad scenario run must raise its one alert, with the right labels, and nothing else; the
healthy run must raise nothing. The stuck rank of a three-rank job is named by its rank, pod
and node; idle GPUs come from two dcgm-exporter stand-ins scraped the two ways Prometheus
stores their labels. Time-to-alert per scenario is printed (docs/benchmarks.md).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from .conftest import LiveStack
from .scenarios import NAMESPACE, RANKED_STUCK, RANKS, SCENARIOS
from .stack import query

# One worker builds the session's live stack for the three modules that read it.
pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.waits]


def test_each_bad_run_raises_its_alert_and_only_that(live_stack: LiveStack) -> None:
    driver, webhook = live_stack.driver, live_stack.webhook
    firing = query(live_stack.prometheus_url, 'ALERTS{alertstate="firing"}')
    pending = query(live_stack.prometheus_url, 'ALERTS{job_name="healthy"}')
    assert driver.errors == []
    expected = {sc.name: sc.alert for sc in SCENARIOS if sc.alert}
    by_run: dict[str, list[tuple[float, dict[str, Any]]]] = {}
    for at, alert in list(webhook.received):
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
        expected_labels = {
            "alertname": sc.alert,
            "namespace": NAMESPACE,
            "pod": sc.name,
            "job_name": sc.name,
            "severity": labels["severity"],
        }
        if sc.channel == "ranks":  # the stuck rank, by name: pod, rank and node
            pod, rank, node = RANKS[RANKED_STUCK]
            expected_labels.update(pod=pod, rank=rank, node=node)
        assert labels == expected_labels, labels
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
