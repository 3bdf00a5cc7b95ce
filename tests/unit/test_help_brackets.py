"""Every bracketed word of a help text is shown: rich reads ``[store]`` or ``[tools.NAME]``
as markup and would drop it (issue 17, section 3), so :mod:`agentsessions.cli.helpview`
escapes them when typer builds a command."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from contextlib import redirect_stdout

import pytest
import typer.main
from typer import _click
from typer.core import TyperGroup

from agentsessions.cli.app import app, root_command
from agentsessions.cli.helpview import escape_markup, print_help

BRACKETED = re.compile(r"\[[^\[\]]*\]")


def pages(root: TyperGroup) -> Iterator[tuple[str, _click.Command, _click.Context]]:
    """(path, command, context) for the root, every command and every group's command."""
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
                yield (
                    f"{name} {sub_name}",
                    sub,
                    sub.make_context(sub_name, [], parent=ctx, resilient_parsing=True),
                )


def source_texts(command: _click.Command) -> list[str]:
    """The help texts of ``command`` as written in the source (escapes taken out)."""
    texts = [command.help, command.epilog, *(getattr(p, "help", None) for p in command.params)]
    return [t.replace("\\[", "[") for t in texts if t]


def test_escape_keeps_non_tags_and_is_idempotent() -> None:
    assert (
        escape_markup("[store] url, [SESSION|PATH], a[0]") == "\\[store] url, [SESSION|PATH], a[0]"
    )
    assert escape_markup(escape_markup("[tools.NAME]")) == "\\[tools.NAME]"
    assert escape_markup(None) is None


@pytest.mark.parametrize("build", ["eager", "lazy"])
def test_every_bracketed_word_of_the_source_is_in_the_rendered_help(
    monkeypatch: pytest.MonkeyPatch, build: str
) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # no word is wrapped
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    root = typer.main.get_command(app) if build == "eager" else root_command()
    assert isinstance(root, TyperGroup)
    checked = 0
    for path, command, ctx in pages(root):
        out = io.StringIO()
        with redirect_stdout(out):
            print_help(command, ctx)
        shown = " ".join(out.getvalue().split())
        for text in source_texts(command):
            for word in BRACKETED.findall(text):
                assert " ".join(word.split()) in shown, f"{path}: {word!r} is not shown"
                checked += 1
    assert checked >= 2  # at least --store's [store] and --tools' [tools.NAME]
