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

This module holds directory and store-session verify; the chain walk itself is
:mod:`.verifywalk` (re-exported here), and a journal file (an export, JSON lines) is
verified by :mod:`.verifyfile` with the same walk.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Generator, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

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
from agentsessions.journal.format import evidence, fencefile, segment
from agentsessions.journal.format.segmentlog import OpenScan, Position, SegmentLog
from agentsessions.journal.format.segmentlogread import SegmentFrames
from agentsessions.journal.format.segmentread import Link, SegmentCheck, SegmentFiles
from agentsessions.journal.format.segmentscan import PayloadCheck
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
from agentsessions.journal.tools.verifywalk import (
    Item,
    Progress,
    Verified,
    check_chain,
    strict_ok,
    walk,
)
from agentsessions.v1.results import VerifyReport

if TYPE_CHECKING:
    from agentsessions.journal.crypto.keys import MasterKey
    from agentsessions.journal.stores.capabilities import SessionFiles


__all__ = [  # the walk's names too: callers import them from here
    "KEYLESS_NOTE", "Item", "Progress", "VerifyReport", "check_chain", "failed_by",
    "verify_component_dir", "verify_dir", "verify_session", "walk",
]  # fmt: skip


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
        self.check: PayloadCheck | None = strict_ok if strict else None
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
    store: SessionFiles, uid: str, *, strict: bool = False, progress: Progress | None = None
) -> VerifyReport:
    """Verify one session of a file store, also against the head its metadata reports, and
    each of its component (tool) stores (:meth:`VerifyReport.add_component`).

    Damaged data (metadata, a tail, a journal that ends before its acknowledged head) is a
    failed report naming the damage, not an exception, so that ``verify --all`` goes on to
    the next session; an unknown uid still raises NotFoundError.
    """
    report = _session_report(store, uid, strict, progress)
    try:
        parts = store.components(uid)
    except AgentSessionsError:
        parts = ()  # the session's own report names what is damaged
    for name in parts:
        path = store.component_dir(uid, name)
        found = verify_component_dir(path, uid, strict=strict, master=store.master)
        report.add_component(name, found)
    return report


def _session_report(
    store: SessionFiles, uid: str, strict: bool, progress: Progress | None
) -> VerifyReport:
    master = store.master  # encrypted records decrypted with it
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
