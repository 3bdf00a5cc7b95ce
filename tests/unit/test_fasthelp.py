"""The root ``--help`` page without typer is typer's page, byte for byte, and the fast path
answers only the command lines whose answer it knows.

:mod:`agentsessions.cli.fast` answers ``agentsessions --help`` from the values
:mod:`agentsessions.cli.helpgen` wrote out (:mod:`agentsessions.cli.gen.roothelp`); typer
answers every other command line. These tests hold the generated values current, the fast
page equal to the one typer's parser prints (plain and coloured, two widths), and the fast
path's shapes strict.
"""

from __future__ import annotations

import pytest

from agentsessions.cli import fast, helpgen
from agentsessions.cli.app import root_command


def test_the_generated_root_page_is_current() -> None:
    # stale: python -m agentsessions.cli.helpgen
    assert helpgen.TARGET.read_text(encoding="utf-8") == helpgen.source()


@pytest.mark.parametrize("color", [False, True], ids=["plain", "color"])
@pytest.mark.parametrize("columns", ["80", "123"])
def test_the_fast_root_page_is_the_one_typer_prints(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], color: bool, columns: str
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.delenv("TERMINAL_WIDTH", raising=False)
    if color:
        monkeypatch.setenv("FORCE_COLOR", "1")
    else:
        monkeypatch.delenv("FORCE_COLOR", raising=False)
    assert fast.answer(["--help"]) == 0
    ours = capsys.readouterr().out
    assert root_command().main(["--help"], standalone_mode=False) == 0
    assert ours == capsys.readouterr().out
    assert ("\x1b[" in ours) == color
    assert "agentsessions demo" in ours and "produce" in ours


@pytest.mark.parametrize(
    "argv", [["--help"], ["-h"], ["--home", "h", "--help"], ["--home=h", "-h"]]
)
def test_the_root_help_shapes_are_answered(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert fast.answer(argv) == 0
    assert "Usage: agentsessions [OPTIONS] COMMAND [ARGS]..." in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        [],  # the root callback runs (it checks the home) before the page
        ["log", "sess-1"],  # (list, get and exec are answered too: tests/unit/test_fastcommands.py)
        ["list", "--help"],
        ["--home", "--json", "--help"],  # --home swallows a word: typer refuses it
        ["--home", "-h"],
        ["--json", "--help"],
        ["--help", "list"],
        ["--home", "a", "b", "--help"],
    ],
)
def test_other_command_lines_go_to_typer(argv: list[str]) -> None:
    assert fast.answer(argv) is None


def test_a_completion_request_goes_to_typer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(fast.COMPLETE_VAR, "complete_bash")
    assert fast.answer(["--help"]) is None
