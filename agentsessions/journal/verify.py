"""Offline verification of a journal: a session directory or an export file, copied anywhere.

A fast verify walks the records from ``prev_hash ""`` and checks, for each: the sequence
number follows the previous one, the payload's ``prev_hash`` is the previous content hash,
and the content hash is ``sha256`` of the stored bytes (the bytes hashed are the bytes
stored, so this runs at hashing speed). ``strict`` also re-canonicalises every envelope and
validates every event against the ``agentsessions.v1`` schema. Verification never writes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentsessions.errors import (
    AgentSessionsError,
    ChainBrokenError,
    FormatError,
    JournalCorruptError,
)
from agentsessions.journal import canonical, schema, segment
from agentsessions.journal.records import Record
from agentsessions.journal.segmentlog import SegmentLog

Progress = Callable[[int, int], None]
_PREFIX = b'{"event":'
_EXIT_BY_KIND = {
    "chain": ChainBrokenError.exit_code,
    "corrupt": JournalCorruptError.exit_code,
    "format": FormatError.exit_code,
}


@dataclass
class VerifyReport:
    """The outcome of verifying one journal; ``ok`` is False at the first bad record."""

    source: str
    uid: str = ""
    records: int = 0
    last_seq: int = 0
    last_hash: str = ""
    first_bad_seq: int | None = None
    reason: str = ""
    torn_tail: bool = False
    strict: bool = False
    expected_last_seq: int | None = None
    expected_last_hash: str | None = None
    notes: list[str] = field(default_factory=list)
    kind: str = ""  # "chain", "corrupt" or "format" once failed

    @property
    def exit_code(self) -> int:
        """The CLI exit status this outcome maps to (0 when ok)."""
        if self.ok:
            return 0
        return _EXIT_BY_KIND.get(self.kind, ChainBrokenError.exit_code)

    @property
    def ok(self) -> bool:
        return self.first_bad_seq is None and not self.reason

    def fail(self, seq: int, reason: str, kind: str = "chain") -> VerifyReport:
        """Record the first failure: its seq, why, and its class (chain, corrupt, format)."""
        self.first_bad_seq, self.reason, self.kind = seq, reason, kind
        return self

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "source": self.source,
            "uid": self.uid,
            "records": self.records,
            "last_seq": self.last_seq,
            "last_hash": self.last_hash,
            "first_bad_seq": self.first_bad_seq,
            "reason": self.reason,
            "torn_tail": self.torn_tail,
            "strict": self.strict,
            "notes": list(self.notes),
            "kind": self.kind,
        }


def check_chain(
    records: Iterable[Record],
    report: VerifyReport,
    *,
    strict: bool = False,
    progress: Progress | None = None,
    total: int = 0,
) -> VerifyReport:
    """Walk records claimed by a file from genesis; each claimed hash must be the real one."""
    items = ((r.seq, r.payload, r.content_hash) for r in records)
    return walk(items, report, strict=strict, progress=progress, total=total)


def walk(
    items: Iterable[tuple[int, bytes, str | None]],
    report: VerifyReport,
    *,
    strict: bool = False,
    progress: Progress | None = None,
    total: int = 0,
) -> VerifyReport:
    """The verify loop over ``(seq, payload, claimed hash or None)``; stops at the first failure.

    This is the hot path of ``verify``: one sha256 per record, the link checked by comparing
    the payload's fixed suffix with the one the previous hash implies, no JSON parsing
    unless ``strict``.
    """
    sha256, prev, expected = hashlib.sha256, b"", 1
    report.strict = strict
    try:
        for seq, payload, claimed in items:
            if seq != expected:
                return report.fail(seq, f"sequence gap: expected seq {expected}, found {seq}")
            suffix = b',"prev_hash":"%s","seq":"%d"}' % (prev, seq)
            if not (payload.startswith(_PREFIX) and payload.endswith(suffix)):
                return report.fail(seq, _link_reason(payload, prev.decode(), seq))
            digest = sha256(payload).hexdigest()
            if claimed is not None and claimed != digest:
                return report.fail(seq, f"content_hash mismatch at seq {seq}")
            if strict and (reason := _strict_reason(seq, payload)):
                return report.fail(seq, reason)
            prev, expected = digest.encode(), expected + 1
            if progress is not None and seq % 4096 == 0:
                progress(seq, total)
    finally:
        report.records = expected - 1
        report.last_seq, report.last_hash = expected - 1, prev.decode()
    if progress is not None:
        progress(report.records, total)
    return _check_declared(report)


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


def _strict_reason(seq: int, payload: bytes) -> str:
    try:
        envelope = canonical.loads(payload)
        schema.validate_event(envelope.get("event"))
        if canonical.canonical_json(envelope) != payload:
            return f"seq {seq} is not in canonical (RFC 8785) form"
    except AgentSessionsError as exc:
        return f"seq {seq} does not decode to a valid Event: {exc}"
    return ""


def verify_dir(
    sdir: Path, *, strict: bool = False, progress: Progress | None = None, total: int = 0
) -> VerifyReport:
    """Verify a session directory (``session.json`` + ``journal/``) without any store."""
    report = VerifyReport(source=str(sdir), uid=sdir.name)
    try:
        log, scan = SegmentLog.open(sdir / "journal", session_id=sdir.name, writable=False)
    except JournalCorruptError as exc:
        return report.fail(int(exc.fields.get("seq", 0)), str(exc), "corrupt")
    report.torn_tail = scan.torn_tail
    if scan.torn_tail:
        report.notes.append("torn tail after the last commit (not acknowledged; ignored)")
    try:
        return walk(
            _event_payloads(log.frames()), report, strict=strict, progress=progress, total=total
        )
    except JournalCorruptError as exc:
        seq = int(exc.fields.get("seq", report.last_seq + 1))
        return report.fail(seq, str(exc), "corrupt")
    finally:
        log.close()


def _event_payloads(frames: Iterator[segment.Frame]) -> Iterator[tuple[int, bytes, None]]:
    for frame in frames:
        if frame.rtype == segment.RTYPE_EVENT:
            yield frame.seq, frame.payload, None


def verify_file(
    path: Path, *, strict: bool = False, progress: Progress | None = None
) -> VerifyReport:
    """Verify an export file, LogRecord JSON lines, or a Go record array, offline."""
    from agentsessions.journal import exportfile

    try:
        parsed = exportfile.parse(exportfile.load(path), source=str(path))
    except FormatError as exc:
        return VerifyReport(source=str(path)).fail(0, str(exc), "format")
    return verify_parsed(parsed, str(path), strict=strict, progress=progress)


def verify_parsed(
    parsed: Any, source: str, *, strict: bool = False, progress: Progress | None = None
) -> VerifyReport:
    """Verify records read from a journal file, including the head its end marker declares."""
    report = VerifyReport(source=source)
    if parsed.meta is not None:
        report.uid = str(parsed.meta.get("uid", ""))
    if parsed.declared is not None:
        report.expected_last_seq = int(parsed.declared.get("last_seq", 0))
        report.expected_last_hash = str(parsed.declared.get("last_hash", ""))
    total = len(parsed.records)
    return check_chain(parsed.records, report, strict=strict, progress=progress, total=total)


def verify_path(
    path: Path, *, strict: bool = False, progress: Progress | None = None
) -> VerifyReport:
    """Verify a session directory or a journal file copied anywhere (no store needed)."""
    if path.is_dir():
        if not (path / "journal").is_dir():
            reason = f"{path} is not a session directory"
            return VerifyReport(source=str(path)).fail(0, reason, "format")
        return verify_dir(path, strict=strict, progress=progress)
    if not path.exists():
        return VerifyReport(source=str(path)).fail(0, f"{path} does not exist", "format")
    return verify_file(path, strict=strict, progress=progress)


def verify_session(
    store: Any, uid: str, *, strict: bool = False, progress: Progress | None = None
) -> VerifyReport:
    """Verify one session of a file store, also against the head its metadata reports."""
    info = store.get(uid)
    report = verify_dir(
        store.session_dir(uid), strict=strict, progress=progress, total=info.last_seq
    )
    if report.ok and report.last_seq != info.last_seq:
        report.fail(
            report.last_seq + 1,
            f"journal ends at seq {report.last_seq} but the session reports {info.last_seq}",
        )
    return report
