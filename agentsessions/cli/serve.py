"""The ``serve`` command: the engine as a gRPC daemon (``agentsessions.v1.Sessions``).

Parses its options in one place (:func:`serve_options`; access control's in
:mod:`.serveauth`); opens ONE engine for the server's life;
prints the address it listens on (one line, the real port when 0 was asked for); serves
until SIGINT or SIGTERM, then stops gracefully: no new RPC is accepted, in-flight ones get
``--grace`` seconds, and closing the engine waits for running turns (their END durable),
then closes the writers and tool servers. A second signal during that ends the process at
once, as a second Ctrl-C does for the CLI: a turn cut off then is completed by ``resume``.

grpc is imported only when the command runs (the CLI starts without it).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer

from agentsessions.cli.app import app
from agentsessions.cli.context import PROG, CliState, command_state, name_process
from agentsessions.cli.options import MODEL_SPEC_HELP, parse_pairs
from agentsessions.cli.serveauth import (
    DEFAULT_MAX_MESSAGE,
    DEFAULT_MAX_RPS_PER_TOKEN,
    DEFAULT_MAX_STREAMS,
    DEFAULT_MAX_STREAMS_PER_TOKEN,
    DEFAULT_MAX_TURNS_PER_TOKEN,
    ClientCaOpt,
    MaxMessageBytesOpt,
    MaxRpsPerTokenOpt,
    MaxStreamsOpt,
    MaxStreamsPerTokenOpt,
    MaxTurnsPerTokenOpt,
    NoAuthOpt,
    TlsCertOpt,
    TlsKeyOpt,
    ToolsOpt,
    offered_tools,
    security,
)
from agentsessions.cli.serveropts import quiet_grpc
from agentsessions.cli.storeopts import KeyFileOpt
from agentsessions.errors import InvalidArgumentError

STORES = ("file", "memory")  # agentsessions.server.app.open_engine's; or a store URL
STORE_URLS = ("nats://", "tls://")  # the JetStream store (docs/JETSTREAM.md)
DEFAULT_LISTEN = "127.0.0.1:8080"  # the reference daemon's -addr default
LOG_FORMATS = ("none", "text", "json")  # agentsessions.server.logs.FORMATS


@dataclass
class ServeOptions:
    """What ``serve`` was asked for, checked before anything is opened or bound."""

    listen: str
    store: str = "file"
    model: str | None = None
    runtime: str = "auto"
    grace: float = 10.0
    harnesses: dict[str, str] = field(default_factory=dict)  # NAME -> ADDRESS (--harness)
    models: dict[str, str] = field(default_factory=dict)  # NAME -> SPEC (--model NAME=SPEC)


def serve_options(
    listen: str, store: str, model: list[str], runtime: str, grace: float, harness: list[str]
) -> ServeOptions:
    """The checked options of ``serve`` (one function, so later flags join here)."""
    default, catalog = _models(model)
    if store not in STORES and not store.startswith(STORE_URLS):
        raise InvalidArgumentError(
            f"invalid --store {store!r}: expected one of {', '.join(STORES)} or nats://HOST:PORT",
            hint=f"{PROG} serve --help",
        )
    if grace < 0:
        raise InvalidArgumentError(f"--grace must be >= 0, got {grace}")
    from agentsessions.server.app import parse_listen

    parse_listen(listen)  # a bad address is refused before the home is opened
    return ServeOptions(
        listen=listen,
        store=store,
        model=default or None,
        runtime=runtime,
        grace=grace,
        harnesses=parse_pairs(harness, "--harness"),
        models=catalog,
    )


def _models(items: list[str]) -> tuple[str, dict[str, str]]:
    """``--model``'s default SPEC (at most one) and its catalog (each NAME=SPEC, checked)."""
    from agentsessions.models.catalog import ModelCatalog, is_entry

    specs = [item for item in items if not is_entry(item)]
    if len(specs) > 1:
        raise InvalidArgumentError(
            f"--model SPEC given {len(specs)} times: a server has one default model",
            hint="define more models by name: --model NAME=SPEC",
        )
    catalog = ModelCatalog.parse([item for item in items if is_entry(item)]) if items else {}
    return (specs[0] if specs else ""), dict(catalog)


def _open_engine(state: CliState, opts: ServeOptions, key_file: str = "") -> Any:
    from agentsessions.server.app import open_engine

    return open_engine(
        state.home, store=opts.store, runtime=opts.runtime, model=opts.model,
        store_url=state.store, allow_unsynced=state.allow_unsynced,
        key_file=key_file or state.key_file or None, models=opts.models,
    )  # fmt: skip


