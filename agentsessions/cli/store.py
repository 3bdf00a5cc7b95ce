"""The ``store`` command: a tool's own store in a session, entry by entry.

``agentsessions store SESSION TOOL [--from-seq N] [--json]`` prints the entries of the store
the host keeps for tool TOOL in SESSION (``[session] tool_components`` of its workload): one
row each with its seq, author and time (the host's stamps) and its data (the JSON object the
tool committed); with ``--json``, one object per line (``seq``, ``author``, ``time_ns``,
``data``) and nothing else. An unknown session, or a tool without a store in it, exits 3; a
malformed session id or tool name exits 2. It only reads (no lock is taken).
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from agentsessions.cli.context import command_state, open_engine
from agentsessions.cli.options import JsonOpt, SessionArg, session_uid
from agentsessions.cli.root import typer_app as app


@app.command(
    epilog="Example: agentsessions store sess-0123456789abcdef01234567 notes --json",
)
def store(
    ctx: typer.Context,
    session: SessionArg,
    tool: Annotated[str, typer.Argument(metavar="TOOL", help="The tool whose store to show.")],
    from_seq: Annotated[
        int, typer.Option("--from-seq", min=1, metavar="N", help="First seq to show.")
    ] = 1,
    as_json: JsonOpt = False,
) -> None:
    """Show the entries of a tool's own store in a session (seq, author, time, data).

    A tool named in its workload's [session] tool_components keeps its own store, beside
    the conversation; the host stamps each entry with its author and time. With --json,
    prints one object per line: seq, author, time_ns, data.
    """
    state = command_state(ctx, as_json)
    uid = session_uid(session)
    from agentsessions.cli import render

    with open_engine(state) as engine:
        entries = engine.tool_store(uid, tool, from_seq=from_seq)
    if state.json:
        render.write_json_lines(
            json.dumps(e.to_json(), ensure_ascii=False, separators=(",", ":")).encode()
            for e in entries
        )
        return
    from rich.text import Text

    console = render.stdout_console()
    if not entries:
        console.print(Text(render.one_line(f"no entries in tool store {tool!r} from {from_seq}")))
        return
    table = render.plain_table()
    table.add_column("seq", justify="right", no_wrap=True)
    table.add_column("author", no_wrap=True)
    table.add_column("time", no_wrap=True)
    table.add_column("data", overflow="fold")
    for e in entries:
        data = json.dumps(dict(e.data), ensure_ascii=False, separators=(",", ":"))
        table.add_row(
            str(e.seq),
            Text(render.one_line(e.author)),
            render.format_time_ns(e.time_ns),
            Text(render.clip(render.one_line(data))),
        )
    render.emit(console, table)
