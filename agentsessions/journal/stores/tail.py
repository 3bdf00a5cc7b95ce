"""What a writer knows about the end of its journal, shared by every store implementation.

The tail holds the head (last seq and hash), the projections, the recent commit ids with
their first results, the highest fence seen, and the working state (its version, range and
bytes; for a file store also where its STATE frame lies, so an open finds it without
reading history). It is all a writer needs to accept or refuse
the next commit without reading the log, so the cost of a commit does not grow with the
session. Stores persist it (as the ``carry`` of a sealed segment, or a hint file) and fold
new records into it; the rules for accepting a commit live here, once.
"""

from __future__ import annotations

import functools
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from hashlib import sha256
from typing import TYPE_CHECKING, Any

from agentsessions.errors import (
    ChainBrokenError,
    CommitTooLargeError,
    ConflictError,
    FencedError,
    FormatError,
    InvalidArgumentError,
    StateConflictError,
)
from agentsessions.journal.stores.projection import Projection
from agentsessions.journal.stores.store import (
    COMMIT_IDS_REMEMBERED,
    CommitResult,
    Snapshot,
    StateUpdate,
    WorkingState,
)
from agentsessions.valueclass import field, value

if TYPE_CHECKING:
    from agentsessions.journal.format.records import Record
    from agentsessions.journal.format.staterecord import Where


