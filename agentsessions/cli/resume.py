"""``resume``: bring a session back: restore suspended compute and finish an open turn."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import typer

from agentsessions.cli.context import command_state, open_engine
from agentsessions.cli.options import (
    DEFAULT_RUNTIME,
    HarnessOpt,
    JsonOpt,
    RuntimeOpt,
    SessionArg,
    WaitOpt,
    session_uid,
)
from agentsessions.cli.root import typer_app as app
from agentsessions.cli.stream import TurnPrinter, note_done

if TYPE_CHECKING:
    from agentsessions.sessions.values import Frame, Session, Turn


@app.command(epilog="Example: agentsessions resume sess-0123456789abcdef01234567")
def resume(
    ctx: typer.Context,
    session: SessionArg,
    harness: HarnessOpt = "",
    runtime: RuntimeOpt = DEFAULT_RUNTIME,
    wait: WaitOpt = 0.0,
    as_json: JsonOpt = False,
) -> None:
    """Bring a session back: restore suspended compute and finish an open turn.

    A turn cut off mid-way (a killed exec) is completed from its journal: recorded effects
    are served, a model call that has no recorded answer is made once more, nothing
    recorded is repeated. Says which of the two it did (possibly neither).

    A failed turn (its last event is ERROR) is open too, and is retried the same way: its
    ERROR events are audit only and are skipped, so the turn ends with OUTPUT and END
    after them, or, if it fails again, with one more ERROR (exit 14) and nothing else. A
    failed turn never blocks exec with new input: that starts a new turn and leaves the
    failed one as audit.

    Ctrl-C cancels the resumed turn as it does an exec's (exit 130).
    """
    from agentsessions.cli.turnview import exit_if_canceled, finish_turn, watch_turn
    from agentsessions.sessions.values import SessionFrame

    state = command_state(ctx, as_json)
    uid = session_uid(session)
    printer = TurnPrinter(state.json)
    with open_engine(state, runtime) as engine:
        frames = engine.resume(uid, harness=harness or None, wait=wait)
        first = next(frames)  # the session as it was: a failed turn, suspended compute
        failed = isinstance(first, SessionFrame) and first.session.exec_state == "EXEC_FAILED"
        last, interrupted = watch_turn(state, printer, engine, uid, _again(first, frames))
    turn, woke, info = last.turn, last.compute_resumed, last.session
    if turn is not None and not interrupted:
        note_done(f"the turn completed and is journaled (seq {turn.last_seq})")
    if state.json:
        from agentsessions.cli.render import write_json

        write_json(
            {
                "uid": uid,
                "compute_resumed": woke,
                "turn": turn.to_json() if turn is not None else None,
                "compute_state": info.compute_state,
                "exec_state": info.exec_state,
                "last_seq": info.last_seq,
            }
        )
        if turn is not None:
            exit_if_canceled(turn, interrupted)
        return
    if turn is not None:
        finish_turn(state, printer, turn, interrupted=interrupted)
    sys.stdout.write(resume_summary(info, woke, turn, failed) + "\n")


def _again(first: Frame, frames: Iterator[Frame]) -> Iterator[Frame]:
    """``first`` put back in front of the rest of ``frames``."""
    yield first
    yield from frames


def resume_summary(info: Session, woke: bool, turn: Turn | None, failed: bool = False) -> str:
    """What ``resume`` did, in one line."""
    done = []
    if woke:
        done.append("resumed its compute")
    if turn is not None:
        which = "failed" if failed else "interrupted"
        done.append(f"completed the {which} turn {turn.execution_id or '(legacy)'}")
    states = f"compute={info.compute_state} exec={info.exec_state} last_seq={info.last_seq}"
    if not done:
        return f"session {info.uid}: nothing to resume ({states})"
    return f"session {info.uid}: {' and '.join(done)} ({states})"
