"""``import``: a new session recreated from a file, with identical seqs and hashes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentsessions.cli.context import command_state, open_engine
from agentsessions.cli.options import JsonOpt, project_name
from agentsessions.cli.root import typer_app as app


@app.command(
    name="import",
    epilog="Example: agentsessions import triage.agx --project acme --name triage-copy",
)
def import_(
    ctx: typer.Context,
    file: Annotated[
        Path,
        typer.Argument(
            metavar="FILE",
            exists=True,
            dir_okay=False,
            help="Our export, LogRecord JSON lines, or a Go reference record array.",
        ),
    ],
    project: Annotated[
        str | None, typer.Option("--project", "-p", help="Project of the new session.")
    ] = None,
    name: Annotated[str | None, typer.Option(help="Name of the new session.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Recreate a session from a file with identical seqs and hashes; print the new uid.

    The format is detected from the content. Any record whose hash or link does not verify
    is refused and nothing is created.
    """
    from agentsessions.cli import render

    state = command_state(ctx, as_json)
    if project is not None:
        project_name(project)
    with open_engine(state) as engine, render.ProgressBar("importing") as progress:
        info = engine.import_(file, project=project, name=name, progress=progress)
    render.print_uid_or_json(state.json, info.uid, info.to_json())
