"""An in-memory store: the contract with nothing durable, for tests and embedding.

It keeps the same rules as the file store (one writer per session, fences, CAS, commit ids,
size limit, soft delete, keyset paging) because both run the same contract suite; only
durability differs. Thread-safe: one lock guards every session. Given a master key it
encrypts at rest as the file store does, holding only ciphertext (:mod:`.crypt`).
"""

from __future__ import annotations

import builtins
import copy
import functools
import json
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from agentsessions.errors import (
    InvalidArgumentError,
    JournalCorruptError,
    LockHeldError,
    NotFoundError,
    SessionExistsError,
)
from agentsessions.journal.crypto.cipher import SessionCipher
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores import forking
from agentsessions.journal.stores.appending import ChainWriter
from agentsessions.journal.stores.capabilities import (
    CancelRequests,
    ProjectIndex,
    ToolReceipts,
    Workloads,
)
from agentsessions.journal.stores.claims import ClaimKey, KeyClaims
from agentsessions.journal.stores.memory.crypt import (
    MemoryKey,
    open_records,
    open_state,
    seal_records,
    seal_state,
)
from agentsessions.journal.stores.paging import newest_first, page_ask, page_of
from agentsessions.journal.stores.store import (
    DEFAULT_MAX_COMMIT_BYTES,
    CommitResult,
    Page,
    SessionInfo,
    SessionMeta,
    Store,
    WorkingState,
    check_component,
    deleted_error,
)
from agentsessions.journal.stores.tail import Tail
from agentsessions.v1 import workloadref
from agentsessions.v1.ids import check_project, check_uid

if TYPE_CHECKING:
    from agentsessions.journal.crypto.keys import MasterKey

_CURRENT = b"current"  # the binding of the session's current workload blob


@dataclass
class _Session:
    meta: SessionMeta
    records: list[Record] = field(default_factory=list)  # sealed records when encrypted
    tail: Tail = field(default_factory=Tail)  # an encrypted one's state has no data...
    state_blob: bytes = b""  # ...it is sealed here
    fence: int = 0
    writer: MemoryWriter | None = None
    deleted: bool = False
    update_time_ns: int = 0
    # (head before, state, its sealed data when encrypted)
    states: list[tuple[int, WorkingState, bytes]] = field(default_factory=list)
    cancel: str | None = None  # the execution id a cancel request names (FileStore: CANCEL)
    cancel_reason: str = ""  # why (USER, TIMEOUT, INTERNAL; "" = not said)
    receipts: dict[str, Any] = field(default_factory=dict)  # by key (sealed: by its MAC)
    workload: bytes | None = None  # the session's tools (FileStore: WORKLOAD), maybe sealed
    components: dict[str, _Session] = field(default_factory=dict)  # tool stores, by name
    workloads: dict[str, bytes] = field(default_factory=dict)  # by digest (WORKLOAD.<digest>)
    key: MemoryKey | None = None  # an encrypted one's wrapped data key


