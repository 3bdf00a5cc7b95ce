"""Global options where users type them, a ``--home`` that swallows no word, and reads that
never create a home (issue 17, section 3)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest
from clirun import Cli, Run
from typer.testing import CliRunner

from agentsessions.cli.app import app, root_command

UID = "sess-0123456789abcdef01234567"


def invoke(cwd: Path, *args: str) -> Run:
    """The CLI in-process, run from ``cwd`` (relative homes land there)."""
    before = Path.cwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    finally:
        os.chdir(before)
    return Run(args, result.exit_code, result.stdout, result.stderr)


def tree(where: Path) -> list[str]:
    return sorted(str(p.relative_to(where)) for p in where.rglob("*"))


@pytest.mark.parametrize(
    "args",
    [
        ("--home", "--json", "list"),
        ("--home=-x", "list"),
        ("--home", "compute", "list"),
        ("--home", "list"),
        ("list", "--home", "--json"),
    ],
)
def test_a_home_that_is_another_word_is_refused(tmp_path: Path, args: Sequence[str]) -> None:
    run = invoke(tmp_path, *args).fails(2)
    assert "--home" in run.err
    assert tree(tmp_path) == []  # no ./--json, no ./compute


def test_a_command_name_is_a_home_when_that_directory_exists(tmp_path: Path) -> None:
    (tmp_path / "compute").mkdir()
    invoke(tmp_path, "--home", "compute", "list").ok()
    invoke(tmp_path, "--home", "./list", "create").ok()  # ./NAME: made on purpose
    assert (tmp_path / "list" / "sessions").is_dir()


@pytest.mark.parametrize(
    "read",
    [
        ("list",),
        ("get", UID),
        ("log", UID),
        ("verify", UID),
        ("verify", "--all"),
        ("export", UID, "-o", "out.agx"),
        ("replay", UID),
        ("follow", UID, "--idle-exit", "0.1"),
    ],
)
def test_a_read_on_a_missing_home_says_so_and_creates_nothing(
    tmp_path: Path, read: Sequence[str]
) -> None:
    run = invoke(tmp_path, "--home", "nohome", *read).fails(3)
    assert "no sessions home at nohome" in run.err
    assert tree(tmp_path) == []


def test_global_options_typed_after_the_command(cli: Cli) -> None:
    uid = cli.fast("create", "--name", "after").ok().out.strip()
    listed = cli.run("list", "--json", "--home", str(cli.home), home=False).ok().json()
    assert [s["uid"] for s in listed["sessions"]] == [uid]
    cli.run("get", uid, f"--home={cli.home}", home=False).ok()
    cli.run("compute", "list", "--home", str(cli.home), home=False).ok()
    # an option's value is never taken for a global option, nor anything after --
    home = str(cli.home)
    out = invoke(cli.cwd, "exec", "--input", "--home", "--model", "echo", "--home", home)
    assert "echo:--home" in out.ok().out
    assert tree(cli.cwd) == []


def test_a_command_keeps_an_option_of_its_own_name() -> None:
    from agentsessions.cli.globalopts import hoist

    root = root_command()
    ctx = root.make_context("agentsessions", ["--help"], resilient_parsing=True)
    serve = ["serve", "--store", "memory", "--home", "H"]
    assert hoist(root, ctx, serve) == ["--home", "H", "serve", "--store", "memory"]
    assert hoist(root, ctx, ["list", "--", "--home", "H"]) == ["list", "--", "--home", "H"]
