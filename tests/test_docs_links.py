"""Docs that cannot drift (issue #58): every relative link in the Markdown files and every
``docs/*.md`` reference in the code (``--help`` texts, error messages, rule annotations,
dashboards) names a file that exists and, where it names one, a heading of that file; the
README's generated lists are current; docs/README.md indexes every page."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from exporter.commands.cli import _parser

ROOT = Path(__file__).parent.parent
MARKDOWN = sorted(
    p
    for p in ROOT.rglob("*.md")
    if not any(part in {".git", "node_modules", ".venv", "venv"} for part in p.parts)
    and "site-packages" not in p.parts
)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
DOC_REF = re.compile(r"\bdocs/([a-z0-9_-]+\.md)(?:#([a-z0-9_-]+))?")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup and punctuation dropped, lower case, spaces to
    hyphens (letters, digits, ``_`` and ``-`` kept)."""
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor of a Markdown file: its headings' (repeats get -1, -2...) and explicit
    ``<a id=...>`` / ``<a name=...>``; headings inside code blocks are none."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in path.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
        found.update(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", line))
    return found


def links(path: Path) -> list[str]:
    """The link targets of a Markdown file, outside code blocks and inline code."""
    out: list[str] = []
    fenced = False
    for line in path.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            out += LINK.findall(re.sub(r"`[^`]*`", "", line))
    return out


def broken(path: Path, target: str) -> str | None:
    """Why ``target`` (a link in ``path``) leads nowhere, or None when it leads somewhere."""
    if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
        return None
    file_part, _, anchor = target.partition("#")
    dest = (path.parent / file_part).resolve() if file_part else path
    if not dest.exists():
        return f"{target}: no such file"
    if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
        return f"{target}: no heading #{anchor} in {dest.relative_to(ROOT)}"
    return None


def test_the_slug_is_githubs() -> None:
    assert slug("The chance of missing a deadline") == "the-chance-of-missing-a-deadline"
    assert slug("`training-progress-exporter top`") == "training-progress-exporter-top"
    assert slug("Deadlines (`activeDeadlineSeconds`)") == "deadlines-activedeadlineseconds"


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_in_the_markdown_leads_somewhere(path: Path) -> None:
    problems = [why for t in links(path) if (why := broken(path, t)) is not None]
    assert not problems, problems


def _help_texts() -> dict[str, str]:
    """Every command's and subcommand's --help, as the user sees it."""
    top = _parser()
    out = {"training-progress-exporter": top.format_help()}
    for action in top._actions:
        choices = getattr(action, "choices", None)
        if isinstance(choices, dict):
            out |= {f"training-progress-exporter {n}": p.format_help() for n, p in choices.items()}
    for args in (["--help"], ["stacks", "--help"]):
        proc = subprocess.run(
            [sys.executable, "-m", "exporter.commands.kubectl_progress", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        out[f"kubectl progress {' '.join(args)}"] = proc.stdout
    return out


def test_every_docs_reference_in_help_and_code_leads_somewhere() -> None:
    """``docs/X.md#Y`` in --help, in the code's strings and comments, in the rules and the
    dashboards: X exists and has a heading Y."""
    texts = _help_texts()
    for folder in ("exporter", "reporter", "alerts", "grafana", "deploy", "mixin"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in {".py", ".yaml", ".json", ".libsonnet", ".jsonnet", ".js", ".html"}:
                texts[str(path.relative_to(ROOT))] = path.read_text(errors="replace")
    problems = []
    for where, text in texts.items():
        for name, anchor in DOC_REF.findall(re.sub(r"\s*\n\s*", " ", text)):
            doc = ROOT / "docs" / name
            if not doc.exists():
                problems.append(f"{where}: docs/{name} does not exist")
            elif anchor and anchor not in anchors(doc):
                problems.append(f"{where}: docs/{name} has no heading #{anchor}")
    assert not problems, problems
    assert any("docs/" in t for k, t in texts.items() if k.startswith("training-progress")), (
        "no --help names a doc: the check would check nothing"
    )


def test_the_docs_index_lists_every_page() -> None:
    index = ROOT / "docs" / "README.md"
    listed = {t.partition("#")[0] for t in links(index)}
    pages = {p.name for p in (ROOT / "docs").glob("*.md") if p.name != "README.md"}
    assert pages <= listed, f"docs/README.md does not list {sorted(pages - listed)}"


def test_the_readmes_generated_lists_are_current() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "readme.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    readme = (ROOT / "README.md").read_text()
    for path in sorted((ROOT / "alerts").glob("*.rules.yaml")):
        for name in re.findall(r"^\s*- alert: (\w+)", path.read_text(), re.M):
            assert f"[`{name}`]" in readme, name
