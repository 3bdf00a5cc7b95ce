"""Our ``--help`` pages are typer's, byte for byte, without importing ``typer.rich_utils``.

:mod:`agentsessions.cli.helpview` ports typer's rich help layout onto rich's core so that
``--help`` skips markdown-it and pygments. These tests draw every command's and group's page
with both renderers, plain and coloured, and require the same bytes: a typer or rich upgrade
that changes the layout fails here instead of giving two looks.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import redirect_stdout

import pytest
import typer.main
import typer.rich_utils
from typer import _click
from typer.core import TyperGroup

from agentsessions.cli.app import app
from agentsessions.cli.helpview import HelpCommand, HelpGroup, print_help


def pages() -> Iterator[tuple[str, _click.Command, _click.Context]]:
    """(path, command, its context) for the root, every command and every group's command."""
    root = typer.main.get_command(app)
    assert isinstance(root, TyperGroup)
    root_ctx = root.make_context("agentsessions", [], resilient_parsing=True)
    yield "agentsessions", root, root_ctx
    for name in root.list_commands(root_ctx):
        command = root.get_command(root_ctx, name)
        assert command is not None
        ctx = command.make_context(name, [], parent=root_ctx, resilient_parsing=True)
        yield name, command, ctx
        if isinstance(command, TyperGroup):
            for sub_name in command.list_commands(ctx):
                sub = command.get_command(ctx, sub_name)
                assert sub is not None
                sub_ctx = sub.make_context(sub_name, [], parent=ctx, resilient_parsing=True)
                yield f"{name} {sub_name}", sub, sub_ctx


def draw(render: object, command: _click.Command, ctx: _click.Context) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        if render is print_help:
            print_help(command, ctx)
        else:
            typer.rich_utils.rich_format_help(obj=command, ctx=ctx, markup_mode="rich")
    return out.getvalue()


def test_every_command_draws_its_help_without_typer_rich_utils() -> None:
    found = list(pages())
    assert len(found) > 20  # the root, ~19 commands, compute's two
    for path, command, _ in found:
        assert isinstance(command, HelpCommand | HelpGroup), path


@pytest.mark.parametrize("color", [False, True], ids=["plain", "color"])
@pytest.mark.parametrize("columns", ["80", "123"])
def test_help_pages_are_typers_byte_for_byte(
    monkeypatch: pytest.MonkeyPatch, color: bool, columns: str
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.delenv("TERMINAL_WIDTH", raising=False)
    if color:
        monkeypatch.setenv("FORCE_COLOR", "1")
        monkeypatch.setattr(typer.rich_utils, "FORCE_TERMINAL", True)  # read at its import
    else:
        monkeypatch.delenv("FORCE_COLOR", raising=False)
        monkeypatch.setattr(typer.rich_utils, "FORCE_TERMINAL", None)
    for path, command, ctx in pages():
        ours = draw(print_help, command, ctx)
        assert ours == draw(typer.rich_utils, command, ctx), path
        assert "Usage: " in ours and ("\x1b[" in ours) == color, path
