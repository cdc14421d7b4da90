"""The seams, enforced: who may import whom inside the package (read from the source, not run).

* the core (model, states, tracker, estimate, thresholds, humanize) imports nothing of the
  package outside the core: no source, Kubernetes, server or CLI module;
* only ``exporter.kubernetes`` imports the ``kubernetes`` client;
* sources, logs and Kubernetes reach the tracker only through the ingestor;
* the server imports no CLI module, however indirectly.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "exporter"
CORE = {
    "exporter.model",
    "exporter.states",
    "exporter.tracker",
    "exporter.estimate",
    "exporter.thresholds",
    "exporter.series",
    "exporter.humanize",
    "exporter.directives",
    "exporter.goodput",
    "exporter.ranks",
}
CLI = {"exporter.cli", "exporter.top", "exporter.kubectl_progress", "exporter.demo"}


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports() -> dict[str, set[str]]:
    """module -> the absolute names it imports (``exporter.*`` resolved, others top-level)."""
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        module = _module(path)
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    target = ".".join([*base, node.module] if node.module else base)
                else:
                    target = node.module or ""
                found.add(target)
                # "from . import statuspage" names modules too
                found |= {f"{target}.{alias.name}" for alias in node.names}
        graph[module] = found
    modules = set(graph)
    return {
        m: {i for i in deps if i in modules or not i.startswith("exporter")}
        for m, deps in graph.items()
    }


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for dep in graph.get(todo.pop(), ()):
            if dep not in seen and dep.startswith("exporter"):
                seen.add(dep)
                todo.append(dep)
    return seen


def test_the_graph_is_read() -> None:
    graph = imports()
    assert {"exporter.model", "exporter.server", "exporter.kubernetes.watch"} <= set(graph)
    assert "exporter.ingest" in graph["exporter.sources.file"]


def test_the_core_imports_nothing_outside_the_core() -> None:
    graph = imports()
    for module in CORE:
        inside = {d for d in graph[module] if d.startswith("exporter")}
        assert inside <= CORE, (module, sorted(inside - CORE))


def test_only_the_kubernetes_package_imports_the_kubernetes_client() -> None:
    for module, deps in imports().items():
        uses = {d for d in deps if d == "kubernetes" or d.startswith("kubernetes.")}
        if not module.startswith("exporter.kubernetes"):
            assert not uses, (module, uses)


def test_sources_reach_the_tracker_only_through_the_ingestor() -> None:
    for module, deps in imports().items():
        if module.startswith(("exporter.sources", "exporter.logs", "exporter.kubernetes")):
            assert "exporter.tracker" not in deps, module


def test_the_server_imports_no_cli_module() -> None:
    graph = imports()
    for module in ("exporter.server", "exporter.app"):
        assert not reachable(graph, module) & CLI, (module, reachable(graph, module) & CLI)
