"""The rule files (alerts/*.rules.yaml, one group each), read as the tests need them."""

from __future__ import annotations

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