@value
class Tail:
    """The end of one session's journal plus the state folded from everything before it."""

    last_seq: int = 0
    last_hash: str = ""
    projection: Projection = field(default_factory=Projection)
    _commits: OrderedDict[str, CommitResult] = field(default_factory=OrderedDict)
    max_fence: int = 0
    state: WorkingState = field(default_factory=WorkingState)
    state_at: Where | None = None  # the file store's STATE frame of ``state`` (None: none)
    state_size: int = 0  # its data's size (``state.data`` is b"" until a file store loads it)
    _commit_rows: list[Any] | None = field(default=None, repr=False)
    """The commit ids as a hint stored them, not yet parsed (older than ``_commits``'s): a
    hint is read by every ``get`` and ``read`` of a session, and parsing its (up to 1,024)
    remembered commit ids each time made those reads grow with the session until the
    window was full (1.8 ms at 1,024, more than the rest of a read); only a writer's
    duplicate check needs them. Never changed in place (the parsed hint is shared)."""

    @property
    def commits(self) -> OrderedDict[str, CommitResult]:
        """The remembered commit ids, oldest first (the hint's parsed on first use)."""
        rows, self._commit_rows = self._commit_rows, None
        if rows:
            newer, self._commits = self._commits, OrderedDict()
            for cid, first, last, digest, fence, *version in rows:
                self._commits[str(cid)] = CommitResult(
                    int(first), int(last), str(digest), int(fence),
                    state_version=int(version[0]) if version else 0,
                )  # fmt: skip
            for cid, result in newer.items():
                self._commits[cid] = result
                self._commits.move_to_end(cid)
            self._trim()
        return self._commits

    def _trim(self) -> None:
        while len(self._commits) > COMMIT_IDS_REMEMBERED:
            self._commits.popitem(last=False)

    def _commit_rows_json(self) -> list[Any]:
        """The remembered commit ids as a hint stores them (without parsing the hint's)."""
        own = [
            [cid, r.first_seq, r.last_seq, r.last_hash, r.fence, r.state_version]
            for cid, r in self._commits.items()
        ]
        room = COMMIT_IDS_REMEMBERED - len(own)
        if not self._commit_rows or room <= 0:
            return own
        older = [row for row in self._commit_rows[-room:] if row[0] not in self._commits]
        return older + own

    # -- accepting a commit -------------------------------------------------------------
    def check(
        self,
        uid: str,
        *,
        expected_last_seq: int | None,
        fence: int,
        current: int,
        expected_state_version: int | None = None,
        stateful: bool = False,
    ) -> None:
        """CAS first (the journal end, then the state version), then the fence, in the
        reference's order. ``stateful`` (the commit carries state): a lost CAS is a
        StateConflictError with the current snapshot."""
        stateful = stateful or expected_state_version is not None
        if stateful and expected_last_seq is not None and expected_last_seq != self.last_seq:
            raise self.state_conflict(
                uid, f"expected last seq {expected_last_seq} but the journal ends at "
                f"{self.last_seq}"
            )  # fmt: skip
        if expected_state_version is not None and expected_state_version != self.state.version:
            raise self.state_conflict(
                uid, f"expected state version {expected_state_version} but the working state "
                f"is at version {self.state.version}"
            )  # fmt: skip
        if expected_last_seq is not None and expected_last_seq != self.last_seq:
            raise ConflictError(
                f"session {uid}: expected last seq {expected_last_seq} but the journal ends at "
                f"{self.last_seq} (another writer committed first)",
                head_seq=self.last_seq,
                head_hash=self.last_hash,
                session=uid,
            )
        if fence < current:
            raise FencedError(
                f"session {uid}: fence {fence} is older than the current fence {current} "
                "(a newer writer superseded this one)",
                session=uid,
                fence=fence,
                current_fence=current,
            )

    def prepare(
        self,
        uid: str,
        events: Sequence[Mapping[str, Any]],
        *,
        expected_last_seq: int | None,
        fence: int,
        current: int,
        state: StateUpdate | None,
        expected_state_version: int | None,
        max_bytes: int,
    ) -> tuple[list[Record], WorkingState | None]:
        """Everything a writer checks and builds before a commit lands, in order: the CAS
        (journal end, state version), the fence, the events, the new state and the size.
        Nothing is stored; any refusal leaves the tail as it was."""
        self.check(
            uid,
            expected_last_seq=expected_last_seq,
            fence=fence,
            current=current,
            expected_state_version=expected_state_version,
            stateful=state is not None,
        )
        if state is None or events:
            records = self.seal_events(uid, events, fence=fence, max_bytes=max_bytes)
        else:
            records = []
        if state is None:
            return records, None
        return records, self.next_state(
            uid, state, records, max_bytes=max_bytes, now=time.time_ns()
        )

    def state_conflict(self, uid: str, why: str) -> StateConflictError:
        """The conflict a stateful commit gets: nothing written, the snapshot to merge with."""
        return StateConflictError(
            f"session {uid}: {why} (another writer committed first); nothing was written",
            head_seq=self.last_seq,
            head_hash=self.last_hash,
            snapshot=self.snapshot(),
            session=uid,
        )

    def next_state(
        self, uid: str, update: StateUpdate, records: Sequence[Record], *, max_bytes: int, now: int
    ) -> WorkingState:
        """The working state ``update`` makes after ``records``; refuses a bad range, or a
        commit whose events and state bytes together exceed ``max_bytes``."""
        if not isinstance(update.data, bytes):
            raise InvalidArgumentError(f"session {uid}: working state must be bytes")
        head = records[-1].seq if records else self.last_seq
        covers_to = update.covers_to or head
        covers_from = update.covers_from if covers_to else 0
        if not 0 <= covers_from <= covers_to <= head or (covers_to and not covers_from):
            raise InvalidArgumentError(
                f"session {uid}: working state covers {update.covers_from}..{update.covers_to}, "
                f"outside the journal 1..{head}; nothing was written",
                session=uid,
            )
        size = sum(len(r.payload) for r in records) + len(update.data)
        if size > max_bytes:
            raise _too_large(uid, size, max_bytes)
        return WorkingState(
            self.state.version + 1, update.data, covers_from, covers_to, update.author, now
        )

    def seal_events(
        self, uid: str, events: Sequence[Mapping[str, Any]], *, fence: int, max_bytes: int
    ) -> list[Record]:
        """Validate, canonicalise, chain and hash ``events`` after the head; nothing is stored."""
        if not events:
            raise InvalidArgumentError(f"session {uid}: a commit needs at least one event")
        validate, plain_json, loose_json, envelope, make = _sealing()
        records: list[Record] = []
        prev, seq, size = self.last_hash, self.last_seq, 0
        for event in events:
            try:
                plain = validate(event)
            except FormatError as exc:
                raise InvalidArgumentError(
                    f"session {uid}: event {seq - self.last_seq + 1} of the commit is not a "
                    f"valid agentsessions.v1 Event: {exc}; nothing was written",
                    session=uid,
                ) from None
            seq += 1
            # the envelope's arguments are all made here (canonical bytes, a digest, a seq)
            payload = envelope(plain_json(event) if plain else loose_json(event), prev, seq)
            size += len(payload)
            if size > max_bytes:
                raise _too_large(uid, size, max_bytes)
            digest = sha256(payload).hexdigest()
            records.append(make(seq, prev, digest, fence, payload))
            prev = digest
        return records

    def check_records(self, uid: str, records: Sequence[Record], *, max_bytes: int) -> None:
        """Refuse imported records that do not continue this chain exactly."""
        if not records:
            raise InvalidArgumentError(f"session {uid}: a commit needs at least one record")
        from agentsessions.journal.format import canonical  # as in seal_events

        prev, seq, size = self.last_hash, self.last_seq, 0
        for record in records:
            seq += 1
            _body, link, at = canonical.split_envelope(record.payload)
            if record.seq != seq or at != seq:
                raise ChainBrokenError(
                    f"session {uid}: expected seq {seq}, got {record.seq}", seq=record.seq
                )
            if record.prev_hash != prev or link != prev:
                raise ChainBrokenError(f"session {uid}: prev_hash mismatch at seq {seq}", seq=seq)
            if canonical.content_hash(record.payload) != record.content_hash:
                raise ChainBrokenError(
                    f"session {uid}: content_hash mismatch at seq {seq}", seq=seq
                )
            size += len(record.payload)
            if size > max_bytes:
                raise _too_large(uid, size, max_bytes)
            prev = record.content_hash

    # -- after the commit is durable ----------------------------------------------------
    def advance(
        self,
        records: Sequence[Record],
        events: Sequence[Mapping[str, Any]] | None,
        commit_id: str | None,
        state: WorkingState | None = None,
        *,
        fence: int = 0,
        at: Where | None = None,
    ) -> CommitResult:
        """Move the head past ``records`` and fold them into the projection; ``state`` (with
        its frame ``at``, for a file store) becomes the working state. A state-only commit
        (no records) is made by a writer of ``fence``."""
        for i, record in enumerate(records):
            self.projection.apply(events[i] if events is not None else record.event, record.seq)
            self.max_fence = max(self.max_fence, record.fence)
        if records:
            self.last_seq, self.last_hash = records[-1].seq, records[-1].content_hash
            fence = records[-1].fence
        if state is not None:
            self.state, self.state_at, self.state_size = state, at, len(state.data)
            self.max_fence = max(self.max_fence, fence)
        first = records[0].seq if records else self.last_seq + 1
        done = (first, self.last_seq, self.last_hash, fence)
        version = self.state.version
        if commit_id is not None:  # remembered without its records: a retry gets no copies
            self.remember(commit_id, CommitResult(*done, state_version=version))
        return CommitResult(*done, False, tuple(records), version)

    def remember(self, commit_id: str, result: CommitResult) -> None:
        """Remember ``commit_id`` as the newest (the hint's ids stay unparsed)."""
        self._commits[commit_id] = result
        self._commits.move_to_end(commit_id)
        if self._commit_rows is None:
            self._trim()
        elif len(self._commits) >= COMMIT_IDS_REMEMBERED:
            self._commit_rows = None  # every id the hint had is older than the window
            self._trim()

    def duplicate(self, commit_id: str | None) -> CommitResult | None:
        """The first result of a commit id already applied, marked as a duplicate."""
        if commit_id is None:
            return None
        first = self._commits.get(commit_id) or self.commits.get(commit_id)
        if first is None:
            return None
        return CommitResult(
            first.first_seq, first.last_seq, first.last_hash, first.fence, True,
            state_version=first.state_version,
        )  # fmt: skip

    def snapshot(self) -> Snapshot:
        """The head and working state, as a conflict reports them."""
        return Snapshot(self.last_seq, self.last_hash, self.state)

    # -- persistence --------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        out = {
            "last_seq": self.last_seq,
            "last_hash": self.last_hash,
            "projection": self.projection.to_json(),
            "max_fence": self.max_fence,
            "commits": self._commit_rows_json(),
        }
        if self.state.version:  # where the state's frame is, not its bytes (FORMAT.md 6a)
            out["state"] = {
                **self.state.to_json(),
                "size": self.state_size,
                "at": list(self.state_at) if self.state_at is not None else None,
            }
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Tail:
        tail = cls(
            last_seq=int(obj["last_seq"]),
            last_hash=str(obj["last_hash"]),
            projection=Projection.from_json(obj.get("projection")),
            max_fence=int(obj.get("max_fence", 0)),
        )
        rows = obj.get("commits", [])
        # the shape now (a bad one fails here, as a parse did: the caller drops the hint);
        # the values once a writer asks
        if not isinstance(rows, list) or not all(len(row) in (5, 6) for row in rows):
            raise ValueError("malformed commit ids")
        tail._commit_rows = rows or None
        state = obj.get("state")
        if state:  # the bytes are not here: the file store reads them from ``at``
            tail.state = WorkingState(
                int(state["version"]), b"", int(state["covers_from"]), int(state["covers_to"]),
                str(state["author"]), int(state["time_ns"]),
            )  # fmt: skip
            tail.state_size = int(state["size"])
            at = state.get("at")
            tail.state_at = (int(at[0]), int(at[1]), int(at[2])) if at else None
        return tail


