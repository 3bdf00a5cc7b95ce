"""``list`` and ``get`` to a pipe write rich's bytes without rich.

:func:`agentsessions.cli.sessionview.print_page` and
:func:`~agentsessions.cli.sessionview.print_session`
write a table that rich would only pad straight to stdout (so ``list`` or ``get`` in a shell
loop never imports rich). Each case draws the same page
both ways (the plain path, and rich with the plain path turned off) and requires equal
bytes; pages that rich must wrap, fold or style fall back to rich and still print the same.
"""

from __future__ import annotations

import io
import random
from contextlib import redirect_stdout

import pytest

from agentsessions.cli import render, sessionview
from agentsessions.sessions.values import Session, SessionPage

ASCII = "abcxyz-_.:/ []()'\"=~"
ALPHABET = ASCII + "é漢🙂\t\x1b"  # wide, escaped and control characters: rich draws those
STATES = ("COMPUTE_NONE", "COMPUTE_LIVE", "COMPUTE_COLD", "COMPUTE_GONE", "")
EXECS = ("EXEC_PENDING", "EXEC_RUNNING", "EXEC_COMPLETED", "EXEC_FAILED", "")


def session(rng: random.Random, i: int) -> Session:
    letters = ASCII if rng.random() < 0.9 else ALPHABET

    def text(most: int) -> str:
        return "".join(rng.choice(letters) for _ in range(rng.randrange(most)))

    return Session(
        uid=f"sess-{i:024x}",
        name=text(rng.choice((6, 20, 20, 120))),
        harness=rng.choice(("", "echo", "chat", "counter", text(30))),
        last_seq=rng.choice((0, 7, 123_456, 10**12)),
        compute_state=rng.choice(STATES),
        exec_state=rng.choice(EXECS),
        create_time_ns=rng.choice((0, 1_796_125_426_965_146_638)),
        damaged="session.json: truncated" if rng.random() < 0.02 else "",
    )


def printed(page: SessionPage, project: str, plain: bool, monkeypatch: pytest.MonkeyPatch) -> str:
    out = io.StringIO()
    with monkeypatch.context() as patch:
        if not plain:
            patch.setattr(sessionview, "print_plain_page", lambda page, project: False)
        with redirect_stdout(out):
            sessionview.print_page(page, project)
    return out.getvalue()


def test_an_ordinary_page_is_written_without_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    page = SessionPage(
        tuple(Session(uid=f"sess-{i:024x}", name=f"s{i}", create_time_ns=10**18) for i in range(3)),
        next_cursor="MTc5NjEyNTQy",
    )
    with redirect_stdout(io.StringIO()):
        assert sessionview.print_plain_page(page, "acme")
    assert printed(page, "acme", True, monkeypatch) == printed(page, "acme", False, monkeypatch)


@pytest.mark.parametrize("seed", range(40))
def test_the_plain_page_is_riches_page_byte_for_byte(
    monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    rng = random.Random(seed)
    sessions = tuple(session(rng, i) for i in range(rng.randrange(0, 12)))
    page = SessionPage(sessions, next_cursor=rng.choice(("", "MTc5NjEyNTQyNjk2NTE0NjYzOABz")))
    project = rng.choice(("default", "acme", "p" * 60))
    ours = printed(page, project, True, monkeypatch)
    assert ours == printed(page, project, False, monkeypatch)


def test_the_cases_above_mostly_take_the_plain_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The byte-for-byte cases are worth something only if most of them go the plain way."""
    monkeypatch.delenv("COLUMNS", raising=False)  # as the cases above: a pipe, no width set
    plain = 0
    for seed in range(40):
        rng = random.Random(seed)
        sessions = tuple(session(rng, i) for i in range(rng.randrange(0, 12)))
        page = SessionPage(sessions, next_cursor=rng.choice(("", "MTc5NjEyNTQyNjk2NTE0NjYzOABz")))
        with redirect_stdout(io.StringIO()):
            plain += sessionview.print_plain_page(page, rng.choice(("default", "acme", "p" * 60)))
    assert 15 <= plain < 40  # both paths are exercised


def test_a_terminal_width_always_goes_through_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    page = SessionPage((Session(uid=f"sess-{1:024x}", name="one"),))
    with redirect_stdout(io.StringIO()):
        assert not sessionview.print_plain_page(page, "default")


def details(session: Session, memory: str, plain: bool, monkeypatch: pytest.MonkeyPatch) -> str:
    out = io.StringIO()
    with monkeypatch.context() as patch:
        if not plain:
            patch.setattr(sessionview, "plain_details", lambda rows, width: None)
        with redirect_stdout(out):
            sessionview.print_session(session, memory)
    return out.getvalue()


@pytest.mark.parametrize("seed", range(30))
def test_get_without_rich_is_riches_grid_byte_for_byte(
    monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    rng = random.Random(seed)
    base = session(rng, seed)
    labels = {f"k{i}": "v " * rng.randrange(40) for i in range(rng.randrange(4))}
    info = Session(
        uid=base.uid,
        name=base.name,
        harness=base.harness,
        labels=labels,
        annotations={"note": base.name[:10]} if rng.random() < 0.5 else {},
        last_seq=base.last_seq,
        last_hash=rng.choice(("", "d5" * 32)),
        compute_state=base.compute_state,
        exec_state=base.exec_state,
        create_time_ns=base.create_time_ns,
        update_time_ns=base.create_time_ns,
        parent_uid=rng.choice(("", f"sess-{7:024x}")),
        fork_seq=rng.randrange(9),
        deleted=rng.random() < 0.3,
    )
    memory = rng.choice(("", "none (stateless harness: the journal is its state)"))
    assert details(info, memory, True, monkeypatch) == details(info, memory, False, monkeypatch)


def test_an_ordinary_get_is_written_without_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    info = Session(uid=f"sess-{3:024x}", name="triage", last_hash="d5" * 32)
    rows = sessionview.session_rows(info, "none")
    assert sessionview.plain_details(rows, render.PIPE_WIDTH) is not None
    assert details(info, "none", True, monkeypatch) == details(info, "none", False, monkeypatch)
