"""The global options that point the CLI at a daemon (``--server``, ``--token``, the TLS
files), and the refusal of a local-only command over ``--server``. Cheap to import: no
grpc here (:mod:`.remote` dials, and is imported only when ``--server`` is given)."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from agentsessions.errors import InvalidArgumentError

ServerOpt = Annotated[
    str,
    typer.Option(
        "--server",
        envvar="AGENTSESSIONS_SERVER",
        metavar="ADDRESS",
        help="Run the command against `agentsessions serve` at ADDRESS (HOST:PORT or "
        "unix:///PATH) instead of a local home (default: $AGENTSESSIONS_SERVER).",
        show_envvar=False,
    ),
]
TokenOpt = Annotated[
    str,
    typer.Option(
        "--token",
        envvar="AGENTSESSIONS_TOKEN",
        metavar="TOKEN",
        help="Bearer token sent to --server (default: $AGENTSESSIONS_TOKEN).",
        show_envvar=False,
    ),
]
TlsCaOpt = Annotated[
    str, typer.Option("--tls-ca", metavar="FILE", help="CA certificate of a TLS --server.")
]
TlsCertOpt = Annotated[
    str, typer.Option("--tls-cert", metavar="FILE", help="Client certificate for --server.")
]
TlsKeyOpt = Annotated[
    str, typer.Option("--tls-key", metavar="FILE", help="Key of the client certificate.")
]


def check_tls(server: str, ca: str, cert: str, key: str) -> tuple[str, str, str]:
    """The TLS files; refused (exit 2) without ``--server``, or a certificate without key."""
    if not server and (ca or cert or key):
        raise InvalidArgumentError(
            "--tls-ca, --tls-cert and --tls-key apply only with --server",
            hint="agentsessions --server HOST:PORT --tls-ca ca.pem ...",
        )
    if bool(cert) != bool(key):
        raise InvalidArgumentError("a client certificate needs both --tls-cert and --tls-key")
    return ca, cert, key


def require_local(server: str, command: str) -> None:
    """InvalidArgumentError (exit 2) if ``server`` (``--server``) is given: ``command``
    needs a local home."""
    if server:
        raise InvalidArgumentError(
            f"{command or 'this command'} needs a local home; it does not run over --server",
            hint="run it without --server (and $AGENTSESSIONS_SERVER), where the home is",
        )


def quiet_grpc() -> None:
    """Keep grpc's C core from logging to stderr (unless the user asks, GRPC_VERBOSITY): a
    failure is our one error line, not the core's log line before it. Call before grpc is
    first imported."""
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
