"""Alert and recording rules: promtool check and unit tests, conventions, drift, runbook."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from . import rulefiles
from .rulefiles import RULE_FILES

ROOT = Path(__file__).parent.parent
UNIT_TESTS = sorted((ROOT / "alerts" / "tests").glob("*.test.yaml"))
RUNBOOK = ROOT / "docs" / "runbook.md"
PROMTOOL = shutil.which("promtool")
RECORD_NAME = re.compile(r"^[a-z_]+:[a-z0-9_]+:[a-z0-9_]+$")


def promtool(*args: str) -> str:
    assert PROMTOOL, "promtool is installed by the test command (make test-deps)"
    proc = subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def rules() -> list[dict[str, Any]]:
    return rulefiles.rules()


def alerts() -> list[dict[str, Any]]:
    return [r for r in rules() if "alert" in r]


def test_promtool_check_rules() -> None:
    assert len(RULE_FILES) == len(rulefiles.groups())  # one group per file
    assert "SUCCESS" in promtool("check", "rules", *map(str, RULE_FILES))


@pytest.mark.slow
def test_promtool_unit_tests() -> None:
    assert UNIT_TESTS
    assert "SUCCESS" in promtool("test", "rules", *map(str, UNIT_TESTS))


def test_every_alert_has_severity_summary_description_runbook_and_dashboard() -> None:
    anchors = {
        re.sub(r"[^a-z0-9-]", "", h.lower().replace(" ", "-"))
        for h in re.findall(r"^## (.+)$", RUNBOOK.read_text(), re.M)
    }
    for rule in alerts():
        name = rule["alert"]
        assert rule["labels"]["severity"] in ("critical", "warning"), name
        ann = rule["annotations"]
        assert ann["summary"] and "{{" not in ann["summary"], f"{name}: summary must be static"
        assert "$labels.namespace" in ann["description"] or name == "TrainingProgressExporterDown"
        assert ann["runbook_url"].endswith("docs/runbook.md#" + name.lower()), name
        assert name.lower() in anchors, f"docs/runbook.md has no section for {name}"
        # Absolute, so the link works from Alertmanager, Slack or a pager (generate.py
        # --grafana-url points it at another Grafana).
        assert ann["dashboard_url"].startswith("http://localhost:3000/d/"), name


def test_recording_rules_follow_level_metric_operations() -> None:
    for rule in rules():
        if "record" in rule:
            assert RECORD_NAME.match(rule["record"]), rule["record"]


def _alert_evals() -> list[list[tuple[str, int, bool]]]:
    """Per unit-test group: (alertname, eval minutes, fires) for each alert assertion."""
    groups = []
    for path in UNIT_TESTS:
        for test in yaml.safe_load(path.read_text())["tests"]:
            evals = []
            for case in test.get("alert_rule_test", []):
                minutes = int(str(case["eval_time"]).rstrip("m"))
                evals.append((case["alertname"], minutes, bool(case.get("exp_alerts"))))
            groups.append(evals)
    return groups


def test_every_alert_is_tested_on_both_sides_of_its_for() -> None:
    groups = _alert_evals()
    for rule in alerts():
        name = rule["alert"]
        found = False
        for evals in groups:
            quiet = {m for n, m, fires in evals if n == name and not fires}
            firing = {m for n, m, fires in evals if n == name and fires}
            # The last quiet evaluation is one interval (1m) before the first firing one.
            if any(m - 1 in quiet for m in firing):
                found = True
        assert found, f"{name} has no quiet-then-firing pair one evaluation apart"


def test_a_healthy_job_fires_nothing() -> None:
    healthy = _alert_evals()[0]
    for rule in alerts():
        assert any(n == rule["alert"] and not fires for n, _, fires in healthy), rule["alert"]
    assert not any(fires for _, _, fires in healthy)


def test_generated_prometheusrule_is_up_to_date() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "alerts" / "generate.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    text = (
        ROOT / "deploy" / "components" / "prometheus-operator" / "prometheusrule.yaml"
    ).read_text()
    # The component fills the links' bases from the ConfigMap training-progress-links (its
    # defaults are the rule files' own: tests/test_deploy.py renders both ways).
    defaults = yaml.safe_load((ROOT / "deploy" / "base" / "links.yaml").read_text())["data"]
    text = text.replace("GRAFANA_URL/", defaults["grafana_url"] + "/")
    text = text.replace("RUNBOOK_BASE/", defaults["runbook_base"] + "/")
    generated = yaml.safe_load(text)
    assert generated["kind"] == "PrometheusRule"
    assert generated["spec"]["groups"] == rulefiles.groups()


@pytest.mark.parametrize("doc", ["runbook.md", "promql.md"])
def test_docs_only_name_rules_that_exist(doc: str) -> None:
    records = {r["record"] for r in rules() if "record" in r}
    text = (ROOT / "docs" / doc).read_text()
    for name in set(re.findall(r"\b[a-z_]+:training_[a-z0-9_]+:[a-z0-9_]+\b", text)):
        assert name in records, f"docs/{doc} names {name}, which no rule records"


def test_generator_points_dashboard_links_at_your_grafana(tmp_path: Path) -> None:
    """`alerts/generate.py --grafana-url` writes rules whose links work outside Grafana."""
    rules_out, operator_out = tmp_path / "mine.rules.yaml", tmp_path / "mine-rule.yaml"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "alerts" / "generate.py"),
            "--grafana-url",
            "https://grafana.example.com/",
            "--rules-out",
            str(rules_out),
            "--out",
            str(operator_out),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "SUCCESS" in promtool("check", "rules", str(rules_out))
    for doc in (yaml.safe_load(rules_out.read_text()), yaml.safe_load(operator_out.read_text())):
        groups = doc["groups"] if "groups" in doc else doc["spec"]["groups"]
        urls = [
            r["annotations"]["dashboard_url"] for g in groups for r in g["rules"] if "alert" in r
        ]
        assert len(urls) == len(alerts())
        assert all(u.startswith("https://grafana.example.com/d/training-") for u in urls), urls
    # Everything else is the shipped rule set, unchanged.
    shipped = {"groups": rulefiles.groups()}
    mine = yaml.safe_load(rules_out.read_text())
    for group in (shipped, mine):
        for g in group["groups"]:
            for r in g["rules"]:
                r.get("annotations", {}).pop("dashboard_url", None)
    assert mine == shipped
    bad = subprocess.run(
        [
            sys.executable,
            str(ROOT / "alerts" / "generate.py"),
            "--grafana-url",
            "grafana:3000",
            "--out",
            str(tmp_path / "x.yaml"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "http://" in bad.stderr
