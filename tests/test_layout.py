"""The house's plan, enforced: who may import whom inside the package (read from the source,
not run; imports under ``if TYPE_CHECKING:`` and inside functions count like any other).

Each floor is a folder (``FLOORS``), from the ground up; a module imports only from its own
floor or below:

0. ``core/``: the run model, states, thresholds, estimation, the tracker. Pure, no I/O.
1. ``plumbing/``: settings parsing, counters, the poll scheduler, the ingestor (the one door
   into the tracker), the HTTP server, host files, discovery's shapes (who may report, what a
   pod is).
2. ``kubernetes/``: the API client, pod discovery (watch, kubelet), token review.
3. the rooms by role: ``sources/`` and ``logs/`` (progress in), ``sinks/`` (progress out),
   ``act/`` (the controller), ``integrations/``.
4. ``views/`` (collectors, JSON API, status page, charts, web assets) and ``daemon/`` (the
   exporter's composition: state file, server, config, wiring, app).
5. ``commands/``: cli, top, kubectl progress, demo, the cluster page.

Nothing sits flat in ``exporter/`` but the package's entry points (``TOP``).

And across rooms: no import circle anywhere; only ``kubernetes/`` and ``act``'s adapter
(``act/kube.py``) import the ``kubernetes`` client; ``act`` reaches the cluster only through
its adapter and imports nothing of the exporter's rooms; sources, logs, sinks and Kubernetes
reach the tracker only through the ingestor; the server imports no CLI module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "exporter"
FLOORS = {
    "core": 0,
    "plumbing": 1,
    "kubernetes": 2,
    "sources": 3,
    "logs": 3,
    "sinks": 3,
    "act": 3,
    "integrations": 3,
    "views": 4,
    "daemon": 4,
    "commands": 5,
}
# The files directly in exporter/: the package (its version), ``python -m exporter`` (the
# command line), and the reporter's deprecated alias.
TOP = {"exporter": 0, "exporter.__main__": 5, "exporter.reporter": 3}
# Imports that run from a floor up to a higher one, each with its reason. At most one.
UPWARD: dict[tuple[str, str], str] = {}
CLIENT_USERS = ("exporter.kubernetes", "exporter.act.kube")


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def floor(module: str) -> int:
    """The floor of a module of the package: its folder's (see the module doc)."""
    if module in TOP:
        return TOP[module]
    parts = module.split(".")
    if len(parts) > 2 and parts[1] in FLOORS:
        return FLOORS[parts[1]]
    if len(parts) == 2 and parts[1] in FLOORS:  # a floor's own package
        return FLOORS[parts[1]]
    raise AssertionError(f"{module} is in no floor's folder: move it into one of {sorted(FLOORS)}")


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports() -> dict[str, set[str]]:
    """module -> the absolute names it imports (``exporter.*`` resolved to modules of the
    package, others by their full dotted name)."""
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


