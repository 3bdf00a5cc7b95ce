"""The controller's commands: ``exec``, ``replay``, ``resume``, ``fork`` and ``suspend``.

Registered (by importing :mod:`agentsessions.cli`) on the same :data:`~agentsessions.cli.app.app`
as the journal commands and
parsed, reported and exited the same way (one error line, the error's exit code).

Invariants:
- while a turn runs, stdout carries only the assistant's text and stderr one line per
  journaled record (:mod:`agentsessions.cli.stream`); ``--json`` replaces all of that with
  one JSON document on stdout at the end;
- nothing is written before the request is checked: the session, the harness (known, and
  placeable on the runtime), the model spec, the inputs and the config (the engine,
  :class:`~agentsessions.sessions.local.LocalSessions`, makes every check);
- each command calls one engine method and renders what it returns; the engine is imported
  inside the commands, so ``--help`` and the journal commands never pay for it.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentsessions.cli.app import (
    MODEL_SPEC_HELP,
    CliState,
    JsonOpt,
    ProjectOpt,
    SessionArg,
    _state,
    _uid,
    app,
    open_engine,
    parse_pairs,
)
from agentsessions.cli.interrupt import EXIT_INTERRUPTED, PROG, TurnInterrupt
from agentsessions.cli.stream import TurnPrinter, note_done, record_line
from agentsessions.errors import ApprovalParkedError, InvalidArgumentError, ReplayError
from agentsessions.sessions.defaults import DEFAULT_RUNTIME

if TYPE_CHECKING:
    from agentsessions.sessions.api import (
        Frame,
        ReplayReport,
        Session,
        SessionFrame,
        Sessions,
        Turn,
    )


HarnessOpt = Annotated[
    str,
    typer.Option(
        metavar="NAME",
        help="Harness to drive the turn (echo, chat, counter, memory or a plugin; default: the "
        "session's harness, else echo).",
    ),
]
RuntimeOpt = Annotated[
    str,
    typer.Option(
        metavar="NAME",
        help="Runtime hosting the harness: auto (default: warm for a harness whose memory is "
        "its state, such as counter; local otherwise), local (in-process, no memory "
        "snapshots) or warm (detached host processes whose memory survives suspend/resume).",
    ),
]
WaitOpt = Annotated[
    float,
    typer.Option(
        "--wait",
        min=0.0,
        metavar="SECONDS",
        help="Wait up to SECONDS for a busy session instead of failing at once (exit 6).",
    ),
]


# --- exec ----------------------------------------------------------------------------------


def read_inputs(values: Sequence[str]) -> list[str]:
    """The turn's input texts: the ``--input`` values, else stdin when it is not a terminal.

    Stdin is one input (one trailing newline dropped); empty stdin means no input.
    """
    if values:
        return [_utf8(value, "--input") for value in values]
    stream = sys.stdin
    if stream is None or stream.closed or stream.isatty():
        return []
    buffer = getattr(stream, "buffer", None)
    # the bytes, decoded strictly: a text stream may decode with surrogateescape and hand
    # over lone surrogates that only fail later, deep in the journal
    raw = buffer.read() if buffer is not None else stream.read().encode("utf-8", "surrogateescape")
    try:
        text = io.StringIO(raw.decode("utf-8"), newline=None).read()  # universal newlines
    except UnicodeDecodeError as exc:
        raise InvalidArgumentError(
            f"stdin is not UTF-8: byte 0x{raw[exc.start]:02x} at offset {exc.start}",
            hint="convert it first, for example with iconv -t UTF-8",
        ) from None
    text = text.removesuffix("\n")
    return [text] if text else []


def _utf8(value: str, flag: str) -> str:
    """``value`` as given on the command line, refused if it is not UTF-8 (the shell passed
    bytes that Python kept as lone surrogates)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgumentError(f"{flag} is not UTF-8 text") from None
    return value


def read_config(value: str) -> bytes:
    """``--config`` as bytes, verbatim: the text itself, or the file named by ``@PATH``."""
    if not value.startswith("@"):
        return _utf8(value, "--config").encode("utf-8")
    path = Path(value[1:]).expanduser()
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InvalidArgumentError(
            f"cannot read --config file {str(path)!r}: {exc.strerror or exc}"
        ) from None


