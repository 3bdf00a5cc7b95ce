"""Lint, format and types are part of the test suite: ruff check, ruff format, mypy (strict).

Each runs from the repository root with the configuration in ``pyproject.toml``; a failure
shows the tool's own output. They are dev dependencies, so a missing tool fails too.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

TOOLS = {
    "ruff check": [sys.executable, "-m", "ruff", "check", "."],
    "ruff format": [sys.executable, "-m", "ruff", "format", "--check", "."],
    "mypy": [sys.executable, "-m", "mypy"],
}


@pytest.mark.parametrize("tool", list(TOOLS))
def test_tool_is_clean(tool: str) -> None:
    proc = subprocess.run(
        TOOLS[tool], cwd=ROOT, capture_output=True, text=True, timeout=280, check=False
    )
    assert proc.returncode == 0, f"{tool} failed:\n{proc.stdout}{proc.stderr}"
