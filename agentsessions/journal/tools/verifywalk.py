"""The chain walk of ``verify``: what any journal's records must satisfy, whoever read them.

From ``prev_hash ""``, each record's sequence number follows the previous one, its
payload's ``prev_hash`` is the previous content hash, and its content hash is ``sha256`` of
the stored bytes; ``strict`` also decodes every envelope, validates its event against the
``agentsessions.v1`` schema and checks that re-encoding it (RFC 8785) gives the stored bytes.
Items come as single records, runs a batch check already accepted (:class:`Verified`), or
sealed records (:class:`~.verifysealed.Sealed`). A session directory's items are made by
:mod:`.verify`, an export file's by :mod:`.verifyfile`, a store's records by the engine.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from agentsessions.errors import (
    AgentSessionsError,
    ChainBrokenError,
    FormatError,
    JournalError,
)
from agentsessions.journal.format import canonical, sealedhead
from agentsessions.journal.format.records import Record
from agentsessions.journal.tools.verifysealed import KEYLESS_NOTE, Sealed
from agentsessions.v1 import schema
from agentsessions.v1.results import VerifyReport

Progress = Callable[[int, int], None]
_PREFIX = b'{"event":'


def check_chain(
    records: Iterable[Record],
    report: VerifyReport,
    *,
    strict: bool = False,
    progress: Progress | None = None,
    total: int = 0,
) -> VerifyReport:
    """Walk records claimed by a file from genesis; each claimed hash must be the real one."""
    return walk(_items(records), report, strict=strict, progress=progress, total=total)


def _items(records: Iterable[Record]) -> Iterator[Item]:
    """``records`` as walk items, holding none of them while the next one is read (a record
    may be megabytes: at most one is alive at a time)."""
    for record in records:
        item = (record.seq, record.payload, record.content_hash)
        del record
        yield item
        del item


@dataclass(frozen=True)
class Verified:
    """A run of ``count`` records from seq ``first`` checked in bulk (one batch-checked
    segment): they continue ``prev`` and end at ``last_hash``. ``replay`` yields the same
    records one by one, for when the run does not continue the walk."""

    first: int
    prev: str
    count: int
    last_hash: str
    replay: Callable[[], Iterator[Item]]
    sealed: int = 0  # encrypted records among them (checked without the key)


Item = tuple[int, bytes | bytearray, str | None] | Verified | Sealed
"""What :func:`walk` consumes: ``(seq, payload, claimed hash or None)``, a Verified run, or a
Sealed record."""


def walk(
    items: Iterable[Item],
    report: VerifyReport,
    *,
    strict: bool = False,
    progress: Progress | None = None,
    total: int = 0,
) -> VerifyReport:
    """The verify loop over ``(seq, payload, claimed hash or None)``; stops at the first failure.

    This is the hot path of ``verify``: one sha256 per record, the link checked by comparing
    the payload's fixed suffix with the one the previous hash implies, no JSON parsing
    unless ``strict``. :class:`Verified` runs are taken whole when they continue the chain.
    """
    chain = _Walk(report, strict, progress, total)
    report.strict = strict
    try:
        if not chain.feed(items):
            return report
    finally:
        report.records = chain.expected - 1
        report.last_seq, report.last_hash = chain.expected - 1, chain.prev.decode()
    if progress is not None:
        progress(report.records, total)
    return _check_declared(report)


class _Walk:
    """The state of :func:`walk`: the next seq and the last content hash (hex bytes)."""

    def __init__(
        self, report: VerifyReport, strict: bool, progress: Progress | None, total: int
    ) -> None:
        self.report, self.strict, self.progress, self.total = report, strict, progress, total
        self.expected, self.prev = 1, b""
        self.keyless = False

    def feed(self, items: Iterable[Item]) -> bool:
        """Walk ``items`` on from the current state; False once the report holds a failure."""
        sha256, prev, expected = hashlib.sha256, self.prev, self.expected
        report, strict, progress, total = self.report, self.strict, self.progress, self.total
        try:
            for item in items:
                if isinstance(item, Sealed):
                    self.prev, self.expected = prev, expected
                    if not self.sealed(item):
                        return False
                    prev, expected = self.prev, self.expected
                    continue
                if isinstance(item, Verified):
                    self.prev, self.expected = prev, expected
                    try:
                        if not self.run(item):
                            return False
                    finally:
                        prev, expected = self.prev, self.expected
                    continue
                seq, payload, claimed = item
                if seq != expected:
                    report.fail(seq, f"sequence gap: expected seq {expected}, found {seq}")
                    return False
                suffix = b',"prev_hash":"%s","seq":"%d"}' % (prev, seq)
                if not (payload.startswith(_PREFIX) and payload.endswith(suffix)):
                    report.fail(seq, _link_reason(bytes(payload), prev.decode(), seq))
                    return False
                digest = sha256(payload).hexdigest()
                if claimed is not None and claimed != digest:
                    report.fail(seq, f"content_hash mismatch at seq {seq}")
                    return False
                if strict and (reason := _strict_reason(seq, payload)):
                    report.fail(seq, reason)
                    return False
                prev, expected = digest.encode(), expected + 1
                if progress is not None and seq % 4096 == 0:
                    progress(seq, total)
                del item, payload  # not held while the next item is read
        finally:
            self.prev, self.expected = prev, expected
        return True

    def sealed(self, item: Sealed) -> bool:
        """Check a sealed record's link from its clear head, and with the key its hash."""
        report, seq = self.report, item.seq
        if seq != self.expected:
            report.fail(seq, f"sequence gap: expected seq {self.expected}, found {seq}")
            return False
        chain = sealedhead.chain_of(item.payload)
        if chain is None:
            report.fail(seq, f"seq {seq} is not a sealed record", "corrupt")
            return False
        if chain[0].encode() != self.prev:
            report.fail(seq, f"prev_hash mismatch at seq {seq}")
            return False
        if item.opener is not None:
            try:
                digest = item.opener(seq, item.payload)
            except JournalError as exc:
                kind = "chain" if isinstance(exc, ChainBrokenError) else "corrupt"
                report.fail(seq, str(exc), kind)
                return False
            if digest != chain[1]:
                report.fail(seq, f"content_hash mismatch at seq {seq}")
                return False
        elif not self.keyless:
            self.keyless = True
            report.notes.append(KEYLESS_NOTE)
        self.prev, self.expected = chain[1].encode(), seq + 1
        return True

    def run(self, run: Verified) -> bool:
        """Take a bulk-checked run if it continues the chain, else walk its records."""
        if (run.first, run.prev.encode()) != (self.expected, self.prev):
            return self.feed(run.replay())
        self.expected, self.prev = run.first + run.count, run.last_hash.encode()
        if run.sealed and not self.keyless:
            self.keyless = True
            self.report.notes.append(KEYLESS_NOTE)
        if self.progress is not None:
            self.progress(self.expected - 1, self.total)
        return True


