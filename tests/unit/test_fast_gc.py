"""A command read without typer runs with the cycle collector's youngest generation raised
(:data:`agentsessions.cli.fast.GC_GEN0`), and gives the caller's thresholds back: an
in-process caller, and a command line left to typer, keep their own."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentsessions.cli import fast, reading


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    """The thresholds a caller had, put back after the test whatever it did."""
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*before)


def test_a_fast_command_runs_with_the_raised_threshold_and_restores_the_callers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, thresholds: tuple[int, int, int]
) -> None:
    seen: list[tuple[int, int, int]] = []

    def list_sessions(state: Any, **values: Any) -> None:
        seen.append(gc.get_threshold())

    monkeypatch.setattr(reading, "list_sessions", list_sessions)
    assert fast.run_command(["--home", str(tmp_path / "home"), "list"]) == 0
    assert seen == [(fast.GC_GEN0, *thresholds[1:])]
    assert gc.get_threshold() == thresholds


def test_a_failing_command_restores_the_callers_threshold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, thresholds: tuple[int, int, int]
) -> None:
    def list_sessions(state: Any, **values: Any) -> None:
        raise RuntimeError("boom")  # not one the command reports: it propagates

    monkeypatch.setattr(reading, "list_sessions", list_sessions)
    with pytest.raises(RuntimeError, match="boom"):
        fast.run_command(["--home", str(tmp_path / "home"), "list"])
    assert gc.get_threshold() == thresholds


def test_a_command_line_left_to_typer_keeps_the_callers_threshold(
    thresholds: tuple[int, int, int],
) -> None:
    assert fast.run_command(["list", "--no-such-option"]) is None
    assert gc.get_threshold() == thresholds
