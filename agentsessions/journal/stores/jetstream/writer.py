"""The single writer of one JetStream journal subject (a session's, or a tool store's).

Fencing across hosts: opening a writer appends a fence record with CAS at the head it read,
which moves the subject's last sequence; any older writer's next CAS append then fails,
even if its view of the journal end is current. On every lost CAS the writer reads the
subject's last message and explains it: a newer fence (or a commit by a newer writer) is
FencedError, a delete is SessionDeletedError, anything else a ConflictError with the head.
It never re-reads and retries on its own, which would walk past a fence. Between reading
the head and the fence, the open asks the writer another host may hold and starts answering
busy itself (``live.Claim``): a busy one (a turn is running) refuses the open with
LockHeldError, as the file store's lock does; a lost fence CAS withdraws the answer and
starts again from the read, so two opens at once never fence a writer already in use
(jetstream/live.py). This writer then says busy or idle (``set_busy``) while it lives.

A plain commit landed with ``sync=False`` (no commit id, no state, this writer's fence) is
not published at once: it waits for the next commit, and both ride in ONE message (its
records first), acknowledged together once JetStream has it durably; ``sync`` publishes
what waits alone. So a turn's unsynced output and its synced END cost one round trip,
not two. Until then no reader sees it and it is not acknowledged (the Writer contract
allows both); if the message carrying it fails, this writer closes (its tail went past
the journal: the next open folds what did land).

Elections and unknown outcomes are the client's (``Client.publish``: the same Msg-Id and
CAS until answered or ``commit_timeout``). If even that gives up, the commit may have
landed: the writer then doubts its tail, and before its next append folds in the messages
after its last known one that carry its own fence (they can only be its own commits), so a
retry with the same commit id is answered as the duplicate it is, never appended twice.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentsessions.errors import (
    AgentSessionsError,
    ConflictError,
    FencedError,
    InvalidArgumentError,
    LockHeldError,
    UnavailableError,
)
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.appending import NOTHING_HELD, ChainWriter
from agentsessions.journal.stores.capabilities import WriterTakeover
from agentsessions.journal.stores.jetstream import checkpoint, identity, wire
from agentsessions.journal.stores.jetstream.client import Client, reconnects
from agentsessions.journal.stores.jetstream.crypt import Opener, SubjectCipher
from agentsessions.journal.stores.jetstream.live import Claim
from agentsessions.journal.stores.projection import Projection
from agentsessions.journal.stores.store import (
    CommitResult,
    WorkingState,
    deleted_error,
)
from agentsessions.journal.stores.tail import Tail

_TAKEOVER_TRIES = 3
MERGE_RECORDS = 64
"""Records one message carries at most when waiting commits ride with the next (its header
grows by a row per record)."""
FRESH_SECONDS = 0.5
"""How long a read that found the journal where this writer left it answers
:meth:`JetStreamWriter.superseded` again (an engine asks several times a turn)."""


def shadow(tail: Tail) -> Tail:
    """A copy of ``tail`` without its commit ids, to compute the head after a commit
    without touching the writer's tail until the server acknowledges it. A shallow copy
    of the projection is enough: folding an event only rebinds its fields (the snapshot
    dict is replaced, never changed), and a deep copy cost ~15 us of a commit."""
    return Tail(
        tail.last_seq, tail.last_hash, copy.copy(tail.projection), max_fence=tail.max_fence,
        state=tail.state, state_size=tail.state_size,
    )  # fmt: skip


class JetStreamWriter(ChainWriter, WriterTakeover):
    """Holds one journal subject: its folded tail, its fence and the subject's last seq;
    another host may take it over between turns (:class:`~.capabilities.WriterTakeover`)."""

    def __init__(
        self,
        client: Client,
        uid: str,
        subject: str,
        max_bytes: int,
        on_close: Callable[[str], None],
        base: Tail | None = None,
        checkpoint_every: int = checkpoint.CHECKPOINT_EVERY,
        cipher: SubjectCipher | None = None,
        claim: Claim | None = None,
    ) -> None:
        self._client, self._uid, self._subject = client, uid, subject
        self._claim = claim  # its probe responder (a tool store's writer has none)
        self._max_bytes, self._on_close = max_bytes, on_close
        self._closed = False
        self._held = NOTHING_HELD
        self._doubt = False  # a publish gave up unanswered: it may have landed
        self._waiting: list[Record] = []  # landed with sync=False, in no message yet
        self._waiting_bytes = 0
        self._every = checkpoint_every
        self._current_at = 0.0  # when the journal was last seen where this writer left it
        self._reconnects = reconnects(client)  # a probe missed across one is not yielded
        self._cipher = cipher  # an encrypted session's: commits are sealed (jetstream/crypt.py)
        # each publish's Msg-Id token: this writer's random salt and a count, unique without
        # a getrandom call per commit (one that released the GIL to 8 committing threads)
        self._salt, self._minted = secrets.token_hex(12), itertools.count()
        opener = Opener(uid, False) if cipher is None else Opener.loaded(cipher)
        for _ in range(_TAKEOVER_TRIES):
            folded = checkpoint.load(client, subject, base, opener)
            if folded.deleted:
                raise deleted_error(uid)
            self._tail, self._fence = folded.tail, folded.fence + 1
            if claim is not None:  # after the read: the CAS covers whoever opened since
                claim.take()
            body = wire.fence_body(self._fence, self._tail)
            seq = client.publish(subject, body, expect=folded.stream_seq, token=self._token())
            if seq is None and claim is not None:
                claim.withdraw()  # another open came between: ask again before a fence
            if seq is not None:
                self._stream_seq, self._acked_seq = seq, self._tail.last_seq
                # what the next checkpoint needs: messages since the last, where the state is
                self._since, self._ckpt = folded.messages + 1, folded.checkpoint_seq
                self._state_seq = folded.state_stream_seq
                self._checkpoint()
                return
        raise LockHeldError(
            f"session {uid} is busy: other writers kept taking it over while this one opened",
            session=uid,
        )

    @property
    def uid(self) -> str:
        return self._uid

    @property
    def head(self) -> tuple[int, str]:
        return self._tail.last_seq, self._tail.last_hash

    @property
    def state(self) -> WorkingState:
        """The working state as of this writer's last commit."""
        return self._tail.state

    @property
    def projection(self) -> Projection:
        """The projections folded from every commit through the head (the tail's)."""
        return self._tail.projection

    def sync(self) -> None:
        """Publish the commits landed with ``sync=False`` that still wait, as one message
        (the server fsyncs it before acknowledging it); nothing to do when none waits."""
        if self._waiting:
            self._check_open()
            self._publish([], None, None, None, self._fence)

    def set_busy(self, busy: bool) -> bool:
        """Say whether a turn uses this writer (busy, as from open) or it is parked idle
        between turns; another host's open is refused while it is busy and takes over
        while it is idle (jetstream/live.py). False when claiming it busy comes too late:
        another host was told it is idle and is taking over (open a new writer). A tool
        store's writer has no probe: always True."""
        return self._claim is None or self._claim.presence.set_busy(busy)

    def superseded(self) -> bool:
        """True if the journal moved since this writer's last message (a writer on another
        host took it over, or a delete fenced it). A holder that keeps the writer idle
        between turns asks before the next turn, and opens a new one (taking the session
        back) instead of failing that turn on a lost CAS.

        A takeover through a probe is known without a read: this writer yielded (the
        probe and the yield are atomic, jetstream/live.py). Anything else (a delete or a
        shred, a host that found this one silent) takes a read, made at most once per
        FRESH_SECONDS, or at once after a reconnect (a probe may have missed this
        writer then); an acknowledged commit counts as one. Only a convenience: whatever
        this says, the next commit's CAS decides."""
        if self._closed or (self._claim is not None and self._claim.presence.yielded):
            return True
        now, seen = time.monotonic(), reconnects(self._client)
        if now - self._current_at < FRESH_SECONDS and seen == self._reconnects:
            return False
        last = self._client.last(self._subject)
        if last is None or last.stream_seq != self._stream_seq:
            return True
        self._current_at, self._reconnects = now, seen
        return False

    def close(self) -> None:
        if self._closed:
            return
        try:  # what waits for a sync goes out first: best effort, it was not acknowledged
            with contextlib.suppress(AgentSessionsError):
                self.sync()
        finally:
            if not self._closed:  # a failed publish of what waited closed it already
                self._closed = True
                self._on_close(self._subject)

    def __enter__(self) -> JetStreamWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise InvalidArgumentError(f"session {self._uid}: this writer was closed")

    @property
    def _max_commit_bytes(self) -> int:
        return self._max_bytes

    def _open_tail(self) -> Tail:
        self._check_open()
        if self._doubt:
            self._catch_up()
        return self._tail

    def _land(
        self,
        records: list[Record],
        events: Sequence[Mapping[str, Any]] | None,
        cid: str | None,
        state: WorkingState | None,
        fence: int,
        sync: bool,
    ) -> CommitResult:
        """Publish one commit as one message with CAS, carrying the commits that wait
        before it; a plain one with ``sync=False`` waits for the next (module docstring)."""
        plain = cid is None and state is None and fence == self._fence
        if self._waiting and not (plain and self._joins(records)):
            self._publish([], None, None, None, self._fence)  # what waits, alone
        if sync or not plain:
            return self._publish(records, events, cid, state, fence)
        result = self._tail.advance(records, events, None, fence=fence)
        self._waiting.extend(records)
        self._waiting_bytes += sum(len(r.payload) for r in records)
        return result

    def _joins(self, records: list[Record]) -> bool:
        """Whether ``records`` fit in one message with the commits that wait."""
        size = self._waiting_bytes + sum(len(r.payload) for r in records)
        return len(self._waiting) + len(records) <= MERGE_RECORDS and size <= self._max_bytes

    def _publish(
        self,
        records: list[Record],
        events: Sequence[Mapping[str, Any]] | None,
        cid: str | None,
        state: WorkingState | None,
        fence: int,
    ) -> CommitResult:
        """One message: the waiting commits' records, then this commit's; acknowledged
        only once the server has it durably. On a failure with commits waiting, the tail
        is past the journal: the writer closes (the next open folds what landed)."""
        waiting, self._waiting, self._waiting_bytes = self._waiting, [], 0
        after = shadow(self._tail)
        result = after.advance(records, events, None, state, fence=fence)
        body = wire.commit_body(
            [*waiting, *records], fence=fence, commit_id=cid, state=state, after=after,
            sealer=self._cipher,
        )  # fmt: skip
        try:
            try:
                seq = self._client.publish(
                    self._subject, body, expect=self._stream_seq, token=self._token()
                )
            except UnavailableError:
                self._doubt = True  # it may have landed: the next append looks first
                raise
            if seq is None:
                raise self._lost()
        except BaseException:
            if waiting:
                self.close()
            raise
        self._adopt(seq, after, result, cid, state is not None)
        self._checkpoint()
        return result

    def _adopt(
        self, seq: int, after: Tail, result: CommitResult, cid: str | None, stateful: bool
    ) -> None:
        """Take ``after`` (the shadow the acknowledged commit was built from) as the tail:
        what :meth:`_landed` does, without folding the commit's events a second time."""
        tail = self._tail
        tail.last_seq, tail.last_hash = after.last_seq, after.last_hash
        tail.projection, tail.max_fence = after.projection, after.max_fence
        tail.state, tail.state_size = after.state, after.state_size
        if cid is not None:  # remembered without its records, as Tail.advance does
            tail.remember(cid, CommitResult(
                result.first_seq, result.last_seq, result.last_hash, result.fence,
                state_version=result.state_version,
            ))  # fmt: skip
        self._stream_seq, self._acked_seq = seq, tail.last_seq
        self._current_at = time.monotonic()  # acknowledged at the head: current as of now
        self._since += 1
        if stateful:
            tail.state_at, self._state_seq = None, seq  # as advance(state=...) leaves them

    def _landed(
        self,
        seq: int,
        records: Sequence[Record],
        events: Sequence[Mapping[str, Any]] | None,
        cid: str | None,
        state: WorkingState | None,
        fence: int,
    ) -> CommitResult:
        """Fold a commit of this writer's, stored at stream sequence ``seq``."""
        self._stream_seq = seq
        result = self._tail.advance(records, events, cid, state, fence=fence)
        self._acked_seq = self._tail.last_seq
        self._since += 1
        if state is not None:
            self._state_seq = seq
        return result

    def _catch_up(self) -> None:
        """After a publish that gave up: fold what landed of ours since the last message
        this writer knows (a commit with its own fence is its own: every open mints a new
        fence with CAS). Anything else is left for the next CAS to explain."""
        for msg in self._client.messages(self._subject, self._stream_seq):
            if msg.kind != "c" or msg.fence != self._fence:
                break
            self._landed(
                msg.stream_seq, msg.records, None, msg.head.get("cid"), msg.state, msg.fence
            )
        self._doubt = False

    def _checkpoint(self) -> None:
        """Every ``every`` messages, publish the tail as a checkpoint (only a shortcut for
        readers: a lost one is retried after the next commit, and never fails this one)."""
        if self._since < self._every:
            return
        folded = wire.Folded(
            tail=self._tail, fence=self._fence, stream_seq=self._stream_seq,
            state_stream_seq=self._state_seq, checkpoint_seq=self._ckpt,
        )  # fmt: skip
        seq = checkpoint.publish(self._client, self._subject, folded)
        if seq is not None:
            self._since, self._ckpt = 0, seq
            return
        try:  # another checkpoint came first: the next try CASes after it
            last = self._client.last(checkpoint.checkpoint_subject(self._subject))
        except UnavailableError:
            return
        self._ckpt = 0 if last is None else last.stream_seq

    def _token(self) -> str:
        """A publish's Msg-Id token: new for every message this writer sends (a retry of
        one message reuses its token inside ``Client.publish``)."""
        return f"{self._salt}{next(self._minted):x}"

    def _lost(self) -> Exception:
        """Why the subject moved under this writer (see the module docstring)."""
        last = self._client.last(self._subject)
        if identity.below(last, self._stream_seq, self._acked_seq):  # never append over
            return identity.missing(  # lost messages: a new head there would reuse numbers
                self._client, self._subject, "this writer's acknowledged head",
                self._acked_seq, self._stream_seq,
            )  # fmt: skip
        if last is not None and last.head.get("del"):
            return deleted_error(self._uid)
        newest = 0 if last is None else last.fence
        if newest > self._fence:
            return FencedError(
                f"session {self._uid}: fence {self._fence} is older than the current fence "
                f"{newest} (a newer writer superseded this one)",
                session=self._uid, fence=self._fence, current_fence=newest,
            )  # fmt: skip
        head = wire.tail_from_summary(last.head["t"]) if last is not None else Tail()
        return ConflictError(
            f"session {self._uid}: the journal moved under this writer (now at seq "
            f"{head.last_seq}); nothing was written",
            head_seq=head.last_seq, head_hash=head.last_hash, session=self._uid,
        )  # fmt: skip
