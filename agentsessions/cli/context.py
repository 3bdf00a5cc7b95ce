"""What every command gets from the root command: the parsed global options and the engine.

The root callback (:mod:`.app`) fills one :class:`CliState` per run; a command reads it with
:func:`command_state` and opens the :class:`~agentsessions.sessions.api.Sessions` it acts on
with :func:`open_engine` (``--server``'s client, else the local engine): the one place the
CLI chooses local or remote.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agentsessions.cli import serveropts as so
from agentsessions.cli.storeopts import open_chosen
from agentsessions.sessions.defaults import DEFAULT_RUNTIME

if TYPE_CHECKING:
    import typer

    from agentsessions.sessions.api import Sessions
    from agentsessions.sessions.local import LocalSessions

PROG = "agentsessions"
"""The program's name, in usage lines, error lines and hints."""
EXIT_INTERRUPTED = 130
"""The exit status of a command Ctrl-C ended (128 + SIGINT, as a shell reports it)."""


@dataclass
class CliState:
    """What the app callback parsed, shared with every command through the click context."""

    home: Path | None = None
    json: bool = False
    program: str = ""
    server: str = ""  # --server / $AGENTSESSIONS_SERVER: every command goes to that daemon
    token: str = ""
    tls: tuple[str, str, str] = ("", "", "")  # --tls-ca, --tls-cert, --tls-key
    store: str = ""  # --store / $AGENTSESSIONS_STORE: "" is the file store under the home
    allow_unsynced: bool = False  # --allow-unsynced: a store server that may ack before fsync
    key_file: str = ""  # --key-file: the master key ("": the environment's, or none)


def command_state(ctx: typer.Context, as_json: bool) -> CliState:
    """The shared state, with this command's ``--json`` folded in."""
    state = ctx.ensure_object(CliState)
    state.json = state.json or as_json
    return state


@contextmanager
def open_engine(
    state: CliState, runtime: str = DEFAULT_RUNTIME, *, read: bool = False
) -> Iterator[Sessions]:
    """The Sessions a command acts on, closed when the command ends: the client of
    ``--server`` when one is given, else the engine on the file store under the home.
    The one place the CLI chooses local or remote. ``read``: the command only reads, so a
    local home that does not exist is refused (exit 3) rather than created."""
    if state.server:
        from agentsessions.cli.remote import dial_server  # imports grpc: only with --server

        with dial_server(state.server, state.token, state.tls) as client:
            yield client
        return
    with open_local_engine(state, "", runtime, read=read) as engine:
        yield engine


@contextmanager
def open_local_engine(
    state: CliState, command: str, runtime: str = DEFAULT_RUNTIME, *, read: bool = False
) -> Iterator[LocalSessions]:
    """The local engine, for a command that is local by nature (``command`` names it:
    refused with one line, exit 2, when ``--server`` is given); ``read`` as for
    :func:`open_engine`."""
    so.require_local(state.server, command)
    name_process(state)
    with open_chosen(state, runtime, read=read) as engine:
        yield engine


def name_process(state: CliState) -> None:
    """Name this process in the LOCK files it takes after the verb the callback parsed."""
    if state.program:
        from agentsessions.sessions.home import name_process as name

        name(state.program)
