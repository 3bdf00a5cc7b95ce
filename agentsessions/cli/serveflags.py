"""The ``serve`` command's own flags (where it listens, its store, models, runtime, grace,
remote harnesses, log format) and their checking into one :class:`ServeOptions`.

Access control's flags live in :mod:`.serveauth`; the command itself in :mod:`.serve`.
Cheap to import: grpc and the server are imported only by the checks that need them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

import typer

from agentsessions.cli.context import PROG
from agentsessions.cli.options import MODEL_SPEC_HELP, parse_pairs
from agentsessions.errors import InvalidArgumentError

STORES = ("file", "memory")  # agentsessions.server.app.open_engine's; or a store URL
STORE_URLS = ("nats://", "tls://")  # the JetStream store (docs/JETSTREAM.md)
DEFAULT_LISTEN = "127.0.0.1:8080"  # the reference daemon's -addr default
LOG_FORMATS = ("none", "text", "json")  # agentsessions.server.logs.FORMATS

ListenOpt = Annotated[
    str,
    typer.Option(
        "--listen",
        metavar="HOST:PORT|unix:///PATH",
        help="Where to listen (port 0: any free port; the line printed says which).",
    ),
]
ServeStoreOpt = Annotated[
    str,
    typer.Option(
        "--store",
        metavar="file|memory|nats://HOST:PORT",
        help="file: the sessions under --home (or the global --store / "
        "AGENTSESSIONS_STORE); memory: an in-memory store that lives as long as the "
        "server; nats://...: the JetStream store (docs/JETSTREAM.md).",
    ),
]
ServeModelOpt = Annotated[
    list[str] | None,
    typer.Option(
        metavar="NAME=SPEC|SPEC",
        help="NAME=SPEC (repeatable): a model the server offers by NAME, the only models "
        "a token holder may name besides echo and scripted (without file=); its SPEC stays "
        "on the server, sessions record the NAME. Also [models.NAME] in the config file. "
        f"SPEC alone (once): the default model of new sessions (else echo). {MODEL_SPEC_HELP}",
    ),
]
RuntimeOpt = Annotated[
    str, typer.Option(metavar="NAME", help="Runtime that hosts harnesses: auto, local, warm.")
]
GraceOpt = Annotated[
    float,
    typer.Option(metavar="SECONDS", help="How long in-flight RPCs may run on after a stop."),
]
RemoteHarnessOpt = Annotated[
    list[str] | None,
    typer.Option(
        metavar="NAME=ADDRESS",
        help="A harness already running at ADDRESS (host:port or unix:///path); repeatable.",
    ),
]
LogFormatOpt = Annotated[
    str,
    typer.Option(
        "--log-format",
        metavar="none|text|json",
        help="Log one line per call (method, status, duration, request id, project, "
        "session, token id) and the daemon's warnings to stderr, as text or JSON "
        "(docs/OPERATIONS.md); none: warnings only.",
    ),
]


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
    log_format: str = "none"


def serve_options(
    listen: str,
    store: str,
    model: list[str],
    runtime: str,
    grace: float,
    harness: list[str],
    log_format: str = "none",
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
    if log_format not in LOG_FORMATS:
        raise InvalidArgumentError(
            f"invalid --log-format {log_format!r}: expected one of {', '.join(LOG_FORMATS)}"
        )
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
        log_format=log_format,
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