class MemoryStore(Store, CancelRequests, ToolReceipts, Workloads, ProjectIndex, KeyClaims):
    """Sessions held in process memory (its capabilities: its bases)."""

    def __init__(
        self, *, max_commit_bytes: int = DEFAULT_MAX_COMMIT_BYTES, master: MasterKey | None = None
    ) -> None:
        """``master``: sessions created are encrypted, and encrypted ones read (memory/crypt.py)."""
        self.max_commit_bytes = max_commit_bytes
        self.master = master
        self._sessions: dict[str, _Session] = {}
        self._claims: dict[ClaimKey, str] = {}  # key claims (only digests, as every store)
        self._cond = threading.Condition()

    def with_master(self, master: MasterKey | None) -> MemoryStore:
        """The same sessions seen with another master key (None: none), as a file store's
        home reopened with another ``--key-file``."""
        twin = MemoryStore(max_commit_bytes=self.max_commit_bytes, master=master)
        twin._sessions, twin._cond, twin._claims = self._sessions, self._cond, self._claims
        return twin

    def _new_key(self, scope: str) -> MemoryKey | None:
        return None if self.master is None else MemoryKey.create(self.master, scope)

    def _cipher(self, session: _Session) -> SessionCipher | None:
        """The session's cipher (None: plaintext); exit 26 without or with another key."""
        return None if session.key is None else session.key.cipher(self.master)

    def create(self, meta: SessionMeta) -> SessionInfo:
        check_uid(meta.uid)
        check_project(meta.project)
        with self._cond:
            if meta.uid in self._sessions:
                raise SessionExistsError(f"session {meta.uid} already exists")
            if not meta.create_time_ns:
                meta = _with_time(meta)
            meta = replace(meta, encrypted=self.master is not None)
            self._sessions[meta.uid] = _Session(
                meta, update_time_ns=meta.create_time_ns, key=self._new_key(meta.uid)
            )
            return self._info(self._sessions[meta.uid])

    def get(self, uid: str) -> SessionInfo:
        with self._cond:
            return self._info(self._session(uid))

    def claim(self, key: ClaimKey, uid: str) -> str:
        """Bind ``key`` to ``uid`` unless bound; the uid bound (:mod:`..claims`)."""
        check_uid(uid)
        with self._cond:
            return self._claims.setdefault(key, uid)

    def lookup(self, key: ClaimKey) -> str:
        """The uid ``key`` is bound to, "" if none."""
        with self._cond:
            return self._claims.get(key, "")

    def release(self, key: ClaimKey, uid: str) -> None:
        """Unbind ``key`` if it is still bound to ``uid``."""
        with self._cond:
            if self._claims.get(key) == uid:
                del self._claims[key]

    def project_of(self, uid: str) -> str | None:
        """``uid``'s project from the table, None for an unknown uid (.store.ProjectIndex)."""
        with self._cond:
            found = self._sessions.get(uid)
        return None if found is None else found.meta.project

    def list(self, project: str, page_size: int = 0, cursor: str = "") -> Page:
        ask = page_ask(project, page_size, cursor)
        with self._cond:
            live = (
                s for s in self._sessions.values() if s.meta.project == project and not s.deleted
            )
            infos = [self._info(s) for s in newest_first(live, _meta_of, ask)]
        return page_of(infos, ask, more=len(infos) > ask.size)

    def uids(self) -> tuple[str, ...]:
        with self._cond:
            return tuple(sorted(self._sessions))

    def delete(self, uid: str) -> SessionInfo:
        with self._cond:
            session = self._session(uid)
            _check_free(session, uid)
            for part in session.components.values():  # its tool stores go with it
                _check_free(part, uid)
            session.deleted = True
            return self._info(session)

    def fork(
        self, parent: str, at_seq: int, children: Sequence[SessionMeta]
    ) -> builtins.list[SessionInfo]:
        with self._cond:
            source = self._session(parent)
            forking.check_fork(parent, at_seq, source.tail.last_seq, len(children))
            prefix = open_records(self._cipher(source), source.records[:at_seq])
            tail = forking.base_tail(lambda a, b: iter(prefix[a - 1 : b]), at_seq, source.tail)
            for meta in children:
                check_uid(meta.uid)
                check_project(meta.project)
                if meta.uid in self._sessions:
                    raise SessionExistsError(f"session {meta.uid} already exists")
            made = []
            for meta in children:
                meta = replace(meta, parent_uid=parent, fork_seq=at_seq)
                meta = _with_time(meta) if not meta.create_time_ns else meta
                meta = replace(meta, encrypted=self.master is not None)
                # the prefix is copied, so under the child's own key (no shred reaches it)
                key = self._new_key(meta.uid)
                cipher = None if key is None else key.cipher(self.master)
                child = _Session(meta, seal_records(cipher, prefix), Tail.from_json(tail.to_json()))
                child.key = key
                child.update_time_ns = meta.create_time_ns
                self._sessions[meta.uid] = child
                child.fence = 1
                records = child.tail.seal_events(
                    meta.uid,
                    [forking.fork_marker(parent, at_seq)],
                    fence=1,
                    max_bytes=self.max_commit_bytes,
                )
                child.tail.advance(records, None, None)
                child.records.extend(seal_records(cipher, records))
                made.append(self._info(child))
            return made

    def writer(self, uid: str) -> MemoryWriter:
        with self._cond:
            session = self._session(uid)
            _check_free(session, uid)
            if session.deleted:
                raise deleted_error(uid)
            self._cipher(session)  # exit 26 now, not at the first commit
            session.fence = max(session.fence, session.tail.max_fence) + 1
            session.writer = MemoryWriter(self, session)
            return session.writer

    def read(self, uid: str, from_seq: int = 1, to_seq: int = 0) -> Iterator[Record]:
        with self._cond:
            session = self._session(uid)
            cipher = self._cipher(session)
            records = list(session.records)
        end = to_seq if to_seq > 0 else len(records)
        return iter(open_records(cipher, records[max(from_seq, 1) - 1 : end]))

    def state(self, uid: str, before_seq: int = 0) -> WorkingState:
        with self._cond:
            session = self._session(uid)
            return state_of(session, self._cipher(session), before_seq)

    def states(self, uid: str) -> Iterator[tuple[int, WorkingState]]:
        with self._cond:
            session = self._session(uid)
            cipher = self._cipher(session)
            kept = list(session.states)
        return iter([(at, open_state(cipher, state, blob)) for at, state, blob in kept])

    def follow(
        self, uid: str, from_seq: int = 1, *, idle_timeout: float | None = None
    ) -> Iterator[Record]:
        next_seq = max(from_seq, 1)
        while True:
            with self._cond:
                session = self._session(uid)
                cipher = self._cipher(session)
                records = session.records
                if len(records) < next_seq and not self._cond.wait_for(
                    functools.partial(_has, records, next_seq), timeout=idle_timeout
                ):
                    return
                batch = records[next_seq - 1 :]
            yield from open_records(cipher, batch)
            next_seq += len(batch)

    def component(self, uid: str, name: str) -> MemoryComponentStore:
        """The store of component ``name`` in session ``uid`` (see :class:`ComponentStore
        <agentsessions.journal.stores.store.ComponentStore>`)."""
        with self._cond:
            self._session(uid)
        return MemoryComponentStore(self, uid, check_component(name))

    def components(self, uid: str) -> tuple[str, ...]:
        """The component stores session ``uid`` has (made by a first writer), sorted."""
        with self._cond:
            return tuple(sorted(self._session(uid).components))

    def close(self) -> None:
        """Nothing to release: memory goes with the process."""

    # -- internals used by MemoryWriter -------------------------------------------------
    # -- cancel requests (the same contract as FileStore's CANCEL file) --------------------
    def request_cancel(self, uid: str, execution_id: str, reason: str = "") -> None:
        """Ask the running turn of ``execution_id`` to stop at its next effect boundary."""
        with self._cond:
            session = self._session(uid)
            session.cancel, session.cancel_reason = execution_id, reason

    def cancel_reason(self, uid: str) -> str:
        """The reason the pending cancel request gives ("" when none or not said)."""
        with self._cond:
            session = self._session(uid)
            return session.cancel_reason if session.cancel else ""

    def cancel_requested(self, uid: str) -> str | None:
        """The execution id a pending cancel request names, or None."""
        return self._session(uid).cancel

    def clear_cancel(self, uid: str) -> None:
        """Remove the pending cancel request, if any (idempotent)."""
        with self._cond:
            self._session(uid).cancel = None

    # -- tool receipts (the same contract as FileStore's TOOLRECEIPTS) ---------------------
    def tool_receipt(self, uid: str, key: str) -> dict[str, Any] | None:
        """The outcome kept for ``(uid, key)``, or None."""
        with self._cond:
            session = self._session(uid)
            cipher = self._cipher(session)
            if cipher is None:
                kept = session.receipts.get(key)
                return None if kept is None else copy.deepcopy(kept)
            rid = cipher.receipt_id(key)
            blob = session.receipts.get(rid)
        if blob is None:
            return None
        entry = json.loads(cipher.open_blob("receipt", blob, rid.encode()))
        if entry.get("key") != key:
            raise JournalCorruptError(f"{uid}: the receipt filed under {key!r} is another key's")
        receipt: dict[str, Any] = entry["receipt"]
        return receipt

    def record_tool_receipt(self, uid: str, key: str, receipt: Mapping[str, Any]) -> None:
        """Keep ``receipt`` for ``(uid, key)`` (sealed, bound to its key, when encrypted)."""
        with self._cond:
            session = self._session(uid)
            cipher = self._cipher(session)
            if cipher is None:
                session.receipts[key] = copy.deepcopy(dict(receipt))
                return
            rid = cipher.receipt_id(key)
            plain = json.dumps({"key": key, "receipt": dict(receipt)}, sort_keys=True).encode()
            session.receipts[rid] = cipher.seal_blob("receipt", plain, rid.encode())

    def workload(self, uid: str) -> str | None:
        """The workload TOML recorded for ``uid``, or None."""
        with self._cond:
            session = self._session(uid)
            return self._open_workload(session, session.workload, _CURRENT)

    def set_workload(self, uid: str, text: str) -> None:
        """Record ``text`` as the session's workload (replaces any), kept by its digest."""
        with self._cond:
            self.keep_workload(uid, text)
            session = self._session(uid)
            session.workload = self._seal_workload(session, text, _CURRENT)

    def keep_workload(self, uid: str, text: str) -> str:
        """Keep ``text`` by its digest (as FileStore's ``WORKLOAD.<digest>``); the digest."""
        digest = workloadref.digest_of(text)
        with self._cond:
            session = self._session(uid)
            session.workloads[digest] = self._seal_workload(session, text, digest.encode())
        return digest

    def workload_at(self, uid: str, digest: str) -> str | None:
        """The workload kept for ``uid`` under ``digest``, or None."""
        with self._cond:
            session = self._session(uid)
            return self._open_workload(session, session.workloads.get(digest), digest.encode())

    def _seal_workload(self, session: _Session, text: str, binding: bytes) -> bytes:
        cipher = self._cipher(session)
        data = text.encode("utf-8")
        return data if cipher is None else cipher.seal_blob("workload", data, binding)

    def _open_workload(self, session: _Session, kept: bytes | None, binding: bytes) -> str | None:
        if kept is None:
            return None
        cipher = self._cipher(session)
        data = kept if cipher is None else cipher.open_blob("workload", kept, binding)
        return data.decode("utf-8")

    def _session(self, uid: str) -> _Session:
        check_uid(uid)
        try:
            return self._sessions[uid]
        except KeyError:
            raise NotFoundError(f"session {uid} not found", session=uid) from None

    def _info(self, s: _Session) -> SessionInfo:
        return SessionInfo(
            meta=s.meta,
            last_seq=s.tail.last_seq,
            last_hash=s.tail.last_hash,
            compute_state=s.tail.projection.compute_state,
            exec_state=s.tail.projection.exec_state,
            update_time_ns=s.update_time_ns,
            fence=s.fence,
            deleted=s.deleted,
            exec_seq=s.tail.projection.exec_seq,
            exec_id=s.tail.projection.exec_id,
            snapshot=s.tail.projection.snapshot,
            state_version=s.tail.state.version,
            state_covers=(s.tail.state.covers_from, s.tail.state.covers_to),
            state_size=s.tail.state_size,
        )


