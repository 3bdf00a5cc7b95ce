"""Which store sessions live in: ``--store URL``, else ``AGENTSESSIONS_STORE``, else the
file store under the home.

The store is a deployment choice, not a code change: the same engine, CLI and daemon run
on either, and no harness ever names one. Today a URL is ``nats://HOST:PORT[?...]`` (the
JetStream store, ``docs/JETSTREAM.md``); an empty value means the file store.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from agentsessions.errors import InvalidArgumentError, UnavailableError

if TYPE_CHECKING:
    from agentsessions.journal.crypto.keys import MasterKey
    from agentsessions.journal.stores.store import Store

STORE_ENV = "AGENTSESSIONS_STORE"
_SCHEMES = ("nats://", "tls://")


def resolve_store_url(explicit: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """The store URL to use: ``explicit`` (``--store``), else ``$AGENTSESSIONS_STORE``, else
    "" (the file store under the home)."""
    if explicit:
        return explicit
    return (os.environ if env is None else env).get(STORE_ENV, "")


def open_store(url: str, *, allow_unsynced: bool = False, master: MasterKey | None = None) -> Store:
    """The store ``url`` names; InvalidArgumentError for a URL no store answers to.
    ``master`` (a ``MasterKey``): new sessions are encrypted, encrypted ones read."""
    if not url.startswith(_SCHEMES):
        raise InvalidArgumentError(
            f"invalid store {url!r}: expected nats://HOST:PORT (or none, for the file store "
            "under the home)",
            hint="for example nats://127.0.0.1:4222?monitor=http://127.0.0.1:8222",
            param="store_url",
        )
    try:
        from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
        from agentsessions.journal.stores.jetstream.store import JetStreamStore
    except ImportError:
        raise UnavailableError(
            "the JetStream store needs nats-py, which is not installed",
            hint="pip install 'agentsessions[nats]'",
        ) from None
    return JetStreamStore(JetStreamOptions.parse(url, allow_unsynced=allow_unsynced), master=master)
