"""Remote-write and federation friendly (#59): no rule reads the exporter's own scrape labels
(``job``, ``instance``) except the one alert about the exporter's targets, nothing needs
exemplars or ``target_info``, and the federation ``match[]`` that docs/promql.md gives carries
every recording rule up and no raw series.

The proof for the rules is promtool's: every shipped promtool test, its series rewritten as
a remote-write pipeline or a federating Prometheus would leave them (the scrape labels
dropped, or renamed), must still pass unchanged apart from those labels.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from .rulefiles import promtool_on_rewritten_tests, rules

ROOT = Path(__file__).parent.parent
ABOUT_THE_EXPORTER = "TrainingProgressExporterDown"
# docs/promql.md#remote-write-federation-thanos-and-mimir gives this match[].
FEDERATE_MATCH = '{__name__=~"[a-z_]+:(training|dcgm)_[a-z0-9_]+:[a-z0-9_]+"}'
SCRAPE_LABEL = re.compile(r"(?<![A-Za-z0-9_.])(job|instance)(?![A-Za-z0-9_])")


def test_no_rule_reads_the_exporters_own_scrape_labels() -> None:
    readers = []
    for rule in rules():
        if rule.get("alert") == ABOUT_THE_EXPORTER:
            continue
        # The expression, and the template code of the annotations (their queries and the
        # labels they print), not their prose ("Training job ...").
        notes = " ".join(str(v) for v in (rule.get("annotations") or {}).values())
        text = rule["expr"] + " " + " ".join(re.findall(r"\{\{.*?\}\}", notes, re.S))
        if SCRAPE_LABEL.search(text):
            readers.append(rule.get("alert") or rule.get("record"))
        assert "target_info" not in text and "exemplar" not in text.lower()
    assert readers == []
    assert len(rules()) > 50  # the files were read


def _without_scrape_labels(doc: dict[str, Any], rename: dict[str, str] | None) -> dict[str, Any]:
    """A promtool test file as remote write or federation would leave its series: the
    scrape's ``job`` and ``instance`` dropped (``rename`` None) or given other values."""

    def series(text: str) -> str:
        def label(m: re.Match[str]) -> str:
            name = m.group(1)
            return "" if rename is None else f'{name}="{rename[name]}",'

        return re.sub(r'\b(job|instance)="[^"]*",?', label, text).replace(",}", "}")

    for test in doc["tests"]:
        test["input_series"] = [
            {**s, "series": series(s["series"])}
            for s in test.get("input_series", [])
            if not s["series"].startswith("up{")
        ]
        test["alert_rule_test"] = [
            t for t in test.get("alert_rule_test", []) if t["alertname"] != ABOUT_THE_EXPORTER
        ]
        for t in test["alert_rule_test"]:
            for a in t.get("exp_alerts") or []:
                labels = a.get("exp_labels") or {}
                for name in ("job", "instance"):
                    if name in labels:
                        if rename is None:
                            del labels[name]
                        else:
                            labels[name] = rename[name]
        for t in test.get("promql_expr_test", []):
            for sample in t.get("exp_samples") or []:
                if "labels" in sample:
                    sample["labels"] = series(sample["labels"])
    return doc


@pytest.mark.parametrize(
    "rename",
    [None, {"job": "integrations/training-progress", "instance": "cluster-a/node-a"}],
    ids=["dropped", "renamed"],
)
def test_every_promtool_test_passes_with_the_scrape_labels_rewritten(
    tmp_path: Path, rename: dict[str, str] | None
) -> None:
    proc, docs = promtool_on_rewritten_tests(
        tmp_path, lambda doc: _without_scrape_labels(doc, rename)
    )
    seen = [s["series"] for doc in docs for t in doc["tests"] for s in t["input_series"]]
    assert seen and all(('instance="' in s) == (rename is not None) for s in seen)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_the_federation_match_carries_every_recording_rule_and_no_raw_series() -> None:
    pattern = re.compile(re.search(r'=~"([^"]+)"', FEDERATE_MATCH).group(1))  # type: ignore[union-attr]
    records = {r["record"] for r in rules() if "record" in r}
    assert records and all(pattern.fullmatch(name) for name in records)
    catalog = (ROOT / "docs" / "metrics.md").read_text()
    raw = set(re.findall(r"^\| `((?:training|dcgm)_[a-z0-9_]+)`", catalog, re.M))
    assert len(raw) > 30 and not [n for n in raw if pattern.fullmatch(n)]
    assert FEDERATE_MATCH in (ROOT / "docs" / "promql.md").read_text()