@app.command(
    name="exec",
    epilog="Examples: agentsessions exec --input hello | "
    "agentsessions exec sess-0123456789abcdef01234567 --input 'and then?' | "
    "echo hello | agentsessions exec --harness chat --model scripted:seed=7",
)
def exec_(
    ctx: typer.Context,
    session: Annotated[
        str | None,
        typer.Argument(metavar="[SESSION]", help="Session uid; omitted: create a new session."),
    ] = None,
    inputs: Annotated[
        list[str] | None,
        typer.Option(
            "--input",
            "-i",
            metavar="TEXT",
            help="A user message; repeatable. Without it, stdin (if not a terminal) is one "
            "message. With neither, an interrupted or failed turn is continued, as resume "
            "does (else a turn runs without new input).",
        ),
    ] = None,
    harness: HarnessOpt = "",
    model: Annotated[
        str,
        typer.Option(
            metavar="SPEC",
            help="Model for a new session (default: the session's model, else echo); on an "
            "existing session it applies to this turn only: the turn's start records it, so "
            "resume continues the turn on it, and each MODEL_CALL records the model it used. "
            "Only for a harness that calls the session's model (chat): with echo, counter or "
            f"memory it is refused (exit 2). {MODEL_SPEC_HELP}",
        ),
    ] = "",
    config: Annotated[
        str,
        typer.Option(
            metavar="JSON|@FILE",
            help='Harness config, passed verbatim (e.g. chat: \'{"system_prompt": "..."}\').',
        ),
    ] = "",
    runtime: RuntimeOpt = DEFAULT_RUNTIME,
    wait: WaitOpt = 0.0,
    fresh_start: Annotated[
        bool,
        typer.Option(
            "--fresh-start",
            help="For a harness whose memory is its state (counter) whose memory is gone "
            "(its warm host was stopped or idled out): start it again with empty memory. "
            "The journal records the reset (a LIFECYCLE RESUME 'fresh start: ...'), and "
            "replay restarts the harness empty there too.",
        ),
    ] = False,
    project: ProjectOpt = "default",
    name: Annotated[str, typer.Option(help="Name of a new session.")] = "",
    label: Annotated[
        list[str] | None,
        typer.Option(metavar="KEY=VALUE", help="A label of a new session; repeatable."),
    ] = None,
    tools: Annotated[
        str,
        typer.Option(
            metavar="FILE",
            help="A workload TOML file ([tools.NAME] tables): the session's tools, recorded "
            "with it for this and later turns (replacing earlier ones).",
        ),
    ] = "",
    as_json: JsonOpt = False,
) -> None:
    """Run one turn: record the inputs, drive the harness, stream the answer.

    Without SESSION a session is created (its uid goes to stderr first). stdout gets only
    the assistant's text as it streams; each journaled record is a line on stderr. With
    --json, one object (the turn's result) is printed at the end instead.

    Ctrl-C cancels the turn at its next effect boundary, as cancel does, and exits 130 once
    END CANCELED is journaled; a second Ctrl-C exits 130 at once, leaving the turn open for
    cancel (or resume) to close.
    """
    from agentsessions.sessions.local import LocalSessions
    from agentsessions.v1.turn import TurnRequest

    state = _state(ctx, as_json)
    uid = _uid(session) if session is not None else None
    texts = read_inputs(inputs or [])
    config_bytes = read_config(config)
    printer = TurnPrinter(state.json)
    labels = parse_pairs(label or [], "--label")
    request = TurnRequest.of(
        uid,
        texts,
        harness=harness or None,
        model=model or None,
        config=config_bytes,
        wait=wait,
        project=project,
        name=name,
        labels=labels,
        fresh_start=fresh_start,
        tools=tools or None,
    )
    # the checks that need no store come first: a refused exec never opens the home
    LocalSessions.check_request(request)
    with open_engine(state, runtime) as engine:
        frames = engine.exec(request)
        with TurnInterrupt(engine, uid) as interrupt:
            try:
                last = show_turn(printer, frames, waking=not fresh_start, interrupt=interrupt)
            except ApprovalParkedError as parked:
                print_parked(state, parked.fields.get("session") or uid or "", parked)
    assert last.turn is not None
    finish_turn(state, printer, last.turn, interrupted=bool(interrupt.fired))


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
    raise typer.Exit(ApprovalParkedError.exit_code)


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
    from agentsessions.sessions.api import DeltaFrame, RecordFrame

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
        _exit_if_canceled(result, interrupted)
        return
    how = "resumed and completed" if result.resumed else "completed"
    how = "canceled" if result.canceled else how
    calls = "model call" if result.model_calls == 1 else "model calls"
    printer.note(
        f"turn {result.execution_id or '(legacy)'} {how}: seq {result.first_seq}-"
        f"{result.last_seq}, {result.model_calls} {calls}"
    )
    _exit_if_canceled(result, interrupted)


