"""The single-file app: reproducible build, and the same results with nothing installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from clirun import Cli

ROOT = Path(__file__).resolve().parents[2]
COMPILED = (".so", ".pyd", ".dylib", ".dll")


def build(out: Path) -> subprocess.CompletedProcess[str]:
    """Run ``python zipapp.py -o out`` and return the finished process."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "zipapp.py"), "-o", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture(scope="module")
def pyz(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The zipapp, built once for this module."""
    out = tmp_path_factory.mktemp("pyz") / "agentsessions.pyz"
    proc = build(out)
    assert "MB" in proc.stdout and str(out) in proc.stdout
    return out


class Pyz:
    """Runs the zipapp as a user without the package: ``python -I -S app.pyz``."""

    def __init__(self, pyz: Path, home: Path, cwd: Path) -> None:
        self.pyz, self.home, self.cwd = pyz, home, cwd

    def __call__(self, *args: str) -> str:
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(self.cwd), "COLUMNS": "200"}
        proc = subprocess.run(
            [sys.executable, "-I", "-S", str(self.pyz), "--home", str(self.home), *args],
            cwd=self.cwd,
            env=env,
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=120,
        )
        assert proc.returncode == 0, f"{args} exited {proc.returncode}: {proc.stderr}"
        return proc.stdout


@pytest.fixture
def app(pyz: Path, tmp_path: Path) -> Pyz:
    """The zipapp bound to a fresh home, run from an empty directory."""
    cwd = tmp_path / "empty"
    cwd.mkdir()
    return Pyz(pyz, tmp_path / "pyz-home", cwd)


def test_rebuilding_gives_identical_bytes(pyz: Path, tmp_path: Path) -> None:
    again = tmp_path / "again.pyz"
    build(again)
    assert again.read_bytes() == pyz.read_bytes()


def test_archive_is_pure_python_with_data_and_bytecode(pyz: Path) -> None:
    with zipfile.ZipFile(pyz) as archive:
        names = set(archive.namelist())
    assert "__main__.py" in names
    assert "agentsessions/data/go-v0.1.2-completed.json" in names
    assert {"agentsessions/cli/app.py", "agentsessions/cli/app.pyc"} <= names
    assert {"typer/__init__.pyc", "rich/__init__.pyc", "rfc8785/__init__.py"} <= names
    assert not [n for n in names if n.endswith(COMPILED)]
    assert not [n for n in names if n.startswith(("msgspec/", "pyzstd/", "backports/"))]
    # no gRPC in a zipapp (grpcio and protobuf are compiled): the server is left out
    assert not [n for n in names if n.startswith(("agentsessions/server/", "grpc", "google/"))]
    assert pyz.read_bytes().startswith(b"#!/usr/bin/env python3\n")


def test_zipapp_runs_the_whole_journey_like_the_installed_cli(
    app: Pyz, cli: Cli, go_fixture: Path, tmp_path: Path
) -> None:
    assert "verify" in app("--help")
    uid = json.loads(app("import", str(go_fixture), "--json"))["uid"]
    assert [s["uid"] for s in json.loads(app("list", "--json"))["sessions"]] == [uid]
    log = app("log", uid, "--json")
    assert "MODEL_CALL" in app("log", uid)
    assert "4 records verified" in app("verify", uid)
    assert json.loads(app("verify", uid, "--strict", "--json"))["ok"] is True
    page = json.loads(app("view", uid, "-o", str(tmp_path / "pyz.html"), "--json"))
    assert page["verified"] is True and page["records"] == 4  # its CSS and JS read from the zip

    installed_uid = cli.import_fixture()
    assert cli.fast("log", installed_uid, "--json").ok().out == log

    out = tmp_path / "from-pyz.agx"
    compress = [] if shutil.which("zstd") else ["--no-compress"]
    summary = json.loads(app("export", uid, "-o", str(out), "--json", *compress))
    assert summary["compressed"] is (not compress)
    assert json.loads(app("verify", str(out), "--json"))["ok"] is True
    again = json.loads(app("import", str(out), "--json"))["uid"]
    assert app("log", again, "--json") == log

    crossed = cli.fast("import", str(out), "--json").ok().json()
    assert crossed["last_hash"] == summary["last_hash"]
    assert cli.fast("log", crossed["uid"], "--json").ok().out == log
