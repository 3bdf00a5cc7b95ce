"""The ``compact`` command: summarise a session's older turns in one recorded execution.

Parses, calls :meth:`Sessions.compact` and renders; the rules (what a compaction records,
that the original entries stay, exit 17 when there is nothing to compact) live in
:mod:`agentsessions.sessions.compact` and :mod:`agentsessions.v1.compaction`.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from agentsessions.cli.context import command_state, open_engine
from agentsessions.cli.options import JsonOpt, SessionArg, session_uid
from agentsessions.cli.root import typer_app as app
from agentsessions.errors import InvalidExecutionLogError


@app.command(epilog="Example: agentsessions compact sess-0123456789abcdef01234567 --keep-turns 2")
def compact(
    ctx: typer.Context,
    session: SessionArg,
    keep_turns: Annotated[
        int, typer.Option("--keep-turns", help="Latest turns kept as they were.", min=0)
    ] = 2,
    model: Annotated[
        str | None, typer.Option("--model", metavar="SPEC", help="Model to summarise with.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Summarise a chat session's turns before the last --keep-turns into one entry.

    Runs an ordinary recorded execution: the model's summary is its OUTPUT (role assistant),
    followed by an OUTPUT holding the range it covers and the tokens saved. Nothing is
    deleted: log still shows every entry, replay calls no model. Later turns send the
    summary and the entries after it. A session with nothing to compact (no turns, or no
    more than --keep-turns) is an error (exit 17) and nothing is written.
    """
    from agentsessions.v1 import compaction

    state = command_state(ctx, as_json)
    uid = session_uid(session)
    with open_engine(state) as engine:
        frame = engine.compact(uid, keep_turns=keep_turns, model=model)
        turn = frame.turn
        if turn is None:  # a compaction always runs a turn; say so rather than crash
            raise InvalidExecutionLogError(f"session {uid}: the compaction ran no turn")
        last = list(engine.read(uid, from_seq=turn.last_seq - 1, to_seq=turn.last_seq))
    found = [d for d in (compaction.marker_data(r.event) for r in last) if d is not None]
    marker = found[0] if found else {}
    if state.json:
        from agentsessions.cli.render import write_json

        write_json({**turn.to_json(), "compaction": marker})
        return
    sys.stdout.write(
        f"session {uid} compacted: seq {marker.get('from_seq')}-{marker.get('to_seq')} "
        f"summarised by execution {turn.execution_id} (seq {turn.first_seq}-{turn.last_seq}), "
        f"~{marker.get('tokens_saved')} tokens saved\n"
    )