def _exit_if_canceled(result: Turn, interrupted: bool = False) -> None:
    if interrupted:
        how = "was canceled (END CANCELED)" if result.canceled else "ended before the cancel"
        sys.stderr.write(f"{PROG}: interrupted: the turn {how} (seq {result.last_seq})\n")
        raise typer.Exit(EXIT_INTERRUPTED)
    if result.canceled:
        from agentsessions.errors import TurnCanceledError

        raise typer.Exit(TurnCanceledError.exit_code)


# --- replay --------------------------------------------------------------------------------


@app.command(
    epilog="Examples: agentsessions replay sess-0123456789abcdef01234567 --from 3 | "
    "agentsessions replay sess-0123456789abcdef01234567 --rerun --harness echo --json"
)
def replay(
    ctx: typer.Context,
    session: SessionArg,
    from_seq: Annotated[
        int, typer.Option("--from", min=1, metavar="SEQ", help="First seq to stream.")
    ] = 1,
    rerun: Annotated[
        bool,
        typer.Option(
            "--rerun",
            help="Re-drive the harness over every recorded turn, serving each effect from the "
            "journal: no model is called and nothing is written.",
        ),
    ] = False,
    harness: Annotated[
        str,
        typer.Option(
            metavar="NAME",
            help="Harness for --rerun when the session names none (e.g. an imported journal).",
        ),
    ] = "",
    as_json: JsonOpt = False,
) -> None:
    """Stream a session's stored records, or with --rerun prove that they replay.

    --rerun reports how many executions were replayed, model_calls (always 0 on success)
    and whether the replay was byte-identical; it exits 16 when it was not.

    --rerun re-drives every completed execution from the first (a fork's includes the
    parent's, which it shares), each with the history its live turn had. A stateless
    harness gets a fresh instance per execution; a harness whose memory is its state
    (counter) gets one instance for all of them, in order, as its live compute did.
    Failed turns (ERROR, no END) are audit and are not replayed. A canceled turn (cancel,
    a deadline) is replayed to the point where it was stopped, with no model call.
    """
    state = _state(ctx, as_json)
    uid = _uid(session)
    if not rerun:
        if harness:
            raise InvalidArgumentError("--harness applies only with --rerun")
        stream_records(state, uid, from_seq)
        return
    if from_seq != 1:
        raise InvalidArgumentError("--from applies to streaming; --rerun replays every turn")
    with open_engine(state) as engine:
        result = engine.replay(uid, rerun=True, harness=harness or None)
    finish_replay(state, result)


def stream_records(state: CliState, uid: str, from_seq: int) -> None:
    """Print the stored records from ``from_seq`` on, one line (or LogRecord JSON) each."""
    from agentsessions.cli import render

    with open_engine(state, read=True) as engine:
        records = engine.replay(uid, from_seq=from_seq)  # "not found" before any output
        if state.json:
            render.write_json_lines(record.to_wire_json() for record in records)
            return
        for record in records:
            sys.stdout.write(record_line(record) + "\n")
        sys.stdout.flush()


