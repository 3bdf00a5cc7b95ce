"""How a failure reaches the user: one line ``agentsessions: error: ...`` on stderr (plus an
optional ``  hint: ...`` line), the JSON error object with ``--json``, a stable exit code.

:class:`~agentsessions.cli.app.AgentSessionsGroup` catches every failure and hands it here;
an error's hint is sharpened where the CLI knows better than the library (a busy session:
the flag that waits for its holder).
"""

from __future__ import annotations

import sys
from typing import Any

import typer

from agentsessions.cli.context import PROG
from agentsessions.errors import StorageError


def report(message: str, hint: str, as_json: bool, payload: dict[str, Any]) -> None:
    """Print an error: one line (and an optional hint line) on stderr, JSON on stdout.

    The JSON error object is a single line, so it also ends a ``log --json`` stream cleanly.
    """
    from agentsessions.cli.render import error_text, write_json

    if as_json:
        write_json(payload, compact=True)
    sys.stderr.write(error_text(message, hint))
    sys.stderr.flush()


def storage_error(exc: OSError) -> StorageError:
    """Map an OSError that escaped the library into our error tree (exit 13)."""
    where = f": {exc.filename}" if exc.filename else ""
    return StorageError(f"{exc.strerror or exc}{where}", path=exc.filename)


def usage_hint(exc: typer.TyperException) -> str:
    """The ``--help`` of the command a usage error is about."""
    ctx = getattr(exc, "ctx", None)
    if ctx is None:
        return f"{PROG} --help"
    return f"{ctx.command_path} --help"


def busy_hint(hint: str, program: str) -> str:
    """A busy session's hint (exit 6), naming ``--wait``: the flag that waits for the holder
    (``program`` is the running verb, ``agentsessions exec``)."""
    verb = program.removeprefix(f"{PROG} ")
    if "--wait" in hint:
        return hint
    first = hint or "wait for the holder to finish, or stop it"
    if verb in ("exec", "resume"):
        return f"{first}; or let {verb} wait for it: {PROG} {verb} ... --wait SECONDS"
    return f"{first}; exec and resume wait for it with --wait SECONDS"
