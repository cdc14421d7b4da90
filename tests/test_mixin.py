"""The monitoring mixin: rendered by the real jsonnet, it is exactly the
rules and dashboards shipped, its _config changes what it says, and promtool accepts it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from . import rulefiles

ROOT = Path(__file__).parent.parent
JSONNET = shutil.which("jsonnet")


def render(config: str = "{}") -> dict[str, Any]:
    if JSONNET is None:
        if os.environ.get("CI"):
            pytest.fail("jsonnet is installed by the test command")
        pytest.skip("jsonnet is not installed (make test-deps installs it)")
    out = subprocess.run(
        [JSONNET, "--ext-code", f"config={config}", str(ROOT / "mixin" / "render.jsonnet")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return dict(json.loads(out.stdout))


def _by_group(*docs: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        for group in doc["groups"]:
            out.setdefault(group["name"], []).extend(group["rules"])
    return out


def test_the_default_config_renders_exactly_what_is_shipped() -> None:
    rendered = render()
    shipped = {g["name"]: g["rules"] for g in rulefiles.groups()}
    mixed = _by_group(rendered["alerts"], rendered["rules"])
    assert mixed.keys() == shipped.keys()
    for name, rules in shipped.items():
        canonical = sorted(json.dumps(r, sort_keys=True) for r in mixed[name])
        assert canonical == sorted(json.dumps(r, sort_keys=True) for r in rules), name
    assert all("alert" in r for g in rendered["alerts"]["groups"] for r in g["rules"])
    assert all("record" in r for g in rendered["rules"]["groups"] for r in g["rules"])
    for name, dashboard in rendered["dashboards"].items():
        assert dashboard == json.loads((ROOT / "grafana" / "dashboards" / name).read_text())
    assert len(rendered["dashboards"]) == len(
        list((ROOT / "grafana" / "dashboards").glob("*.json"))
    )


def test_config_sets_links_selector_and_for_and_promtool_accepts_it(tmp_path: Path) -> None:
    rendered = render(
        '{grafanaUrl: "https://grafana.example.com", runbookUrlBase: "https://wiki.example.com", '
        'exporterSelector: \'job="tpe"\', alertFor: {TrainingJobStalled: "7m"}}'
    )
    alerts = [r for g in rendered["alerts"]["groups"] for r in g["rules"]]
    urls = [
        r["annotations"]["dashboard_url"] for r in alerts if "dashboard_url" in r["annotations"]
    ]
    assert urls and all(u.startswith("https://grafana.example.com/d/") for u in urls)
    runbooks = [r["annotations"]["runbook_url"] for r in alerts]
    assert all(u.startswith("https://wiki.example.com/runbook.md#") for u in runbooks)
    by_name = {r["alert"]: r for r in alerts}
    assert by_name["TrainingJobStalled"]["for"] == "7m"
    assert by_name["TrainingLossDiverged"]["for"] == "1m"  # the others keep theirs
    assert 'up{job="tpe"}' in by_name["TrainingProgressExporterDown"]["expr"]
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        yaml.safe_dump({"groups": rendered["alerts"]["groups"] + rendered["rules"]["groups"]})
    )
    promtool = shutil.which("promtool")
    assert promtool, "promtool is installed by the test command"
    check = subprocess.run([promtool, "check", "rules", str(rules)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
