"""A static check, for mypy only: every store offers :class:`~.store.StoreExtras`, and the
file and JetStream stores :class:`~.store.SealedExport`, the file store
:class:`~.store.Reindexable`; every store :class:`~.store.ProjectIndex` and
:class:`~.claims.KeyClaims`.

The engine reaches these capabilities by duck typing (a store without them still serves),
so nothing at run time would notice a store whose method is misspelt or takes other
arguments; these functions make mypy compare each store's methods with the protocol's.
Nothing here runs: the imports and functions exist under ``TYPE_CHECKING`` only (the
JetStream store's nats-py stays an optional dependency).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentsessions.journal.stores.claims import KeyClaims
    from agentsessions.journal.stores.file.store import FileStore
    from agentsessions.journal.stores.jetstream.store import JetStreamStore
    from agentsessions.journal.stores.memory.store import MemoryStore
    from agentsessions.journal.stores.store import (
        ProjectIndex,
        Reindexable,
        SealedExport,
        StoreExtras,
    )

    def _file(store: FileStore) -> StoreExtras:
        return store

    def _memory(store: MemoryStore) -> StoreExtras:
        return store

    def _jetstream(store: JetStreamStore) -> StoreExtras:
        return store

    def _file_sealed(store: FileStore) -> SealedExport:
        return store

    def _jetstream_sealed(store: JetStreamStore) -> SealedExport:
        return store

    def _file_reindexable(store: FileStore) -> Reindexable:
        return store

    def _file_index(store: FileStore) -> ProjectIndex:
        return store

    def _memory_index(store: MemoryStore) -> ProjectIndex:
        return store

    def _jetstream_index(store: JetStreamStore) -> ProjectIndex:
        return store

    def _file_claims(store: FileStore) -> KeyClaims:
        return store

    def _memory_claims(store: MemoryStore) -> KeyClaims:
        return store

    def _jetstream_claims(store: JetStreamStore) -> KeyClaims:
        return store
