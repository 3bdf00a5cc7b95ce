"""No function of the package (or the shipped harnesses) is over 60 lines.

A function that long does more than one step of its job; name the steps (issue 20). A
command's function counts its option declarations too: declare them as named option types
(``cli/serveflags.py``) so the function holds what it does. Generated code (``gen/``) is
not held to it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 60


def _long_functions(source: str, label: str) -> list[str]:
    """``label:line name (N lines)`` for each function of ``source`` over :data:`LIMIT`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > LIMIT:
                found.append(f"{label}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_no_function_is_over_the_limit() -> None:
    paths = [*(ROOT / "agentsessions").rglob("*.py"), *(ROOT / "harnesses").rglob("*.py")]
    found = []
    for path in sorted(p for p in paths if "gen" not in p.relative_to(ROOT).parts):
        rel = path.relative_to(ROOT).as_posix()
        found.extend(_long_functions(path.read_text(encoding="utf-8"), rel))
    assert found == []


def test_the_count_sees_a_long_function() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT))
    assert _long_functions(f"def f():\n{body}\n", "probe") == ["probe:1 f (61 lines)"]
    assert _long_functions("def g():\n    return 1\n", "probe") == []
