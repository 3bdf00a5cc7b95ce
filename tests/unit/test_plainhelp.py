"""The root ``--help`` page laid out without rich is the page rich prints, at every width.

:mod:`agentsessions.cli.plainhelp` computes, for a stdout that is no terminal, the lines
rich would print for the root page, so that ``agentsessions --help | less`` imports no rich.
These tests compare the two at every width from 20 to 200 columns (rich's word wrapping,
ellipses, panels and column widths), check that only narrow widths are left to rich, and
that the fast path leaves any hint of a terminal or of colour to rich.
"""

from __future__ import annotations

import io
from contextlib import redirect_stdout

import pytest

from agentsessions.cli import fasthelp, helpdraw, plainhelp
from agentsessions.cli.gen import roothelp as values


def rich_page(monkeypatch: pytest.MonkeyPatch, width: int) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    out = io.StringIO()
    with redirect_stdout(out):
        helpdraw.page(
            values.USAGE,
            values.HELP,
            values.DEPRECATED,
            values.OPTION_PANELS,
            values.COMMAND_PANELS,
            values.EPILOG,
        )
    return out.getvalue()


def test_the_plain_page_is_riches_at_every_width(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in fasthelp.COLOUR_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("TERMINAL_WIDTH", raising=False)
    assert values.PLAIN is not None  # the root page is one plainhelp lays out
    left_to_rich = []
    for width in range(20, 201):
        ours = plainhelp.page(width, *values.PLAIN)
        if ours is None:
            left_to_rich.append(width)
            continue
        assert ours == rich_page(monkeypatch, width), width
    assert max(left_to_rich) < 70  # only a narrow page is left to rich's column collapse


def test_a_long_word_is_cut_with_an_ellipsis_and_prose_folds() -> None:
    assert plainhelp.wrap("ab nats://HOST:PORT?x=1, tail", 10, "ellipsis") == [
        "ab ",
        "nats://HO…",
        "tail",
    ]
    assert plainhelp.wrap("abcdefghijkl mn", 5, "fold") == ["abcde", "fghij", "kl mn"]


def test_a_terminal_or_colour_is_riches(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        encoding = "utf-8"

        def isatty(self) -> bool:
            return True

    for name in fasthelp.COLOUR_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("TERMINAL_WIDTH", raising=False)
    monkeypatch.setenv("COLUMNS", "91")
    with redirect_stdout(io.StringIO()):
        assert fasthelp.plain_width() == 91
    monkeypatch.setenv("TERMINAL_WIDTH", "77")  # typer's console: the width it is given
    with redirect_stdout(io.StringIO()):
        assert fasthelp.plain_width() == 77
    with redirect_stdout(Tty()):
        assert fasthelp.plain_width() is None
    monkeypatch.setenv("FORCE_COLOR", "1")
    with redirect_stdout(io.StringIO()):
        assert fasthelp.plain_width() is None
