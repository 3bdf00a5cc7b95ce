"""The access-control flags of ``agentsessions serve``, and the one call that turns them
into what ``build_server`` takes.

The serve command adds these parameters to its signature and calls :func:`security` after
opening its engine::

    tls_cert: TlsCertOpt = None, tls_key: TlsKeyOpt = None, client_ca: ClientCaOpt = None,
    no_auth: NoAuthOpt = False, max_message_bytes: MaxMessageBytesOpt = DEFAULT_MAX_MESSAGE,
    max_streams: MaxStreamsOpt = DEFAULT_MAX_STREAMS, ...
    sec = security(home, listen, engine, tls_cert=tls_cert, tls_key=tls_key,
                   client_ca=client_ca, no_auth=no_auth, max_message_bytes=max_message_bytes,
                   max_streams=max_streams, ...)
    build_server(engine, listen, credentials=sec.credentials, interceptors=sec.interceptors,
                 scope=sec.scope, options=sec.options, ...)

This module imports no grpc itself (the server package does, when :func:`security` runs).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

import typer

if TYPE_CHECKING:
    from agentsessions.sessions.api import Sessions
    from agentsessions.tools.offered import OfferedTools

DEFAULT_MAX_MESSAGE = 8 * 1024 * 1024  # agentsessions.wire.bounds.DEFAULT_MAX_MESSAGE_BYTES
# the defaults of agentsessions.wire.bounds (a test checks they agree)
DEFAULT_MAX_STREAMS = 64
DEFAULT_MAX_STREAMS_PER_TOKEN = 16
DEFAULT_MAX_TURNS_PER_TOKEN = 8
DEFAULT_MAX_RPS_PER_TOKEN = 200

TlsCertOpt = Annotated[
    Path | None,
    typer.Option("--tls-cert", metavar="PEM", help="Serve TLS with this certificate chain."),
]
TlsKeyOpt = Annotated[
    Path | None, typer.Option("--tls-key", metavar="PEM", help="The --tls-cert's private key.")
]
ClientCaOpt = Annotated[
    Path | None,
    typer.Option(
        "--client-ca",
        metavar="PEM",
        help="Require client certificates signed by these CAs (needs --tls-cert).",
    ),
]
NoAuthOpt = Annotated[
    bool,
    typer.Option(
        "--no-auth",
        help="Serve without bearer tokens: only on a unix socket or a loopback address.",
    ),
]
MaxMessageBytesOpt = Annotated[
    int,
    typer.Option(
        "--max-message-bytes", min=1, metavar="N", help="Largest message either way (bytes)."
    ),
]
MaxStreamsOpt = Annotated[
    int,
    typer.Option(
        "--max-streams",
        min=1,
        metavar="N",
        help="Streams and turns open in the whole server at once (each holds a worker).",
    ),
]
MaxStreamsPerTokenOpt = Annotated[
    int,
    typer.Option(
        "--max-streams-per-token",
        "--max-streams-per-client",
        min=1,
        metavar="N",
        help="Open streams (exec, replay, follow) one token may hold at once "
        "(--max-streams-per-client: the old name).",
    ),
]
MaxTurnsPerTokenOpt = Annotated[
    int,
    typer.Option(
        "--max-turns-per-token",
        min=1,
        metavar="N",
        help="Turns (exec, resume, compact, rerun) one token may have in flight at once.",
    ),
]
MaxRpsPerTokenOpt = Annotated[
    int,
    typer.Option(
        "--max-rps-per-token",
        min=1,
        metavar="N",
        help="Requests a second one token may make (bursts of twice that).",
    ),
]

ToolsOpt = Annotated[
    Path | None,
    typer.Option(
        "--tools",
        metavar="FILE",
        help="The tools this daemon offers token holders: a workload TOML file ([tools.NAME] "
        "tables with their executors; caller_config lists the config keys a caller may set). "
        "A caller's workload selects these by name and may raise their mediation; it never "
        "defines an executor (docs/OPERATIONS.md). Checked at start; without it a token "
        "holder's workload is refused.",
    ),
]


def offered_tools(path: Path | None) -> OfferedTools | None:
    """The ``--tools`` file, validated (WorkloadError, exit 2, naming file, table and key)."""
    if path is None:
        return None
    from agentsessions.tools.offered import load_offered

    return load_offered(path)


class Security(NamedTuple):
    """What ``build_server`` takes from the access-control flags."""

    credentials: Any  # grpc.ServerCredentials | None
    interceptors: list[Any]  # grpc.ServerInterceptor
    scope: Any  # Callable[[grpc.ServicerContext], Sessions]
    options: list[tuple[str, Any]]


def security(
    home: str | os.PathLike[str],
    listen: str,
    engine: Sessions,
    *,
    tls_cert: Path | None = None,
    tls_key: Path | None = None,
    client_ca: Path | None = None,
    no_auth: bool = False,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE,
    max_streams: int = DEFAULT_MAX_STREAMS,
    max_streams_per_token: int = DEFAULT_MAX_STREAMS_PER_TOKEN,
    max_turns_per_token: int = DEFAULT_MAX_TURNS_PER_TOKEN,
    max_rps_per_token: int = DEFAULT_MAX_RPS_PER_TOKEN,
    tools: OfferedTools | None = None,
    models: Any = None,
) -> Security:
    """The flags as credentials, interceptors, scope and channel options; a bad combination
    (``--no-auth`` off loopback, tokens in plaintext off loopback, unusable TLS files) is
    refused here, exit 2, before anything listens. ``tools``: the offered tools
    (:class:`~agentsessions.tools.offered.OfferedTools`, ``serve --tools``); ``models``: the
    :class:`~agentsessions.server.modelpolicy.ModelPolicy` of what a token holder may name."""
    from agentsessions.server.auth import server_security
    from agentsessions.wire.bounds import Limits

    limits = Limits(
        max_message_bytes=max_message_bytes,
        max_streams=max_streams,
        max_streams_per_token=max_streams_per_token,
        max_turns_per_token=max_turns_per_token,
        max_rps_per_token=max_rps_per_token,
    )
    credentials, interceptors, scope = server_security(
        home,
        listen=listen,
        engine=engine,
        tls_cert=tls_cert,
        tls_key=tls_key,
        client_ca=client_ca,
        no_auth=no_auth,
        limits=limits,
        offered=tools,
        models=models,
    )
    return Security(credentials, list(interceptors), scope, limits.grpc_options())
