"""``suspend``: snapshot and free a session's compute; the journal records the snapshot."""

from __future__ import annotations

import sys

import typer

from agentsessions.cli.context import command_state, open_engine
from agentsessions.cli.options import DEFAULT_RUNTIME, JsonOpt, RuntimeOpt, SessionArg, session_uid
from agentsessions.cli.root import typer_app as app


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
    state = command_state(ctx, as_json)
    uid = session_uid(session)
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