@functools.cache
def _sealing() -> tuple[
    Callable[[Mapping[str, Any]], bool],
    Callable[[Mapping[str, Any]], bytes],
    Callable[[Mapping[str, Any]], bytes],
    Callable[[bytes, str, int], bytes],
    type[Record],
]:
    """What :meth:`Tail.seal_events` calls: the event validator, the two canonical encoders,
    the envelope and the record class, imported on the first commit and kept.

    The schema's validators build at import (~4x `python -c pass`), and canonical loads
    msgspec (~1x): only a commit needs them, so a reader (``list``, ``get``, ``log``) never
    pays for them; a commit no longer pays for the three imports either (~1 us each time)."""
    from agentsessions.journal.format import canonical
    from agentsessions.journal.format.records import Record
    from agentsessions.v1 import schema

    return (
        schema.validate_event,
        canonical.canonical_plain,
        canonical.canonical_json,
        canonical.envelope_unchecked,
        Record,
    )


def _too_large(uid: str, size: int, limit: int) -> CommitTooLargeError:
    return CommitTooLargeError(
        f"session {uid}: commit of more than {size} bytes exceeds the limit of {limit} bytes; "
        "nothing was written",
        hint="split the commit, or raise max_commit_bytes",
        session=uid,
        limit=limit,
    )
