"""The bytes of a JetStream store: subject names and the body of each message kind.

One message per commit: every record of a commit (and its working state) travels in ONE
message, so a commit is all or nothing for readers without an atomic batch. A body is a
compact JSON header line, ``\\n``, then the records' canonical payloads and the state's
bytes concatenated (lengths in the header): the payloads are the exact hashed bytes, so
``content_hash == sha256(payload)`` holds in the stream as on disk.

Kinds (``"k"``): ``"c"`` a commit (records and/or state, its fence, its commit id),
``"f"`` a fence (a writer's incarnation, or a delete), ``"m"`` a session's metadata (on its
own subject). Every journal message also carries the head and projections after it
(``"t"``), so ``get`` reads one message, never the log.

An encrypted session's commit (``"e": 1``) carries sealed records (``crypto.sealed``: the
chain in each clear head, which must match the header's) and a sealed state blob in place
of the plaintext; ``jetstream/crypt.py`` seals and opens them, and :func:`fold` folds one it
has not opened from the clear heads and the message's own summary (no key needed).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from hashlib import sha256
from typing import Any, Protocol

from agentsessions.errors import JournalCorruptError
from agentsessions.journal.format import sealedhead
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.projection import Projection
from agentsessions.journal.stores.store import WorkingState
from agentsessions.journal.stores.tail import Tail


def journal_subject(prefix: str, uid: str) -> str:
    """The subject of a session's conversation journal."""
    return f"{prefix}.j.{uid}"


def meta_subject(prefix: str, uid: str) -> str:
    """The subject of a session's metadata (the last message is current)."""
    return f"{prefix}.m.{uid}"


def component_subject(prefix: str, uid: str, name: str) -> str:
    """The subject of a component store: the name hex-encoded, since ``.`` splits tokens."""
    return f"{prefix}.c.{uid}.{name.encode().hex()}"


def component_name(subject: str) -> str:
    """Inverse of :func:`component_subject` for its last token."""
    return bytes.fromhex(subject.rsplit(".", 1)[1]).decode()


class Sealer(Protocol):
    """An encrypted session's cipher as :func:`commit_body` uses it (``jetstream/crypt.py``)."""

    def seal_record(self, record: Record) -> bytes:
        """The sealed bytes of ``record`` (its seq, link and content hash unchanged)."""
        ...

    def seal_state(self, state: WorkingState) -> bytes:
        """The sealed blob of ``state``'s bytes, bound to its version and range."""
        ...


def summary(tail: Tail) -> dict[str, Any]:
    """What ``get`` needs of a tail, carried on every journal message."""
    return {
        "last_seq": tail.last_seq,
        "last_hash": tail.last_hash,
        "proj": tail.projection.to_json(),
        "max_fence": tail.max_fence,
        "state": [tail.state.version, tail.state.covers_from, tail.state.covers_to],
        "state_size": tail.state_size,
        "ut": time.time_ns(),
    }


def commit_body(
    records: Iterable[Record],
    *,
    fence: int,
    commit_id: str | None,
    state: WorkingState | None,
    after: Tail,
    base: Tail | None = None,
    sealer: Sealer | None = None,
) -> bytes:
    """The message of one commit; ``after`` is the tail once it lands, ``base`` (a fork
    child's first commit only) the parent's tail at the fork point; ``sealer`` (an
    encrypted session's cipher) seals the records and the state bytes."""
    records = list(records)
    payloads = [r.payload if sealer is None else sealer.seal_record(r) for r in records]
    head: dict[str, Any] = {
        "k": "c",
        "f": fence,
        "cid": commit_id,
        "r": [
            [r.seq, r.prev_hash, r.content_hash, r.fence, len(p)]
            for r, p in zip(records, payloads, strict=True)
        ],
        "t": summary(after),
    }
    if sealer is not None:
        head["e"] = 1
    tail_bytes = b""
    if state is not None:
        tail_bytes = state.data if sealer is None else sealer.seal_state(state)
        head["s"] = {**state.to_json(), "size": len(tail_bytes)}
    if base is not None:
        head["base"] = base.to_json()
    return _join(head, [*payloads, tail_bytes])


def fence_body(fence: int, after: Tail, *, deleted: bool = False) -> bytes:
    """The message a new writer (or a delete) appends with CAS to take the journal over."""
    return _join({"k": "f", "f": fence, "del": deleted, "t": summary(after)}, [])


def meta_body(
    meta: Mapping[str, Any], *, deleted: bool, update_time_ns: int, stream_id: str = ""
) -> bytes:
    """A session's metadata row (the last message on its meta subject wins); ``stream_id``
    names the stream's genesis (``jetstream/identity.py``)."""
    head = {"k": "m", "meta": dict(meta), "del": deleted, "ut": update_time_ns}
    if stream_id:
        head["sid"] = stream_id
    return _join(head, [])


def _join(head: Mapping[str, Any], parts: list[bytes]) -> bytes:
    return json.dumps(head, separators=(",", ":")).encode() + b"\n" + b"".join(parts)


