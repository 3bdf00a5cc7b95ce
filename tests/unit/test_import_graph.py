"""The package's import graph: the CLI is a veneer over ``agentsessions.sessions``, and no
two modules import each other, directly or round a longer loop.

Read with ``ast`` (nothing is imported), counting top-level, function-level (lazy) and
``if TYPE_CHECKING:`` imports alike: a lazy import is still a dependency, and a cycle
through one is still a cycle that only happens to work in today's import order; an
annotation-only import is a dependency too (the module cannot be understood, type-checked
or moved without the other), so two modules that name each other's types are one tangle
however the imports are guarded. Where an operation needs a type from the module that
calls it, it names a small Protocol of what it uses instead (``controller/port.py``,
``journal/stores/file/writer.py``'s ``WriterOwner``). The veneer check counts every import
too (the CLI does not even name the journal's types).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_layering import PACKAGE, imports, module_name, within

FORBIDDEN_IN_CLI = ("agentsessions.journal", "agentsessions.controller")


def _modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def import_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """Module -> the package modules it imports, lazily or for annotations only included
    (``from a import b`` counts ``a.b`` when that is a module, else ``a``)."""
    names = set(sources)
    graph: dict[str, set[str]] = {}
    for module, (source, is_package) in sources.items():
        edges = set()
        for name in imports(source, module, is_package):
            if name in names and name != module:
                edges.add(name)
        graph[module] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of ``graph`` (its modules, the first repeated at the end), or []."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return []


def _package_sources() -> dict[str, tuple[str, bool]]:
    return {
        name: (path.read_text(encoding="utf-8"), path.name == "__init__.py")
        for name, path in _modules().items()
    }


def _parents(module: str) -> set[str]:
    """Importing ``a.b.c`` runs ``a`` and ``a.b`` first: those edges are implicit."""
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def test_no_import_cycle_anywhere_in_the_package() -> None:
    graph = import_graph(_package_sources())
    # a package's __init__ importing its own submodule is how packages work, not a cycle
    for module in graph:
        graph[module] -= _parents(module)
    assert find_cycle(graph) == []


@pytest.mark.parametrize(
    "module", sorted(m for m in _modules() if within(m, "agentsessions.cli")), ids=str
)
def test_the_cli_never_imports_the_journal_or_the_controller(module: str) -> None:
    path = _modules()[module]
    found = set(imports(path.read_text(encoding="utf-8"), module, path.name == "__init__.py"))
    assert sorted(n for n in found if any(within(n, f) for f in FORBIDDEN_IN_CLI)) == []


# --- the checkers themselves catch what they must ------------------------------------------


def test_the_cycle_finder_sees_a_lazy_import_cycle() -> None:
    sources = {
        "agentsessions.a": ("import agentsessions.b\n", False),
        "agentsessions.b": ("def f():\n    from agentsessions import a\n", False),
    }
    assert find_cycle(import_graph(sources)) == [
        "agentsessions.a",
        "agentsessions.b",
        "agentsessions.a",
    ]


def test_the_cycle_finder_sees_a_longer_loop() -> None:
    loop = {
        "agentsessions.a": ("from agentsessions.b import x\n", False),
        "agentsessions.b": ("from agentsessions.c import y\n", False),
        "agentsessions.c": ("from . import a\n", False),
    }
    assert len(find_cycle(import_graph(loop))) == 4


def test_the_cycle_finder_sees_a_cycle_through_a_type_checking_import() -> None:
    # the shape controller/{cancel,lifecycle,freshstart}.py had: the caller imported
    # lazily, the callee imported the caller's class for its annotations only
    typed = {
        "agentsessions.c.controller": ("def f():\n    from .lifecycle import g\n", False),
        "agentsessions.c.lifecycle": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from .controller import Controller\n",
            False,
        ),
    }
    assert find_cycle(import_graph(typed)) == [
        "agentsessions.c.controller",
        "agentsessions.c.lifecycle",
        "agentsessions.c.controller",
    ]
    # the way out: both sides import a Protocol module that imports neither
    typed["agentsessions.c.lifecycle"] = ("from .port import ControllerPort\n", False)
    typed["agentsessions.c.port"] = ("from typing import Protocol\n", False)
    assert find_cycle(import_graph(typed)) == []


def test_the_veneer_check_sees_a_lazy_journal_import() -> None:
    source = "def f():\n    from agentsessions.journal.stores.store import check_uid\n"
    found = set(imports(source, "agentsessions.cli.x"))
    assert any(within(n, "agentsessions.journal") for n in found)


# --- the stores: one subpackage per backend over a shared core ------------------------------

STORES = "agentsessions.journal.stores"
BACKENDS = tuple(f"{STORES}.{name}" for name in ("file", "jetstream", "memory"))


def backend_violations(module: str, imported: set[str]) -> list[str]:
    """A backend imports the core and never another backend; the core imports no backend."""
    if not within(module, STORES):
        return []
    mine = next((b for b in BACKENDS if within(module, b)), None)
    return sorted(
        f"{module} imports {name}"
        for name in imported
        if any(within(name, b) for b in BACKENDS if b != mine)
    )


@pytest.mark.parametrize("module", sorted(m for m in _modules() if within(m, STORES)), ids=str)
def test_a_store_backend_imports_no_other_and_the_core_none(module: str) -> None:
    path = _modules()[module]
    found = set(imports(path.read_text(encoding="utf-8"), module, path.name == "__init__.py"))
    assert backend_violations(module, found) == []


def test_the_backend_check_sees_a_crossing() -> None:
    assert backend_violations(
        f"{STORES}.file.store", {f"{STORES}.jetstream.wire", f"{STORES}.tail"}
    ) == [f"{STORES}.file.store imports {STORES}.jetstream.wire"]
    assert backend_violations(f"{STORES}.tail", {f"{STORES}.memory.store"})
    assert backend_violations(f"{STORES}.capabilities", {f"{STORES}.memory.store"})
