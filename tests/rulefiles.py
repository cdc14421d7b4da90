"""The rule files (alerts/*.rules.yaml, one group each), read as the tests need them."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
RULE_FILES = sorted((ROOT / "alerts").glob("*.rules.yaml"))


def groups() -> list[dict[str, Any]]:
    """Every group of every rule file, in the order alerts/generate.py writes them."""
    out: list[dict[str, Any]] = []
    for path in RULE_FILES:
        out += yaml.safe_load(path.read_text())["groups"]
    return out


def rules() -> list[dict[str, Any]]:
    """Every rule of every group."""
    return [rule for group in groups() for rule in group["rules"]]


def text() -> str:
    """All the rule files' text, one after the other (for searches across them)."""
    return "\n".join(path.read_text() for path in RULE_FILES)


def short_rules(directory: Path) -> Path:
    """The shipped rules with every alert's ``for:`` cut to 2 s (and the views evaluated at
    the stack's interval), written to a file in
    ``directory`` (end-to-end tests; promtool tests the shipped ``for:`` on both sides)."""
    doc = {"groups": groups()}
    for group in doc["groups"]:
        if group["name"] == "training-progress.views":
            # The views' own 30 s would leave the first views empty for half a minute: they
            # run at the stack's pace instead (only views read them, never an alert).
            group.pop("interval", None)
        for rule in group["rules"]:
            if "alert" in rule and "for" in rule:
                rule["for"] = "2s"
    path = directory / "short.rules.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def promtool_on_rewritten_tests(
    directory: Path, rewrite: Callable[[dict[str, Any]], dict[str, Any]]
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    """Every shipped promtool test (alerts/tests/*.test.yaml) with ``rewrite`` applied to
    each file's document, run by promtool against the shipped rules copied into
    ``directory``: promtool's answer and the rewritten documents."""
    promtool = shutil.which("promtool")
    assert promtool, "promtool is installed by the test command (make test-deps)"
    (directory / "tests").mkdir()
    for path in RULE_FILES:
        shutil.copy(path, directory / path.name)
    names, docs = [], []
    for path in sorted((ROOT / "alerts" / "tests").glob("*.test.yaml")):
        doc = rewrite(yaml.safe_load(path.read_text()))
        (directory / "tests" / path.name).write_text(yaml.safe_dump(doc, sort_keys=False))
        names.append(path.name)
        docs.append(doc)
    proc = subprocess.run(
        [promtool, "test", "rules", *names],
        cwd=directory / "tests", capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return proc, docs