def finish_replay(state: CliState, result: ReplayReport) -> None:
    """Print the replay's result; exit 16 (one error line) when it was not identical."""
    from agentsessions.cli import render

    if state.json:
        render.write_json(result.to_json())
    else:
        sys.stdout.write(
            f"replayed {result.replayed} of {result.executions} executions of {result.uid} "
            f"with harness {render.one_line(result.harness)}\n"
            f"model_calls {result.model_calls}\n"
            f"identical   {'yes' if result.identical else 'no'}\n"
        )
        sys.stdout.flush()
    if not result.identical:
        why = result.divergence or f"{result.model_calls} model calls"
        sys.stderr.write(render.error_text(f"replay of {result.uid} is not identical: {why}"))
        raise typer.Exit(ReplayError.exit_code)


# --- resume / suspend ----------------------------------------------------------------------


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
    from agentsessions.sessions.api import SessionFrame

    state = _state(ctx, as_json)
    uid = _uid(session)
    printer = TurnPrinter(state.json)
    with open_engine(state, runtime) as engine:
        frames = engine.resume(uid, harness=harness or None, wait=wait)
        first = next(frames)  # the session as it was: a failed turn, suspended compute
        failed = isinstance(first, SessionFrame) and first.session.exec_state == "EXEC_FAILED"
        with TurnInterrupt(engine, uid) as interrupt:
            try:
                last = show_turn(printer, _again(first, frames), interrupt=interrupt)
            except ApprovalParkedError as parked:  # no decision yet: it parks again
                print_parked(state, uid, parked)
    turn, woke, info = last.turn, last.compute_resumed, last.session
    interrupted = bool(interrupt.fired)
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
            _exit_if_canceled(turn, interrupted)
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


@app.command(epilog="Example: agentsessions suspend sess-0123456789abcdef01234567")
def suspend(
    ctx: typer.Context,
    session: SessionArg,
    runtime: RuntimeOpt = DEFAULT_RUNTIME,
    as_json: JsonOpt = False,
) -> None:
    """Snapshot and free a session's compute (cold); the journal records the snapshot.

    `resume`, or the next `exec`, brings the compute back.
    """
    state = _state(ctx, as_json)
    uid = _uid(session)
    with open_engine(state, runtime) as engine:
        before = engine.get(uid)
        info = engine.suspend(uid)
    if state.json:
        from agentsessions.cli.render import write_json

        write_json(info.to_json())
        return
    already = " (it already was)" if before.compute_state == "COMPUTE_COLD" else ""
    sys.stdout.write(
        f"session {uid} suspended compute={info.compute_state} last_seq={info.last_seq}{already}\n"
    )


# --- fork ----------------------------------------------------------------------------------


@app.command(
    epilog="Example: agentsessions fork sess-0123456789abcdef01234567 --at 5 --count 2 "
    "--name left --name right --label try=a"
)
def fork(
    ctx: typer.Context,
    session: SessionArg,
    at: Annotated[
        int, typer.Option(min=0, metavar="SEQ", help="Fork after this seq (0 = the head).")
    ] = 0,
    count: Annotated[int, typer.Option(metavar="K", help="How many children (1-128).")] = 1,
    name: Annotated[
        list[str] | None,
        typer.Option(metavar="NAME", help="A child's name; none, or exactly one per child."),
    ] = None,
    label: Annotated[
        list[str] | None,
        typer.Option(metavar="KEY=VALUE", help="A label for every child; repeatable."),
    ] = None,
    runtime: RuntimeOpt = DEFAULT_RUNTIME,
    as_json: JsonOpt = False,
) -> None:
    """Branch a session: each child shares the parent's chain up to SEQ, all or nothing.

    Children inherit the project, harness and model (not the name); their first own record
    is a LIFECYCLE FORK marker `parent@SEQ`. Prints each child's uid.
    """
    from agentsessions.sessions.local import LocalSessions

    state = _state(ctx, as_json)
    uid = _uid(session)
    names, labels = tuple(name or ()), parse_pairs(label or [], "--label")
    LocalSessions.check_fork(at, count, names)  # bad counts and names: before the home opens
    with open_engine(state, runtime) as engine:
        children = engine.fork(uid, at=at, count=count, names=names, labels=labels)
    if state.json:
        from agentsessions.cli.render import write_json

        write_json([child.to_json() for child in children])
        return
    sys.stdout.write("".join(f"{child.uid}\n" for child in children))