def inside(deps: set[str]) -> set[str]:
    return {d for d in deps if d == "exporter" or d.startswith("exporter.")}


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for dep in inside(graph.get(todo.pop(), set())):
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles (strongly connected components of more than one module, or a
    module importing itself), by Tarjan's algorithm."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(inside(graph[v])):
            if w == v:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def upward(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """Every import from a module to one on a higher floor (a package importing its own
    modules is not one: ``exporter`` and ``exporter.sinks.katib`` name their parts)."""
    return {
        (m, d)
        for m, deps in graph.items()
        for d in inside(deps)
        if floor(d) > floor(m) and not d.startswith(m + ".")
    }


def test_the_graph_is_read() -> None:
    graph = imports()
    assert {"exporter.core.model", "exporter.daemon.server", "exporter.kubernetes.watch"} <= set(
        graph
    )
    assert "exporter.plumbing.ingest" in graph["exporter.sources.file"]
    assert "exporter.plumbing.discovery" in graph["exporter.kubernetes.watch"]


def test_every_module_is_on_a_floor() -> None:
    for module in imports():
        floor(module)


def test_a_module_outside_the_floors_folders_is_found() -> None:
    """The check above can fail: a module left flat in ``exporter/``, or in a folder that is
    no floor, is on none."""
    for module in ("exporter.model", "exporter.misc.helpers"):
        with pytest.raises(AssertionError, match="in no floor's folder"):
            floor(module)


def test_the_circle_finder_finds_a_circle() -> None:
    """The check below can fail: a made-up circle of three is found, and nothing else."""
    graph = {
        "exporter.a": {"exporter.b"},
        "exporter.b": {"exporter.c", "os"},
        "exporter.c": {"exporter.a"},
        "exporter.d": {"exporter.a"},
    }
    assert circles(graph) == [["exporter.a", "exporter.b", "exporter.c"]]


def test_there_is_no_import_circle() -> None:
    assert circles(imports()) == []


@pytest.mark.slow
def test_imports_run_down_the_floors() -> None:
    found = upward(imports())
    assert found == set(UPWARD), sorted(found - set(UPWARD))
    assert len(UPWARD) <= 1


def test_the_core_imports_nothing_outside_the_core() -> None:
    graph = imports()
    core = {m for m in graph if floor(m) == 0}
    assert "exporter.core.run.merge" in core and "exporter.core.tracker" in core
    for module in core:
        assert inside(graph[module]) <= core, (module, sorted(inside(graph[module]) - core))


def test_only_the_kubernetes_package_and_acts_adapter_import_the_kubernetes_client() -> None:
    for module, deps in imports().items():
        uses = {d for d in deps if d == "kubernetes" or d.startswith("kubernetes.")}
        if not any(_under(module, allowed) for allowed in CLIENT_USERS):
            assert not uses, (module, uses)


def test_act_reaches_the_cluster_only_through_its_adapter() -> None:
    """``act`` is its own program: it shares the core and the plumbing with the exporter,
    and none of the exporter's rooms (no source, sink, log reader or pod discovery)."""
    for module, deps in imports().items():
        if _under(module, "exporter.act"):
            for dep in inside(deps):
                assert floor(dep) <= 1 or _under(dep, "exporter.act"), (module, dep)


def test_sources_reach_the_tracker_only_through_the_ingestor() -> None:
    for module, deps in imports().items():
        if floor(module) in (2, 3):
            near = {
                d for d in deps if d == "exporter.core.tracker" or _under(d, "exporter.core.run")
            }
            assert not near, (module, near)


@pytest.mark.slow
def test_the_server_imports_no_cli_module() -> None:
    graph = imports()
    cli = {m for m in graph if floor(m) == 5}
    assert "exporter.commands.cli" in cli
    for module in ("exporter.daemon.server", "exporter.daemon.app"):
        assert not reachable(graph, module) & cli, (module, reachable(graph, module) & cli)


def classes() -> dict[str, list[str]]:
    """Top-level class name -> the modules that define one of that name."""
    found: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append(_module(path))
    return found


@pytest.mark.slow
def test_one_name_per_class_across_the_package() -> None:
    """Two classes of one name (two ``Cluster``s, two ``Limits``) read as one idea where
    they are two: each class name is defined once."""
    assert {name: where for name, where in classes().items() if len(where) > 1} == {}
    assert "Tracker" in classes() and len(classes()) > 50


def test_no_two_modules_share_a_name() -> None:
    """A module's name says which one it is wherever it is read (a traceback, a log line's
    logger, a grep): no two modules of the package share one, whatever their folders."""
    seen: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name != "__init__.py":
            seen.setdefault(path.stem, []).append(_module(path))
    assert {name: mods for name, mods in seen.items() if len(mods) > 1} == {}


MAX_MODULE_LINES = 600


def test_no_module_grows_into_a_god_module() -> None:
    """A module over 600 lines holds more than one idea (``run.py`` grew to 1,046 and
    ``collector.py`` to 712 before they were split): none of the package's or the reporter's
    modules is longer."""
    paths = [
        *PACKAGE.rglob("*.py"),
        *(ROOT / "reporter" / "training_progress_reporter").rglob("*.py"),
    ]
    long = {
        str(p.relative_to(ROOT)): n
        for p in paths
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}
    assert len(paths) > 100