class MemoryComponentStore:
    """A component's own journal in one in-memory session: a :class:`_Session` of its own
    (made on the first writer), written through the same :class:`MemoryWriter`."""

    def __init__(self, store: MemoryStore, uid: str, name: str) -> None:
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
        with self._store._cond:
            session = self._store._session(self._uid)
            if session.deleted:
                raise deleted_error(self._uid, self._name)
            part = session.components.get(self._name)
            if part is None:
                meta = SessionMeta(uid=self._uid, name=self._name, encrypted=session.meta.encrypted)
                key = None
                if session.key is not None:  # a tool store of its own key, made with it
                    if self._store.master is None:
                        session.key.cipher(None)  # the exit 26 error
                    key = self._store._new_key(f"{self._uid}/{self._name}")
                part = session.components[self._name] = _Session(meta, key=key)
            self._store._cipher(part)
            _check_free(part, self._uid)
            part.fence = max(part.fence, part.tail.max_fence) + 1
            part.writer = MemoryWriter(self._store, part)
            return part.writer

    def state(self) -> WorkingState:
        """The component's working state (version 0 before its first writer)."""
        with self._store._cond:
            part = self._store._session(self._uid).components.get(self._name)
            return WorkingState() if part is None else state_of(part, self._store._cipher(part))

    def read(self, from_seq: int = 1, to_seq: int = 0) -> Iterator[Record]:
        records = self._records()
        end = to_seq if to_seq > 0 else len(records)
        return iter(records[max(from_seq, 1) - 1 : end])

    def follow(self, from_seq: int = 1, *, idle_timeout: float | None = None) -> Iterator[Record]:
        next_seq = max(from_seq, 1)
        while True:
            with self._store._cond:
                if not self._store._cond.wait_for(
                    functools.partial(self._has, next_seq), timeout=idle_timeout
                ):
                    return
                batch = self._records()[next_seq - 1 :]
            yield from batch
            next_seq += len(batch)

    def _has(self, seq: int) -> bool:
        return len(self._records()) >= seq

    def _records(self) -> builtins.list[Record]:
        with self._store._cond:
            part = self._store._session(self._uid).components.get(self._name)
            if part is None:
                return []
            return open_records(self._store._cipher(part), part.records)


