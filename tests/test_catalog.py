"""The metric catalog contract: code, docs/metrics.md, alerts/ and grafana/ agree.

Every metric the exporter emits is documented; every documented metric is emitted; every
``training_*`` metric named by a rule or dashboard exists in both.
"""

from __future__ import annotations

import re
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest

from exporter.plumbing.httpd import HTTPStats
from exporter.plumbing.stats import ExporterStats
from exporter.views.collector import TrainingCollector
from exporter.views.selfmetrics import ExporterCollector

from .conftest import T0, FakeClock
from .test_collector import golden_tracker

ROOT = Path(__file__).parent.parent
NAME = re.compile(r"\b(training_[a-z0-9_]+)")


def emitted_names() -> set[str]:
    tracker = golden_tracker()
    stats = ExporterStats()
    stats.report("push", "accepted")
    stats.drop("push", "invalid_json")
    stats.set_up("push", True)
    stats.state_saved(True, T0)  # with a state file configured
    registry = CollectorRegistry(auto_describe=False)
    registry.register(TrainingCollector(tracker, FakeClock(T0 + 300)))
    http = HTTPStats()
    http.reject("evicted")
    registry.register(ExporterCollector(tracker, stats, http))
    text = generate_latest(registry).decode()
    return {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE")} | {
        line.split("{")[0].split(" ")[0]
        for line in text.splitlines()
        if line and not line.startswith("#")
    }


def documented_names() -> set[str]:
    text = (ROOT / "docs" / "metrics.md").read_text()
    return {m.group(1) for m in re.finditer(r"^\| `(training_[a-z0-9_]+)`", text, re.M)}


def test_every_emitted_metric_is_documented_and_vice_versa() -> None:
    samples = {n for n in emitted_names() if not n.endswith("_created")}
    families = {n[: -len("_total")] if n.endswith("_total") else n for n in samples}
    documented = documented_names()
    undocumented = {n for n in samples if n not in documented and n not in families}
    assert not undocumented, f"emitted but not in docs/metrics.md: {sorted(undocumented)}"
    missing = {n for n in documented if n not in samples}
    assert not missing, f"documented but never emitted: {sorted(missing)}"


def referenced_names() -> dict[str, set[str]]:
    """``training_*`` names used in alerts/ and grafana/ (recording-rule names excluded)."""
    refs: dict[str, set[str]] = {}
    for folder, pattern in (("alerts", "*.yaml"), ("grafana", "*.json")):
        for path in sorted((ROOT / folder).rglob(pattern)) if (ROOT / folder).exists() else []:
            text = path.read_text()
            # Recording rule names (level:metric:ops) contain colons; their middle part is
            # checked through the rule's own expression instead.
            text = re.sub(r"[a-z_]*:training_[a-z0-9_]+:[a-z0-9_]+", "", text)
            refs[str(path.relative_to(ROOT))] = set(NAME.findall(text))
    return refs


def test_rules_and_dashboards_only_use_real_metrics() -> None:
    emitted = emitted_names()
    documented = documented_names()
    for path, names in referenced_names().items():
        # training_progress_exporter is the product (job label, runbook links), not a metric.
        names = {n for n in names if not n.startswith("training_progress_exporter")}
        assert names <= emitted, (
            f"{path} uses metrics the exporter does not emit: {sorted(names - emitted)}"
        )
        assert names <= documented, (
            f"{path} uses undocumented metrics: {sorted(names - documented)}"
        )