@app.command(
    epilog="Examples: agentsessions serve --listen 127.0.0.1:7443 | "
    "agentsessions serve --listen unix:///tmp/agentsessions.sock --store memory"
)
def serve(
    ctx: typer.Context,
    listen: Annotated[
        str,
        typer.Option(
            "--listen",
            metavar="HOST:PORT|unix:///PATH",
            help="Where to listen (port 0: any free port; the line printed says which).",
        ),
    ] = DEFAULT_LISTEN,
    store: Annotated[
        str,
        typer.Option(
            "--store",
            metavar="file|memory|nats://HOST:PORT",
            help="file: the sessions under --home (or the global --store / "
            "AGENTSESSIONS_STORE); memory: an in-memory store that lives as long as the "
            "server; nats://...: the JetStream store (docs/JETSTREAM.md).",
        ),
    ] = "file",
    model: Annotated[
        list[str] | None,
        typer.Option(
            metavar="NAME=SPEC|SPEC",
            help="NAME=SPEC (repeatable): a model the server offers by NAME, the only models "
            "a token holder may name besides echo and scripted (without file=); its SPEC stays "
            "on the server, sessions record the NAME. Also [models.NAME] in the config file. "
            f"SPEC alone (once): the default model of new sessions (else echo). {MODEL_SPEC_HELP}",
        ),
    ] = None,
    runtime: Annotated[
        str, typer.Option(metavar="NAME", help="Runtime that hosts harnesses: auto, local, warm.")
    ] = "auto",
    grace: Annotated[
        float,
        typer.Option(metavar="SECONDS", help="How long in-flight RPCs may run on after a stop."),
    ] = 10.0,
    harness: Annotated[
        list[str] | None,
        typer.Option(
            metavar="NAME=ADDRESS",
            help="A harness already running at ADDRESS (host:port or unix:///path); repeatable.",
        ),
    ] = None,
    tls_cert: TlsCertOpt = None,
    tls_key: TlsKeyOpt = None,
    client_ca: ClientCaOpt = None,
    no_auth: NoAuthOpt = False,
    max_message_bytes: MaxMessageBytesOpt = DEFAULT_MAX_MESSAGE,
    max_streams: MaxStreamsOpt = DEFAULT_MAX_STREAMS,
    max_streams_per_token: MaxStreamsPerTokenOpt = DEFAULT_MAX_STREAMS_PER_TOKEN,
    max_turns_per_token: MaxTurnsPerTokenOpt = DEFAULT_MAX_TURNS_PER_TOKEN,
    max_rps_per_token: MaxRpsPerTokenOpt = DEFAULT_MAX_RPS_PER_TOKEN,
    key_file: KeyFileOpt = "",
    tools: ToolsOpt = None,
    log_format: Annotated[
        str,
        typer.Option(
            "--log-format",
            metavar="none|text|json",
            help="Log one line per call (method, status, duration, request id, project, "
            "session, token id) and the daemon's warnings to stderr, as text or JSON "
            "(docs/OPERATIONS.md); none: warnings only.",
        ),
    ] = "none",
    as_json: Annotated[bool, typer.Option("--json", help="Print the address as JSON.")] = False,
) -> None:
    """Serve the sessions under --home over gRPC (agentsessions.v1.Sessions) until stopped.

    Prints the address it listens on, then serves one long-lived engine. SIGINT or SIGTERM
    stop it gracefully: no new calls, in-flight ones finish (up to --grace seconds), running
    turns end and are durable, then it exits 0. Clients: agentsessions --server ADDRESS ...
    or agentsessions.client.dial(ADDRESS).

    Every call needs a bearer token (agentsessions token create --project P), scoped to its
    projects; --no-auth serves without, on a unix socket or a loopback address only. Tokens
    off loopback need TLS (--tls-cert, --tls-key; --client-ca to require client
    certificates). The Harness registry is served too; --harness NAME=ADDRESS adds a
    harness already running elsewhere (agentsessions harness serve NAME --listen ADDRESS).
    --tools FILE offers token holders the tools (executors) it declares: their workloads
    select those by name, never define one.
    --model NAME=SPEC offers a model by name (repeatable; also [models.NAME] in the config
    file): a token holder may name only those, echo, and scripted without file=; anything
    naming a file, a URL or a provider option is PERMISSION_DENIED.
    With a master key (--key-file, as the global option, or its environment variables) the
    sessions it creates are encrypted at rest, on the file or the memory store.

    For operators: the standard gRPC health service (NOT_SERVING once a stop begins) and
    server reflection answer without a token; OTEL_TRACES_EXPORTER / OTEL_METRICS_EXPORTER
    turn on OpenTelemetry traces and metrics (the otel extra; docs/OPERATIONS.md).
    """
    _restart_with_tuned_malloc()  # first: before anything starts a thread
    state = command_state(ctx, as_json)
    quiet_grpc()  # before anything imports grpc
    opts = serve_options(listen, store, model or [], runtime, grace, harness or [])
    if log_format not in LOG_FORMATS:
        raise InvalidArgumentError(
            f"invalid --log-format {log_format!r}: expected one of {', '.join(LOG_FORMATS)}"
        )
    offered = offered_tools(tools)  # a bad file is refused before the home is opened
    from agentsessions.server.app import build_server
    from agentsessions.server.registry import harness_services

    name_process(state)
    ctx.call_on_close(_observed(log_format))  # telemetry flushed after the engine closed
    with _open_engine(state, opts, key_file) as engine:
        sec = security(
            engine.home,
            opts.listen,
            engine,
            tls_cert=tls_cert,
            tls_key=tls_key,
            client_ca=client_ca,
            no_auth=no_auth,
            max_message_bytes=max_message_bytes,
            max_streams=max_streams,
            max_streams_per_token=max_streams_per_token,
            max_turns_per_token=max_turns_per_token,
            max_rps_per_token=max_rps_per_token,
            tools=offered,
            models=_policy(engine, opts),
        )
        pairs = [f"{name}={address}" for name, address in opts.harnesses.items()]
        server = build_server(
            engine,
            opts.listen,
            credentials=sec.credentials,
            interceptors=sec.interceptors,
            scope=sec.scope,
            extra_services=harness_services(engine, pairs),
            options=sec.options,
        )

        def ready() -> None:  # once a signal stops the daemon gracefully
            if state.json:
                from agentsessions.cli.render import write_json

                write_json({"address": server.address, "port": server.port}, compact=True)
            else:
                sys.stdout.write(f"listening on {server.address}\n")
            sys.stdout.flush()
            _report_unindexed(engine)

        signum = server.serve_forever(grace=opts.grace, ready=ready)
        sys.stderr.write(f"{PROG}: stopping ({_signal_name(signum)}): finishing running turns\n")
        sys.stderr.flush()
    sys.stderr.write(f"{PROG}: stopped\n")


