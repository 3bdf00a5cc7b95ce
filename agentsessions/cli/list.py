"""``list``: one page of a project's sessions, newest first (its options; what it does:
:mod:`.reading`, which :mod:`.fast` runs too)."""

from __future__ import annotations

from typing import Annotated

import typer

from agentsessions.cli.context import command_state
from agentsessions.cli.options import JsonOpt, ProjectOpt
from agentsessions.cli.reading import list_sessions
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
    list_sessions(command_state(ctx, as_json), project, page_size, cursor, origin)
