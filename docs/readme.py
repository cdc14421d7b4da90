"""Write the README's lists that must not drift: its alerts, from alerts/*.rules.yaml, and its
per-run metrics, from the collector's table (exporter.views.catalog.RUN_FAMILIES).

    python docs/readme.py           # rewrites the marked sections of README.md
    python docs/readme.py --check   # exit 1 if README.md is out of date (make lint runs it)

Each list sits between ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->`` in the
README; the text around it is written by hand.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def _slug(title: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def alerts_table() -> str:
    """One row per alert of every rule file, in the files' order: its name (linked to its
    runbook section), severities (an alert with two rules, warning and critical, is one
    row), how long its condition must hold, and its summary."""
    found: dict[str, tuple[list[str], list[str], str]] = {}
    for path in sorted((ROOT / "alerts").glob("*.rules.yaml")):
        for group in yaml.safe_load(path.read_text())["groups"]:
            for rule in group["rules"]:
                if "alert" not in rule:
                    continue
                summary = " ".join(str(rule["annotations"]["summary"]).split())
                severities, waits, _ = found.setdefault(rule["alert"], ([], [], summary))
                for seen, value in ((severities, rule["labels"]["severity"]),
                                    (waits, rule.get("for", "0s"))):  # fmt: skip
                    if value not in seen:
                        seen.append(value)
    rows = ["| alert | severity | for | what |", "| --- | --- | --- | --- |"]
    for name, (severities, waits, summary) in found.items():
        rows.append(
            f"| [`{name}`](docs/runbook.md#{_slug(name)}) | {', '.join(severities)} | "
            f"{', '.join(waits)} | {summary} |"
        )
    return "\n".join(rows)


def metrics_list() -> str:
    """Every per-run family the exporter exports, in the collector's order (the catalog
    with labels and units is docs/metrics.md)."""
    from exporter.views.catalog import RUN_FAMILIES

    return ", ".join(f"`{f.name}`" for f in RUN_FAMILIES) + "."


SECTIONS: dict[str, Callable[[], str]] = {"alerts": alerts_table, "metrics": metrics_list}


def render(text: str) -> str:
    """``text`` with each marked section replaced by its list; ValueError when a marker
    pair is missing."""
    for name, make in SECTIONS.items():
        pattern = re.compile(
            rf"(<!-- generated:{name} -->\n)(?:.*?\n)?(<!-- /generated:{name} -->)", re.S
        )
        found = pattern.search(text)
        if found is None:
            raise ValueError(f"README.md has no <!-- generated:{name} --> section")
        text = text[: found.end(1)] + make() + "\n" + text[found.start(2) :]
    return text


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if README.md differs")
    args = parser.parse_args(argv)
    current = README.read_text()
    try:
        expected = render(current)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.check:
        if current != expected:
            print("README.md is out of date: run python docs/readme.py", file=sys.stderr)
            return 1
        return 0
    README.write_text(expected)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
