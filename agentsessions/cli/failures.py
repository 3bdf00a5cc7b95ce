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

from agentsessions.errors import StorageError, UnavailableError

PROG = "agentsessions"


def report(message: str, hint: str, as_json: bool, payload: dict[str, Any]) -> None:
    """Print an error: one line (and an optional hint line) on stderr, JSON on stdout.

    The JSON error object is a single line, so it also ends a ``log --json`` stream cleanly.
    """
    from agentsessions.cli.render import error_text, write_json

    if as_json:
        write_json(payload, compact=True)
    sys.stderr.write(error_text(message, hint))
    sys.stderr.flush()


# optional packages a command may import, by top-level module, and the extra that installs
# each (pyproject's [project.optional-dependencies]); the base install has none of them
OPTIONAL = {
    "grpc": "grpc",
    "google": "grpc",  # protobuf's google.protobuf
    "nats": "nats",
    "cryptography": "crypto",
    "keyring": "keyring",
    "mcp": "mcp",
    "opentelemetry": "otel",
}


def missing_extra(exc: ModuleNotFoundError) -> UnavailableError | None:
    """The one-line refusal of a command whose optional package is not installed (exit 12,
    naming the extra), or None for a module no extra provides (a real bug: re-raised)."""
    top = (exc.name or "").split(".", 1)[0]
    extra = OPTIONAL.get(top)
    if extra is None:
        return None
    return UnavailableError(
        f"this command needs the {top!r} package, which is not installed",
        hint=f"pip install 'agentsessions[{extra}]'",
    )


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