def _check_declared(report: VerifyReport) -> VerifyReport:
    if report.expected_last_seq is not None and report.last_seq != report.expected_last_seq:
        return report.fail(
            report.last_seq + 1,
            f"journal ends at seq {report.last_seq} but its metadata reports "
            f"{report.expected_last_seq}",
        )
    if report.expected_last_hash is not None and report.last_hash != report.expected_last_hash:
        return report.fail(
            report.last_seq,
            f"content_hash mismatch at seq {report.last_seq}: the journal declares its last "
            f"hash as {report.expected_last_hash}",
        )
    return report


def _link_reason(payload: bytes, prev: str, seq: int) -> str:
    """Why a payload does not continue the chain (the slow, precise diagnosis)."""
    try:
        _body, link, at = canonical.split_envelope(payload)
    except FormatError as exc:
        return f"payload is not a canonical envelope: {exc}"
    if at != seq:
        return f"payload names seq {at}, stored at seq {seq}"
    if link != prev:
        return f"prev_hash mismatch at seq {seq}"
    return f"payload of seq {seq} is not a canonical envelope"


def _strict_reason(seq: int, payload: bytes | bytearray) -> str:
    try:
        if _reencoded(canonical.loads(payload)) != payload:
            return f"seq {seq} is not in canonical (RFC 8785) form"
    except AgentSessionsError as exc:
        return f"seq {seq} does not decode to a valid Event: {exc}"
    return ""


def _reencoded(envelope: Any) -> bytes:
    """The RFC 8785 bytes of a decoded envelope whose event passes the schema (or raise)."""
    plain = schema.validate_event(envelope.get("event"))
    # A plain event in an envelope of just event/prev_hash/seq (strings, as the chain
    # check proved) is plain as a whole: its sorted-key JSON already is its JCS form.
    if plain and len(envelope) == 3:
        return canonical.canonical_plain(envelope)
    return canonical.canonical_json(envelope)


def strict_ok(payloads: Sequence[bytes | bytearray]) -> bool:
    """The strict checks of a batch-checked run (a failure is named by walking it again).

    The common case, a plain event in a three-key envelope, is checked inline with the same
    functions `_reencoded` would call; anything else goes through it.
    """
    loads, plain_event, encode = canonical.loads, schema.plain_event, canonical.canonical_plain
    try:
        for payload in payloads:
            envelope = loads(payload)
            common = type(envelope) is dict and len(envelope) == 3
            if common and plain_event(envelope.get("event")) and encode(envelope) == payload:
                continue
            if _reencoded(envelope) != payload:
                return False
    except AgentSessionsError:
        return False
    return True
