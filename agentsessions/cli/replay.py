"""``replay``: stream a session's stored records, or (``--rerun``) prove that they replay."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from agentsessions.cli.context import CliState, command_state, open_engine
from agentsessions.cli.options import JsonOpt, SessionArg, session_uid
from agentsessions.cli.root import typer_app as app
from agentsessions.cli.stream import record_line
from agentsessions.errors import InvalidArgumentError, ReplayError

if TYPE_CHECKING:
    from agentsessions.sessions.values import ReplayReport


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
    state = command_state(ctx, as_json)
    uid = session_uid(session)
    if not rerun:
        if harness:
            raise InvalidArgumentError("--harness applies only with --rerun")
        stream_records(state, uid, from_seq)
        return
    if from_seq != 1:
        raise InvalidArgumentError("--from applies to streaming; --rerun replays every turn")
    with open_engine(state) as engine:
        result = engine.rerun(uid, harness=harness or None)
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
