"""The payload of a STATE frame: one working-state version, bound to the chain it follows.

Layout (``docs/FORMAT.md`` section 6a)::

    magic b"AGST" | u32 meta_len | meta (compact JSON, sorted keys) | data (opaque bytes)

``meta`` names the version, the journal range the state covers, the host's author and time
stamps, the size of ``data``, where the previous version's STATE frame lies (``prev``, so a
reader can step back to the state an execution started with without scanning), and the
chain head the frame follows (``chain_seq``, ``chain_hash``). That binding is what makes a
STATE frame copied to another session or moved to another position detectable: a reader
compares it with the chain where it finds the frame (:func:`binding_problem`). The frame's
CRC covers the whole payload; :func:`decode` refuses anything malformed with FormatError.
"""

from __future__ import annotations

import json
import struct
from typing import Any

from agentsessions.errors import FormatError
from agentsessions.valueclass import value

STATE_MAGIC = b"AGST"
STATE_HEAD = struct.Struct("<4sI")
"""magic, meta_len."""
MAX_META = 64 << 10
_KEYS = frozenset(
    ("author", "chain_hash", "chain_seq", "covers_from", "covers_to", "prev", "size",
     "time_ns", "version")
)  # fmt: skip
Where = tuple[int, int, int]
"""(segment first seq, frame offset, frame seq) of a STATE frame."""


@value(frozen=True)
class StateRecord:
    """One decoded STATE payload."""

    version: int
    data: bytes
    covers_from: int
    covers_to: int
    author: str
    time_ns: int
    chain_seq: int  # the head the frame follows: the seq before its group's first event
    chain_hash: str  # and that event's content hash ("" for none)
    prev: Where | None = None  # the previous version's frame, None for version 1 (or a fork's)

    def meta(self) -> dict[str, Any]:
        """Everything but the data, as the frame's meta object holds it."""
        return {
            "author": self.author,
            "chain_hash": self.chain_hash,
            "chain_seq": self.chain_seq,
            "covers_from": self.covers_from,
            "covers_to": self.covers_to,
            "prev": list(self.prev) if self.prev is not None else None,
            "size": len(self.data),
            "time_ns": self.time_ns,
            "version": self.version,
        }


def encode(record: StateRecord) -> bytes:
    """The STATE payload of ``record``."""
    meta = json.dumps(record.meta(), sort_keys=True, separators=(",", ":")).encode()
    return STATE_HEAD.pack(STATE_MAGIC, len(meta)) + meta + record.data


def decode(payload: bytes | memoryview) -> StateRecord:
    """Inverse of :func:`encode`; FormatError for anything else."""
    raw = bytes(payload)
    if len(raw) < STATE_HEAD.size:
        raise FormatError("STATE payload shorter than its header")
    magic, meta_len = STATE_HEAD.unpack_from(raw, 0)
    end = STATE_HEAD.size + meta_len
    if magic != STATE_MAGIC or meta_len > MAX_META or end > len(raw):
        raise FormatError("STATE payload header is malformed")
    try:
        meta = json.loads(raw[STATE_HEAD.size : end])
    except (ValueError, UnicodeDecodeError):
        raise FormatError("STATE payload meta is not JSON") from None
    if not isinstance(meta, dict) or set(meta) != _KEYS:
        raise FormatError("STATE payload meta has the wrong keys")
    ints = ("chain_seq", "covers_from", "covers_to", "size", "time_ns", "version")
    if not all(type(meta[k]) is int and meta[k] >= 0 for k in ints):
        raise FormatError("STATE payload meta has a bad number")
    if not isinstance(meta["author"], str) or not isinstance(meta["chain_hash"], str):
        raise FormatError("STATE payload meta has a bad string")
    prev = meta["prev"]
    if prev is not None and not (
        isinstance(prev, list) and len(prev) == 3 and all(type(v) is int for v in prev)
    ):
        raise FormatError("STATE payload meta has a bad prev")
    data = raw[end:]
    if len(data) != meta["size"] or meta["version"] < 1:
        raise FormatError("STATE payload size or version does not match its meta")
    return StateRecord(
        meta["version"], data, meta["covers_from"], meta["covers_to"], meta["author"],
        meta["time_ns"], meta["chain_seq"], meta["chain_hash"],
        (prev[0], prev[1], prev[2]) if prev is not None else None,
    )  # fmt: skip


def binding_problem(payload: bytes | memoryview, seq: int, chain_hash: str) -> str:
    """Why a STATE frame of ``seq`` found after the chain head ``chain_hash`` does not belong
    there ("" when it does): malformed, or bound to another place in another chain."""
    try:
        record = decode(payload)
    except FormatError as exc:
        return f"malformed STATE payload ({exc})"
    if (record.chain_seq, record.chain_hash) != (seq - 1, chain_hash):
        return f"STATE frame at seq {seq} is bound to another chain position"
    return ""
