"""Dashboards: generated JSON up to date, structure, and Grafana dashboard-linter rules.

The linter rules implemented (names as in grafana/dashboard-linter): template-datasource-rule,
template-label-promql-rule, template-on-time-change-reload-rule, panel-datasource-rule,
panel-title-description-rule, panel-units-rule, panel-no-targets-rule,
target-rate-interval-rule, uneditable-dashboard. target-promql-rule (the query parses) is
checked against a real Prometheus in tests/e2e/test_dashboards_e2e.py. Not applied:
template-job-rule, template-instance-rule, target-job-rule and target-instance-rule: they ask
every query to filter on the scrape job and instance, but these series describe training
jobs and are selected by namespace and job_name instead.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from . import rulefiles

ROOT = Path(__file__).parent.parent
DASHBOARDS = sorted((ROOT / "grafana" / "dashboards").glob("*.json"))


def load(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


def panels(doc: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for p in doc["panels"]:
        out.append(p)
        out += p.get("panels", [])
    return out


def test_generated_files_are_up_to_date() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "grafana" / "build.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert len(DASHBOARDS) == 3


def test_uids_and_panel_ids_are_unique_and_stable() -> None:
    uids = [load(p)["uid"] for p in DASHBOARDS]
    assert sorted(uids) == ["training-gpu-capacity", "training-job-detail", "training-jobs"]
    for path in DASHBOARDS:
        ids = [p["id"] for p in panels(load(path))]
        assert len(ids) == len(set(ids)), path.name
        assert load(path)["schemaVersion"] == 41


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.stem)
def test_dashboard_linter_rules(path: Path) -> None:
    doc = load(path)
    variables = {v["name"]: v for v in doc["templating"]["list"]}
    # template-datasource-rule
    ds = variables["datasource"]
    assert ds["type"] == "datasource" and ds["query"] == "prometheus"
    # uneditable-dashboard
    assert doc["editable"] is False
    for v in variables.values():
        if v["type"] == "query":
            # template-label-promql-rule: label_values(metric{...}, label) over a real metric
            assert re.fullmatch(
                r"label_values\(training_[a-z_]+(\{[^}]*\})?, [a-z_]+\)", v["query"]["query"]
            )
            # template-on-time-change-reload-rule
            assert v["refresh"] == 2
            assert v["datasource"]["uid"] == "${datasource}"
    for p in panels(doc):
        where = f"{path.name}: panel {p['id']} {p['title']!r}"
        # panel-datasource-rule (panel and every target)
        assert p["datasource"]["uid"] == "${datasource}", where
        # panel-title-description-rule
        assert p["title"] and p.get("description"), where
        # panel-units-rule
        assert p["fieldConfig"]["defaults"].get("unit"), where
        # panel-no-targets-rule
        assert p["targets"], where
        for t in p["targets"]:
            assert t["datasource"]["uid"] == "${datasource}", where
            # target-rate-interval-rule: rate/irate/increase over $__rate_interval, except the
            # fixed windows a panel's title names (last 24 h, 7 days).
            for window in re.findall(r"(?:rate|increase)\([^\[]*\[([^\]]+)\]", t["expr"]):
                assert window in ("$__rate_interval", "1d", "7d"), f"{where}: [{window}]"


def test_variables_used_are_defined() -> None:
    for path in DASHBOARDS:
        doc = load(path)
        defined = {v["name"] for v in doc["templating"]["list"]} | {
            "__rate_interval",
            "__data",
            "__value",
        }
        text = json.dumps(doc["panels"])
        used = set(re.findall(r"\$\{?([a-z_]+)", text))
        assert used <= defined, f"{path.name}: undefined variables {used - defined}"


def test_detail_links_point_at_the_detail_dashboard() -> None:
    text = json.dumps(load(ROOT / "grafana" / "dashboards" / "training-jobs.json"))
    assert "/d/training-job-detail/training-job-detail?var-namespace=" in text
    rules = rulefiles.text()
    assert (
        "/d/training-job-detail/training-job-detail?" in rules
        and "/d/training-jobs/training-jobs" in rules
    )


def test_provisioning_and_configmaps() -> None:
    provider = yaml.safe_load(
        (ROOT / "grafana/provisioning/dashboards/training-progress.yaml").read_text()
    )
    assert provider["providers"][0]["type"] == "file"
    datasource = yaml.safe_load(
        (ROOT / "grafana/provisioning/datasources/prometheus.yaml").read_text()
    )
    assert datasource["datasources"][0]["type"] == "prometheus"
    maps = list(
        yaml.safe_load_all(
            (ROOT / "deploy/components/prometheus-operator/grafana-dashboards.yaml").read_text()
        )
    )
    assert len(maps) == 3
    for cm in maps:
        assert cm["kind"] == "ConfigMap" and cm["metadata"]["labels"]["grafana_dashboard"] == "1"
        ((name, body),) = cm["data"].items()
        assert json.loads(body) == load(ROOT / "grafana" / "dashboards" / name)


def docker_or_skip() -> None:
    """Skip with the reason when no Docker engine answers (as on these machines)."""
    try:
        import docker

        docker.from_env(timeout=5).ping()
    except Exception as exc:
        pytest.skip(
            f"needs a Docker engine for testcontainers (none answers here: {exc}); "
            "dashboard queries are checked on a real Prometheus in "
            "tests/e2e/test_dashboards_e2e.py instead"
        )


def grafana_api(base: str, path: str, body: Any | None = None) -> Any:
    import base64
    import urllib.request

    req = urllib.request.Request(
        base + path,
        data=json.dumps(body).encode() if body is not None else None,
        method="POST" if body is not None else "GET",
        headers={
            "Content-Type": "application/json",
            "Authorization": "Basic " + base64.b64encode(b"admin:admin").decode(),
        },
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def test_grafana_container_loads_the_provisioning_and_runs_every_query(tmp_path: Path) -> None:
    docker_or_skip()
    import time
    import urllib.error

    from testcontainers.core.container import DockerContainer
    from testcontainers.core.network import Network

    rules = tmp_path / "rules"
    rules.mkdir()
    for path in rulefiles.RULE_FILES:
        (rules / path.name).write_text(path.read_text())
    (tmp_path / "prometheus.yml").write_text(
        "global: {scrape_interval: 5s, evaluation_interval: 5s}\n"
        "rule_files: [/etc/prometheus/rules/*.rules.yaml]\n"
    )
    provisioning = ROOT / "grafana" / "provisioning"
    with (
        Network() as network,
        DockerContainer("prom/prometheus:v2.53.0")
        .with_network(network)
        .with_network_aliases("prometheus")
        .with_volume_mapping(str(tmp_path / "prometheus.yml"), "/etc/prometheus/prometheus.yml")
        .with_volume_mapping(str(rules), "/etc/prometheus/rules"),
        DockerContainer("grafana/grafana:11.6.0")
        .with_network(network)
        .with_exposed_ports(3000)
        .with_volume_mapping(
            str(provisioning / "dashboards"), "/etc/grafana/provisioning/dashboards"
        )
        .with_volume_mapping(
            str(provisioning / "datasources"), "/etc/grafana/provisioning/datasources"
        )
        .with_volume_mapping(
            str(ROOT / "grafana" / "dashboards"), "/var/lib/grafana/dashboards/training-progress"
        ) as grafana,
    ):
        base = f"http://{grafana.get_container_host_ip()}:{grafana.get_exposed_port(3000)}"
        deadline = time.time() + 120
        while True:
            try:
                if grafana_api(base, "/api/health").get("database") == "ok":
                    break
            except (OSError, urllib.error.URLError):
                pass
            assert time.time() < deadline, "Grafana did not start"
            time.sleep(1)
        found = {d["uid"] for d in grafana_api(base, "/api/search?type=dash-db")}
        assert {"training-jobs", "training-job-detail", "training-gpu-capacity"} <= found
        for path in DASHBOARDS:
            doc = grafana_api(base, f"/api/dashboards/uid/{load(path)['uid']}")["dashboard"]
            for p in panels(doc):
                queries = [
                    {
                        **t,
                        "datasource": {"type": "prometheus", "uid": "prometheus"},
                        "expr": t["expr"]
                        .replace("$namespace", ".*")
                        .replace("$cluster", "")  # one cluster: no value, matches all
                        .replace("$job_name", "x")
                        .replace("$__rate_interval", "1m")
                        .replace("$gpu_hour_price", "2.5"),
                    }
                    for t in p["targets"]
                ]
                result = grafana_api(
                    base, "/api/ds/query", {"queries": queries, "from": "now-1h", "to": "now"}
                )
                for ref, frame in result["results"].items():
                    assert "error" not in frame, f"{path.name} {p['title']} {ref}: {frame}"
