"""The ``delete`` (with ``--shred``) and ``shred`` commands: forgetting a session, softly or
for good (docs/FORMAT.md 15). A module of its own so that :mod:`.app` stays under its size.

``shred`` is local by nature (it destroys a key of the store this process opens: a
``KEY`` file, or a JetStream key stream's message): refused over ``--server``."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from agentsessions.cli.context import command_state, open_engine, open_local_engine
from agentsessions.cli.options import JsonOpt, SessionArg, session_uid
from agentsessions.cli.root import typer_app as app

ShredOpt = Annotated[
    bool,
    typer.Option(
        "--shred",
        help="Also destroy the data key of an encrypted session, as the shred command "
        "does; verify still checks its structure.",
    ),
]


@app.command(epilog="Example: agentsessions delete sess-0123456789abcdef01234567")
def delete(
    ctx: typer.Context, session: SessionArg, shred: ShredOpt = False, as_json: JsonOpt = False
) -> None:
    """Soft-delete a session: hidden from list and read-only (never written again).

    Nothing is erased: get, log, verify and export still work on it. With --shred (an
    encrypted session) its data key is destroyed too, as the shred command does.
    """
    state = command_state(ctx, as_json)
    uid = session_uid(session)
    if shred:
        with open_local_engine(state, "delete --shred") as engine:
            engine.check_shreddable(uid)  # a plaintext session is refused before the delete
            info = engine.delete(uid)
            engine.shred(uid)
    else:
        with open_engine(state) as engine:
            info = engine.delete(uid)
    if state.json:
        from agentsessions.cli.render import write_json

        write_json({**info.to_json(), **({"shredded": True} if shred else {})})
    else:
        sys.stdout.write(f"deleted {uid}" + (" and shredded its key\n" if shred else "\n"))


@app.command(name="shred", epilog="Example: agentsessions shred sess-0123456789abcdef01234567")
def shred_command(ctx: typer.Context, session: SessionArg, as_json: JsonOpt = False) -> None:
    """Destroy an encrypted session's data key: its content becomes unreadable for good.

    Reads of its events fail (exit 26) with or without the master key, and verify still
    checks every stored byte and chain link. Copies of the session directory (or of a
    JetStream store's key stream) stay readable to whoever holds the master key that
    wrapped them: rotate the master key after a shred to make backups unreadable too.
    Running it again is harmless (and finishes a shred cut by a crash). A plaintext
    session has no key to destroy (exit 2).
    """
    state = command_state(ctx, as_json)
    uid = session_uid(session)
    with open_local_engine(state, "shred") as engine:
        destroyed = engine.shred(uid)
    if state.json:
        from agentsessions.cli.render import write_json

        write_json({"uid": uid, "shredded": True, "key_destroyed": destroyed})
    else:
        sys.stdout.write(
            f"shredded {uid}\n" if destroyed else f"shredded {uid} (its key was already gone)\n"
        )
