"""Layers import one way only: journal <- controller <- runtimes/models <- cli/server.

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

UPPER_LAYERS = ("cli", "server", "runtimes", "models", "harnesses")
UI_AND_WIRE = ("typer", "rich", "grpc", "click")


def module_name(path: Path, root: Path = ROOT) -> str:
    """``agentsessions/journal/store.py`` -> ``agentsessions.journal.store``."""
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
        if within(module, "agentsessions.journal") and within(name, "agentsessions"):
            allowed = within(name, "agentsessions.journal") or within(name, "agentsessions.errors")
            if not allowed:
                out.append(f"{module}: the journal layer imports {name}")
        if within(module, "agentsessions.journal") and name.split(".")[0] in UI_AND_WIRE:
            out.append(f"{module}: the journal layer imports {name}")
        if within(module, "agentsessions.controller"):
            upper = any(within(name, f"agentsessions.{layer}") for layer in UPPER_LAYERS)
            if upper or name.split(".")[0] in (*UI_AND_WIRE, "harnesses"):
                out.append(f"{module}: the controller imports {name}")
        if within(name, "grpc") and not within(module, "agentsessions.server"):
            out.append(f"{module}: only agentsessions.server may import grpc ({name})")
        if within(name, "harnesses") or within(name, "agentsessions.harnesses"):
            out.append(f"{module}: the package never imports harnesses ({name})")
    return out


def package_modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield module_name(path), path


def test_the_package_has_modules_to_check() -> None:
    names = {name for name, _ in package_modules()}
    assert {"agentsessions.journal.store", "agentsessions.cli.app", "agentsessions.errors"} <= names


@pytest.mark.parametrize(("module", "path"), list(package_modules()), ids=lambda v: str(v))
def test_imports_follow_the_layers(module: str, path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    found = list(imports(source, module, path.name == "__init__.py"))
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
        ("agentsessions.cli.app", "from harnesses import echo"),
    ],
)
def test_the_checker_catches_upward_imports(module: str, source: str) -> None:
    assert violations(module, list(imports(source, module)))


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("agentsessions.journal.x", "from agentsessions.errors import FormatError"),
        ("agentsessions.journal.x", "from . import canonical"),
        ("agentsessions.journal.x", "from agentsessions.journal.store import Store"),
        ("agentsessions.controller.x", "from agentsessions.journal import store"),
        ("agentsessions.server.x", "import grpc"),
        ("agentsessions.cli.app", "import typer\nimport rich"),
    ],
)
def test_the_checker_allows_downward_imports(module: str, source: str) -> None:
    assert violations(module, list(imports(source, module))) == []
