"""Every tracked file lies inside the repository's layout (issue 17, item 1).

A command that takes a flag for a directory (``--home --json`` once made a catalog under
``./--json/``) leaves files at the top of the checkout that ``git add -A`` then commits.
The top level is a closed list: a new entry is a decision, made here.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The top of the repository: files, and directories (a trailing slash).
TOP_LEVEL = {
    ".ci/",
    ".gitignore",
    "CHANGELOG.md",
    "LICENSE",
    "README.md",
    "agentsessions/",
    "bench/",
    "docs/",
    "examples/",
    "harnesses/",
    "proto/",
    "mkdocs.yml",
    "pyproject.toml",
    "tests/",
    "zipapp.py",
}


def _tracked() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout (an sdist or an unpacked copy): nothing is tracked")
    proc = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
    )
    return [name for name in proc.stdout.decode().split("\0") if name]


def _entry(path: str) -> str:
    head, sep, _ = path.partition("/")
    return head + "/" if sep else head


def test_every_tracked_file_is_inside_the_layout() -> None:
    stray = sorted({_entry(p) for p in _tracked()} - TOP_LEVEL)
    assert not stray, (
        f"tracked files outside the layout (remove them, or add to TOP_LEVEL): {stray}"
    )


def test_the_entry_of_a_path_is_its_top_directory_or_file() -> None:
    assert _entry("--json/catalog.sqlite3") == "--json/"
    assert _entry("compute/catalog.sqlite3") == "compute/"
    assert _entry("README.md") == "README.md"
    assert "--json/" not in TOP_LEVEL and "compute/" not in TOP_LEVEL
