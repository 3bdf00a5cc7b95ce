"""Docs are tests: the README's tour runs as written; its test command is the one CI runs.
The guide's blocks are run by test_guide.py."""

from __future__ import annotations

import re
from pathlib import Path

from guide import ROOT, blocks, run_block

README = ROOT / "README.md"


def test_ci_runs_exactly_the_readme_test_command() -> None:
    demo, test_command = (b.code.strip() for b in blocks(README)[:2])
    assert test_command in (ROOT / ".ci" / "run").read_text()
    assert "agentsessions demo" in demo


def test_the_readme_stays_short() -> None:
    """A newcomer reads it whole: what it is, the two commands, a tour, links (~150 lines)."""
    assert README.read_text().count("\n") <= 150


def test_the_ten_line_tour_runs_as_written(tmp_path: Path) -> None:
    tour = blocks(README)[2]
    assert tour.lang == "bash" and len(tour.code.splitlines()) <= 10
    result = run_block(tour, tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "model_calls 0" in result.stdout and "identical   yes" in result.stdout
    assert re.search(r"trip\.agx: 10 records verified, last seq 10", result.stdout)
    assert re.search(r"^sess-\S+ +branch +chat +6 ", result.stdout, re.M)  # the fork: 5 + marker
    pages = (tmp_path / "scratch").glob("tmp.*/trip.html")
    assert [p.read_bytes()[:15] for p in pages] == [b"<!doctype html>"]


def test_the_library_example_runs_as_written(tmp_path: Path) -> None:
    block = blocks(README)[3]
    assert block.lang == "python"
    result = run_block(block, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines() == ["('echo:hello',)", "True 0"]


def test_the_github_producer_example_runs_as_written(tmp_path: Path) -> None:
    block = blocks(README)[4]
    assert block.lang == "bash" and "produce github" in block.code
    result = run_block(block, tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    replies = re.findall(
        r"^reply to octo/hello#1 \((sess-\w+)\):\nscripted-1-", result.stdout, re.M
    )
    assert len(replies) == 2 and len(set(replies)) == 1  # one issue, one session, two answers
    # log shows each input's author (its actor) before the text, which names it too
    assert re.search(r"INPUT .* \[mona@https://github\.com\] user: mona opened", result.stdout)
    assert re.search(r"INPUT .* \[hubot@https://github\.com\] user: hubot commented", result.stdout)
