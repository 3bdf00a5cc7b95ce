"""``get``: one session's metadata, projections, memory and token usage."""

from __future__ import annotations

import typer

from agentsessions.cli.context import command_state, open_engine
from agentsessions.cli.options import JsonOpt, SessionArg, session_uid
from agentsessions.cli.root import typer_app as app


@app.command(epilog="Example: agentsessions get sess-0123456789abcdef01234567")
def get(ctx: typer.Context, session: SessionArg, as_json: JsonOpt = False) -> None:
    """Show a session's metadata and its projections (last seq, compute and exec state).

    Also where the harness's memory lives and until when (memory: a warm host and its idle
    timeout, a frozen snapshot, none for a stateless harness, or gone), and the session's
    token usage: the totals of its USAGE records (input, output and reasoning tokens, and
    how many model calls reported usage), read from the journal when get asks. Records get
    cannot read (encrypted without the key, damaged) leave the usage unknown, not the
    metadata: ``usage`` is then null in --json.
    """
    state = command_state(ctx, as_json)
    uid = session_uid(session)
    from agentsessions.sessions.usage import readable_usage

    with open_engine(state, read=True) as engine:
        info = engine.get(uid)
        usage, why = readable_usage(engine, uid)
    from agentsessions.cli import render, sessionview

    memory = info.memory
    assert memory is not None  # get always says where the memory is
    if state.json:
        totals = usage.to_json() if usage is not None else None
        render.write_json({**info.to_json(), "memory": memory.to_json(), "usage": totals})
    else:
        sessionview.print_session(info, memory.text, usage.text() if usage is not None else why)
