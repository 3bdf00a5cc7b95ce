"""One in-memory journal, and what a memory store's writers and component stores use of it.

The memory store (:mod:`.store`), its writer (:mod:`.writer`) and its component stores
(:mod:`.component`) share these; the store is named by a Protocol (:class:`MemoryHost`) so
that the imports run one way. Invariants: every :class:`MemorySession` field is read and
changed only under the store's lock (``cond``); an encrypted session holds only
ciphertext (its records, its state's data, its blobs), opened by its own key.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from agentsessions.errors import LockHeldError
from agentsessions.journal.crypto.cipher import SessionCipher
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.appending import ChainWriter
from agentsessions.journal.stores.memory.crypt import MemoryKey, open_state
from agentsessions.journal.stores.store import SessionInfo, SessionMeta, WorkingState
from agentsessions.journal.stores.tail import Tail

if TYPE_CHECKING:
    from agentsessions.journal.crypto.keys import MasterKey


@dataclass
class MemorySession:
    """One journal held in memory (a session's, or a component store's) and its host's
    things; every field is read and changed under the store's lock."""

    meta: SessionMeta
    records: list[Record] = field(default_factory=list)  # sealed records when encrypted
    tail: Tail = field(default_factory=Tail)  # an encrypted one's state has no data...
    state_blob: bytes = b""  # ...it is sealed here
    fence: int = 0
    writer: ChainWriter | None = None  # the single writer (a MemoryWriter)
    deleted: bool = False
    update_time_ns: int = 0
    # (head before, state, its sealed data when encrypted)
    states: list[tuple[int, WorkingState, bytes]] = field(default_factory=list)
    cancel: str | None = None  # the execution id a cancel request names (FileStore: CANCEL)
    cancel_reason: str = ""  # why (USER, TIMEOUT, INTERNAL; "" = not said)
    receipts: dict[str, Any] = field(default_factory=dict)  # by key (sealed: by its MAC)
    workload: bytes | None = None  # the session's tools (FileStore: WORKLOAD), maybe sealed
    components: dict[str, MemorySession] = field(default_factory=dict)  # tool stores, by name
    workloads: dict[str, bytes] = field(default_factory=dict)  # by digest (WORKLOAD.<digest>)
    key: MemoryKey | None = None  # an encrypted one's wrapped data key


class MemoryHost(Protocol):
    """What a memory writer and a memory component store use of the store that made them."""

    cond: threading.Condition  # the one lock of every session, notified on each commit

    @property
    def max_commit_bytes(self) -> int:
        """The largest commit the store takes."""
        ...

    @property
    def master(self) -> MasterKey | None:
        """The store's master key (None: none given)."""
        ...

    def session_of(self, uid: str) -> MemorySession:
        """Session ``uid``'s journal (NotFoundError if none); call it under ``cond``."""
        ...

    def new_key(self, scope: str) -> MemoryKey | None:
        """A new data key for ``scope`` wrapped by the master key (None: no master key)."""
        ...

    def cipher_of(self, session: MemorySession) -> SessionCipher | None:
        """The session's cipher (None: plaintext); exit 26 without or with another key."""
        ...

    def info_of(self, s: MemorySession) -> SessionInfo:
        """The session's metadata and head, as ``Store.get`` returns them."""
        ...


def state_of(
    session: MemorySession, cipher: SessionCipher | None, before_seq: int = 0
) -> WorkingState:
    """The working state of one in-memory journal (a session's, or a component store's):
    the latest, or the latest committed at a head below ``before_seq`` (opened by
    ``cipher`` when sealed)."""
    if before_seq <= 0:
        if cipher is None or not session.state_blob:
            return session.tail.state
        return open_state(cipher, session.tail.state, session.state_blob)
    for chain_seq, state, blob in reversed(session.states):
        if chain_seq < before_seq:
            return open_state(cipher, state, blob)
    return WorkingState()


def check_free(session: MemorySession, uid: str) -> None:
    """LockHeldError when another writer holds ``session`` (one writer per journal)."""
    if session.writer is not None:
        raise LockHeldError(f"session {uid} is busy: another writer holds it", session=uid)
