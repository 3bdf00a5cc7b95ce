"""Drive the CLI as a user does: real subprocesses, or typer's CliRunner where speed matters.

Every run gets an explicit ``--home`` under ``tmp_path`` and a scrubbed environment, so no
test ever reads or writes the real per-user data directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "agentsessions" / "data" / "go-v0.1.2-completed.json"
ERROR_PREFIX = "agentsessions: error: "


@dataclass
class Run:
    """The outcome of one CLI invocation."""

    args: Sequence[str]
    code: int
    out: str
    err: str

    def json(self) -> Any:
        """stdout parsed as one JSON document."""
        return json.loads(self.out)

    def json_lines(self) -> list[Any]:
        """stdout parsed as JSON lines."""
        return [json.loads(line) for line in self.out.splitlines()]

    def ok(self) -> Run:
        """Assert success (showing stderr otherwise) and return self."""
        assert self.code == 0, f"{self.args} exited {self.code}: {self.err}"
        return self

    def fails(self, code: int) -> Run:
        """Assert the run failed with ``code`` and one error line (plus an optional hint)."""
        assert self.code == code, f"{self.args} exited {self.code}, not {code}: {self.err}"
        lines = self.err.splitlines()
        assert lines and lines[0].startswith(ERROR_PREFIX), self.err
        assert len(lines) <= 2, f"more than one error line: {self.err}"
        assert all(line.startswith("  hint: ") for line in lines[1:]), self.err
        assert "Traceback" not in self.err
        return self


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a CLI subprocess: no AGENTSESSIONS_* leaks, wide tables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTSESSIONS_", "XDG_"))}
    env["PYTHONPATH"] = str(ROOT)
    env["COLUMNS"] = "200"
    env.update(extra or {})
    return env


class Cli:
    """Runs ``agentsessions --home HOME ...`` as a subprocess (``run``) or in-process (``fast``)."""

    def __init__(self, home: Path, cwd: Path) -> None:
        self.home = home
        self.cwd = cwd

    def run(self, *args: str, env: Mapping[str, str] | None = None, home: bool = True) -> Run:
        """Run the real command line in a subprocess."""
        argv = [sys.executable, "-m", "agentsessions"]
        argv += ["--home", str(self.home)] if home else []
        proc = subprocess.run(
            [*argv, *args],
            cwd=self.cwd,
            env=clean_env(env),
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=120,
        )
        return Run(args, proc.returncode, proc.stdout, proc.stderr)

    def fast(self, *args: str) -> Run:
        """Run the same app in-process with typer's CliRunner (no interpreter start-up)."""
        from typer.testing import CliRunner

        from agentsessions.cli.app import app

        result = CliRunner().invoke(app, ["--home", str(self.home), *args], env={"COLUMNS": "200"})
        return Run(args, result.exit_code, result.stdout, result.stderr)

    def create(self, *args: str) -> str:
        """Create a session (in-process) and return its uid."""
        return str(self.fast("create", "--json", *args).ok().json()["uid"])

    def import_fixture(self, *args: str) -> str:
        """Import the shipped Go fixture (in-process) and return the new uid."""
        return str(self.fast("import", str(FIXTURE), "--json", *args).ok().json()["uid"])


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
