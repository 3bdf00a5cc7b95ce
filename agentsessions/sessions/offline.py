"""The engine's offline tools over a store: verify one session or all, export one to a file.

None of them writes a session or takes its lock: verify reads the bytes on disk (a file
store) or the records (any other store), export writes only its output file. The journal's
tools load when first used, so an engine that never verifies never imports them.
"""

from __future__ import annotations

import builtins
import contextlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentsessions.errors import InvalidArgumentError
from agentsessions.journal.stores.capabilities import (
    REINDEXABLE,
    SESSION_FILES,
    STORED_RECORDS,
    Reindexed,
)
from agentsessions.journal.stores.store import Store
from agentsessions.v1.ids import check_uid

if TYPE_CHECKING:
    from agentsessions.journal.tools.verify import Item
    from agentsessions.v1.results import VerifyReport


def verify(store: Store, uid: str, *, strict: bool = False, progress: Any = None) -> VerifyReport:
    """Walk ``uid``'s chain from ``prev_hash ""`` and check its metadata."""
    from agentsessions.journal.tools.verify import check_chain, verify_session, walk
    from agentsessions.v1.results import VerifyReport

    check_uid(uid)
    files = SESSION_FILES.of(store)
    if files is not None:  # a file store: the bytes on disk, offline
        return verify_session(files, uid, strict=strict, progress=progress)
    info = store.get(uid)  # any other store: its records, from genesis
    report = VerifyReport(source=f"session {uid}", uid=uid, strict=strict)
    report.expected_last_seq, report.expected_last_hash = info.last_seq, info.last_hash
    stored = STORED_RECORDS.of(store)  # a store that may hold sealed records
    items = stored.verify_items if stored is not None else None
    if items is not None:  # (JetStream): checked by their clear heads, decrypted with the key
        with _damage_fails(report):
            walk(_walked(items(uid, notes=report.notes)), report, strict=strict, progress=progress)
        _keyless_note(report)
    else:
        check_chain(store.read(uid), report, strict=strict, progress=progress)
    if report.ok and (report.last_seq, report.last_hash) != (info.last_seq, info.last_hash):
        report.fail(
            report.last_seq + 1,
            f"journal ends at seq {report.last_seq} but the session reports {info.last_seq}",
        )
    for name in store.components(uid):  # each tool store's chain, from genesis too
        part = VerifyReport(source=f"session {uid} tool store {name}", uid=uid, strict=strict)
        if items is not None:
            with _damage_fails(part):
                walk(_walked(items(uid, name, notes=part.notes)), part)
            report.add_component(name, _keyless_note(part))
        else:
            report.add_component(name, check_chain(store.component(uid, name).read(), part))
    return report


def _walked(records: Iterable[Any]) -> Iterator[Item]:
    """A store's ``verify_items`` as walk items: sealed records by their clear heads."""
    from agentsessions.journal.tools.verifysealed import Sealed

    for r in records:
        yield Sealed(r.seq, r.payload, r.check) if r.sealed else (r.seq, r.payload, r.content_hash)


@contextlib.contextmanager
def _damage_fails(report: VerifyReport) -> Iterator[None]:
    """A store's damage met while walking (a message that does not decode, a forged commit,
    a state blob whose tag fails) is the report's failure, as the walk's own findings are."""
    from agentsessions.errors import ChainBrokenError, JournalError

    try:
        yield
    except JournalError as exc:
        if report.ok:
            seq = int(exc.fields.get("seq") or report.last_seq + 1)
            report.fail(seq, str(exc), "chain" if isinstance(exc, ChainBrokenError) else "corrupt")


def _keyless_note(report: VerifyReport) -> VerifyReport:
    """The keyless walk's note as true of a store without frames (no checksums of ours)."""
    from agentsessions.journal.tools.verifysealed import KEYLESS_NOTE

    report.notes = [_STORE_KEYLESS_NOTE if n == KEYLESS_NOTE else n for n in report.notes]
    return report


_STORE_KEYLESS_NOTE = (
    "encrypted records: every stored message's structure and every chain link checked "
    "without the key; content hashes not recomputed"
)


