"""Committed journal records and their wire form (``agentsessions.v1.LogRecord``).

A record's ``payload`` is the exact canonical envelope that was hashed,
``JCS({"event": ..., "prev_hash": ..., "seq": "N"})``, so ``content_hash == sha256(payload)``
and the stored bytes are the hashed bytes. The event is decoded lazily: most readers
(fast verify, export, follow) never need it.
"""

from __future__ import annotations

from hashlib import sha256
from typing import Any, NamedTuple

from agentsessions.errors import FormatError
from agentsessions.journal.format import canonical


class Record(NamedTuple):
    """One committed record: sequence number, chain link, hash, writer fence, payload.

    A NamedTuple: the append and read paths build one per event, and a tuple is several
    times cheaper to construct than a frozen dataclass.
    """

    seq: int
    prev_hash: str
    content_hash: str
    fence: int
    payload: bytes

    @classmethod
    def seal(cls, event_json: bytes, *, seq: int, prev_hash: str, fence: int) -> Record:
        """Build the record for a canonical event appended at ``seq`` after ``prev_hash``."""
        payload = canonical.envelope(event_json, prev_hash, seq)
        return cls(seq, prev_hash, sha256(payload).hexdigest(), fence, payload)

    @property
    def event(self) -> dict[str, Any]:
        """The ``agentsessions.v1.Event`` in proto3-JSON form (decoded on each access)."""
        decoder = canonical.EVENT_DECODER  # looked up each time: the pure build's is None
        if decoder is not None:  # the decoder's own call, no function of ours between
            try:  # its Envelope types the event as an object: a dict, or it raises
                decoded: dict[str, Any] = decoder.decode(self.payload).event
                return decoded
            except (ValueError, UnicodeError, RecursionError):
                pass  # loads_event names what is wrong
        event = canonical.loads_event(self.payload)
        if not isinstance(event, dict):
            raise FormatError("envelope event is not a JSON object")
        return event

    @property
    def event_json(self) -> bytes:
        """The canonical bytes of the event alone, sliced out of the payload."""
        return canonical.event_bytes(self.payload, self.prev_hash, self.seq)

    def to_wire(self) -> dict[str, Any]:
        """``agentsessions.v1.LogRecord`` in proto3-JSON (int64 as strings, defaults omitted)."""
        out: dict[str, Any] = {}
        if self.seq:
            out["seq"] = str(self.seq)
        if self.prev_hash:
            out["prev_hash"] = self.prev_hash
        if self.content_hash:
            out["content_hash"] = self.content_hash
        if self.fence:
            out["fence"] = str(self.fence)
        out["event"] = self.event
        return out

    def to_wire_json(self) -> bytes:
        """One LogRecord as compact JSON bytes; the event is spliced in without re-encoding."""
        head = [f'"seq":"{self.seq}"'] if self.seq else []
        if self.prev_hash:
            head.append(f'"prev_hash":"{self.prev_hash}"')
        if self.content_hash:
            head.append(f'"content_hash":"{self.content_hash}"')
        if self.fence:
            head.append(f'"fence":"{self.fence}"')
        return ("{" + ",".join(head) + ',"event":').encode() + self.event_json + b"}"
