"""The single writer of one in-memory journal (a session's, or a component store's).

Invariants: a commit is made under the store's lock, held from the chain check to the
landing, and every waiting follower is woken after it lands; an encrypted journal's
working state is opened for the commit and sealed again before the lock is let go, so
only ciphertext is ever held between commits. Nothing is durable: ``sync`` is moot.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from agentsessions.errors import InvalidArgumentError
from agentsessions.journal.crypto.cipher import SessionCipher
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.appending import ChainWriter
from agentsessions.journal.stores.memory.crypt import open_state, seal_records, seal_state
from agentsessions.journal.stores.memory.session import MemoryHost, MemorySession, state_of
from agentsessions.journal.stores.projection import Projection
from agentsessions.journal.stores.store import CommitResult, SessionInfo, WorkingState
from agentsessions.journal.stores.tail import Tail


class MemoryWriter(ChainWriter):
    """The single writer of one in-memory session."""

    def __init__(self, store: MemoryHost, session: MemorySession) -> None:
        self._store = store
        self._session = session
        self._fence = session.fence
        self._held = self._commit = _Commit(store, session)

    @property
    def uid(self) -> str:
        return self._session.meta.uid

    @property
    def head(self) -> tuple[int, str]:
        return self._session.tail.last_seq, self._session.tail.last_hash

    def sync(self) -> None:
        """Nothing to do: memory has no durability to defer (see :meth:`_land`)."""

    @property
    def state(self) -> WorkingState:
        """The working state as of the last commit."""
        with self._store.cond:
            return state_of(self._session, self._store.cipher_of(self._session))

    @property
    def projection(self) -> Projection:
        """The projections folded from every commit through the head (the tail's)."""
        return self._session.tail.projection

    def info(self) -> SessionInfo:
        """The session as the store's ``get`` returns it."""
        with self._store.cond:
            return self._store.info_of(self._session)

    def close(self) -> None:
        with self._store.cond:
            if self._session.writer is self:
                self._session.writer = None

    def __enter__(self) -> MemoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def _max_commit_bytes(self) -> int:
        return self._store.max_commit_bytes

    def _open_tail(self) -> Tail:
        if self._session.writer is not self:
            raise InvalidArgumentError(f"session {self.uid}: this writer was closed")
        return self._session.tail

    def _land(
        self,
        records: list[Record],
        events: Sequence[Mapping[str, Any]] | None,
        cid: str | None,
        state: WorkingState | None,
        fence: int,
        sync: bool,
    ) -> CommitResult:
        """Keep one commit (sealed when the session is encrypted). ``sync`` is moot: memory
        has no durability to defer, every commit is as final as it gets."""
        del sync
        cipher = self._commit.cipher
        if state is not None:  # the states each head had, for a read of an older one
            self._session.states.append((self._session.tail.last_seq, *seal_state(cipher, state)))
        result = self._session.tail.advance(records, events, cid, state, fence=fence)
        self._session.records.extend(seal_records(cipher, records))
        self._session.update_time_ns = time.time_ns()
        self._store.cond.notify_all()
        return result


class _Commit:
    """What a memory writer holds while it commits: the store's lock, and the session's
    working state opened (a commit needs the state's bytes: a conflict reports them), sealed
    again on the way out. Made once per writer: an append allocates nothing for it."""

    __slots__ = ("_cond", "_session", "_store", "cipher")

    def __init__(self, store: MemoryHost, session: MemorySession) -> None:
        self._store, self._session, self._cond = store, session, store.cond
        self.cipher: SessionCipher | None = None  # the session's, while a commit is made

    def __enter__(self) -> None:
        self._cond.acquire()
        try:
            session = self._session
            cipher = self.cipher = self._store.cipher_of(session)
            if cipher is not None and session.state_blob:
                session.tail.state = open_state(cipher, session.tail.state, session.state_blob)
        except BaseException:
            self._cond.release()
            raise

    def __exit__(self, *exc: object) -> None:
        try:
            if self.cipher is not None:
                tail = self._session.tail
                tail.state, self._session.state_blob = seal_state(self.cipher, tail.state)
        finally:
            self.cipher = None
            self._cond.release()
