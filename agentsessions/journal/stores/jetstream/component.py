"""Tool stores of the JetStream store: a tool's own journal in one session, on a subject
of its own (``<prefix>.c.<uid>.<tool>``), written by the same single writer as a session.

Its store (:class:`~.store.JetStreamStore`, which imports this module) is named by the
small :class:`ComponentOwner` Protocol of what a tool store uses of it, so the import stays
one way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.jetstream import checkpoint, wire
from agentsessions.journal.stores.jetstream.client import Client
from agentsessions.journal.stores.jetstream.crypt import Keyring, Opener, SubjectCipher
from agentsessions.journal.stores.jetstream.follow import follow_subject
from agentsessions.journal.stores.jetstream.writer import JetStreamWriter
from agentsessions.journal.stores.store import SessionMeta, WorkingState, deleted_error
from agentsessions.journal.stores.tail import Tail


class ComponentOwner(Protocol):
    """What a tool store uses of the JetStream store it lives in."""

    _client: Client
    _ring: Keyring

    def _meta(self, uid: str) -> tuple[SessionMeta, bool, int]:
        """The session's metadata, whether it is deleted, and its update time."""
        ...

    def _open(
        self,
        uid: str,
        subject: str,
        base: Tail | None = None,
        *,
        cipher_of: Callable[[], SubjectCipher | None] = ...,
    ) -> JetStreamWriter:
        """The single writer of ``subject``."""
        ...


class JetStreamComponentStore:
    """A tool's own journal in one session: its own subject, the same writer; an encrypted
    session's tool store has a data key of its own (scope ``uid/name``), made by its first
    writer."""

    def __init__(self, store: ComponentOwner, meta: SessionMeta, name: str, prefix: str) -> None:
        self._store, self._meta, self._uid, self._name = store, meta, meta.uid, name
        self._subject = wire.component_subject(prefix, meta.uid, name)

    @property
    def uid(self) -> str:
        return self._uid

    @property
    def name(self) -> str:
        return self._name

    def writer(self) -> JetStreamWriter:
        """Become the tool store's single writer; refused once the session is deleted."""
        _meta, deleted, _ut = self._store._meta(self._uid)
        if deleted:
            raise deleted_error(self._uid, self._name)
        ring, meta, name = self._store._ring, self._meta, self._name
        return self._store._open(
            self._uid, self._subject, cipher_of=lambda: ring.cipher(meta, name, create=True)
        )

    def read(self, from_seq: int = 1, to_seq: int = 0) -> Iterator[Record]:
        client, opener = self._store._client, self._opener()
        return iter(
            checkpoint.records_between(client, self._subject, max(from_seq, 1), to_seq, opener)
        )

    def follow(self, from_seq: int = 1, *, idle_timeout: float | None = None) -> Iterator[Record]:
        return follow_subject(
            self._store._client, self._subject, max(from_seq, 1), idle_timeout, self._opener()
        )

    def state(self) -> WorkingState:
        """The tool store's working state (version 0 before its first writer)."""
        return checkpoint.load(self._store._client, self._subject, opener=self._opener()).tail.state

    def _opener(self) -> Opener:
        return self._store._ring.opener(self._meta, self._name)
