"""``log``: a session's records, as a table or as LogRecord JSON lines."""

from __future__ import annotations

from typing import Annotated

import typer

from agentsessions.cli.context import command_state, open_engine
from agentsessions.cli.options import JsonOpt, SessionArg, session_uid
from agentsessions.cli.root import typer_app as app


@app.command(epilog="Example: agentsessions log sess-0123456789abcdef01234567 --from 5 --json")
def log(
    ctx: typer.Context,
    session: SessionArg,
    from_seq: Annotated[int, typer.Option("--from", min=1, help="First seq to show.")] = 1,
    to_seq: Annotated[int, typer.Option("--to", min=0, help="Last seq to show (0 = head).")] = 0,
    as_json: JsonOpt = False,
) -> None:
    """Show a session's records as a table (seq, kind, execution, hash, summary).

    With --json, prints one agentsessions.v1.LogRecord in proto3-JSON per line and nothing else.
    """
    state = command_state(ctx, as_json)
    uid = session_uid(session)
    from agentsessions.cli import recordview, render

    with open_engine(state, read=True) as engine:
        records = engine.read(uid, from_seq=from_seq, to_seq=to_seq)  # "not found" first
        if state.json:
            render.write_json_lines(record.to_wire_json() for record in records)
        else:
            recordview.print_log(records)
