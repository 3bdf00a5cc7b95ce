"""The package's import graph: every import follows the layer map drawn once in
``agentsessions/__init__.py``'s docstring, the CLI is a veneer over
``agentsessions.sessions``, and no two modules import each other, directly or round a
longer loop.

Read with ``ast`` (nothing is imported), counting top-level, function-level (lazy) and
``if TYPE_CHECKING:`` imports alike: a lazy import is still a dependency, and a cycle
through one is still a cycle that only happens to work in today's import order; an
annotation-only import is a dependency too (the module cannot be understood, type-checked
or moved without the other), so two modules that name each other's types are one tangle
however the imports are guarded. Where an operation needs a type from the module that
calls it, it names a small Protocol of what it uses instead (``controller/port.py``,
``journal/stores/file/writer.py``'s ``WriterOwner``). The veneer check counts every import
too (the CLI does not even name the journal's types).

The front ends' rules (:data:`RULES`), each counting every import of every module of the
package on its left:

- ``server`` never imports the journal or the controller: it reaches storage and turns
  only through ``Sessions`` and speaks the wire through ``agentsessions.wire``;
- ``client`` never imports the server, and ``runtimes`` never does (they dial through the
  wire); the wire imports neither the server nor the client it sits under;
- ``integrations`` never import the journal or the controller, but for the harness SPI
  (``controller.spi``: the Protocols their recording harnesses implement, as any harness
  does);
- ``producers`` (issue-tracker and chat webhooks turned into turns) never import the
  journal or the controller: they stand on ``Sessions`` and the ``v1`` vocabulary alone;
- ``cli`` never imports the journal or the controller, and neither does what every CLI
  module runs first, ``agentsessions/__init__.py`` (counted as it runs: the annotation-only
  name of the ``Store`` that :func:`agentsessions.open` takes is the library's, never
  loaded by the CLI).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_layering import PACKAGE, imports, module_name, within

FORBIDDEN_IN_CLI = ("agentsessions.journal", "agentsessions.controller")
HARNESS_SPI = "agentsessions.controller.spi"


@dataclass(frozen=True)
class Rule:
    """Modules within ``importer`` never import a module within any of ``forbidden``
    (but for those within ``allowed``)."""

    importer: str
    forbidden: tuple[str, ...]
    allowed: tuple[str, ...] = ()

    def broken_by(self, module: str, imported: set[str]) -> list[str]:
        """The imports of ``module`` this rule forbids (sorted; [] when none or not its)."""
        if not within(module, self.importer):
            return []
        return sorted(
            f"{module} imports {name}"
            for name in imported
            if any(within(name, f) for f in self.forbidden)
            and not any(within(name, a) for a in self.allowed)
        )


RULES = (
    Rule("agentsessions.server", FORBIDDEN_IN_CLI),
    Rule("agentsessions.client", ("agentsessions.server",)),
    Rule("agentsessions.runtimes", ("agentsessions.server",)),
    Rule("agentsessions.wire", ("agentsessions.server", "agentsessions.client")),
    Rule("agentsessions.integrations", FORBIDDEN_IN_CLI, allowed=(HARNESS_SPI,)),
    Rule("agentsessions.producers", FORBIDDEN_IN_CLI),
    Rule("agentsessions.cli", FORBIDDEN_IN_CLI),
)


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


def _imported(module: str) -> set[str]:
    path = _modules()[module]
    return set(imports(path.read_text(encoding="utf-8"), module, path.name == "__init__.py"))


@pytest.mark.parametrize(
    "module",
    sorted(m for m in _modules() if any(within(m, rule.importer) for rule in RULES)),
    ids=str,
)
def test_the_front_ends_import_only_what_their_layer_may(module: str) -> None:
    found = _imported(module)
    assert [broken for rule in RULES for broken in rule.broken_by(module, found)] == []


def test_the_package_init_the_cli_runs_first_loads_no_journal_or_controller() -> None:
    path = PACKAGE / "__init__.py"
    found = set(runtime_imports(path.read_text(encoding="utf-8"), "agentsessions"))
    assert sorted(n for n in found if any(within(n, f) for f in FORBIDDEN_IN_CLI)) == []


def runtime_imports(source: str, module: str) -> list[str]:
    """The imports of ``source`` that run (those under ``if TYPE_CHECKING:`` do not)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            node.body = [ast.Pass()]
    return list(imports(ast.unparse(tree), module, True))


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


