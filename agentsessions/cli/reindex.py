"""The ``reindex`` command: rebuild the listing index of a local home (local by nature:
refused over ``--server``). A module of its own so that :mod:`.app` stays under its size."""

from __future__ import annotations

import sys

import typer

from agentsessions.cli.context import PROG, command_state, open_local_engine
from agentsessions.cli.options import JsonOpt
from agentsessions.cli.root import typer_app as app


@app.command(epilog="Example: agentsessions reindex")
def reindex(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Rebuild the index that list reads, from the session directories.

    list reads an index (catalog.sqlite3) so its first page stays fast over many sessions.
    A crash between creating a session and indexing it leaves that session out of list
    (get, log and verify still find it); reindex puts every session back and drops rows
    whose directory is gone. Safe to run at any time, also while sessions are created.
    """
    state = command_state(ctx, as_json)
    with open_local_engine(state, "reindex") as engine:
        count = engine.reindex()
        catalog = engine.catalog_path
        damaged = [{"uid": e.fields["session"], "reason": e.message} for e in engine.unindexed]
    from agentsessions.cli.render import one_line, write_json

    if state.json:
        write_json({"sessions": count, "catalog": catalog, "damaged": damaged})
    else:
        sys.stdout.write(f"indexed {count} sessions in {catalog}\n")
    for item in damaged:  # reported, not hidden; the rebuild itself succeeded (exit 0)
        sys.stderr.write(f"{PROG}: warning: not indexed: {one_line(item['reason'])}\n")
