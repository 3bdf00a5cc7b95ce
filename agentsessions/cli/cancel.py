"""The ``cancel`` command: close a session's open execution as CANCELED.

Parses, calls :meth:`Sessions.cancel` and renders; the rules (idempotent once canceled,
exit 17 when nothing is open, a running turn asked to stop and waited for, exit 12 when
the wait runs out) live in :mod:`agentsessions.controller.cancel`.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from agentsessions.cli.context import command_state, open_engine
from agentsessions.cli.options import JsonOpt, SessionArg, session_uid
from agentsessions.cli.root import typer_app as app


@app.command(epilog="Example: agentsessions cancel sess-0123456789abcdef01234567")
def cancel(
    ctx: typer.Context,
    session: SessionArg,
    wait: Annotated[
        float,
        typer.Option("--wait", help="Seconds to wait for a running turn to stop.", min=0.0),
    ] = 10.0,
    as_json: JsonOpt = False,
) -> None:
    """End a session's open execution: LIFECYCLE CANCEL, then END CANCELED.

    An interrupted turn (its process gone) is closed at once. A turn running in another
    process is asked to stop at its next effect boundary; this waits up to --wait seconds
    for it (exit 12 if it runs out; the request stays). After it, exec takes new input
    again. Cancelling an already canceled execution changes nothing; a session with no
    open execution is an error (exit 17).
    """
    state = command_state(ctx, as_json)
    uid = session_uid(session)
    with open_engine(state) as engine:
        info = engine.cancel(uid, wait=wait)
    if state.json:
        from agentsessions.cli.render import write_json

        write_json(info.to_json())
        return
    sys.stdout.write(f"session {uid} canceled exec={info.exec_state} last_seq={info.last_seq}\n")
