"""Offline verification of a journal: a session directory or an export file, copied anywhere.

A fast verify walks the records from ``prev_hash ""`` and checks, for each: the sequence
number follows the previous one, the payload's ``prev_hash`` is the previous content hash,
and the content hash is ``sha256`` of the stored bytes (the bytes hashed are the bytes
stored, so this runs at hashing speed). For a session directory it also checks the framing
of every segment as reading does (segment headers and their numbering, every frame's magic,
length, CRC, zero padding, reserved bits, sequence and group order, each SEAL's contents and
its link to the next header, the seek tables of compressed segments), and reports a torn tail
after the last commit. ``strict`` also decodes every envelope, validates its event against
the ``agentsessions.v1`` schema and checks that re-encoding it (RFC 8785) gives the stored
bytes. Verification never writes.

How a directory is verified fast: each segment is batch-checked on its own, from the chain
state its header names (:meth:`SegmentFiles.check_segment`: one tight loop per buffer, no
per-record objects), and the walk accepts each such run only where it continues the chain
(and each SEAL links to the next header). A segment the batch check does not accept is read
again frame by frame (:meth:`SegmentLog.segment_frames`) and walked record by record, so
every verdict (``ok``, ``first_bad_seq``, the reason) is the one the frame-by-frame path
gives. On Linux, a single-threaded caller with a large journal (at least two sealed segments
and 8 MiB of them) checks sealed segments in forked worker processes, one per spare CPU;
elsewhere, or when a worker fails, the same checks run serially (:mod:`.verifypool`).

This module holds the chain walk, directory and store-session verify; a journal file
(an export, JSON lines) is verified by :mod:`.verifyfile` with the same walk.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentsessions.errors import (
    AgentSessionsError,
    ChainBrokenError,
    FormatError,
    JournalCorruptError,
    JournalError,
    MetadataCorruptError,
    SessionKeyError,
    StorageError,
)
from agentsessions.journal.format import canonical, evidence, fencefile, sealedhead, segment
from agentsessions.journal.format.records import Record
from agentsessions.journal.format.segmentlog import OpenScan, Position, SegmentFrames, SegmentLog
from agentsessions.journal.format.segmentread import Link, PayloadCheck, SegmentCheck, SegmentFiles
from agentsessions.journal.stores import metafile
from agentsessions.journal.stores.file.sessiondir import SessionDir
from agentsessions.journal.tools.verifypool import Pool
from agentsessions.journal.tools.verifysealed import (
    KEYLESS_NOTE,
    Opener,
    Sealed,
    check_blobs,
    opener_for,
)
from agentsessions.v1 import schema

if TYPE_CHECKING:
    from agentsessions.journal.crypto.keys import MasterKey

Progress = Callable[[int, int], None]
_PREFIX = b'{"event":'
_EXIT_BY_KIND = {
    "chain": ChainBrokenError.exit_code,
    "corrupt": JournalCorruptError.exit_code,
    "format": FormatError.exit_code,
    "storage": StorageError.exit_code,
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
    torn_detail: str = field(default="", repr=False)  # where and why the torn tail starts
    components: list[tuple[str, VerifyReport]] = field(default_factory=list)  # tool stores

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
            "components": [{"component": n, **r.to_json()} for n, r in self.components],
        }

    def add_component(self, name: str, part: VerifyReport) -> None:
        """Keep the report of the session's component (tool) store ``name``; the first one
        that fails fails this report too (its reason names the store; the session's own
        chain fields stay as they were)."""
        self.components.append((name, part))
        if self.ok and not part.ok:
            where = f" at seq {part.first_bad_seq}" if part.first_bad_seq is not None else ""
            self.reason = f"tool store {name!r} does not verify{where}: {part.reason}"
            self.kind = part.kind or "chain"


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


def _strict_ok(payloads: Sequence[bytes | bytearray]) -> bool:
    """The strict checks of a batch-checked run (a failure is named by walking it again).

    The common case, a plain event in a three-key envelope, is checked inline with the same
    functions :func:`_reencoded` would call; anything else goes through it.
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


