"""How a turn shows while it runs and when it ends, for every command that runs one.

``exec``, ``resume`` and the commands that answer a parked or unresolved call (``approve``,
``deny``, ``resolve``) render the engine's frames the same way: while a turn runs, stdout
carries only the assistant's text and stderr one line per journaled record
(:mod:`agentsessions.cli.stream`); ``--json`` replaces all of that with one JSON document on
stdout at the end. A parked turn exits 20, a canceled one 18, one Ctrl-C ended 130.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentsessions.cli.context import EXIT_INTERRUPTED, PROG, CliState, CommandExit
from agentsessions.cli.stream import TurnPrinter, note_done
from agentsessions.errors import ApprovalParkedError

if TYPE_CHECKING:
    from agentsessions.cli.interrupt import TurnInterrupt
    from agentsessions.sessions.api import Sessions
    from agentsessions.sessions.values import Frame, SessionFrame, Turn


def watch_turn(
    state: CliState,
    printer: TurnPrinter,
    engine: Sessions,
    uid: str | None,
    frames: Iterator[Frame],
    *,
    waking: bool = True,
) -> tuple[SessionFrame, bool]:
    """Render a turn's frames with Ctrl-C cancelling it (:mod:`.interrupt`): its last frame,
    and whether Ctrl-C was pressed. A turn that parks on an approval exits 20 here."""
    from agentsessions.cli.interrupt import TurnInterrupt  # loaded when a turn runs

    with TurnInterrupt(engine, uid) as interrupt:
        try:
            last = show_turn(printer, frames, waking=waking, interrupt=interrupt)
        except ApprovalParkedError as parked:  # no decision yet
            print_parked(state, parked.fields.get("session") or uid or "", parked)
    return last, bool(interrupt.fired)


def print_parked(state: CliState, uid: str, parked: ApprovalParkedError) -> None:
    """Say what a parked turn waits for (stderr; ``--json``: one object on stdout), then
    exit with the park's code (20)."""
    if state.json:
        from agentsessions.cli.render import write_json

        write_json({"uid": uid, "parked": True, **parked.to_dict()})
    else:
        sys.stderr.write(
            f"{parked.message}\n"
            f"  the turn is parked: tool {parked.tool}, call {parked.tool_call_id}, "
            f"execution {parked.execution_id}, request seq {parked.request_seq}\n"
            f"  approve: agentsessions approve {uid} --reason TEXT\n"
            f"  deny:    agentsessions deny {uid} --reason TEXT\n"
        )
    raise CommandExit(ApprovalParkedError.exit_code)


def continue_turn(
    state: CliState, engine: Sessions, uid: str, *, committed: str, document: dict[str, Any]
) -> None:
    """Resume ``uid``'s turn after a person's answer was committed (approve, deny, resolve)
    and render it; ``--json``: ``document`` and the turn in one object. A turn that parks
    again says so (exit 20); a failed resume says what was ``committed`` already."""
    from agentsessions.errors import AgentSessionsError

    printer = TurnPrinter(state.json)
    try:
        last = show_turn(printer, engine.resume(uid))
    except ApprovalParkedError as parked:  # the continued turn parks on another call
        print_parked(state, uid, parked)
    except AgentSessionsError as exc:
        exc.hint = exc.hint or f"agentsessions resume {uid}"
        exc.message = f"{committed}, but the resume failed: {exc.message}"
        raise
    if state.json:
        from agentsessions.cli.render import write_json

        turn = last.turn.to_json() if last.turn is not None else None
        write_json({**document, "turn": turn})
    elif last.turn is not None:
        finish_turn(state, printer, last.turn)


def show_turn(
    printer: TurnPrinter,
    frames: Iterator[Frame],
    waking: bool = True,
    interrupt: TurnInterrupt | None = None,
) -> SessionFrame:
    """Render a turn's frames as they come (records on stderr, text on stdout); the last.

    The note that a suspended session is woken waits for the turn's next frame: a turn
    refused before it does anything (a busy or damaged session) says so in one line.
    ``interrupt`` (Ctrl-C's handler) learns the session's uid from the first frame."""
    from agentsessions.sessions.values import DeltaFrame, RecordFrame

    last: SessionFrame | None = None
    waking_note = ""
    for frame in frames:
        if interrupt is not None and not isinstance(frame, (RecordFrame, DeltaFrame)):
            interrupt.seen(frame.uid)
        if waking_note and (isinstance(frame, RecordFrame | DeltaFrame) or frame.last):
            printer.note(waking_note)
            waking_note = ""
        if isinstance(frame, RecordFrame):
            printer.record(frame.record)
        elif isinstance(frame, DeltaFrame):
            printer.delta(frame.text)
        elif frame.last:
            last = frame
        elif frame.created:
            printer.note(f"session {frame.uid}")
        elif waking and frame.session.compute_state == "COMPUTE_COLD":
            waking_note = f"session {frame.uid} was suspended: resuming its compute"
    assert last is not None  # a turn's stream ends with the session, or raises
    return last


def finish_turn(
    state: CliState, printer: TurnPrinter, result: Turn, *, interrupted: bool = False
) -> None:
    """Print the turn's JSON result, or close its stream with a one-line summary.

    A turn a cancel request stopped exits 18 (TurnCanceledError's code) after its result;
    one ``interrupted`` by Ctrl-C exits 130 (its END CANCELED, or the END that came first,
    is journaled by then).
    """
    if result.canceled:
        note_done(f"the turn was canceled and is journaled (seq {result.last_seq})")
    else:
        note_done(f"the turn completed and is journaled (seq {result.last_seq})")
    if state.json:
        from agentsessions.cli.render import write_json

        write_json(result.to_json())
        exit_if_canceled(result, interrupted)
        return
    if result.duplicate and not result.resumed:  # nothing streamed: the landed answer
        for text in result.outputs:
            printer.delta(text + "\n")
        printer.note(f"this commit id landed already: turn {result.execution_id}, nothing written")
    how = "resumed and completed" if result.resumed else "completed"
    how = "canceled" if result.canceled else how
    calls = "model call" if result.model_calls == 1 else "model calls"
    printer.note(
        f"turn {result.execution_id or '(legacy)'} {how}: seq {result.first_seq}-"
        f"{result.last_seq}, {result.model_calls} {calls}"
    )
    exit_if_canceled(result, interrupted)


def exit_if_canceled(result: Turn, interrupted: bool = False) -> None:
    """Exit 130 if Ctrl-C ``interrupted`` the turn, 18 if a cancel request stopped it."""
    if interrupted:
        how = "was canceled (END CANCELED)" if result.canceled else "ended before the cancel"
        sys.stderr.write(f"{PROG}: interrupted: the turn {how} (seq {result.last_seq})\n")
        raise CommandExit(EXIT_INTERRUPTED)
    if result.canceled:
        from agentsessions.errors import TurnCanceledError

        raise CommandExit(TurnCanceledError.exit_code)
