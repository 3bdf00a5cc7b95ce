"""The global options that choose where sessions live (``--store``, ``--allow-unsynced``).

The store is a deployment choice: the same commands run on the file store under
``--home`` or on the store a URL names (``agentsessions.sessions.storeurl``)."""

from __future__ import annotations

from typing import Annotated

import typer

StoreOpt = Annotated[
    str,
    typer.Option(
        "--store",
        envvar="AGENTSESSIONS_STORE",
        metavar="URL",
        help="Where sessions live: nats://HOST:PORT?monitor=URL (JetStream, see "
        "docs/JETSTREAM.md); default: $AGENTSESSIONS_STORE, else the file store under --home.",
        show_envvar=False,
    ),
]
AllowUnsyncedOpt = Annotated[
    bool,
    typer.Option(
        "--allow-unsynced",
        help="Accept a --store server that cannot be shown to fsync before it acknowledges.",
    ),
]
