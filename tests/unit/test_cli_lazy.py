"""The command line builds only the command it runs, and is the same command line as typer's.

:func:`agentsessions.cli.app.root_command` (what ``main`` runs) defers turning each command's
signature into click parameters until the command is looked up. These tests hold it to the
group typer builds eagerly from ``app`` (same commands, order, parameters, help) and check
that ``list`` builds ``list`` alone, while a typo still gets typer's suggestion.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import typer.main
from typer.core import TyperGroup

from agentsessions.cli.app import app, root_command


def shape(group: TyperGroup) -> list[tuple[str, str, str, list[str]]]:
    """(name, class, help, parameter names) of every subcommand, groups' included."""
    ctx = group.make_context("agentsessions", [], resilient_parsing=True)
    out = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        out.append(
            (
                name,
                type(command).__name__,
                command.help or "",
                [p.name or "" for p in command.params],
            )
        )
        if isinstance(command, TyperGroup):
            out.extend((f"{name} {n}", *rest) for n, *rest in shape(command))  # type: ignore[misc]
    return out


def test_the_lazy_root_is_the_group_typer_builds() -> None:
    eager = typer.main.get_command(app)
    assert isinstance(eager, TyperGroup)
    lazy = root_command()
    assert type(lazy) is type(eager)
    assert [p.name for p in lazy.params] == [p.name for p in eager.params]
    assert shape(lazy) == shape(eager)
    assert len(shape(lazy)) >= 20  # 18 commands and compute's two


def test_list_builds_only_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = root_command()
    assert root.commands == {}  # nothing built before the parse
    code = root.main(["--home", str(tmp_path), "list"], standalone_mode=False)
    assert code == 0
    assert list(root.commands) == ["list"]
    assert "no sessions in project 'default'" in capsys.readouterr().out


def test_a_mistyped_command_still_gets_a_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    root = root_command()
    assert root.main(["lst"], standalone_mode=False) == 2
    err = capsys.readouterr().err
    assert "No such command 'lst'. Did you mean 'list'?" in err


def test_the_root_help_is_drawn_from_summaries_and_is_typers(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    root = root_command()
    assert root.main(["--help"], standalone_mode=False) == 0
    lazy = capsys.readouterr().out
    assert root.commands == {}  # the commands panel needed no command built
    eager = typer.main.get_command(app)
    assert isinstance(eager, TyperGroup)
    assert eager.main(["--help"], standalone_mode=False) == 0
    assert lazy == capsys.readouterr().out
    assert "compute" in lazy and "Start here" in lazy


def test_the_command_table_is_what_the_modules_register() -> None:
    """commands.COMMANDS names each command's module and its summary, in typer's order."""
    from agentsessions.cli.commands import COMMANDS

    eager = typer.main.get_command(app)
    assert isinstance(eager, TyperGroup)
    ctx = eager.make_context("agentsessions", [], resilient_parsing=True)
    names = eager.list_commands(ctx)
    assert [name for name, _, _ in COMMANDS] == names
    for name, module, summary in COMMANDS:
        command = eager.get_command(ctx, name)
        assert command is not None
        assert (command.help or "").split("\n\n")[0] == summary, name
        callback = command.callback
        if isinstance(command, TyperGroup):  # a group: the module of its commands
            sub = next(iter(command.commands.values()))
            callback = sub.callback
        assert callback is not None
        assert callback.__module__ == f"agentsessions.cli.{module}", name


def test_a_command_imports_its_own_module_only() -> None:
    """Running a command imports the module of that command and no other command module."""
    code = (
        "import sys\n"
        "from agentsessions.cli.app import root_command\n"
        "root_command().main(['--home', sys.argv[1], 'list', '--json'], standalone_mode=False)\n"
        "from agentsessions.cli.commands import modules\n"
        "print(' '.join(m for m in modules() if 'agentsessions.cli.' + m in sys.modules))\n"
    )
    import subprocess
    import sys

    with tempfile.TemporaryDirectory() as home:
        out = subprocess.run(
            [sys.executable, "-c", code, home], capture_output=True, text=True, check=True
        ).stdout
    assert out.splitlines()[-1].split() == ["list"]
