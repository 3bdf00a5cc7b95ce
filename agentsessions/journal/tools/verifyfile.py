"""Verifying a journal file (an export, LogRecord JSON lines, a Go record array), and
:func:`verify_path`, which verifies whatever a path names: a file here, a session
directory with :func:`~agentsessions.journal.tools.verify.verify_dir`.

A file is read in one pass in bounded memory and its records walked by the same chain check
(:func:`~agentsessions.journal.tools.verify.check_chain`) as a directory's; what a file adds
is the head its header or end marker declares, which the walk must reach.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentsessions.errors import CommitTooLargeError, FormatError
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.file.sessiondir import SessionDir
from agentsessions.journal.tools.verify import Progress, check_chain, verify_dir, walk
from agentsessions.journal.tools.verifysealed import Sealed
from agentsessions.v1.results import VerifyReport

if TYPE_CHECKING:
    from agentsessions.journal.crypto.cipher import SessionCipher
    from agentsessions.journal.crypto.keys import MasterKey


def verify_file(
    path: Path,
    *,
    strict: bool = False,
    progress: Progress | None = None,
    max_record_bytes: int = 0,
    master: MasterKey | None = None,
) -> VerifyReport:
    """Verify an export file, LogRecord JSON lines, or a Go record array, offline.

    A sealed export (``export --ciphertext``) is checked through its records' clear heads
    without the key; with ``master`` each record is also decrypted and its hash recomputed.

    One pass in bounded memory (:func:`exportfile.stream`): the file is never held whole.
    ``max_record_bytes`` (import: the store's commit limit) raises CommitTooLargeError for
    a record no commit of that store can hold, so an import refuses it before it creates
    anything.
    """
    from agentsessions.journal.tools import exportfile

    report = VerifyReport(source=str(path))
    try:
        opened = exportfile.stream(path)
        _declare(report, opened)
        total = report.expected_last_seq or 0  # known up front for our export only
        records = opened.records
        if max_record_bytes:
            records = _within(records, max_record_bytes, path)
        if opened.sealed is not None:
            cipher = sealed_cipher(opened.sealed, master, path) if master is not None else None
            items = (Sealed(r.seq, r.payload, _opener(cipher)) for r in records)
            return walk(items, report, strict=strict, progress=progress, total=total)
        return check_chain(records, report, strict=strict, progress=progress, total=total)
    except FormatError as exc:
        return report.fail(0, str(exc), "format")


def sealed_cipher(sealed: dict[str, Any], master: MasterKey, path: Path) -> SessionCipher:
    """The cipher of a sealed export's records: its ``key`` unwrapped by ``master`` for its
    ``scope`` (MasterKeyError, exit 26, for another master key)."""
    import json

    from agentsessions.journal.crypto.cipher import SessionCipher
    from agentsessions.journal.crypto.keys import unwrap

    scope = str(sealed["scope"])
    content = json.dumps(sealed["key"]).encode()
    return SessionCipher(unwrap(content, master, scope, where=f"{path} (its key)"), scope)


def _opener(cipher: SessionCipher | None) -> Any:
    if cipher is None:
        return None
    return lambda seq, payload: cipher.open_payload(payload, seq=seq).content_hash


def _within(records: Iterable[Record], limit: int, path: Path) -> Iterator[Record]:
    for record in records:
        if len(record.payload) > limit:
            raise CommitTooLargeError(
                f"{path}: record seq {record.seq} is {len(record.payload)} bytes, over the "
                f"limit of {limit} bytes of one commit; nothing was imported",
                hint="a store with a larger commit limit wrote it; it cannot be imported here",
                seq=record.seq,
                limit=limit,
            )
        yield record


def _declare(report: VerifyReport, parsed: Any) -> None:
    """Take the uid and the head a file's header declares into ``report``."""
    if parsed.meta is not None:
        report.uid = str(parsed.meta.get("uid", ""))
    if parsed.declared is not None:
        report.expected_last_seq = int(parsed.declared.get("last_seq", 0))
        report.expected_last_hash = str(parsed.declared.get("last_hash", ""))


def verify_path(
    path: Path,
    *,
    strict: bool = False,
    progress: Progress | None = None,
    master: MasterKey | None = None,
) -> VerifyReport:
    """Verify a session directory or a journal file copied anywhere (no store needed);
    ``master`` opens encrypted records (a sealed export's, an encrypted session's)."""
    if path.is_dir():
        if not SessionDir(path).is_session():
            reason = f"{path} is not a session directory"
            return VerifyReport(source=str(path)).fail(0, reason, "format")
        return verify_dir(path, strict=strict, progress=progress, master=master)
    if not path.exists():
        return VerifyReport(source=str(path)).fail(0, f"{path} does not exist", "format")
    return verify_file(path, strict=strict, progress=progress, master=master)
