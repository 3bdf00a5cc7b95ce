"""The ``serve`` command: the engine as a gRPC daemon (``agentsessions.v1.Sessions``).

Its flags are checked in one place (:func:`.serveflags.serve_options`; access control's in
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
from pathlib import Path
from typing import Annotated, Any

import typer

from agentsessions.cli.context import PROG, CliState, command_state, name_process
from agentsessions.cli.helpview import reflow
from agentsessions.cli.root import typer_app as app
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
from agentsessions.cli.serveflags import (
    DEFAULT_LISTEN,
    GraceOpt,
    ListenOpt,
    LogFormatOpt,
    RemoteHarnessOpt,
    RuntimeOpt,
    ServeModelOpt,
    ServeOptions,
    ServeStoreOpt,
    serve_options,
)
from agentsessions.cli.serveropts import quiet_grpc
from agentsessions.cli.storeopts import KeyFileOpt


def _open_engine(state: CliState, opts: ServeOptions, key_file: str = "") -> Any:
    from agentsessions.server.app import open_engine

    return open_engine(
        state.home, store=opts.store, runtime=opts.runtime, model=opts.model,
        store_url=state.store, allow_unsynced=state.allow_unsynced,
        key_file=key_file or state.key_file or None, models=opts.models,
    )  # fmt: skip


HELP = """Serve the sessions under --home over gRPC (agentsessions.v1.Sessions) until stopped.

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
"""``serve --help``: what the daemon does, who may call it, and what the operator defines."""


@app.command(
    help=reflow(HELP),
    epilog="Examples: agentsessions serve --listen 127.0.0.1:7443 | "
    "agentsessions serve --listen unix:///tmp/agentsessions.sock --store memory",
)
def serve(
    ctx: typer.Context,
    listen: ListenOpt = DEFAULT_LISTEN,
    store: ServeStoreOpt = "file",
    model: ServeModelOpt = None,
    runtime: RuntimeOpt = "auto",
    grace: GraceOpt = 10.0,
    harness: RemoteHarnessOpt = None,
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
    log_format: LogFormatOpt = "none",
    as_json: Annotated[bool, typer.Option("--json", help="Print the address as JSON.")] = False,
) -> None:
    """Serve the sessions under --home over gRPC until stopped (help: :data:`HELP`)."""
    _restart_with_tuned_malloc()  # first: before anything starts a thread
    state = command_state(ctx, as_json)
    quiet_grpc()  # before anything imports grpc
    opts = serve_options(listen, store, model or [], runtime, grace, harness or [], log_format)
    offered = offered_tools(tools)  # a bad file is refused before the home is opened
    access = dict(
        tls_cert=tls_cert, tls_key=tls_key, client_ca=client_ca, no_auth=no_auth,
        max_message_bytes=max_message_bytes, max_streams=max_streams,
        max_streams_per_token=max_streams_per_token, max_turns_per_token=max_turns_per_token,
        max_rps_per_token=max_rps_per_token, tools=offered,
    )  # fmt: skip
    name_process(state)
    ctx.call_on_close(_observed(opts.log_format))  # telemetry flushed after the engine closed
    with _open_engine(state, opts, key_file) as engine:
        signum = _serve(state, opts, engine, access)
        sys.stderr.write(f"{PROG}: stopping ({_signal_name(signum)}): finishing running turns\n")
        sys.stderr.flush()
    sys.stderr.write(f"{PROG}: stopped\n")


def _serve(state: CliState, opts: ServeOptions, engine: Any, access: dict[str, Any]) -> int:
    """Bind, print the address, serve until a signal; the signal's number. ``access``:
    :func:`.serveauth.security`'s flags (checked there, before anything listens)."""
    from agentsessions.server.app import build_server
    from agentsessions.server.registry import harness_services

    sec = security(engine.home, opts.listen, engine, models=_policy(engine, opts), **access)
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

    return int(server.serve_forever(grace=opts.grace, ready=ready))


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
