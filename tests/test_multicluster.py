"""Many clusters under one ruler (#59): the rules generated with a cluster label never mix
two clusters' jobs of one name (promtool, on both sides: the same test fails on the rules as
shipped for one cluster), every clause names the cluster, and the mixin's clusterLabel
renders exactly what the generator writes."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from .test_mixin import render

ROOT = Path(__file__).parent.parent
TEST = ROOT / "alerts" / "tests" / "multicluster" / "multicluster.test.yaml"
PROMTOOL = shutil.which("promtool")


def _generate(tmp: Path, *args: str) -> Path:
    """Rules written by alerts/generate.py with ``args``, beside a copy of the test."""
    out = tmp / "multicluster.rules.yaml"
    subprocess.run(
        [sys.executable, str(ROOT / "alerts" / "generate.py"), *args,
         "--rules-out", str(out), "--out", str(tmp / "prometheusrule.yaml")],
        check=True, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    shutil.copy(TEST, tmp / TEST.name)
    return out


def _promtool_test(tmp: Path) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL, "promtool is installed by the test command (make test-deps)"
    return subprocess.run(
        [PROMTOOL, "test", "rules", TEST.name],
        cwd=tmp, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_two_clusters_with_the_same_job_never_meet(tmp_path: Path) -> None:
    _generate(tmp_path, "--cluster-label", "cluster")
    proc = _promtool_test(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_same_clusters_meet_under_the_rules_for_one(tmp_path: Path) -> None:
    """The control: the rules as shipped (one cluster) fail the same test, as the issue
    saw them fail: the rank rule on many-to-many matching, b's ETA gone."""
    _generate(tmp_path)
    proc = _promtool_test(tmp_path)
    assert proc.returncode != 0
    assert "many-to-many matching not allowed" in proc.stdout + proc.stderr


def _rules(path: Path) -> list[dict[str, Any]]:
    return [r for g in yaml.safe_load(path.read_text())["groups"] for r in g["rules"]]


def test_every_clause_aggregation_and_template_query_names_the_cluster(tmp_path: Path) -> None:
    rules = _rules(_generate(tmp_path, "--cluster-label", "cluster"))
    clauses = aggregations = queries = 0
    for rule in rules:
        for clause in re.findall(r"\b(?:by|on|ignoring) \(([^)]*)\)", rule["expr"]):
            clauses += 1
            assert clause.startswith("cluster"), (rule.get("alert") or rule["record"], clause)
        whole = re.findall(r"\b(?:sum|max|min|count|avg) ?\((?!\))", rule["expr"])
        assert not whole, (rule.get("record") or rule["alert"], whole)
        aggregations += len(re.findall(r"\bby \(cluster\) \(", rule["expr"]))
        for text in (rule.get("annotations") or {}).values():
            for query, args in re.findall(r'printf "([^"]*\{[^"]*)"((?: \$labels\.\w+)+)', text):
                queries += 1
                assert query.count("namespace=%q") == query.count("cluster=%q,namespace=%q")
                assert args.count("$labels.namespace") == args.count(
                    "$labels.cluster $labels.namespace"
                )
    assert clauses > 100 and aggregations >= 2 and queries > 40, (clauses, aggregations, queries)


@pytest.mark.parametrize("label", ["cluster", "k8s_cluster"])
def test_the_mixins_cluster_label_renders_what_the_generator_writes(
    tmp_path: Path, label: str
) -> None:
    generated = _rules(_generate(tmp_path, "--cluster-label", label))
    rendered = render(json.dumps({"clusterLabel": label}))
    mixed = [
        r for d in (rendered["alerts"], rendered["rules"]) for g in d["groups"] for r in g["rules"]
    ]
    canonical = sorted(json.dumps(r, sort_keys=True) for r in mixed)
    assert canonical == sorted(json.dumps(r, sort_keys=True) for r in generated)


def test_a_cluster_label_that_is_no_label_name_or_overwrites_the_shipped_file_is_refused(
    tmp_path: Path,
) -> None:
    for args in (
        ["--cluster-label", "my-cluster", "--out", str(tmp_path / "x.yaml")],
        ["--cluster-label", "cluster"],  # would overwrite the committed PrometheusRule
        ["--cluster-label", "cluster", "--check"],
    ):
        proc = subprocess.run(
            [sys.executable, str(ROOT / "alerts" / "generate.py"), *args],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert proc.returncode == 2, (args, proc.stderr)
    assert "must be a label name" in subprocess.run(
        [sys.executable, str(ROOT / "alerts" / "generate.py"), "--cluster-label", "a-b",
         "--out", str(tmp_path / "x.yaml")],
        capture_output=True, text=True, timeout=60,
    ).stderr  # fmt: skip


def test_every_dashboard_query_names_the_cluster_and_the_mixin_shows_the_variable() -> None:
    """The dashboards as shipped: every query matches ``cluster=~"$cluster"`` (one cluster:
    no value, every series), the variable hidden; with the mixin's clusterLabel it is shown
    and reads that label, and the alerts' dashboard links carry it."""
    shipped = {
        p.name: json.loads(p.read_text()) for p in (ROOT / "grafana" / "dashboards").glob("*.json")
    }
    rendered = render(json.dumps({"clusterLabel": "k8s_cluster"}))
    assert rendered["dashboards"].keys() == shipped.keys()
    for name, doc in shipped.items():
        exprs = [t["expr"] for p in doc["panels"] for t in p.get("targets", []) if "expr" in t]
        assert exprs and all('cluster=~"$cluster"' in e for e in exprs), name
        (var,) = [v for v in doc["templating"]["list"] if v["name"] == "cluster"]
        assert var["hide"] == 2 and var["definition"] == "label_values(training_run_info, cluster)"
        many = rendered["dashboards"][name]
        (shown,) = [v for v in many["templating"]["list"] if v["name"] == "cluster"]
        assert shown["hide"] == 0
        assert shown["definition"] == "label_values(training_run_info, k8s_cluster)"
        many_exprs = [
            t["expr"] for p in many["panels"] for t in p.get("targets", []) if "expr" in t
        ]
        assert all('k8s_cluster=~"$cluster"' in e for e in many_exprs), name
    links = [
        r["annotations"]["dashboard_url"]
        for g in rendered["alerts"]["groups"]
        for r in g["rules"]
        if "dashboard_url" in r.get("annotations", {})
    ]
    assert links and all(u.endswith("&var-cluster={{ $labels.k8s_cluster }}") for u in links)
