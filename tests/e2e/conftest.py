"""Drive the CLI as a user does: in-process with typer's CliRunner (``cli.fast``) unless the
process is the point (signals, Ctrl-C, closed pipes, kills, racing processes, variables read
at start-up, real stdin/streams, daemons), then a real subprocess (``cli.run``): an
interpreter start-up costs ~0.25 s of CPU, and the suite is CPU-bound on a loaded machine.

Every run gets an explicit ``--home`` under ``tmp_path`` and a scrubbed environment, so no
test ever reads or writes the real per-user data directory.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from clirun import FIXTURE, Cli


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A fresh, empty agentsessions home."""
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def cli(home: Path, tmp_path: Path) -> Cli:
    """The CLI bound to a fresh home, run from an empty working directory."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    return Cli(home, cwd)


def snapshot(home: Path) -> dict[str, str]:
    """sha256 of every file under ``home`` (SQLite's transient -wal/-shm files aside)."""
    out: dict[str, str] = {}
    for path in sorted(home.rglob("*")):
        if path.is_file() and not path.name.endswith(("-wal", "-shm")):
            out[path.relative_to(home).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture
def unchanged() -> Callable[[Path], Callable[[], None]]:
    """``check = unchanged(home)`` ... ``check()`` asserts no file under home changed."""

    def take(home: Path) -> Callable[[], None]:
        before = snapshot(home)

        def check() -> None:
            assert snapshot(home) == before

        return check

    return take


@pytest.fixture
def go_fixture() -> Path:
    """The shipped Go reference journal (a JSON array of 4 records)."""
    return FIXTURE


@pytest.fixture
def go_records() -> list[dict[str, Any]]:
    """The Go fixture's records (Seq, PrevHash, Hash, Fence, Event)."""
    records: list[dict[str, Any]] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return records
