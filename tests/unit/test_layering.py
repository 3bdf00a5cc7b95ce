"""The rules inside the layers of the map in ``agentsessions/__init__.py`` (which
tests/unit/test_import_graph.py holds every import to): the journal's rooms, lowest first
(``format`` <- ``crypto`` <- ``stores`` <- ``tools``), a controller that imports no
upper layer, grpc and protobuf only in the server and the client.

The ``agentsessions.v1`` vocabulary imports nothing of the package but ``errors`` (and
``valueclass``, which imports nothing); harnesses and model providers speak it and never
reach into the storage room.

Read with ``ast`` (nothing is imported), so a violation anywhere in the tree fails here even
if no test exercises that module. Relative imports and ``importlib.import_module("...")``
with a literal name count too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "agentsessions"

UPPER_LAYERS = ("cli", "server", "client", "wire", "runtimes", "models", "harnesses", "tools")
UI_AND_WIRE = ("typer", "rich", "grpc", "click")

# the journal's rooms, lowest first: a room imports only the rooms before it (and v1, errors,
# telemetry and valueclass, which import nothing of the package)
JOURNAL_ROOMS = (
    "agentsessions.journal.format",
    "agentsessions.journal.crypto",  # encryption at rest: over format, under the stores
    "agentsessions.journal.stores",
    "agentsessions.journal.tools",
)
VOCABULARY_ONLY = ("agentsessions.models", "agentsessions.harnesses", "harnesses")


def module_name(path: Path, root: Path = ROOT) -> str:
    """``agentsessions/journal/stores/store.py`` -> ``agentsessions.journal.stores.store``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports(source: str, module: str, is_package: bool = False) -> Iterator[str]:
    """Every module name ``source`` imports (``from a import b`` yields ``a`` and ``a.b``)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(node, module, is_package)
            yield target
            yield from (f"{target}.{alias.name}" for alias in node.names)
        elif _is_import_module_call(node):
            assert isinstance(node, ast.Call)
            arg = node.args[0]
            assert isinstance(arg, ast.Constant)
            yield str(arg.value)


def _is_import_module_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call) or not node.args:
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    arg = node.args[0]
    return (
        name in ("import_module", "__import__")
        and isinstance(arg, ast.Constant)
        and isinstance(arg.value, str)
    )


def within(name: str, prefix: str) -> bool:
    """True if module ``name`` is ``prefix`` or inside it."""
    return name == prefix or name.startswith(prefix + ".")


def violations(module: str, imported: list[str]) -> list[str]:
    """The layering rules broken by ``module`` importing ``imported``."""
    out: list[str] = []
    for name in imported:
        vocabulary_ok = any(
            within(name, f"agentsessions.{low}") for low in ("v1", "errors", "valueclass")
        )
        if (
            within(module, "agentsessions.v1")
            and within(name, "agentsessions")
            and not vocabulary_ok
        ):
            out.append(f"{module}: the v1 vocabulary imports {name}")
        if within(module, "agentsessions.journal") and within(name, "agentsessions"):
            allowed = any(
                within(name, f"agentsessions.{base}")
                for base in ("journal", "errors", "telemetry", "valueclass", "v1")
            )
            if not allowed:
                out.append(f"{module}: the journal layer imports {name}")
        out.extend(_room_violations(module, name))
        if any(within(module, m) for m in VOCABULARY_ONLY) and within(
            name, "agentsessions.journal"
        ):
            out.append(f"{module}: speaks agentsessions.v1, never the storage room ({name})")
        if within(module, "agentsessions.journal") and name.split(".")[0] in UI_AND_WIRE:
            out.append(f"{module}: the journal layer imports {name}")
        if within(module, "agentsessions.controller"):
            upper = any(within(name, f"agentsessions.{layer}") for layer in UPPER_LAYERS)
            if upper or name.split(".")[0] in (*UI_AND_WIRE, "harnesses"):
                out.append(f"{module}: the controller imports {name}")
        if within(name, "grpc") and not _wire(module):
            out.append(
                f"{module}: only agentsessions.wire/.server/.client may import grpc ({name})"
            )
        if within(name, "google.protobuf") and not _wire(module):
            out.append(
                f"{module}: only agentsessions.wire/.server/.client may import protobuf ({name})"
            )
        if within(name, "harnesses") or within(name, "agentsessions.harnesses"):
            out.append(f"{module}: the package never imports harnesses ({name})")
    return out


def _wire(module: str) -> bool:
    """The packages that speak gRPC: the wire, and the server and client standing on it."""
    return any(within(module, f"agentsessions.{p}") for p in ("wire", "server", "client"))


def _room(name: str) -> int:
    """The index of the journal room ``name`` is in, or -1 outside them."""
    return next((i for i, room in enumerate(JOURNAL_ROOMS) if within(name, room)), -1)


def _room_violations(module: str, name: str) -> list[str]:
    here = _room(module)
    if within(module, "agentsessions.journal") and here == -1 and module != "agentsessions.journal":
        return [f"{module}: every journal module lives in one of {', '.join(JOURNAL_ROOMS)}"]
    if here >= 0 and _room(name) > here:
        return [f"{module}: {JOURNAL_ROOMS[here]} imports the upper room {name}"]
    return []


def package_modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield module_name(path), path


def test_the_package_has_modules_to_check() -> None:
    names = {name for name, _ in package_modules()}
    assert {
        "agentsessions.journal.stores.store",
        "agentsessions.cli.app",
        "agentsessions.errors",
    } <= names


@pytest.mark.parametrize(("module", "path"), list(package_modules()), ids=lambda v: str(v))
def test_imports_follow_the_layers(module: str, path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    found = list(imports(source, module, path.name == "__init__.py"))
    assert violations(module, found) == []


@pytest.mark.parametrize("path", sorted((ROOT / "harnesses").rglob("*.py")), ids=lambda p: p.name)
def test_the_shipped_harnesses_speak_v1_not_the_journal(path: Path) -> None:
    module = module_name(path)
    found = list(imports(path.read_text(encoding="utf-8"), module, path.name == "__init__.py"))
    assert violations(module, found) == []


# --- the checker itself catches what it must ------------------------------------------------


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("agentsessions.journal.x", "from agentsessions.controller import run"),
        ("agentsessions.journal.x", "from ..cli import app"),
        ("agentsessions.journal.x", "import rich.console"),
        ("agentsessions.controller.x", "import typer"),
        ("agentsessions.controller.x", "from agentsessions.runtimes import local"),
        ("agentsessions.controller.x", "from ..server import service"),
        ("agentsessions.controller.x", "import importlib\nimportlib.import_module('grpc')"),
        ("agentsessions.cli.app", "import grpc"),
        ("agentsessions.sessions.local", "from google.protobuf import json_format"),
        ("agentsessions.cli.app", "from harnesses import echo"),
        ("agentsessions.v1.model", "from agentsessions.journal.format import canonical"),
        ("agentsessions.v1.schema", "from agentsessions.controller import spi"),
        ("agentsessions.journal.format.segment", "from agentsessions.journal.stores import store"),
        ("agentsessions.journal.format.segment", "from ..tools import verify"),
        ("agentsessions.journal.stores.store", "from agentsessions.journal.tools import verify"),
        ("agentsessions.journal.loose", "from agentsessions.errors import FormatError"),
        ("harnesses.chat", "from agentsessions.journal.format import records"),
        ("agentsessions.models.echo", "from agentsessions.journal.stores.store import Store"),
    ],
)
def test_the_checker_catches_upward_imports(module: str, source: str) -> None:
    assert violations(module, list(imports(source, module)))


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("agentsessions.journal.format.x", "from agentsessions.errors import FormatError"),
        ("agentsessions.journal.format.x", "from . import canonical"),
        ("agentsessions.journal.format.x", "from agentsessions.v1 import numbers"),
        ("agentsessions.journal.stores.x", "from agentsessions.journal.format import segment"),
        ("agentsessions.journal.tools.x", "from agentsessions.journal.stores.store import Store"),
        ("agentsessions.journal.tools.x", "from ..format import canonical"),
        ("agentsessions.v1.schema", "from agentsessions.v1 import model"),
        ("harnesses.chat", "from agentsessions.v1 import model"),
        ("agentsessions.controller.x", "from agentsessions.journal import store"),
        ("agentsessions.server.x", "import grpc"),
        ("agentsessions.server.x", "from google.protobuf import json_format"),
        ("agentsessions.cli.app", "import typer\nimport rich"),
    ],
)
def test_the_checker_allows_downward_imports(module: str, source: str) -> None:
    assert violations(module, list(imports(source, module))) == []