@dataclass(frozen=True)
class Message:
    """One decoded message: its header, records and state (a commit's), stream sequence."""

    head: dict[str, Any]
    records: tuple[Record, ...] = ()
    state: WorkingState | None = None
    stream_seq: int = 0
    sealed: bool = False  # records and state as stored: sealed, not opened (``"e"``)

    @property
    def kind(self) -> str:
        return str(self.head.get("k", ""))

    @property
    def fence(self) -> int:
        return int(self.head.get("f", 0))


def decode(data: bytes, stream_seq: int, subject: str) -> Message:
    """Parse one message; a body that does not match its own lengths or hashes is corrupt."""
    try:
        line, _, rest = data.partition(b"\n")
        head = json.loads(line)
        records, at, sealed = [], 0, bool(head.get("e"))
        for seq, prev, digest, fence, size in head.get("r", ()):
            payload = rest[at : at + size]
            at += size
            if len(payload) != size:
                raise ValueError(f"record {seq} is shorter than its header says")
            if sealed:  # the chain is in the clear head, which must be the header's
                if sealedhead.chain_of(payload) != (prev, digest):
                    raise ValueError(f"sealed record {seq} does not match its header")
            elif sha256(payload).hexdigest() != digest:
                raise ValueError(f"record {seq} does not match its content hash")
            records.append(Record(int(seq), str(prev), str(digest), int(fence), payload))
        state = None
        if head.get("s"):
            s = head["s"]
            data_bytes = rest[at : at + int(s["size"])]
            state = WorkingState(
                int(s["version"]), data_bytes, int(s["covers_from"]), int(s["covers_to"]),
                str(s["author"]), int(s["time_ns"]),
            )  # fmt: skip
    except (ValueError, KeyError, TypeError) as exc:
        raise JournalCorruptError(
            f"JetStream message {stream_seq} on {subject} is not a journal message: {exc}"
        ) from None
    return Message(head, tuple(records), state, stream_seq, sealed)


def head_seq(msg: Message) -> int:
    """The journal's last seq once ``msg`` (a journal message) is in: never decreases."""
    return int(msg.head["t"]["last_seq"])


def tail_from_summary(obj: Mapping[str, Any]) -> Tail:
    """The tail a message's ``"t"`` describes (no commit ids, no state bytes)."""
    version, covers_from, covers_to = obj["state"]
    return Tail(
        last_seq=int(obj["last_seq"]),
        last_hash=str(obj["last_hash"]),
        projection=Projection.from_json(obj["proj"]),
        max_fence=int(obj["max_fence"]),
        state=WorkingState(int(version), b"", int(covers_from), int(covers_to)),
        state_size=int(obj["state_size"]),
    )


@dataclass
class Folded:
    """A journal subject read from its start: the tail, every state version, the fences."""

    tail: Tail = field(default_factory=Tail)
    states: list[tuple[int, WorkingState]] = field(default_factory=list)
    fence: int = 0  # the newest fence minted on the subject (fence records and records)
    deleted: bool = False
    stream_seq: int = 0  # the last message's stream sequence (the next CAS expects it)
    last_msg_id: str = ""
    state_stream_seq: int = 0  # the stream sequence of the message holding ``tail.state``
    messages: int = 0  # how many messages were folded (those after a checkpoint, if any)
    checkpoint_seq: int = 0  # the stream sequence of the checkpoint it started from (0: none)


def fold(
    messages: Iterable[Message], base: Tail | None = None, start: Folded | None = None
) -> Folded:
    """Replay a subject's messages into what a writer needs; ``base`` starts a fork child,
    ``start`` (a checkpoint's) is what the messages before these folded into."""
    out = start if start is not None else Folded(tail=base if base is not None else Tail())
    for msg in messages:
        out.stream_seq = msg.stream_seq
        out.messages += 1
        if msg.kind == "f":
            out.fence = max(out.fence, msg.fence)
            out.deleted = out.deleted or bool(msg.head.get("del"))
            continue
        if msg.kind != "c":
            continue
        if "base" in msg.head and out.tail.last_seq == 0 and base is None:
            out.tail = Tail.from_json(msg.head["base"])
        if msg.state is not None:
            out.states.append((out.tail.last_seq, msg.state))
            out.state_stream_seq = msg.stream_seq
        cid = msg.head.get("cid")
        if msg.sealed:
            _advance_sealed(out.tail, msg, cid)
        else:
            out.tail.advance(msg.records, None, cid, msg.state, fence=msg.fence)
        out.fence = max(out.fence, msg.fence)
    out.fence = max(out.fence, out.tail.max_fence)
    return out


def _advance_sealed(tail: Tail, msg: Message, cid: str | None) -> None:
    """Fold a sealed commit without its key: the chain from the records' clear heads, the
    projection and state size from the message's own summary (what its writer folded from
    the plaintext); the state's bytes are not the plaintext, so they are left out."""
    state = None if msg.state is None else replace(msg.state, data=b"")
    tail.advance(msg.records, [{}] * len(msg.records), cid, state, fence=msg.fence)
    tail.projection = Projection.from_json(msg.head["t"]["proj"])
    tail.state_size = int(msg.head["t"]["state_size"])


def msg_id(subject: str, token: str) -> str:
    """A ``Nats-Msg-Id``: the window is stream-wide, so the id names the subject too."""
    return hashlib.sha256(f"{subject}\0{token}".encode()).hexdigest()[:40]
