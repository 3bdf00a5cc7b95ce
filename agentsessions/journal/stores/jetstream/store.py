"""A journal store on NATS JetStream: sessions any host can read, follow and take over.

The five duties (``store.py``) mapped onto one stream (``docs/JETSTREAM.md``):

1. conditional append: a commit is ONE message on the session's subject ``P.j.<uid>``,
   published with ``Nats-Expected-Last-Subject-Sequence`` = the subject's last stream
   sequence this writer saw; all its events land or none do, and readers never see half.
   The writer also checks the journal end and state version against its tail first.
2. idempotent commits: the commit id rides in the message; a writer folds the subject's
   messages into a :class:`~agentsessions.journal.stores.tail.Tail`, which remembers the
   latest 1024 per session durably (the stream is the record, not the server's dedup
   window, which is stream-wide and 120 s). ``Nats-Msg-Id`` (random per commit, named by
   the subject) is used only to resolve an unknown publish outcome.
3. numbers never reused: records are numbered by the shared Tail from the folded head; the
   stream denies delete and purge and keeps every message (checked at start).
4. followers: a core subscription on the subject wakes a follower, which then reads the
   stored messages after the last it saw (so nothing is missed between read and wait).
5. size limit: the shared Tail refuses a commit over ``max_commit_bytes`` whole; the
   server's ``max_payload`` must fit it (checked at start).

Fencing across hosts: see :mod:`.writer`. Key claims are ``P.k.<digest>`` (:mod:`.claims`).
Metadata is the last message on ``P.m.<uid>``; tool stores are subjects
``P.c.<uid>.<hex name>``. A fork child's subject starts with its marker commit, which
carries the parent's tail at the fork point; its prefix is read from the parent, never
copied. The hash chain is the file store's, built by the same shared code
(``tail.seal_events``), so ``verify`` and the Go reference agree.
"""

from __future__ import annotations

import builtins
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from agentsessions.errors import (
    AgentSessionsError,
    InvalidArgumentError,
    KeyShreddedError,
    LockHeldError,
    NotFoundError,
    SessionExistsError,
    UnavailableError,
)
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores import forking, metafile
from agentsessions.journal.stores.capabilities import (
    CancelRequests,
    HarnessBook,
    KeyManagement,
    ProjectIndex,
    RemoteWriters,
    SealedExport,
    StoredRecords,
    ToolReceipts,
    VerifyRecord,
    Workloads,
)
from agentsessions.journal.stores.claims import ClaimKey, KeyClaims
from agentsessions.journal.stores.jetstream import checkpoint, identity, listing, live, shards, wire
from agentsessions.journal.stores.jetstream.claims import StreamClaims
from agentsessions.journal.stores.jetstream.client import Client
from agentsessions.journal.stores.jetstream.component import (
    ComponentHost,
    JetStreamComponentStore,
)
from agentsessions.journal.stores.jetstream.conn import (
    HEADROOM,
    JetStreamOptions,
    commit_problems,
    fit_commit_limit,
)
from agentsessions.journal.stores.jetstream.crypt import (
    Keyring,
    SubjectCipher,
    sealed_export,
    verify_records,
)
from agentsessions.journal.stores.jetstream.extras import Extras
from agentsessions.journal.stores.jetstream.follow import follow_subject
from agentsessions.journal.stores.jetstream.keys import KeyStream
from agentsessions.journal.stores.jetstream.writer import JetStreamWriter, shadow
from agentsessions.journal.stores.paging import newest_first, page_ask, page_of
from agentsessions.journal.stores.store import (
    Page,
    SessionInfo,
    SessionMeta,
    Store,
    WorkingState,
    check_component,
    deleted_error,
)
from agentsessions.journal.stores.tail import Tail
from agentsessions.v1.ids import check_project, check_uid

if TYPE_CHECKING:
    from agentsessions.journal.crypto.cipher import SessionCipher
    from agentsessions.journal.crypto.keys import MasterKey, RewrapCount


