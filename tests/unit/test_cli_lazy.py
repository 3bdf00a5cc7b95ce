"""The command line builds only the command it runs, and is the same command line as typer's.

:func:`agentsessions.cli.app.root_command` (what ``main`` runs) defers turning each command's
signature into click parameters until the command is looked up. These tests hold it to the
group typer builds eagerly from ``app`` (same commands, order, parameters, help) and check
that ``list`` builds ``list`` alone, while a typo still gets typer's suggestion.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import typer.main
from typer.core import TyperGroup

import agentsessions.cli  # noqa: F401  (registers every command)
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