def verify_dir(
    sdir: Path,
    *,
    strict: bool = False,
    progress: Progress | None = None,
    total: int = 0,
    workers: int | None = None,
    master: MasterKey | None = None,
) -> VerifyReport:
    """Verify a session directory (``session.json`` + ``journal/``) without any store.

    ``master``: with the master key, an encrypted session's records are decrypted and their
    content hashes recomputed (record by record); without it, or after a shred, only the
    bytes' checksums and the chain links are checked, and a note says so.

    A forked child's prefix lives in its parent's directory (a sibling named by the
    child's ``parent_uid``); the walk goes through the parent's records up to the fork
    point and on into the child's own, so the child's chain is checked from genesis.
    ``workers``: processes for sealed segments (None: decide; 1: this process only).
    """
    report = VerifyReport(source=str(sdir), uid=sdir.name)
    logs: list[SegmentLog] = []
    try:
        fast = _Fast(strict, workers, master)
        items = _session_items(sdir, 0, logs, report, fast)
        walk(items, report, strict=strict, progress=progress, total=total)
        if report.ok:  # a key holder also opens the state, receipts and workloads
            check_blobs(sdir, sdir.name, master)
            _check_fence(sdir, report)
        return report
    except MetadataCorruptError as exc:
        return failed_by(report, exc)
    except JournalCorruptError as exc:
        seq = int(exc.fields.get("seq", report.last_seq + 1))
        return report.fail(seq, str(exc), "corrupt")
    finally:
        for log in logs:
            log.close()


def verify_component_dir(
    cdir: Path, session_id: str, *, strict: bool = False, master: MasterKey | None = None
) -> VerifyReport:
    """Verify a component (tool) store's directory (``LOCK``, ``TAIL``, ``journal/``, no
    ``session.json``): the same framing, chain and acknowledged-head checks as a session's
    journal, from ``prev_hash ""``; its segment headers name ``session_id``. ``master``: an
    encrypted tool store's records and states are opened with its key (scope ``uid/tool``)."""
    report = VerifyReport(source=str(cdir), uid=session_id, strict=strict)
    log: SegmentLog | None = None
    try:
        fast = _Fast(strict, 1)
        claims = SessionDir(cdir).hint_evidence() + _fence_evidence(cdir)
        log, scan, checks = fast.open(cdir, 0, claims, session_id)
        if scan.torn_tail:
            report.torn_tail = True
            report.notes.append("torn tail after the last commit (not acknowledged; ignored)")
        scope = f"{session_id}/{cdir.name}"
        opener = opener_for(cdir, master, report.notes, scope)
        walk(_log_items(log, checks, 0, opener), report, strict=strict)
        if report.ok:
            check_blobs(cdir, session_id, master, scope, host=False)
            _check_fence(cdir, report)
        return report
    except JournalCorruptError as exc:
        seq = int(exc.fields.get("seq", report.last_seq + 1))
        return report.fail(seq, str(exc), "corrupt")
    except (FormatError, StorageError) as exc:
        return failed_by(report, exc)
    finally:
        if log is not None:
            log.close()


def _fence_evidence(path: Path) -> tuple[evidence.Acked, ...]:
    """The FENCE head's claim (none when damaged: :func:`_check_fence` reports that)."""
    try:
        return SessionDir(path).fence_evidence()
    except (JournalCorruptError, StorageError):
        return ()


def _check_fence(path: Path, report: VerifyReport) -> None:
    """Fail ``report`` when the directory's FENCE has no valid slot (every writer open
    refuses such a file, exit 8); a missing FENCE is fence 0, one torn slot a torn mint."""
    try:
        fencefile.read(SessionDir(path).fence_file)
    except (JournalCorruptError, StorageError) as exc:
        failed_by(report, exc)


def _session_items(
    sdir: Path, upto: int, logs: list[SegmentLog], report: VerifyReport, fast: _Fast,
    acked: tuple[evidence.Acked, ...] = (),
) -> Iterator[Item]:  # fmt: skip
    """The chain of ``sdir`` through seq ``upto`` (0 = all): parent prefix, then its own.

    The journal is checked against the evidence of its acknowledged head in ``sdir`` (the
    TAIL hint) and ``acked`` (a forked child's fork point, when ``sdir`` is its parent)."""
    found = metafile.read(sdir)  # damaged: MetadataCorruptError, the start is unknown
    meta = found.meta
    if not found.summed:  # 0.1.0's file: shape and bytes checked; a writer open adds sums
        report.notes.append(f"{sdir.name}: session.json has no field checksums yet")
    parent_uid, fork_seq = meta.parent_uid, meta.fork_seq
    if parent_uid:
        SessionDir(sdir).check_parent(meta)  # as writers and readers refuse it (exit 8)
    if parent_uid and fork_seq:  # a fork of an empty session has no prefix (upto 0 = all)
        parent = sdir.parent / parent_uid
        base = _base_claim(sdir, fork_seq)
        yield from _session_items(parent, fork_seq, logs, report, fast, base)
    claims = SessionDir(sdir).hint_evidence() + _fence_evidence(sdir) + acked
    log, scan, checks = fast.open(sdir, upto, claims)
    logs.append(log)
    if scan.torn_tail and not upto:
        report.torn_tail = True
        report.notes.append("torn tail after the last commit (not acknowledged; ignored)")
        at, why = log.position, scan.recovery.reason if scan.recovery else ""
        report.torn_detail = f"segment {at.segment:016x}, group at offset {at.offset}: {why}"
    yield from _log_items(log, checks, upto, opener_for(sdir, fast.master, report.notes))


