"""``list``: one page of a project's sessions, newest first."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from agentsessions.cli.context import PROG, command_state, open_engine
from agentsessions.cli.options import JsonOpt, ProjectOpt, project_name
from agentsessions.cli.provenance import parse_origin
from agentsessions.cli.root import typer_app as app


@app.command(
    name="list",
    epilog="Examples: agentsessions list --project acme --page-size 20 --cursor <next cursor> | "
    "agentsessions list --origin source=github,subject=owner/repo#12 --json",
)
def list_(
    ctx: typer.Context,
    project: ProjectOpt = "default",
    page_size: Annotated[
        int, typer.Option(min=0, help="Sessions per page (0 = 50; at most 500).")
    ] = 0,
    cursor: Annotated[str, typer.Option(help="Cursor printed by the previous page.")] = "",
    origin: Annotated[
        str,
        typer.Option(
            metavar="FIELDS",
            help="Only the session this origin names: source=SOURCE,subject=SUBJECT (one "
            "indexed lookup, no scan; uri and attr.* are ignored).",
        ),
    ] = "",
    as_json: JsonOpt = False,
) -> None:
    """List one page of a project's sessions, newest first.

    Deleted sessions are hidden. A session whose metadata cannot be read is listed as
    damaged (a "damaged" field with --json). When more sessions follow, the output ends with
    the cursor of the next page. With --origin, the one session that origin names (or
    none), found in one lookup.
    """
    state = command_state(ctx, as_json)
    project_name(project)
    named = parse_origin(origin)
    with open_engine(state, read=True) as engine:
        if named is not None:
            from agentsessions.sessions.values import SessionPage

            found = engine.find(origin=named, project=project)
            page = SessionPage((found,) if found is not None else (), "")
            unindexed = []
        else:
            page = engine.list(project=project, page_size=page_size, cursor=cursor)
            # a missing catalog was rebuilt on open (a local home: a server's log has its own)
            unindexed = list(getattr(engine, "unindexed", ()))
    from agentsessions.cli import render, sessionview

    for exc in unindexed:  # no row can carry them (their project is unknown): say so
        sys.stderr.write(f"{PROG}: warning: not listed: {render.one_line(exc.message)}\n")

    if state.json:
        render.write_json(
            {"sessions": [s.to_json() for s in page.sessions], "next_cursor": page.next_cursor}
        )
    else:
        sessionview.print_page(page, project)
