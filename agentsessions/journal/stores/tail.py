"""What a writer knows about the end of its journal, shared by every store implementation.

The tail holds the head (last seq and hash), the projections, the recent commit ids with
their first results, and the highest fence seen. It is all a writer needs to accept or refuse
the next commit without reading the log, so the cost of a commit does not grow with the
session. Stores persist it (as the ``carry`` of a sealed segment, or a hint file) and fold
new records into it; the rules for accepting a commit live here, once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from hashlib import sha256
from typing import Any

from agentsessions.errors import (
    ChainBrokenError,
    CommitTooLargeError,
    ConflictError,
    FencedError,
    FormatError,
    InvalidArgumentError,
)
from agentsessions.journal.format import canonical
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.projection import Projection
from agentsessions.journal.stores.store import COMMIT_IDS_REMEMBERED, CommitResult


@dataclass
class Tail:
    """The end of one session's journal plus the state folded from everything before it."""

    last_seq: int = 0
    last_hash: str = ""
    projection: Projection = field(default_factory=Projection)
    commits: OrderedDict[str, CommitResult] = field(default_factory=OrderedDict)
    max_fence: int = 0

    # -- accepting a commit -------------------------------------------------------------
    def check(self, uid: str, *, expected_last_seq: int | None, fence: int, current: int) -> None:
        """CAS first, then the fence, in the reference's order."""
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

    def seal_events(
        self, uid: str, events: Sequence[Mapping[str, Any]], *, fence: int, max_bytes: int
    ) -> list[Record]:
        """Validate, canonicalise, chain and hash ``events`` after the head; nothing is stored."""
        if not events:
            raise InvalidArgumentError(f"session {uid}: a commit needs at least one event")
        # the schema's validators build at import (~4x `python -c pass`): only a commit needs
        # them, so a reader (``list``, ``get``, ``log``) never pays for them
        from agentsessions.v1 import schema

        records: list[Record] = []
        prev, seq, size = self.last_hash, self.last_seq, 0
        validate, plain_json, loose_json = (
            schema.validate_event,
            canonical.canonical_plain,
            canonical.canonical_json,
        )
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
            payload = canonical.envelope_unchecked(
                plain_json(event) if plain else loose_json(event), prev, seq
            )
            size += len(payload)
            if size > max_bytes:
                raise _too_large(uid, size, max_bytes)
            digest = sha256(payload).hexdigest()
            records.append(Record(seq, prev, digest, fence, payload))
            prev = digest
        return records

    def check_records(self, uid: str, records: Sequence[Record], *, max_bytes: int) -> None:
        """Refuse imported records that do not continue this chain exactly."""
        if not records:
            raise InvalidArgumentError(f"session {uid}: a commit needs at least one record")
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
    ) -> CommitResult:
        """Move the head past ``records`` and fold them into the projection."""
        for i, record in enumerate(records):
            self.projection.apply(events[i] if events is not None else record.event, record.seq)
            self.max_fence = max(self.max_fence, record.fence)
        last = records[-1]
        self.last_seq, self.last_hash = last.seq, last.content_hash
        first = records[0].seq
        if commit_id is not None:  # remembered without its records: a retry gets no copies
            self.remember(commit_id, CommitResult(first, last.seq, last.content_hash, last.fence))
        return CommitResult(first, last.seq, last.content_hash, last.fence, False, tuple(records))

    def remember(self, commit_id: str, result: CommitResult) -> None:
        self.commits[commit_id] = result
        self.commits.move_to_end(commit_id)
        while len(self.commits) > COMMIT_IDS_REMEMBERED:
            self.commits.popitem(last=False)

    def duplicate(self, commit_id: str | None) -> CommitResult | None:
        """The first result of a commit id already applied, marked as a duplicate."""
        if commit_id is None or commit_id not in self.commits:
            return None
        first = self.commits[commit_id]
        return CommitResult(first.first_seq, first.last_seq, first.last_hash, first.fence, True)

    # -- persistence --------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "last_seq": self.last_seq,
            "last_hash": self.last_hash,
            "projection": self.projection.to_json(),
            "max_fence": self.max_fence,
            "commits": [
                [cid, r.first_seq, r.last_seq, r.last_hash, r.fence]
                for cid, r in self.commits.items()
            ],
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Tail:
        tail = cls(
            last_seq=int(obj["last_seq"]),
            last_hash=str(obj["last_hash"]),
            projection=Projection.from_json(obj.get("projection")),
            max_fence=int(obj.get("max_fence", 0)),
        )
        for cid, first, last, digest, fence in obj.get("commits", []):
            tail.commits[str(cid)] = CommitResult(int(first), int(last), str(digest), int(fence))
        return tail


def _too_large(uid: str, size: int, limit: int) -> CommitTooLargeError:
    return CommitTooLargeError(
        f"session {uid}: commit of more than {size} bytes exceeds the limit of {limit} bytes; "
        "nothing was written",
        hint="split the commit, or raise max_commit_bytes",
        session=uid,
        limit=limit,
    )
