"""``fork``: branch a session into children that share its chain up to a seq."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from agentsessions.cli.context import command_state, open_engine
from agentsessions.cli.options import (
    DEFAULT_RUNTIME,
    JsonOpt,
    RuntimeOpt,
    SessionArg,
    parse_pairs,
    session_uid,
)
from agentsessions.cli.root import typer_app as app


@app.command(
    epilog="Example: agentsessions fork sess-0123456789abcdef01234567 --at 5 --count 2 "
    "--name left --name right --label try=a"
)
def fork(
    ctx: typer.Context,
    session: SessionArg,
    at: Annotated[
        int, typer.Option(min=0, metavar="SEQ", help="Fork after this seq (0 = the head).")
    ] = 0,
    count: Annotated[int, typer.Option(metavar="K", help="How many children (1-128).")] = 1,
    name: Annotated[
        list[str] | None,
        typer.Option(metavar="NAME", help="A child's name; none, or exactly one per child."),
    ] = None,
    label: Annotated[
        list[str] | None,
        typer.Option(metavar="KEY=VALUE", help="A label for every child; repeatable."),
    ] = None,
    runtime: RuntimeOpt = DEFAULT_RUNTIME,
    as_json: JsonOpt = False,
) -> None:
    """Branch a session: each child shares the parent's chain up to SEQ, all or nothing.

    Children inherit the project, harness and model (not the name); their first own record
    is a LIFECYCLE FORK marker `parent@SEQ`. Prints each child's uid.
    """
    from agentsessions.sessions.local import LocalSessions

    state = command_state(ctx, as_json)
    uid = session_uid(session)
    names, labels = tuple(name or ()), parse_pairs(label or [], "--label")
    LocalSessions.check_fork(at, count, names)  # bad counts and names: before the home opens
    with open_engine(state, runtime) as engine:
        children = engine.fork(uid, at=at, count=count, names=names, labels=labels)
    if state.json:
        from agentsessions.cli.render import write_json

        write_json([child.to_json() for child in children])
        return
    sys.stdout.write("".join(f"{child.uid}\n" for child in children))
