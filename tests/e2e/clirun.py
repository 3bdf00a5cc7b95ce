"""What the e2e tests drive the CLI with: a ``Cli`` runner, its ``Run`` result, a clean
environment. A module of its own (not ``conftest``) so that tests import it by a name no other
test directory's conftest shares."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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

    def fast(
        self,
        *args: str,
        env: Mapping[str, str] | None = None,
        home: bool = True,
        stdin: str = "",
    ) -> Run:
        """Run the same app in-process with typer's CliRunner (no interpreter start-up).

        As ``run`` sees it: the scrubbed environment (``AGENTSESSIONS_*``/``XDG_*`` unset,
        ``env`` on top, for the run only), ``cwd`` as the working directory, stderr apart,
        ``stdin`` as standard input (empty, as ``run``'s closed one, by default).
        What only a process has stays with ``run``: variables read at import, signals, the
        real streams and entry point. An exception that escapes the app (a subprocess would
        print its traceback) lands in ``err``, so ``ok``/``fails`` show it.
        """
        import contextlib
        import traceback

        from typer.testing import CliRunner

        from agentsessions.cli.app import app

        scrubbed: dict[str, str | None] = {
            k: None for k in os.environ if k.startswith(("AGENTSESSIONS_", "XDG_"))
        }
        scrubbed.update({"COLUMNS": "200", **(env or {})})
        argv = ["--home", str(self.home)] if home else []
        with contextlib.chdir(self.cwd):
            result = CliRunner().invoke(app, [*argv, *args], input=stdin, env=scrubbed)
        err = result.stderr
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            exc = result.exception
            err += "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        return Run(args, result.exit_code, result.stdout, err)

    def create(self, *args: str) -> str:
        """Create a session (in-process) and return its uid."""
        return str(self.fast("create", "--json", *args).ok().json()["uid"])

    def import_fixture(self, *args: str) -> str:
        """Import the shipped Go fixture (in-process) and return the new uid."""
        return str(self.fast("import", str(FIXTURE), "--json", *args).ok().json()["uid"])
