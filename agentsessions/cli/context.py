"""What every command gets from the root command: the parsed global options and the engine.

The root callback (:mod:`.root`, or :mod:`.fast` for the commands it parses) fills one
:class:`CliState` per run (:func:`start_command` is the part both run); a command reads it
with :func:`command_state` and opens the :class:`~agentsessions.sessions.api.Sessions` it
acts on with :func:`open_engine` (``--server``'s client, else the local engine): the one
place the CLI chooses local or remote. A command ends early with :class:`CommandExit`.
Imports no typer, so that a command :mod:`.fast` runs never loads it.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from agentsessions.errors import InvalidArgumentError
from agentsessions.sessions.defaults import DEFAULT_RUNTIME
from agentsessions.valueclass import value

if TYPE_CHECKING:
    import typer

    from agentsessions.sessions.api import Sessions
    from agentsessions.sessions.local import LocalSessions

PROG = "agentsessions"
"""The program's name, in usage lines, error lines and hints."""
EXIT_INTERRUPTED = 130
"""The exit status of a command Ctrl-C ended (128 + SIGINT, as a shell reports it)."""


class CommandExit(Exception):
    """Ends a command with exit status ``code`` (its output already written), whichever
    parser ran it: the root command (:mod:`.root`) and :mod:`.fast` both return the code."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


@value
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


def start_command(
    state: CliState, home: str | None, typed: bool, commands: Collection[str], command: str | None
) -> None:
    """What the root command does with its local options before ``command`` runs (None:
    none was named), whether typer or :mod:`.fast` parsed them: ``home`` checked (``typed``:
    it came from the command line, so it must not be another word of it) and the process
    named after the verb."""
    from agentsessions.sessions.home import check_home

    if home is not None and typed:
        check_home_word(home, commands)
    state.home = None if home is None else check_home(home, "--home")
    if command is not None:
        # a registered verb, never an argument: a LOCK names its holder without user content.
        # Handed to the journal when an engine opens (``name_process``), so that a
        # subcommand's --help imports no journal module.
        state.program = f"{PROG} {command}"


def check_home_word(value: str, commands: Collection[str]) -> None:
    """Refuse a typed ``--home`` value that is surely another word of the command line.

    ``--home --json list`` would otherwise make a home named ``--json``, and
    ``--home compute list`` one named ``compute``: a value that starts with ``-`` is
    refused, and so is a command's name when no such directory exists (``./compute``
    names that directory on purpose). Exit 2.
    """
    if value.startswith("-"):
        raise InvalidArgumentError(
            f"--home needs a directory, got the option-like {value!r}",
            hint="agentsessions --home DIR COMMAND ...  (a directory with that name: "
            f"--home ./{value})",
        )
    if value in commands and not os.path.exists(value):
        raise InvalidArgumentError(
            f"--home got {value!r}, a command's name, and no such directory exists",
            hint=f"agentsessions --home DIR {value} ...  (to make a home named so: "
            f"--home ./{value})",
        )


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
    if state.server:  # the option modules import typer: only when there is a refusal to make
        from agentsessions.cli.serveropts import require_local

        require_local(state.server, command)
    name_process(state)
    with open_chosen(state, runtime, read=read) as engine:
        yield engine


class StoreChoice(Protocol):
    """What the global options chose (the CLI's state)."""

    home: Path | None
    store: str
    allow_unsynced: bool
    key_file: str


def open_chosen(state: StoreChoice, runtime: str, *, read: bool = False) -> LocalSessions:
    """The local engine on the store and master key the global options chose; ``read``:
    a home that does not exist is refused (exit 3), never created."""
    from agentsessions.sessions.local import open_local

    return open_local(
        state.home,
        runtime=runtime,
        store_url=state.store,
        allow_unsynced=state.allow_unsynced,
        key_file=state.key_file or None,
        must_exist=read,
    )


def name_process(state: CliState) -> None:
    """Name this process in the LOCK files it takes after the verb the callback parsed."""
    if state.program:
        from agentsessions.sessions.home import name_process as name

        name(state.program)