def verify_file(
    path: Path, *, strict: bool = False, progress: Any = None, key_file: str | None = None
) -> VerifyReport:
    """Verify a session directory or an export file anywhere on disk (no home, no store);
    with a master key (``key_file``, else the environment's) encrypted records are opened."""
    from agentsessions.journal.crypto.cipher import resolve_master
    from agentsessions.journal.tools.verifyfile import verify_path

    master = resolve_master(key_file)
    return verify_path(Path(path), strict=strict, progress=progress, master=master)


def verify_all(
    store: Store, *, strict: bool = False, progress: Any = None
) -> builtins.list[tuple[str, VerifyReport]]:
    """Verify every session of ``store`` (deleted ones too; any store), one report each
    whatever fails: a session that cannot be read (the OS refuses, its metadata is
    damaged) is a failed report, never hiding the others."""
    from agentsessions.errors import JournalError, StorageError
    from agentsessions.journal.tools.verify import failed_by
    from agentsessions.v1.results import VerifyReport

    reports: builtins.list[tuple[str, VerifyReport]] = []
    for uid in store.uids():
        if progress is not None:
            progress.relabel(f"verifying {uid}")
        try:
            report = verify(store, uid, strict=strict, progress=progress)
        except (StorageError, JournalError) as exc:
            report = failed_by(VerifyReport(source=_source(store, uid), uid=uid), exc)
        reports.append((uid, report))
    return reports


def _source(store: Store, uid: str) -> str:
    """Where ``uid``'s records live, as a failed report names it."""
    files = SESSION_FILES.of(store)
    return str(files.sessions_dir / uid) if files is not None else f"session {uid}"


def reindex(store: Store) -> Reindexed:
    """Rebuild ``store``'s listing index; a store that keeps none is refused (exit 2: its
    list reads the sessions themselves, nothing to rebuild)."""
    hint = "its list reads the sessions themselves, nothing to rebuild: agentsessions list"
    return REINDEXABLE.need(store, "reindex", hint=hint).reindex()


def export(
    store: Store,
    uid: str,
    path: Path,
    *,
    compress: bool = True,
    progress: Any = None,
    overwrite: bool = False,
    encryption: str = "",
) -> dict[str, Any]:
    """Write ``uid`` to one self-verifying file; refuse an existing file unless
    ``overwrite`` (a device or pipe such as /dev/stdout is written in place).

    An encrypted session is exported only as chosen (``encryption``): ``"decrypt"``, a
    portable plaintext export (needs the master key), or ``"ciphertext"``, its sealed
    records and wrapped key (an import needs the same master key; ``verify FILE`` checks it
    without). With no choice it is refused (InvalidArgumentError naming both), so a
    plaintext copy is never written by accident; a plaintext session has no ciphertext."""
    from agentsessions.journal.tools.exchange import export_session, is_stream

    check_uid(uid)
    if encryption not in ("", "decrypt", "ciphertext"):
        raise InvalidArgumentError(f"invalid export encryption {encryption!r}")
    encrypted = store.get(uid).meta.encrypted
    if encrypted and not encryption:
        raise InvalidArgumentError(
            f"session {uid} is encrypted: choose its encryption, 'decrypt' (a plaintext "
            "export; needs the master key) or 'ciphertext' (sealed records and the wrapped key)",
            hint="an import of a ciphertext export needs the same master key",
            param="encryption",
            session=uid,
        )
    if encryption == "ciphertext" and not encrypted:
        raise InvalidArgumentError(
            f"session {uid} is not encrypted: it has no ciphertext to export",
            hint=f"agentsessions export {uid} -o FILE",
            session=uid,
        )
    path = Path(path)
    if path.exists() and not overwrite and not is_stream(path):
        raise InvalidArgumentError(
            f"{path} already exists", hint="overwrite=True replaces it", param="overwrite"
        )
    sealed = encryption == "ciphertext"
    return export_session(store, uid, path, compress=compress, progress=progress, ciphertext=sealed)


def replace_atomically(path: Path) -> AbstractContextManager[Callable[[bytes], None]]:
    """``with replace_atomically(path) as write: write(piece)...``: ``path`` replaced, once
    the block ends cleanly, by the pieces written, atomically and durably; untouched if it
    raises (a generated file such as ``view``'s page; StorageError on failure)."""
    from agentsessions.journal.format.durable import FileSystem

    return FileSystem().atomic_stream(path)
