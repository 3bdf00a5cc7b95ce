"""An in-memory store: the contract with nothing durable, for tests and embedding.

It keeps the same rules as the file store (one writer per session, fences, CAS, commit ids,
size limit, soft delete, keyset paging) because both run the same contract suite; only
durability differs. Thread-safe: one lock guards every session. Given a master key it
encrypts at rest as the file store does, holding only ciphertext (:mod:`.crypt`).

This module is the store (sessions by uid, listing, forks, the host's things kept beside
a journal); one journal's state is :mod:`.session`, its writer :mod:`.writer`, a tool's
own journal :mod:`.component`.
"""

from __future__ import annotations

import builtins
import copy
import functools
import json
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agentsessions.errors import (
    JournalCorruptError,
    NotFoundError,
    SessionExistsError,
)
from agentsessions.journal.crypto.cipher import SessionCipher
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores import forking
from agentsessions.journal.stores.capabilities import (
    CancelRequests,
    ProjectIndex,
    ToolReceipts,
    Workloads,
)
from agentsessions.journal.stores.claims import ClaimKey, KeyClaims
from agentsessions.journal.stores.memory.component import MemoryComponentStore
from agentsessions.journal.stores.memory.crypt import (
    MemoryKey,
    open_records,
    open_state,
    seal_records,
)
from agentsessions.journal.stores.memory.session import MemorySession, check_free, state_of
from agentsessions.journal.stores.memory.writer import MemoryWriter
from agentsessions.journal.stores.paging import newest_first, page_ask, page_of
from agentsessions.journal.stores.store import (
    DEFAULT_MAX_COMMIT_BYTES,
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


class MemoryStore(Store, CancelRequests, ToolReceipts, Workloads, ProjectIndex, KeyClaims):
    """Sessions held in process memory (its capabilities: its bases)."""

    def __init__(
        self, *, max_commit_bytes: int = DEFAULT_MAX_COMMIT_BYTES, master: MasterKey | None = None
    ) -> None:
        """``master``: sessions created are encrypted, and encrypted ones read (memory/crypt.py)."""
        self.max_commit_bytes = max_commit_bytes
        self.master = master
        self._sessions: dict[str, MemorySession] = {}
        self._claims: dict[ClaimKey, str] = {}  # key claims (only digests, as every store)
        self.cond = threading.Condition()  # every session's lock, its writers' and tool stores' too

    def with_master(self, master: MasterKey | None) -> MemoryStore:
        """The same sessions seen with another master key (None: none), as a file store's
        home reopened with another ``--key-file``."""
        twin = MemoryStore(max_commit_bytes=self.max_commit_bytes, master=master)
        twin._sessions, twin.cond, twin._claims = self._sessions, self.cond, self._claims
        return twin

    def new_key(self, scope: str) -> MemoryKey | None:
        """A new data key for ``scope`` wrapped by the master key (None: no master key)."""
        return None if self.master is None else MemoryKey.create(self.master, scope)

    def cipher_of(self, session: MemorySession) -> SessionCipher | None:
        """The session's cipher (None: plaintext); exit 26 without or with another key."""
        return None if session.key is None else session.key.cipher(self.master)

    def create(self, meta: SessionMeta) -> SessionInfo:
        check_uid(meta.uid)
        check_project(meta.project)
        with self.cond:
            if meta.uid in self._sessions:
                raise SessionExistsError(f"session {meta.uid} already exists")
            if not meta.create_time_ns:
                meta = _with_time(meta)
            meta = replace(meta, encrypted=self.master is not None)
            self._sessions[meta.uid] = MemorySession(
                meta, update_time_ns=meta.create_time_ns, key=self.new_key(meta.uid)
            )
            return self.info_of(self._sessions[meta.uid])

    def get(self, uid: str) -> SessionInfo:
        with self.cond:
            return self.info_of(self.session_of(uid))

    def claim(self, key: ClaimKey, uid: str) -> str:
        """Bind ``key`` to ``uid`` unless bound; the uid bound (:mod:`..claims`)."""
        check_uid(uid)
        with self.cond:
            return self._claims.setdefault(key, uid)

    def lookup(self, key: ClaimKey) -> str:
        """The uid ``key`` is bound to, "" if none."""
        with self.cond:
            return self._claims.get(key, "")

    def release(self, key: ClaimKey, uid: str) -> None:
        """Unbind ``key`` if it is still bound to ``uid``."""
        with self.cond:
            if self._claims.get(key) == uid:
                del self._claims[key]

    def project_of(self, uid: str) -> str | None:
        """``uid``'s project from the table, None for an unknown uid (.store.ProjectIndex)."""
        with self.cond:
            found = self._sessions.get(uid)
        return None if found is None else found.meta.project

    def list(self, project: str, page_size: int = 0, cursor: str = "") -> Page:
        ask = page_ask(project, page_size, cursor)
        with self.cond:
            live = (
                s for s in self._sessions.values() if s.meta.project == project and not s.deleted
            )
            infos = [self.info_of(s) for s in newest_first(live, _meta_of, ask)]
        return page_of(infos, ask, more=len(infos) > ask.size)

    def uids(self) -> tuple[str, ...]:
        with self.cond:
            return tuple(sorted(self._sessions))

    def delete(self, uid: str) -> SessionInfo:
        with self.cond:
            session = self.session_of(uid)
            check_free(session, uid)
            for part in session.components.values():  # its tool stores go with it
                check_free(part, uid)
            session.deleted = True
            return self.info_of(session)

    def fork(
        self, parent: str, at_seq: int, children: Sequence[SessionMeta]
    ) -> builtins.list[SessionInfo]:
        with self.cond:
            source = self.session_of(parent)
            forking.check_fork(parent, at_seq, source.tail.last_seq, len(children))
            prefix = open_records(self.cipher_of(source), source.records[:at_seq])
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
                key = self.new_key(meta.uid)
                cipher = None if key is None else key.cipher(self.master)
                child = MemorySession(
                    meta, seal_records(cipher, prefix), Tail.from_json(tail.to_json())
                )
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
                made.append(self.info_of(child))
            return made

    def writer(self, uid: str) -> MemoryWriter:
        with self.cond:
            session = self.session_of(uid)
            check_free(session, uid)
            if session.deleted:
                raise deleted_error(uid)
            self.cipher_of(session)  # exit 26 now, not at the first commit
            session.fence = max(session.fence, session.tail.max_fence) + 1
            session.writer = MemoryWriter(self, session)
            return session.writer

    def read(self, uid: str, from_seq: int = 1, to_seq: int = 0) -> Iterator[Record]:
        with self.cond:
            session = self.session_of(uid)
            cipher = self.cipher_of(session)
            records = list(session.records)
        end = to_seq if to_seq > 0 else len(records)
        return iter(open_records(cipher, records[max(from_seq, 1) - 1 : end]))

    def state(self, uid: str, before_seq: int = 0) -> WorkingState:
        with self.cond:
            session = self.session_of(uid)
            return state_of(session, self.cipher_of(session), before_seq)

    def states(self, uid: str) -> Iterator[tuple[int, WorkingState]]:
        with self.cond:
            session = self.session_of(uid)
            cipher = self.cipher_of(session)
            kept = list(session.states)
        return iter([(at, open_state(cipher, state, blob)) for at, state, blob in kept])

    def follow(
        self, uid: str, from_seq: int = 1, *, idle_timeout: float | None = None
    ) -> Iterator[Record]:
        next_seq = max(from_seq, 1)
        while True:
            with self.cond:
                session = self.session_of(uid)
                cipher = self.cipher_of(session)
                records = session.records
                if len(records) < next_seq and not self.cond.wait_for(
                    functools.partial(_has, records, next_seq), timeout=idle_timeout
                ):
                    return
                batch = records[next_seq - 1 :]
            yield from open_records(cipher, batch)
            next_seq += len(batch)

    def component(self, uid: str, name: str) -> MemoryComponentStore:
        """The store of component ``name`` in session ``uid`` (see :class:`ComponentStore
        <agentsessions.journal.stores.store.ComponentStore>`)."""
        with self.cond:
            self.session_of(uid)
        return MemoryComponentStore(self, uid, check_component(name))

    def components(self, uid: str) -> tuple[str, ...]:
        """The component stores session ``uid`` has (made by a first writer), sorted."""
        with self.cond:
            return tuple(sorted(self.session_of(uid).components))

    def close(self) -> None:
        """Nothing to release: memory goes with the process."""

    # -- internals used by MemoryWriter -------------------------------------------------
    # -- cancel requests (the same contract as FileStore's CANCEL file) --------------------
    def request_cancel(self, uid: str, execution_id: str, reason: str = "") -> None:
        """Ask the running turn of ``execution_id`` to stop at its next effect boundary."""
        with self.cond:
            session = self.session_of(uid)
            session.cancel, session.cancel_reason = execution_id, reason

    def cancel_reason(self, uid: str) -> str:
        """The reason the pending cancel request gives ("" when none or not said)."""
        with self.cond:
            session = self.session_of(uid)
            return session.cancel_reason if session.cancel else ""

    def cancel_requested(self, uid: str) -> str | None:
        """The execution id a pending cancel request names, or None."""
        return self.session_of(uid).cancel

    def clear_cancel(self, uid: str) -> None:
        """Remove the pending cancel request, if any (idempotent)."""
        with self.cond:
            self.session_of(uid).cancel = None

    # -- tool receipts (the same contract as FileStore's TOOLRECEIPTS) ---------------------
    def tool_receipt(self, uid: str, key: str) -> dict[str, Any] | None:
        """The outcome kept for ``(uid, key)``, or None."""
        with self.cond:
            session = self.session_of(uid)
            cipher = self.cipher_of(session)
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
        with self.cond:
            session = self.session_of(uid)
            cipher = self.cipher_of(session)
            if cipher is None:
                session.receipts[key] = copy.deepcopy(dict(receipt))
                return
            rid = cipher.receipt_id(key)
            plain = json.dumps({"key": key, "receipt": dict(receipt)}, sort_keys=True).encode()
            session.receipts[rid] = cipher.seal_blob("receipt", plain, rid.encode())

    def workload(self, uid: str) -> str | None:
        """The workload TOML recorded for ``uid``, or None."""
        with self.cond:
            session = self.session_of(uid)
            return self._open_workload(session, session.workload, _CURRENT)

    def set_workload(self, uid: str, text: str) -> None:
        """Record ``text`` as the session's workload (replaces any), kept by its digest."""
        with self.cond:
            self.keep_workload(uid, text)
            session = self.session_of(uid)
            session.workload = self._seal_workload(session, text, _CURRENT)

    def keep_workload(self, uid: str, text: str) -> str:
        """Keep ``text`` by its digest (as FileStore's ``WORKLOAD.<digest>``); the digest."""
        digest = workloadref.digest_of(text)
        with self.cond:
            session = self.session_of(uid)
            session.workloads[digest] = self._seal_workload(session, text, digest.encode())
        return digest

    def workload_at(self, uid: str, digest: str) -> str | None:
        """The workload kept for ``uid`` under ``digest``, or None."""
        with self.cond:
            session = self.session_of(uid)
            return self._open_workload(session, session.workloads.get(digest), digest.encode())

    def _seal_workload(self, session: MemorySession, text: str, binding: bytes) -> bytes:
        cipher = self.cipher_of(session)
        data = text.encode("utf-8")
        return data if cipher is None else cipher.seal_blob("workload", data, binding)

    def _open_workload(
        self, session: MemorySession, kept: bytes | None, binding: bytes
    ) -> str | None:
        if kept is None:
            return None
        cipher = self.cipher_of(session)
        data = kept if cipher is None else cipher.open_blob("workload", kept, binding)
        return data.decode("utf-8")

    def session_of(self, uid: str) -> MemorySession:
        """Session ``uid``'s journal (NotFoundError if none); call it under ``cond``."""
        check_uid(uid)
        try:
            return self._sessions[uid]
        except KeyError:
            raise NotFoundError(f"session {uid} not found", session=uid) from None

    def info_of(self, s: MemorySession) -> SessionInfo:
        """The session's metadata and head, as :meth:`get` returns them."""
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


def _has(records: list[Record], seq: int) -> bool:
    return len(records) >= seq


def _with_time(meta: SessionMeta) -> SessionMeta:
    from dataclasses import replace

    return replace(meta, create_time_ns=time.time_ns())


def _meta_of(session: MemorySession) -> SessionMeta:
    return session.meta