def _base_claim(sdir: Path, fork_seq: int) -> tuple[evidence.Acked, ...]:
    """A forked child's claim on its parent: seq ``fork_seq`` has the hash its first
    segment header names (none when that header cannot be read: the child's open says so)."""
    journal = SessionDir(sdir).journal
    try:
        files = SegmentFiles.at(journal, session_id=sdir.name)
        base_hash = files.header_of(files.segments[0]).prev_hash
    except (AgentSessionsError, OSError, IndexError):
        return ()
    return (evidence.fork_point(sdir.name, fork_seq, base_hash),)


def failed_by(report: VerifyReport, exc: AgentSessionsError) -> VerifyReport:
    """``report`` failed by an error that names no record (damaged metadata, an unreadable
    file): its message is the reason, and the error's class decides the exit code."""
    report.first_bad_seq, report.reason = None, str(exc)
    if isinstance(exc, ChainBrokenError):
        report.kind = "chain"
    elif isinstance(exc, JournalError):
        report.kind = "corrupt"
    elif isinstance(exc, StorageError):
        report.kind = "storage"
    else:
        report.kind = "format"
    return report


def _log_items(
    log: SegmentLog, check_of: CheckOf, upto: int, opener: Opener | None = None
) -> Iterator[Item]:
    """The records of ``log`` through seq ``upto`` (0: all): a :class:`Verified` run for each
    segment whose batch check passed and links on, the records read strictly for the others
    (every segment, when a key holder's ``opener`` decrypts sealed records)."""
    firsts = log.segments
    link: Link | None = None
    for no, first in enumerate(firsts):
        sealed = no + 1 < len(firsts)
        if upto and not (sealed and firsts[no + 1] - 1 <= upto):  # it holds seq upto + 1
            yield from _strict_items(log.segment_frames(first, no, link), upto, opener)
            return
        c = check_of(first, no)
        if opener is not None and c.sealed:
            link = yield from _strict_items(log.segment_frames(first, no, link), 0, opener)
        elif (
            c.ok and (c.link is not None or not sealed) and link in (None, (first - 1, c.prev_hash))
        ):
            replay = functools.partial(_replay, log, first, no, link)
            yield Verified(first, c.prev_hash, c.events, c.last_hash, replay, c.sealed)
            link = c.link
        else:
            link = yield from _strict_items(log.segment_frames(first, no, link), 0)
        if link is None:
            return


def _replay(log: SegmentLog, first: int, no: int, link: Link | None) -> Iterator[Item]:
    yield from _strict_items(log.segment_frames(first, no, link), 0)


def _strict_items(
    frames: SegmentFrames, upto: int, opener: Opener | None = None
) -> Generator[Item, None, Link | None]:
    """The EVENT records of one segment read strictly, through seq ``upto`` (0: all); returns
    its SEAL link (None for an open tail, or when it stopped at ``upto``)."""
    while True:
        try:
            frame = next(frames)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        if frame.rtype == segment.RTYPE_EVENT:
            if upto and frame.seq > upto:
                return None
            if frame.flags & segment.FLAG_ENCRYPTED:
                yield Sealed(frame.seq, frame.payload, opener)
            else:
                yield frame.seq, frame.payload, None


CheckOf = Callable[[int, int], SegmentCheck]
"""The batch check of the ``no``-th segment, ``first`` (made earlier or on demand)."""