class MemoryWriter(ChainWriter):
    """The single writer of one in-memory session."""

    def __init__(self, store: MemoryStore, session: _Session) -> None:
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
        with self._store._cond:
            return state_of(self._session, self._store._cipher(self._session))

    def info(self) -> SessionInfo:
        """The session as :meth:`MemoryStore.get` returns it."""
        with self._store._cond:
            return self._store._info(self._session)

    def close(self) -> None:
        with self._store._cond:
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
        self._store._cond.notify_all()
        return result


class _Commit:
    """What a memory writer holds while it commits: the store's lock, and the session's
    working state opened (a commit needs the state's bytes: a conflict reports them), sealed
    again on the way out. Made once per writer: an append allocates nothing for it."""

    __slots__ = ("_cond", "_session", "_store", "cipher")

    def __init__(self, store: MemoryStore, session: _Session) -> None:
        self._store, self._session, self._cond = store, session, store._cond
        self.cipher: SessionCipher | None = None  # the session's, while a commit is made

    def __enter__(self) -> None:
        self._cond.acquire()
        try:
            session = self._session
            cipher = self.cipher = self._store._cipher(session)
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


def state_of(session: _Session, cipher: SessionCipher | None, before_seq: int = 0) -> WorkingState:
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


def _has(records: list[Record], seq: int) -> bool:
    return len(records) >= seq


def _check_free(session: _Session, uid: str) -> None:
    if session.writer is not None:
        raise LockHeldError(f"session {uid} is busy: another writer holds it", session=uid)


def _with_time(meta: SessionMeta) -> SessionMeta:
    from dataclasses import replace

    return replace(meta, create_time_ns=time.time_ns())


def _meta_of(session: _Session) -> SessionMeta:
    return session.meta
