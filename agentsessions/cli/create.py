"""``create``: a new, empty session; its uid on stdout."""

from __future__ import annotations

from typing import Annotated

import typer

from agentsessions.cli.context import command_state, open_engine
from agentsessions.cli.options import (
    MODEL_SPEC_HELP,
    IdentityOpt,
    JsonOpt,
    OriginOpt,
    ProjectOpt,
    parse_pairs,
    project_name,
)
from agentsessions.cli.provenance import parse_identity, parse_origin
from agentsessions.cli.root import typer_app as app


@app.command(epilog="Example: agentsessions create --project acme --name triage --label team=ml")
def create(
    ctx: typer.Context,
    project: ProjectOpt = "default",
    name: Annotated[str, typer.Option(help="Human-readable session name.")] = "",
    harness: Annotated[str, typer.Option(help="Harness that will drive the session.")] = "",
    model: Annotated[
        str,
        typer.Option(metavar="SPEC", help=f"Model the harness will call. {MODEL_SPEC_HELP}"),
    ] = "",
    label: Annotated[
        list[str] | None, typer.Option(metavar="KEY=VALUE", help="A label; repeatable.")
    ] = None,
    annotation: Annotated[
        list[str] | None, typer.Option(metavar="KEY=VALUE", help="An annotation; repeatable.")
    ] = None,
    tools: Annotated[
        str,
        typer.Option(
            metavar="FILE", help="A workload TOML file ([tools.NAME] tables): the session's tools."
        ),
    ] = "",
    origin: OriginOpt = "",
    identity: IdentityOpt = "",
    as_json: JsonOpt = False,
) -> None:
    """Create an empty session and print its uid.

    The metadata row is written at once, before any event. With --origin the session is
    the one that origin's source and subject name from then on (list --origin finds it);
    an origin that names a live session already is refused (exit 2). Origin and identity
    never change.
    """
    state = command_state(ctx, as_json)
    project_name(project)
    labels = parse_pairs(label or [], "--label")
    annotations = parse_pairs(annotation or [], "--annotation")
    origin_value, identity_value = parse_origin(origin), parse_identity(identity)
    with open_engine(state) as engine:
        info = engine.create(
            project=project,
            name=name,
            harness=harness,
            model=model,
            labels=labels,
            annotations=annotations,
            tools=tools or None,
            origin=origin_value,
            identity=identity_value,
        )
    from agentsessions.cli.render import print_uid_or_json

    print_uid_or_json(state.json, info.uid, info.to_json())
