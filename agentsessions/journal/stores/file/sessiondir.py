"""The layout of one session directory: the names of its files and how each one is read.

A session directory (``docs/FORMAT.md``) holds::

    session.json  immutable metadata, written before any event
    LOCK          flock of the single writer, with the holder's identity
    FENCE         the current fence, minted in place by every writer open
    TAIL          hint: the tail position and state, so opens read only the tail, and
                  what the last writable open verified about the sealed segments
    DELETED       marker of a soft delete; present = no more writes
    BASE          a forked child's start: the parent's tail state at the fork point
    journal/      segment files (see :mod:`agentsessions.journal.format.segmentlog`)

:class:`SessionDir` is the one place those names are spelled: the file store (which owns
many such directories) and ``verify`` (which reads one anywhere on disk) both go through it.

Invariants: the TAIL hint is never trusted, only validated against the segment it names,
so it is replaced without fsync; nothing here creates the directory itself (the store
builds it aside and renames it into place).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from agentsessions.errors import AcknowledgedDataMissingError, StorageError
from agentsessions.journal.format import evidence, fencefile
from agentsessions.journal.format.durable import FileSystem

# the log end alone, not the segment codec or readers: a listing opens no journal
from agentsessions.journal.format.logend import (
    FRAME_HEADER_SIZE,
    HEADER_SIZE,
    SEGMENT_NAME,
    CheckedLinks,
    Position,
    segment_name,
)
from agentsessions.journal.stores import metafile
from agentsessions.journal.stores.store import SessionMeta
from agentsessions.journal.stores.tail import Tail
from agentsessions.valueclass import value

META_NAME = metafile.META_NAME
LOCK_NAME = "LOCK"
FENCE_NAME = "FENCE"
TAIL_NAME = "TAIL"
DELETED_NAME = "DELETED"
BASE_NAME = "BASE"
CANCEL_NAME = "CANCEL"
JOURNAL_NAME = "journal"


class _ParsedHints:
    """The TAIL hints parsed lately, by file identity, so a read of a session whose hint
    has not been replaced since parses nothing.

    A hint holds up to 1,024 remembered commit ids (~100 KB of JSON): every ``get`` and
    ``read`` parsed it again, up to twenty times in one turn of an adapter, so a turn cost
    more as the window filled. The key is the open file's inode, mtime and size (a hint is
    replaced by a rename, never edited); should an inode number be reused within one clock
    tick at the same size, the hint served is an older one, which is still only a hint,
    validated against the segment it names like any other. The parsed objects are never
    changed by their readers (Tail.from_json copies what it keeps, but the commit id rows,
    which it only reads)."""

    SIZE = 256

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._parsed: OrderedDict[Path, tuple[tuple[int, int, int], Any]] = OrderedDict()

    def parsed(self, path: Path, st: os.stat_result, f: Any) -> Any:
        key = (st.st_ino, st.st_mtime_ns, st.st_size)
        with self._lock:
            hit = self._parsed.get(path)
            if hit is not None and hit[0] == key:
                self._parsed.move_to_end(path)
                return hit[1]
        obj = json.loads(f.read())
        check_hint_sum(obj)
        with self._lock:
            self._parsed[path] = (key, obj)
            self._parsed.move_to_end(path)
            while len(self._parsed) > self.SIZE:
                self._parsed.popitem(last=False)
        return obj


_HINTS = _ParsedHints()


@value(frozen=True)
class SessionDir:
    """The files of the session directory at ``path`` (its name is the session's uid)."""

    path: Path

    @property
    def uid(self) -> str:
        """The session's uid: the directory's name."""
        return self.path.name

    @property
    def meta_file(self) -> Path:
        """``session.json``."""
        return self.path / META_NAME

    @property
    def lock_file(self) -> Path:
        """``LOCK``: the single writer's flock."""
        return self.path / LOCK_NAME

    @property
    def fence_file(self) -> Path:
        """``FENCE``: the current writer fence."""
        return self.path / FENCE_NAME

    @property
    def tail_file(self) -> Path:
        """``TAIL``: the resume hint."""
        return self.path / TAIL_NAME

    @property
    def deleted_file(self) -> Path:
        """``DELETED``: the soft-delete marker."""
        return self.path / DELETED_NAME

    @property
    def base_file(self) -> Path:
        """``BASE``: a forked child's starting tail state."""
        return self.path / BASE_NAME

    @property
    def cancel_file(self) -> Path:
        """``CANCEL``: a pending cancel request (JSON naming the execution id to stop)."""
        return self.path / CANCEL_NAME

    def cancel_requested(self) -> str | None:
        """The execution id the pending cancel request names, or None (see
        :func:`cancel_request_at`)."""
        return cancel_request_at(os.fspath(self.cancel_file))

    @property
    def journal(self) -> Path:
        """``journal/``: the segment files."""
        return self.path / JOURNAL_NAME

    def is_session(self) -> bool:
        """True when the directory holds a journal (what makes a path a session directory)."""
        return self.journal.is_dir()

    def has_meta(self) -> bool:
        """True when ``session.json`` is a file (whether or not it is readable)."""
        return self.meta_file.is_file()

    def is_deleted(self) -> bool:
        """True when the session was soft-deleted (no more writes)."""
        return self.deleted_file.exists()

    def read_meta(self) -> SessionMeta:
        """The checked metadata; MetadataCorruptError (exit 8) names the file if not."""
        return metafile.read_meta(self.path)

    def check_parent(self, meta: SessionMeta) -> None:
        """Refuse a forked child whose parent's directory is not beside it: the parent holds
        the child's seqs 1..fork_seq, and a store never removes a session directory (delete
        leaves a tombstone), so their loss is damaged store data (exit 8), for writers,
        readers and ``verify`` alike. Writing on would extend a chain whose start is gone."""
        if not meta.parent_uid or SessionDir(self.path.parent / meta.parent_uid).is_session():
            return
        raise AcknowledgedDataMissingError(
            f"the prefix of {self.uid} (seq 1..{meta.fork_seq}) lives in parent session "
            f"{meta.parent_uid}, which is not beside it: those acknowledged seqs are missing",
            hint=f"restore {meta.parent_uid} beside it (export the child elsewhere to verify "
            "it alone); nothing was written",
            session=self.uid,
            path=str(self.path.parent / meta.parent_uid),
            seq=1,
            acked_seq=meta.fork_seq,
            evidence=f"{META_NAME} parent_uid",
        )

    def read_base(self) -> Tail:
        """Where a forked child's own journal starts (the parent's tail at the fork point);
        the empty state when there is no BASE (not a fork)."""
        try:
            return Tail.from_json(json.loads(self.base_file.read_bytes()))
        except FileNotFoundError:
            return Tail()
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise metafile.damaged(
                self.path, self.base_file, f"(the fork base) is unreadable: {exc}"
            ) from exc

    def read_hint(self) -> tuple[Position | None, Tail | None]:
        """The TAIL hint, or (None, None) if it is missing or unreadable (it is only a hint).

        Its ``sealed`` record (absent in older hints, ignored when malformed) becomes the
        position's ``links``, dated by the file's mtime (see :class:`CheckedLinks`)."""
        try:
            with open(self.tail_file, "rb") as f:
                st = os.fstat(f.fileno())
                written_ns = st.st_mtime_ns
                obj = _HINTS.parsed(self.tail_file, st, f)
            p = obj["position"]
            position = Position(
                int(p["segment"]),
                int(p["offset"]),
                int(p["last_seq"]),
                str(p["last_hash"]),
                int(p["last_frame"]),
                CheckedLinks.from_json(obj["sealed"], written_ns) if "sealed" in obj else None,
            )
            return position, Tail.from_json(obj["tail"])
        except (OSError, ValueError, KeyError, TypeError):
            return None, None

    def hint_evidence(self) -> tuple[evidence.Acked, ...]:
        """What the TAIL hint's position alone proves was acknowledged (none if unreadable);
        unlike :meth:`read_hint`, a hint whose tail state is damaged still counts."""
        return evidence.read_hint(self.tail_file)

    def read_fence(self) -> fencefile.Fence | None:
        """The FENCE's fence and head (None without a FENCE); a damaged FENCE raises
        JournalCorruptError (exit 8), as every writer open refuses it."""
        return fencefile.read_fence(self.fence_file)

    def fence_evidence(self) -> tuple[evidence.Acked, ...]:
        """What the FENCE's head proves was acknowledged (none without a FENCE, or in an
        older one); a damaged FENCE raises JournalCorruptError."""
        found = self.read_fence()
        return () if found is None else found.evidence()

    def write_hint(self, fs: FileSystem, position: Position, tail: Tail) -> None:
        """Replace the TAIL hint atomically; no fsync, since a hint is validated before use."""
        body: dict[str, Any] = {"position": position_json(position), "tail": tail.to_json()}
        if position.links is not None:
            body["sealed"] = position.links.to_json()
        body[HINT_SUM] = hint_sum(body)
        path = self.tail_file
        tmp = path.with_name(path.name + ".tmp")
        try:
            tmp.write_bytes(json_bytes(body))
        except OSError as exc:
            raise StorageError(f"cannot write {tmp}: {exc.strerror}") from exc
        fs.replace(tmp, path)

    def free_from(self, first: int, offset: int) -> bool:
        """True when segment ``first`` ends at ``offset`` or holds free space (zeros) there:
        one small read, so a listing learns that no group was written after a hint."""
        try:
            fd = os.open(self.journal / segment_name(first), os.O_RDONLY)
        except OSError:
            return False
        try:
            size = os.fstat(fd).st_size
            peek = os.pread(fd, FRAME_HEADER_SIZE, offset)
        except OSError:
            return False
        finally:
            os.close(fd)
        return offset <= size and peek == bytes(len(peek))

    def newest_mtime_ns(self) -> int:
        """The newest mtime of the journal's open (``.seg``) segments, 0 with none."""
        # default: a journal whose tail is gone has only .seg.zst files (verify names the damage)
        mtimes = (e.stat().st_mtime_ns for e in os.scandir(self.journal) if e.name.endswith(".seg"))
        return max(mtimes, default=0)

    def trusted_tail(self, names: dict[str, os.DirEntry[str]]) -> tuple[Tail, int] | None:
        """The journal's tail state and newest ``.seg`` mtime without opening the journal, or
        None unless the hint (or, with none, a header-only journal) provably describes it.

        ``names``: the session directory's entries."""
        forms: dict[int, str] = {}
        stats: dict[int, os.stat_result] = {}
        newest = -1
        with os.scandir(self.journal) as entries:
            for entry in entries:
                if entry.name.endswith(".seg"):
                    newest = max(newest, entry.stat().st_mtime_ns)  # as newest_mtime_ns
                m = SEGMENT_NAME.fullmatch(entry.name)
                if m:
                    first = int(m.group(1), 16)
                    forms[first] = forms.get(first, "") + ("zst" if m.group(2) else "seg")
                    if not m.group(2):
                        stats[first] = entry.stat()
        if not forms or forms[max(forms)] != "seg":
            return None  # no segment, or a compressed tail: get() knows what to do
        first = max(forms)
        tail_st = stats[first]
        position, hinted = self.read_hint() if TAIL_NAME in names else (None, None)
        if position is None or hinted is None:
            if len(forms) == 1 and tail_st.st_size == HEADER_SIZE:
                base = self.read_base() if BASE_NAME in names else Tail()
                return base, newest  # not one frame yet: the base state
            return None
        if position.segment != first or not self.free_from(first, position.offset):
            return None
        if tail_st.st_mtime_ns > names[TAIL_NAME].stat().st_mtime_ns:
            return None
        return hinted, newest


def proved_head(hint: Position | None, fence: fencefile.Fence | None) -> fencefile.Head:
    """The head a writer records in the FENCE it mints, once its open checked the evidence:
    the highest of the TAIL hint's position and the FENCE's own head, both acknowledged
    (each was written after its commit's sync returned) and both just checked against the
    journal. Never the scanned end: it may hold a group whose sync a killed writer never
    saw return, still only in the page cache, which a power loss would take."""
    old = fence.head if fence is not None and fence.head is not None else None
    if hint is not None and (old is None or hint.last_seq >= old.last_seq):
        return fencefile.Head(hint.last_seq, hint.last_hash, hint.segment, hint.last_frame)
    return old or fencefile.Head(0, "")


def acked(hint: Position | None) -> tuple[evidence.Acked, ...]:
    """What a TAIL hint proves: its seq was acknowledged with its hash (a lower bound)."""
    if hint is None:
        return ()
    return evidence.of_hint(hint.segment, hint.last_seq, hint.last_hash, hint.last_frame)


def position_json(p: Position) -> dict[str, Any]:
    """A segment-log position as the TAIL hint stores it."""
    return {
        "segment": p.segment,
        "offset": p.offset,
        "last_seq": p.last_seq,
        "last_hash": p.last_hash,
        "last_frame": p.last_frame,
    }


HINT_SUM = "sum"
"""The TAIL hint's checksum field: the first 16 hex digits of the SHA-256 of the rest."""


def hint_sum(body: dict[str, Any]) -> str:
    """The checksum of a TAIL hint's fields (every one but :data:`HINT_SUM`)."""
    rest = {k: v for k, v in body.items() if k != HINT_SUM}
    return hashlib.sha256(json_bytes(rest)).hexdigest()[:16]


def check_hint_sum(obj: Any) -> None:
    """ValueError unless the hint's checksum matches (a hint from before checksums has
    none and is taken as it is). The position is checked against the segment anyway, but
    the tail state it carries (the working state's place, the projection, the commit
    ids) is used as it is: a damaged one would be served silently."""
    if isinstance(obj, dict) and HINT_SUM in obj and obj[HINT_SUM] != hint_sum(obj):
        raise ValueError("the TAIL hint's checksum does not match: damaged")


def json_bytes(obj: Any) -> bytes:
    """``obj`` as the compact, key-sorted JSON the store's small files hold."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def cancel_request_at(path: str) -> str | None:
    """The execution id the cancel request at ``path`` names, or None. Cheap on purpose (one
    failed ``stat`` when there is none, on a path built once): a live turn asks before every
    effect. A torn or unreadable request counts as none."""
    if not os.access(path, os.F_OK):  # the common case, without an OSError built and caught
        return None
    try:
        if not os.stat(path).st_size:
            return None
        with open(path, "rb") as f:
            obj = json.loads(f.read())
    except (OSError, ValueError):
        return None
    execution_id = obj.get("execution_id") if isinstance(obj, dict) else None
    return execution_id if isinstance(execution_id, str) and execution_id else None


def cancel_reason_at(path: str) -> str:
    """The ``reason`` the cancel request at ``path`` gives, or "" (none, torn, not said)."""
    try:
        with open(path, "rb") as f:
            obj = json.loads(f.read())
    except (OSError, ValueError):
        return ""
    reason = obj.get("reason") if isinstance(obj, dict) else None
    return reason if isinstance(reason, str) else ""