class JetStreamStore(
    Extras,  # first: its methods, not the Protocols' stubs, implement the host records
    Store,
    CancelRequests,
    ToolReceipts,
    Workloads,
    HarnessBook,
    ProjectIndex,
    SealedExport,
    KeyManagement,
    StoredRecords,
    RemoteWriters,
    KeyClaims,
):
    """Sessions in one JetStream stream (see the module docstring for the layout); its
    capabilities are its bases (cancel requests, receipts, workloads and harness records
    implemented by :class:`~.extras.Extras`, the file store's small files as messages).

    ``master``: sessions created are encrypted, and encrypted ones read (jetstream/crypt.py);
    their wrapped data keys live in a key stream beside the journal's (jetstream/keys.py)."""

    def __init__(
        self,
        options: JetStreamOptions,
        *,
        master: MasterKey | None = None,
        max_commit_bytes: int | None = None,
        checkpoint_every: int = checkpoint.CHECKPOINT_EVERY,
    ) -> None:
        self.master = master
        self.checkpoint_every = checkpoint_every  # journal messages between tail checkpoints
        self._opts = options
        self._client = Client(options)
        payload = int(self._client.server_info.get("max_payload", 0))
        try:
            max_commit_bytes = fit_commit_limit(
                max_commit_bytes or options.max_commit_bytes, payload, options.url
            )
        except BaseException:
            self._client.close()
            raise
        self.max_commit_bytes = max_commit_bytes
        try:  # a recreated stream is told from the old one by its genesis
            problems = commit_problems(self._client.stream_config, max_commit_bytes, HEADROOM)
            if problems:
                raise UnavailableError(
                    f"the JetStream stream {options.stream!r} at {options.url} cannot hold "
                    f"journals: {'; '.join(problems)}",
                    hint="use another stream (?stream=NAME) or raise its max_msg_size",
                )
            identity.establish(self._client, options.prefix)
        except BaseException:
            self._client.close()
            raise
        self._held: set[str] = set()  # subjects this store has an open writer on
        self._lock = threading.Lock()
        self._keys = KeyStream(self._client, options)
        self._ring = Keyring(self._keys, master)
        self._encrypted: dict[str, bool] = {}  # uid -> its marker (set at create, never changes)
        Extras.__init__(self, self._client, options.prefix, self._meta, self._host_cipher)
        self._live: dict[str, live.Claim] = {}  # journal subject -> its writer's claim
        self._claims = StreamClaims(self._client, options.prefix)

    # -- sessions -----------------------------------------------------------------------
    def create(self, meta: SessionMeta) -> SessionInfo:
        check_uid(meta.uid)
        check_project(meta.project)
        if not meta.create_time_ns:
            meta = replace(meta, create_time_ns=time.time_ns())
        identity.check(self._client, self._opts.prefix)  # its row would name a stale genesis
        meta = replace(meta, encrypted=self.master is not None)
        if meta.encrypted:  # the key first: the metadata's marker promises it
            if self._client.last(self._meta_subject(meta.uid)) is not None:
                raise SessionExistsError(f"session {meta.uid} already exists")
            self._ring.create(meta.uid)
        self._put_meta(meta, deleted=False, new=True)
        return self._info(meta, False, meta.create_time_ns, None)

    def get(self, uid: str) -> SessionInfo:
        meta, deleted, ut = self._meta(uid)
        return self._info(meta, deleted, ut, self._client.last(self._journal(uid)))

    def project_of(self, uid: str) -> str | None:
        """``uid``'s project from the last message of its metadata subject (one direct get,
        whether or not the subject has one), None without one or for one that does not
        decode (.store.ProjectIndex)."""
        msg = self._client.last(self._meta_subject(check_uid(uid)))
        if msg is None:
            return None
        try:
            return SessionMeta.from_json(msg.head["meta"]).project
        except (KeyError, TypeError, ValueError, AgentSessionsError):
            return None

    def list(self, project: str, page_size: int = 0, cursor: str = "") -> Page:
        ask = page_ask(project, page_size, cursor)
        # two batched reads (jetstream/listing.py), not one read per session
        metas, unindexed = listing.all_metas(self._client, self._opts.prefix)
        live = [(m, ut) for m, deleted, ut in metas if m.project == project and not deleted]
        shown = newest_first(live, lambda row: row[0], ask)
        heads = listing.journal_heads(self._client, [self._journal(m.uid) for m, _ut in shown])
        infos = [self._info(m, False, ut, heads.get(self._journal(m.uid))) for m, ut in shown]
        return page_of(infos, ask, more=len(infos) > ask.size, unindexed=unindexed)

    def uids(self) -> tuple[str, ...]:
        prefix = self._opts.prefix
        return tuple(sorted(s.rsplit(".", 1)[1] for s in self._client.subjects(f"{prefix}.m.*")))

    def delete(self, uid: str) -> SessionInfo:
        """Soft-delete: a deleting fence on the journal and every tool store (so writers on
        any host fail their next append), then the metadata row. Refused (LockHeldError)
        while a turn runs on another host (jetstream/live.py), as the file store's lock."""
        meta, _deleted, _ut = self._meta(uid)
        subjects = [self._journal(uid), *self._component_subjects(uid)]
        with self._lock:
            if any(s in self._held for s in subjects):
                raise LockHeldError(f"session {uid} is busy: a writer holds it", session=uid)
        self._refuse_busy(uid, take=True)  # a busy writer refuses; an idle one yields
        for subject in subjects:
            self._fence(subject)
        now = time.time_ns()
        self._put_meta(meta, deleted=True, update_time_ns=now)
        return self.get(uid)

    def fork(
        self, parent: str, at_seq: int, children: Sequence[SessionMeta]
    ) -> builtins.list[SessionInfo]:
        head = self._head_tail(parent)
        forking.check_fork(parent, at_seq, head.last_seq, len(children))
        for meta in children:
            check_uid(meta.uid)
            check_project(meta.project)
            if self._client.last(self._meta_subject(meta.uid)) is not None:
                raise SessionExistsError(f"session {meta.uid} already exists")
        base = forking.base_tail(lambda a, b: self.read(parent, a, b), at_seq, head)
        made = []
        for meta in children:
            meta = replace(meta, parent_uid=parent, fork_seq=at_seq)
            meta = meta if meta.create_time_ns else replace(meta, create_time_ns=time.time_ns())
            meta = replace(meta, encrypted=self.master is not None)
            if meta.encrypted:  # the child's own key, before its metadata promises it
                self._ring.create(meta.uid)
            cipher = self._ring.cipher(meta)
            tail = Tail.from_json(base.to_json())
            marker = forking.fork_marker(parent, at_seq)
            records = tail.seal_events(meta.uid, [marker], fence=1, max_bytes=self.max_commit_bytes)
            after = shadow(tail)
            after.advance(records, [marker], None, fence=1)
            body = wire.commit_body(
                records, fence=1, commit_id=None, state=None, after=after, base=base,
                sealer=cipher,
            )  # fmt: skip
            self._put_meta(meta, deleted=False, new=True)
            landed = self._client.publish(self._journal(meta.uid), body, expect=0, token=_token())
            if landed is None:
                raise InvalidArgumentError(f"session {meta.uid} already has a journal")
            made.append(self.get(meta.uid))
        return made

    def writer(self, uid: str) -> JetStreamWriter:
        meta, deleted, _ut = self._meta(uid)
        if deleted:
            raise deleted_error(uid)
        return self._open(uid, self._journal(uid), cipher_of=lambda: self._ring.cipher(meta))

    def read(self, uid: str, from_seq: int = 1, to_seq: int = 0) -> Iterator[Record]:
        meta, _deleted, _ut = self._meta(uid)
        return iter(self._records(meta, max(from_seq, 1), to_seq))

    def state(self, uid: str, before_seq: int = 0) -> WorkingState:
        meta, _deleted, _ut = self._meta(uid)
        opener = self._ring.opener(meta)
        if before_seq <= 0:  # the latest: from the last checkpoint, not the whole subject
            return checkpoint.load(self._client, self._journal(uid), opener=opener).tail.state
        folded = wire.fold(opener.opened(self._client.messages(self._journal(uid))))
        for chain_seq, state in reversed(folded.states):
            if chain_seq < before_seq:
                return state
        return WorkingState()

    def states(self, uid: str) -> Iterator[tuple[int, WorkingState]]:
        meta, _deleted, _ut = self._meta(uid)
        messages = self._ring.opener(meta).opened(self._client.messages(self._journal(uid)))
        return iter(wire.fold(messages).states)

    def follow(
        self, uid: str, from_seq: int = 1, *, idle_timeout: float | None = None
    ) -> Iterator[Record]:
        meta, _deleted, _ut = self._meta(uid)
        next_seq = max(from_seq, 1)
        if meta.parent_uid and next_seq <= meta.fork_seq:
            for record in self._records(meta, next_seq, meta.fork_seq):
                yield record
                next_seq = record.seq + 1
        opener = self._ring.opener(meta)
        yield from follow_subject(self._client, self._journal(uid), next_seq, idle_timeout, opener)

    def component(self, uid: str, name: str) -> JetStreamComponentStore:
        """The store of component ``name`` (a tool) in session ``uid``."""
        meta, _deleted, _ut = self._meta(uid)
        host = ComponentHost(self._client, self._ring, self._meta, self._open)
        return JetStreamComponentStore(host, meta, check_component(name), self._shard(uid))

    def components(self, uid: str) -> tuple[str, ...]:
        """The names of the tool stores session ``uid`` has, sorted."""
        self._meta(uid)
        return tuple(sorted(wire.component_name(s) for s in self._component_subjects(uid)))

    # -- key claims (jetstream/claims.py: ``P.k.<digest>``) --------------------------------
    def claim(self, key: ClaimKey, uid: str) -> str:
        """Bind ``key`` to ``uid`` unless bound; the uid bound (:mod:`..claims`)."""
        return self._claims.claim(key, uid)

    def lookup(self, key: ClaimKey) -> str:
        """The uid ``key`` is bound to, "" if none."""
        return self._claims.lookup(key)

    def release(self, key: ClaimKey, uid: str) -> None:
        """Unbind ``key`` if it is still bound to ``uid``."""
        self._claims.release(key, uid)

    # -- encryption at rest (jetstream/crypt.py, jetstream/keys.py) ----------------------
    def check_shreddable(self, uid: str) -> None:
        """InvalidArgumentError unless ``uid`` is an encrypted session (it has a key to shred)."""
        meta, _deleted, _ut = self._meta(uid)
        if not meta.encrypted:
            raise InvalidArgumentError(
                f"session {uid} is not encrypted: it has no key to shred",
                hint=f"agentsessions delete {uid} soft-deletes it",
                session=uid,
            )

    def shred(self, uid: str) -> bool:
        """Destroy session ``uid``'s data keys for good (its own and its tool stores'): a
        SHREDDED marker on the journal stream first, then a fence on every journal subject
        (a writer on any host holding the key in memory fails its next append), then each
        key message secure-erased and purged from the key stream. Afterwards its content
        is unreadable with or without the master key; ``verify`` still checks its
        structure. False when the keys were already gone (a second run finishes a shred a
        crash cut); InvalidArgumentError for a plaintext session; LockHeldError while a turn
        runs on another host (as the file store's lock)."""
        self.check_shreddable(uid)
        subjects = [self._journal(uid), *self._component_subjects(uid)]
        with self._lock:
            if any(s in self._held for s in subjects):
                raise LockHeldError(f"session {uid} is busy: a writer holds it", session=uid)
        self._refuse_busy(uid, take=True)  # a busy writer refuses; an idle one yields
        self._keys.mark_shredded(uid)
        self._ring.forget(uid)
        for subject in subjects:
            self._fence(subject, deleted=False)
        return self._keys.erase(uid) > 0

    def rewrap_keys(self, old: MasterKey, new: MasterKey) -> RewrapCount:
        """Master-key rotation: rewrap every data key in the key stream from ``old`` to
        ``new``; no journal message moves. A wrong ``old`` changes nothing; keys already
        wrapped by ``new`` (so a cut rotation is finished by running it again) and shredded
        sessions' keys are skipped and counted."""
        return self._ring.rewrap_all(old, new)

    def sealed_export(self, uid: str) -> tuple[dict[str, object], Iterator[Record]]:
        """What ``export --ciphertext`` ships of encrypted session ``uid``: its wrapped data
        key and its sealed records as the stream holds them (no master key needed; see
        ``jetstream/crypt.py``'s ``sealed_export`` for the refusals)."""
        meta, _deleted, _ut = self._meta(uid)
        return sealed_export(self._ring, meta, lambda: self._client.messages(self._journal(uid)))

    def verify_items(
        self, uid: str, component: str = "", *, notes: builtins.list[str] | None = None
    ) -> Iterator[VerifyRecord]:
        """Every record of ``uid``'s journal (or tool store ``component``) from genesis, as
        ``verify`` walks them: plaintext ones with their claimed hash, sealed ones by their
        clear heads and, with the master key, decrypted (``check``: tag and content hash).
        ``notes`` gets a line when a sealed journal's key was shredded."""
        meta, _deleted, _ut = self._meta(uid)
        if component:
            subject = wire.component_subject(self._shard(uid), uid, check_component(component))
        else:
            subject = self._journal(uid)
            if meta.parent_uid:  # the prefix is the parent's, under the parent's key
                for item in self.verify_items(meta.parent_uid, notes=notes):
                    if item.seq <= meta.fork_seq:
                        yield item
        yield from verify_records(
            self._client.messages(subject), self._ring, meta, component, notes
        )
        if not component and meta.encrypted and self.master is not None:
            try:  # with the key, its receipts and workloads too (as the file store's verify)
                host = self._ring.host_cipher(uid)
            except KeyShreddedError:
                return  # verify_records noted it
            self.check_sealed(uid, host)

    def close(self) -> None:
        self._client.close()

    # -- cancel requests, tool receipts, workloads, harness records: Extras (its base) ----
    def writer_elsewhere(self, uid: str) -> bool:
        """True when another store (any host) holds ``uid``'s journal writer busy, or might
        (it did not answer in time: jetstream/live.py): ``cancel`` then asks the running
        turn to stop instead of taking the journal over (which would fence it). A writer
        parked idle between turns is not asked (no turn of its runs): cancel takes over."""
        subject = self._journal(check_uid(uid))
        with self._lock:
            if subject in self._held:
                return False  # this store's own writer: the engine's lock decides
        heard = live.probe(self._client, live.owner_subject(self._opts.stream, uid))
        return heard.state in (live.BUSY, live.SILENT, live.UNKNOWN)

    # -- internals ----------------------------------------------------------------------
    def _shard(self, uid: str) -> str:
        """The subject prefix of ``uid``'s journals: its shard's (jetstream/shards.py)."""
        k = shards.shard_of(uid, self._client.shards)
        return shards.shard_prefix(self._opts.prefix, k)

    def _journal(self, uid: str) -> str:
        return wire.journal_subject(self._shard(uid), uid)

    def _meta_subject(self, uid: str) -> str:
        return wire.meta_subject(self._opts.prefix, uid)

    def _component_subjects(self, uid: str) -> builtins.list[str]:
        return sorted(self._client.subjects(f"{self._shard(uid)}.c.{uid}.*"))

    def _open(
        self,
        uid: str,
        subject: str,
        base: Tail | None = None,
        *,
        cipher_of: Callable[[], SubjectCipher | None] = lambda: None,
    ) -> JetStreamWriter:
        """The writer of ``subject``; ``cipher_of`` loads an encrypted session's cipher (after
        the in-process lock, so a busy session is LockHeldError, not a key fetch)."""
        with self._lock:
            if subject in self._held:
                raise LockHeldError(f"session {uid} is busy: another writer holds it", session=uid)
            self._held.add(subject)
        try:
            identity.check(self._client, self._opts.prefix)  # never write a replaced stream
            if self._shard(uid) != self._opts.prefix:  # nor a replaced shard
                identity.check(self._client, self._shard(uid))
            claim = None
            if subject == self._journal(uid):  # other hosts can tell it is live, and busy
                claim = live.Claim(self._client, live.owner_subject(self._opts.stream, uid), uid)
                self._live[subject] = claim
            return JetStreamWriter(
                self._client, uid, subject, self.max_commit_bytes, self._release, base,
                self.checkpoint_every, cipher_of(), claim,
            )  # fmt: skip
        except BaseException:
            self._release(subject)
            raise

    def _refuse_busy(self, uid: str, *, take: bool) -> None:
        """LockHeldError if another host's writer of ``uid`` says a turn is running (the
        file store's lock refuses the same); ``take``: one parked idle yields, so it knows
        at once that its session was fenced (jetstream/live.py)."""
        live.refuse_busy(self._client, live.owner_subject(self._opts.stream, uid), uid, take=take)

    def _release(self, subject: str) -> None:
        with self._lock:
            self._held.discard(subject)
            claim = self._live.pop(subject, None)
        if claim is not None:
            claim.withdraw()

    def _meta(self, uid: str) -> tuple[SessionMeta, bool, int]:
        check_uid(uid)
        msg_subject = self._meta_subject(uid)
        msg = self._client.last(msg_subject)
        if msg is None:
            identity.check(self._client, self._opts.prefix)  # gone with a replaced stream?
            raise NotFoundError(f"session {uid} not found", session=uid)
        head = msg.head
        identity.check_session(self._client, uid, str(head.get("sid", "")))
        meta = listing.checked_meta(head.get("meta"), uid, msg.stream_seq, msg_subject)
        self._encrypted[uid] = meta.encrypted
        return meta, bool(head.get("del")), int(head.get("ut", 0))

    def _host_cipher(self, uid: str) -> SessionCipher | None:
        """The cipher sealing ``uid``'s receipts and workloads (None: a plaintext session,
        known after one metadata read); exit 26 errors when it cannot be had."""
        encrypted = self._encrypted.get(uid)
        if encrypted is None:
            encrypted = self._meta(uid)[0].encrypted
        return self._ring.host_cipher(uid) if encrypted else None

    def _put_meta(
        self, meta: SessionMeta, *, deleted: bool, new: bool = False, update_time_ns: int = 0
    ) -> None:
        subject = self._meta_subject(meta.uid)
        expect = 0
        if not new:
            last = self._client.last(subject)
            expect = last.stream_seq if last is not None else 0
        ut = update_time_ns or meta.create_time_ns
        body = wire.meta_body(
            metafile.summed_json(meta),
            deleted=deleted,
            update_time_ns=ut,
            stream_id=self._client.genesis,
        )
        if self._client.publish(subject, body, expect=expect, token=_token()) is None:
            if new:
                raise SessionExistsError(f"session {meta.uid} already exists")
            raise InvalidArgumentError(f"session {meta.uid}: its metadata changed meanwhile")

    def _fence(self, subject: str, *, deleted: bool = True) -> None:
        """A fence on ``subject`` (a deleting one, or a shred's): every writer's next append
        fails. Folded without keys (sealed commits fold from their clear heads)."""
        for _ in range(3):
            folded = checkpoint.load(self._client, subject)
            body = wire.fence_body(folded.fence + 1, folded.tail, deleted=deleted or folded.deleted)
            if self._client.publish(subject, body, expect=folded.stream_seq, token=_token()):
                return
        raise LockHeldError(f"{subject} kept moving while it was being deleted")

    def _head_tail(self, uid: str) -> Tail:
        self._meta(uid)
        last = self._client.last(self._journal(uid))
        return Tail() if last is None else wire.tail_from_summary(last.head["t"])

    def _records(self, meta: SessionMeta, from_seq: int, to_seq: int) -> builtins.list[Record]:
        out: builtins.list[Record] = []
        if meta.parent_uid and from_seq <= meta.fork_seq:
            parent, _deleted, _ut = self._meta(meta.parent_uid)
            end = meta.fork_seq if to_seq <= 0 else min(to_seq, meta.fork_seq)
            out.extend(self._records(parent, from_seq, end))
        opener = self._ring.opener(meta)
        out.extend(
            checkpoint.records_between(
                self._client, self._journal(meta.uid), from_seq, to_seq, opener
            )
        )
        return out

    def _info(
        self, meta: SessionMeta, deleted: bool, ut: int, last: wire.Message | None
    ) -> SessionInfo:
        tail = Tail() if last is None else wire.tail_from_summary(last.head["t"])
        fence = 0 if last is None else max(last.fence, tail.max_fence)
        p = tail.projection
        return SessionInfo(
            meta=meta, last_seq=tail.last_seq, last_hash=tail.last_hash,
            compute_state=p.compute_state, exec_state=p.exec_state,
            update_time_ns=max(ut, int(last.head["t"].get("ut", 0)) if last else 0),
            fence=fence, deleted=deleted, exec_seq=p.exec_seq, exec_id=p.exec_id,
            snapshot=p.snapshot, state_version=tail.state.version,
            state_covers=(tail.state.covers_from, tail.state.covers_to),
            state_size=tail.state_size,
        )  # fmt: skip


def _token() -> str:
    return secrets.token_hex(12)