def test_the_rules_see_a_server_reaching_the_journal_and_a_client_the_server() -> None:
    server, client, integrations = RULES[0], RULES[1], RULES[4]
    lazy = set(imports("def f():\n    from agentsessions.journal.stores import store\n", "x"))
    assert server.broken_by("agentsessions.server.app", lazy)
    assert not server.broken_by("agentsessions.cli.serve", lazy)  # not the server's rule
    assert client.broken_by("agentsessions.client.remote", {"agentsessions.server.status"})
    assert not client.broken_by("agentsessions.client.remote", {"agentsessions.wire.status"})
    spi = {HARNESS_SPI, "agentsessions.controller.spi.Sink"}
    assert integrations.broken_by("agentsessions.integrations.recording", spi) == []
    assert integrations.broken_by("agentsessions.integrations.x", {"agentsessions.controller"})
    producers = next(r for r in RULES if r.importer == "agentsessions.producers")
    assert producers.broken_by("agentsessions.producers.lanes", lazy)
    assert producers.broken_by("agentsessions.producers.x", {HARNESS_SPI})  # no SPI either
    assert not producers.broken_by("agentsessions.producers.x", {"agentsessions.sessions.api"})


def test_runtime_imports_leave_out_annotation_only_ones() -> None:
    source = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from agentsessions.journal.stores.store import Store\n"
        "def open():\n    from agentsessions.controller import x\n"
    )
    found = runtime_imports(source, "agentsessions")
    assert "agentsessions.controller" in found
    assert not [n for n in found if n.startswith("agentsessions.journal")]


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


# --- the layer map: one statement of the order, in the package's docstring ------------------

SIBLINGS = {("cli", "server"), ("cli", "client"), ("cli", "producers"), ("runtimes", "wire")}
"""Crossings the map allows: within the top line (``cli serve``, ``cli --server``,
``cli produce``), and the
remote runtime dialling harnesses through the wire's Harness.Connect half (``harnessclient``,
``harnesswire``: they stand on ``controller.spi`` and ``v1`` only; the cycle test above keeps
that so)."""
BEING_REMOVED: set[tuple[str, str]] = set()
"""Crossings the wire package (agentsessions/wire/) removes; listed so that no new one hides."""


def layer_map(doc: str) -> dict[str, int]:
    """Package -> its line in the map of ``agentsessions``'s docstring (0 = lowest)."""
    block = doc.split("::\n\n", 1)[1].split("\n\n", 1)[0]
    out: dict[str, int] = {}
    for line_no, line in enumerate(block.splitlines()):
        names = line.strip().split("  ")
        for name in names[: names.index("") if "" in names else len(names)]:
            out[name.strip()] = line_no
    return out


def _package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer_violations(layers: dict[str, int], sources: dict[str, tuple[str, bool]]) -> list[str]:
    """Every package-level import of a package on the same line or a line below."""
    out = set()
    for module, (source, is_package) in sources.items():
        mine = _package_of(module)
        if mine.startswith("__") or not mine:
            continue
        if mine not in layers:
            out.add(f"{mine} is not on the layer map")
            continue
        for name in imports(source, module, is_package):
            theirs = _package_of(name) if within(name, "agentsessions") else ""
            if not theirs or theirs.startswith("__") or theirs == mine:
                continue
            if theirs not in layers:
                out.add(f"{theirs} is not on the layer map")
            elif layers[theirs] >= layers[mine] and (mine, theirs) not in SIBLINGS | BEING_REMOVED:
                out.add(f"{mine} imports {theirs} ({module} -> {name})")
    return sorted(out)


def _map() -> dict[str, int]:
    init = PACKAGE / "__init__.py"
    return layer_map(ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or "")


def test_the_layer_map_names_every_package_once() -> None:
    layers = _map()
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    modules = {p.stem for p in PACKAGE.glob("*.py") if not p.name.startswith("__")}
    assert set(layers) == packages | modules
    assert layers["errors"] < layers["v1"] < layers["journal"] < layers["controller"]
    assert layers["controller"] < layers["runtimes"] < layers["sessions"] < layers["cli"]


def test_every_import_follows_the_layer_map() -> None:
    assert layer_violations(_map(), _package_sources()) == []


def test_the_layer_check_sees_an_upward_import() -> None:
    layers = {"v1": 0, "journal": 1, "cli": 2, "server": 2}
    assert layer_violations(
        layers, {"agentsessions.journal.x": ("import agentsessions.cli\n", False)}
    )
    assert layer_violations(
        layers, {"agentsessions.server.x": ("from agentsessions import cli\n", False)}
    )
    assert not layer_violations(
        layers, {"agentsessions.cli.x": ("import agentsessions.server\n", False)}
    )
    assert not layer_violations(
        layers, {"agentsessions.cli.x": ("import agentsessions.v1.ids\n", False)}
    )
    assert layer_violations(layers, {"agentsessions.wire.x": ("import agentsessions.v1\n", False)})
