"""The ``keys`` commands: master keys of encryption at rest (docs/FORMAT.md 15).

``keys new FILE`` writes a random master key to a new file of mode 0600 (refusing an
existing one, exit 2); ``keys rotate --old-key-file A --new-key-file B`` rewraps the data
key of every encrypted session and tool store in the store (the file store under the home,
or ``--store nats://...``'s key stream) from A to B: a wrong A changes nothing (exit 26), a
run after a crash finishes the job, no journal byte moves. Both are local by nature (the
key files are this machine's): refused over ``--server``. The logic lives
in :mod:`agentsessions.sessions.keys`.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from agentsessions.cli.context import command_state, open_local_engine
from agentsessions.cli.helpview import HelpGroup
from agentsessions.cli.options import JsonOpt
from agentsessions.cli.root import typer_app as app

keys_app = typer.Typer(
    name="keys",
    cls=HelpGroup,
    help="Make a master key file, or rotate the master key of the encrypted sessions "
    "in the store (--home, or --store; their data keys are rewrapped; no journal byte moves).",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(keys_app, name="keys")


@keys_app.command(epilog="Example: agentsessions keys new ~/.config/agentsessions/master.key")
def new(
    ctx: typer.Context,
    path: Annotated[str, typer.Argument(metavar="FILE", help="Where to write the new key.")],
    as_json: JsonOpt = False,
) -> None:
    """Write a new random master key (base64 of 32 bytes) to FILE, mode 0600.

    FILE keyring:NAME keeps it in the OS keyring instead (the keyring extra). Refuses an
    existing FILE or entry. Keep a copy somewhere safe: without the key, the sessions it
    encrypts are unreadable. Use it with --key-file FILE or AGENTSESSIONS_KEY_FILE=FILE.
    """
    state = command_state(ctx, as_json)
    from agentsessions.sessions.keys import new_key_file

    key = new_key_file(path)
    if state.json:
        from agentsessions.cli.render import write_json

        write_json({"path": path, "key_id": key.key_id})
    elif path.startswith("keyring:"):
        sys.stdout.write(f"stored master key {key.key_id} in the OS keyring as {path}\n")
    else:
        sys.stdout.write(f"wrote master key {key.key_id} to {path} (mode 0600)\n")


@keys_app.command(
    epilog="Example: agentsessions keys rotate --old-key-file old.key --new-key-file new.key"
)
def rotate(
    ctx: typer.Context,
    old_key_file: Annotated[
        str,
        typer.Option("--old-key-file", metavar="FILE", help="The master key the keys are under."),
    ],
    new_key_file: Annotated[
        str,
        typer.Option("--new-key-file", metavar="FILE", help="The master key to rewrap them under."),
    ],
    as_json: JsonOpt = False,
) -> None:
    """Rewrap every encrypted session's and tool store's data key from one master key to another.

    Every key is unwrapped with the old master key first, so a wrong one changes nothing
    (exit 26); keys already under the new one are skipped, so running it again after a
    crash finishes the rotation. Only the wrapped keys change (the file store's KEY files, a
    JetStream store's key stream); no journal byte moves. Then destroy every copy of the
    old key file to make backups unreadable.
    """
    state = command_state(ctx, as_json)
    from agentsessions.sessions.keys import load_key_file

    old, new = load_key_file(old_key_file), load_key_file(new_key_file)
    with open_local_engine(state, "keys rotate") as engine:
        done = engine.rotate_master_key(old, new)
    if state.json:
        from agentsessions.cli.render import write_json

        write_json(done.to_json())
    else:
        sys.stdout.write(
            f"rewrapped {done.rewrapped} data key{'' if done.rewrapped == 1 else 's'} under "
            f"master key {done.new_key_id} "
            f"({done.already} already under it, {done.shredded} shredded)\n"
        )
