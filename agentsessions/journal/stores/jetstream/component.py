"""Tool stores of the JetStream store: a tool's own journal in one session, on a subject
of its own (``<prefix>.c.<uid>.<tool>``), written by the same single writer as a session.

Its store (:class:`~.store.JetStreamStore`, which imports this module) hands a tool store
what it uses of the store as a :class:`ComponentHost` (its connection, keyring, session
metadata read and writer factory), so the import stays one way and the tool store reaches
into nothing of the store's own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.jetstream import checkpoint, wire
from agentsessions.journal.stores.jetstream.client import Client
from agentsessions.journal.stores.jetstream.crypt import Keyring, Opener, SubjectCipher
from agentsessions.journal.stores.jetstream.follow import follow_subject
from agentsessions.journal.stores.jetstream.writer import JetStreamWriter
from agentsessions.journal.stores.store import SessionMeta, WorkingState, deleted_error
from agentsessions.journal.stores.tail import Tail


class OpenWriter(Protocol):
    """The store's factory of a subject's single writer (``cipher_of`` loads an encrypted
    session's cipher once the writer is fenced)."""

    def __call__(
        self,
        uid: str,
        subject: str,
        base: Tail | None = None,
        *,
        cipher_of: Callable[[], SubjectCipher | None] = ...,
    ) -> JetStreamWriter: ...


@dataclass(frozen=True)
class ComponentHost:
    """What a tool store uses of the JetStream store it lives in, handed over by the store."""

    client: Client
    ring: Keyring
    meta: Callable[[str], tuple[SessionMeta, bool, int]]
    """The session's metadata, whether it is deleted, and its update time."""
    open: OpenWriter


class JetStreamComponentStore:
    """A tool's own journal in one session: its own subject, the same writer; an encrypted
    session's tool store has a data key of its own (scope ``uid/name``), made by its first
    writer."""

    def __init__(self, host: ComponentHost, meta: SessionMeta, name: str, prefix: str) -> None:
        self._host, self._meta, self._uid, self._name = host, meta, meta.uid, name
        self._subject = wire.component_subject(prefix, meta.uid, name)

    @property
    def uid(self) -> str:
        return self._uid

    @property
    def name(self) -> str:
        return self._name

    def writer(self) -> JetStreamWriter:
        """Become the tool store's single writer; refused once the session is deleted."""
        _meta, deleted, _ut = self._host.meta(self._uid)
        if deleted:
            raise deleted_error(self._uid, self._name)
        ring, meta, name = self._host.ring, self._meta, self._name
        return self._host.open(
            self._uid, self._subject, cipher_of=lambda: ring.cipher(meta, name, create=True)
        )

    def read(self, from_seq: int = 1, to_seq: int = 0) -> Iterator[Record]:
        client, opener = self._host.client, self._opener()
        return iter(
            checkpoint.records_between(client, self._subject, max(from_seq, 1), to_seq, opener)
        )

    def follow(self, from_seq: int = 1, *, idle_timeout: float | None = None) -> Iterator[Record]:
        return follow_subject(
            self._host.client, self._subject, max(from_seq, 1), idle_timeout, self._opener()
        )

    def state(self) -> WorkingState:
        """The tool store's working state (version 0 before its first writer)."""
        return checkpoint.load(self._host.client, self._subject, opener=self._opener()).tail.state

    def _opener(self) -> Opener:
        return self._host.ring.opener(self._meta, self._name)