def _restart_with_tuned_malloc() -> None:
    """Run this very command again, in this process (``execve``: the same pid), with
    glibc's per-thread malloc caches off (:func:`agentsessions.server.memory.tuned_environ`
    says when, the module why: a daemon's memory comes back after a flood). Only when this
    process is the ``agentsessions`` command itself (a program that runs the CLI in-process
    keeps its environment and its process), and only once (the restart has the variable)."""
    from agentsessions.server.memory import tuned_environ

    env = tuned_environ(os.environ)
    if env is None or not sys.executable or not _is_the_command():
        return
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)
    except OSError:  # pragma: no cover - then serve with glibc's defaults
        return


def _is_the_command() -> bool:
    """Whether the interpreter was started to run this CLI: ``python -m agentsessions``
    or the ``agentsessions`` script (so re-running its command line runs the same)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name == "agentsessions.__main__":
        return True
    script = sys.argv[0] if sys.argv else ""
    return Path(script).name == PROG and sys.orig_argv[1:2] == [script]


def _policy(engine: Any, opts: ServeOptions) -> Any:
    """What a token holder may name as a model: the engine's catalog (the flags' over the
    config file's) and the server's default model, both the operator's."""
    from agentsessions.server.modelpolicy import ModelPolicy

    return ModelPolicy(engine.models, opts.model or "")


def _observed(log_format: str) -> Callable[[], None]:
    """Install the log handler and, when the OTEL_* variables ask for it, OpenTelemetry
    (before the engine opens: its fsyncs are measured); what shuts the telemetry down."""
    from agentsessions.server.telemetryenv import observe

    def warn(text: str) -> None:
        sys.stderr.write(f"{PROG}: warning: {text}\n")

    return observe(log_format, warn)


def _signal_name(signum: int) -> str:
    import signal

    try:
        return signal.Signals(signum).name
    except ValueError:
        return str(signum)


def _report_unindexed(engine: object) -> None:
    """Say which sessions the store could not index on open, as ``list`` does locally
    (``list --server`` gets them from ListSessions too)."""
    from agentsessions.cli.render import one_line

    for exc in getattr(engine, "unindexed", ()):
        sys.stderr.write(f"{PROG}: warning: not listed: {one_line(exc.message)}\n")
    sys.stderr.flush()
