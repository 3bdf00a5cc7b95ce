"""A component's (a tool's) own journal in one in-memory session.

Invariants: a component store is made by its first writer, under its session's lock, with
a key of its own when the session is encrypted (none without the master key: exit 26);
no writer is given once its session is deleted; it is written through the same
:class:`~.writer.MemoryWriter` as a session, so it keeps the same chain rules.
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Iterator

from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.memory.crypt import open_records
from agentsessions.journal.stores.memory.session import (
    MemoryHost,
    MemorySession,
    check_free,
    state_of,
)
from agentsessions.journal.stores.memory.writer import MemoryWriter
from agentsessions.journal.stores.store import SessionMeta, WorkingState, deleted_error


class MemoryComponentStore:
    """A component's own journal in one in-memory session: a :class:`MemorySession` of its own
    (made on the first writer), written through the same :class:`MemoryWriter`."""

    def __init__(self, store: MemoryHost, uid: str, name: str) -> None:
        self._store = store
        self._uid = uid
        self._name = name

    @property
    def uid(self) -> str:
        return self._uid

    @property
    def name(self) -> str:
        return self._name

    def writer(self) -> MemoryWriter:
        """Become the store's single writer; refused once the session is deleted."""
        with self._store.cond:
            session = self._store.session_of(self._uid)
            if session.deleted:
                raise deleted_error(self._uid, self._name)
            part = session.components.get(self._name)
            if part is None:
                meta = SessionMeta(uid=self._uid, name=self._name, encrypted=session.meta.encrypted)
                key = None
                if session.key is not None:  # a tool store of its own key, made with it
                    if self._store.master is None:
                        session.key.cipher(None)  # the exit 26 error
                    key = self._store.new_key(f"{self._uid}/{self._name}")
                part = session.components[self._name] = MemorySession(meta, key=key)
            self._store.cipher_of(part)
            check_free(part, self._uid)
            part.fence = max(part.fence, part.tail.max_fence) + 1
            part.writer = MemoryWriter(self._store, part)
            return part.writer

    def state(self) -> WorkingState:
        """The component's working state (version 0 before its first writer)."""
        with self._store.cond:
            part = self._store.session_of(self._uid).components.get(self._name)
            return WorkingState() if part is None else state_of(part, self._store.cipher_of(part))

    def read(self, from_seq: int = 1, to_seq: int = 0) -> Iterator[Record]:
        records = self._records()
        end = to_seq if to_seq > 0 else len(records)
        return iter(records[max(from_seq, 1) - 1 : end])

    def follow(self, from_seq: int = 1, *, idle_timeout: float | None = None) -> Iterator[Record]:
        next_seq = max(from_seq, 1)
        while True:
            with self._store.cond:
                if not self._store.cond.wait_for(
                    functools.partial(self._has, next_seq), timeout=idle_timeout
                ):
                    return
                batch = self._records()[next_seq - 1 :]
            yield from batch
            next_seq += len(batch)

    def _has(self, seq: int) -> bool:
        return len(self._records()) >= seq

    def _records(self) -> builtins.list[Record]:
        with self._store.cond:
            part = self._store.session_of(self._uid).components.get(self._name)
            if part is None:
                return []
            return open_records(self._store.cipher_of(part), part.records)