class _Fast:
    """How :func:`verify_dir` opens each journal: batch checks first (module docstring)."""

    def __init__(self, strict: bool, workers: int | None, master: MasterKey | None = None) -> None:
        self.check: PayloadCheck | None = _strict_ok if strict else None
        self.workers = workers
        self.master = master

    def open(
        self, sdir: Path, upto: int, acked: Sequence[evidence.Acked] = (), session_id: str = ""
    ) -> tuple[SegmentLog, OpenScan, CheckOf]:
        """Open ``sdir``'s journal read-only, from a resume hint at the end of its tail when
        the batch check found that tail clean; sealed segments are checked in parallel or on
        demand (those through seq ``upto`` only, when given). The open refuses a journal
        that ends before, or differs at, a seq the ``acked`` evidence names. ``session_id``:
        the uid the segment headers name ("": the directory's name; a component store's
        directory is named after its component)."""
        journal = SessionDir(sdir).journal
        session_id = session_id or sdir.name
        files = SegmentFiles.at(journal, session_id=session_id)
        firsts = files.segments
        jobs = [
            (no, f) for no, f in enumerate(firsts[:-1]) if not upto or firsts[no + 1] <= upto + 1
        ]
        if firsts and not upto:  # the tail too, last: whoever is free takes it
            jobs.append((len(firsts) - 1, firsts[-1]))
        pool = Pool.start(files, jobs, self.check, self.workers) if firsts else None
        # with upto, the tail is read strictly (it holds seq upto + 1): its check only makes
        # the resume hint, so it skips the strict payload checks
        check = self.check if not upto else None
        pooled_tail = pool is not None and not upto
        try:
            done: dict[int, SegmentCheck] = (
                pool.results() if pool is not None and pooled_tail else {}
            )
            tail = done.get(firsts[-1]) if pooled_tail else None
            if not pooled_tail and firsts:
                tail = files.check_segment(firsts[-1], len(firsts) - 1, check)
            log, scan = SegmentLog.open(
                journal, session_id=session_id, writable=False, resume=_hint(tail), acked=acked
            )
            try:
                if pool is not None and not pooled_tail:
                    done = pool.results()
            except BaseException:
                log.close()
                raise
        finally:
            if pool is not None:
                pool.stop()
        at = log.position
        ends_there = tail is not None and (tail.first, tail.end) == (at.segment, at.offset)
        if tail is not None and ends_there and check is self.check:
            done[tail.first] = tail  # the log ends where the batch check of its tail did

        def check_of(first: int, no: int) -> SegmentCheck:
            if first in done or first == at.segment:
                return done.get(first, SegmentCheck(first, False))
            return log.check_segment(first, no, self.check)

        return log, scan, check_of


def _hint(tail: SegmentCheck | None) -> Position | None:
    """A resume hint at the end of a batch-checked clean tail, so opening skips its scan."""
    if tail is None or not tail.ok or tail.last_frame < 0:
        return None
    return Position(tail.first, tail.end, tail.next_seq - 1, tail.last_hash, tail.last_frame)


def verify_session(
    store: Any, uid: str, *, strict: bool = False, progress: Progress | None = None
) -> VerifyReport:
    """Verify one session of a file store, also against the head its metadata reports, and
    each of its component (tool) stores (:meth:`VerifyReport.add_component`).

    Damaged data (metadata, a tail, a journal that ends before its acknowledged head) is a
    failed report naming the damage, not an exception, so that ``verify --all`` goes on to
    the next session; an unknown uid still raises NotFoundError.
    """
    report = _session_report(store, uid, strict, progress)
    try:
        parts = store.components(uid) if hasattr(store, "components") else ()
    except AgentSessionsError:
        parts = ()  # the session's own report names what is damaged
    master = getattr(store, "master", None)
    for name in parts:
        path = store.component(uid, name).path
        report.add_component(name, verify_component_dir(path, uid, strict=strict, master=master))
    return report


def _session_report(store: Any, uid: str, strict: bool, progress: Progress | None) -> VerifyReport:
    master = getattr(store, "master", None)  # a file store's: encrypted records decrypted
    try:
        info = store.get(uid)
    except SessionKeyError:  # an encrypted session without its key: the keyless walk
        return verify_dir(store.session_dir(uid), strict=strict, progress=progress, master=master)
    except JournalError as exc:
        report = verify_dir(store.session_dir(uid), strict=strict, progress=progress)
        if not report.ok:
            return report
        if "seq" in exc.fields:  # the store saw what the offline walk did not: its verdict stands
            seq = int(exc.fields["seq"])
            report.fail(seq, str(exc), "chain" if isinstance(exc, ChainBrokenError) else "corrupt")
            return report
        return failed_by(report, exc)
    report = verify_dir(
        store.session_dir(uid), strict=strict, progress=progress, total=info.last_seq,
        master=master,
    )  # fmt: skip
    if report.ok and report.torn_tail and report.last_seq < info.last_seq:
        # what looked like a torn write holds records the store acknowledged: damage
        report.torn_tail, report.notes = False, [n for n in report.notes if "torn" not in n]
        report.fail(
            report.last_seq + 1,
            f"seqs {report.last_seq + 1}..{info.last_seq}, which the session acknowledged, "
            f"are damaged ({report.torn_detail})",
            "corrupt",
        )
    elif report.ok and report.last_seq != info.last_seq:
        report.fail(
            report.last_seq + 1,
            f"journal ends at seq {report.last_seq} but the session reports {info.last_seq}",
        )
    return report
