"""Export a session to one portable file, and import journals from files.

An import verifies every record's hash and link *before* it creates anything, so a
truncated or tampered file leaves the store unchanged; the new session then gets the same
seqs, hashes and fences as the source.
"""

from __future__ import annotations

import contextlib
import stat
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from agentsessions.errors import (
    AgentSessionsError,
    ChainBrokenError,
    FormatError,
    StorageError,
)
from agentsessions.journal.format import zstdcodec
from agentsessions.journal.format.durable import DEFAULT_FS, FileSystem
from agentsessions.journal.stores.capabilities import SEALED_EXPORT
from agentsessions.journal.stores.store import (
    DEFAULT_PROJECT,
    SessionInfo,
    SessionMeta,
    Store,
    new_uid,
)
from agentsessions.journal.tools import exportfile
from agentsessions.journal.tools.verify import Progress
from agentsessions.journal.tools.verifyfile import sealed_cipher, verify_file
from agentsessions.v1.ids import check_project


def export_session(
    store: Store,
    uid: str,
    out: Path,
    *,
    compress: bool = True,
    progress: Progress | None = None,
    fs: FileSystem = DEFAULT_FS,
    ciphertext: bool = False,
) -> dict[str, Any]:
    """Write session ``uid`` to ``out`` (zstd unless ``compress`` is False); returns a summary.

    Streams: records are read, written, compressed and written out a chunk at a time, so a
    session of any length costs bounded memory. A regular file is replaced atomically and
    durably through ``fs``; a device or pipe (``/dev/stdout``) is written in place.
    ``ciphertext``: an encrypted session's sealed records and wrapped ``KEY`` as stored
    (no master key needed; see :mod:`.exportfile`), instead of its decrypted records."""
    info: SessionInfo = store.get(uid)
    head = (info.last_seq, info.last_hash)
    sealed: dict[str, Any] | None = None
    if ciphertext:  # a store capability: the file and JetStream stores declare it
        exporter = SEALED_EXPORT.need(
            store,
            "a ciphertext export",
            hint="a decrypted export (encryption='decrypt') is plaintext",
            param="encryption_decrypt",
            session=uid,
        )
        sealed, records = exporter.sealed_export(uid)
    else:
        records = store.read(uid, 1, info.last_seq) if info.last_seq else iter(())
    meta = info.meta.to_json()
    if is_stream(out):
        count, size = _write_through(out, meta, records, head, compress, sealed)
    else:
        # durable like every file the journal writes: tmp, fsync, replace, directory fsync,
        # so an acknowledged export survives a power loss and a crash never leaves half a file
        with fs.atomic_stream(out) as emit:
            count, size = _export(emit, meta, records, head, compress, sealed)
    if progress is not None:
        progress(count, count)
    return {
        "uid": uid,
        "records": count,
        "last_seq": info.last_seq,
        "last_hash": info.last_hash,
        "path": str(out),
        "compressed": compress,
        "bytes": size,
        **({"ciphertext": True} if ciphertext else {}),
    }


EXPORT_CHUNK = 1 << 20
"""Bytes of export text gathered before they are compressed and written (few syscalls)."""


class _Sink:
    """What :func:`exportfile.write` writes into: gathers lines into chunks, compresses
    each (when asked) and hands the result to ``emit``; counts the bytes emitted."""

    def __init__(self, emit: Callable[[bytes], Any], compress: bool) -> None:
        self._emit = emit
        self._buf = bytearray()
        self._comp = zstdcodec.Compressor() if compress else None
        self.size = 0

    def write(self, data: bytes) -> None:
        self._buf += data
        if len(self._buf) >= EXPORT_CHUNK:
            self._drain()

    def _drain(self) -> None:
        chunk = bytes(self._buf)
        self._buf.clear()
        self._out(chunk if self._comp is None else self._comp.compress(chunk))

    def _out(self, data: bytes) -> None:
        if data:
            self._emit(data)
            self.size += len(data)

    def finish(self) -> None:
        self._drain()
        if self._comp is not None:
            self._out(self._comp.flush())

    def abort(self) -> None:
        if self._comp is not None:
            self._comp.abort()


def _export(
    emit: Callable[[bytes], Any],
    meta: dict[str, Any],
    records: Iterable[Any],
    head: tuple[int, str],
    compress: bool,
    sealed: dict[str, Any] | None = None,
) -> tuple[int, int]:
    """Stream the export to ``emit``; returns ``(records, bytes written)``."""
    sink = _Sink(emit, compress)
    try:
        count = exportfile.write(sink, meta, records, head, sealed)
        sink.finish()
    except BaseException:
        sink.abort()
        raise
    return count, sink.size


def is_stream(path: Path) -> bool:
    """True if ``path`` names a device, pipe or socket (``/dev/stdout``, a FIFO): written in
    place, never renamed over, since a rename would replace the device node itself."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _write_through(
    out: Path,
    meta: dict[str, Any],
    records: Iterable[Any],
    head: tuple[int, str],
    compress: bool,
    sealed: dict[str, Any] | None,
) -> tuple[int, int]:
    try:
        with out.open("wb") as stream:
            return _export(stream.write, meta, records, head, compress, sealed)
    except OSError as exc:
        raise StorageError(f"cannot write {out}: {exc.strerror}", path=str(out)) from exc


def import_file(
    store: Store,
    path: Path,
    *,
    project: str | None = None,
    name: str | None = None,
    progress: Progress | None = None,
    adjust: Callable[[SessionMeta], SessionMeta] | None = None,
) -> SessionInfo:
    """Create a new session from a journal file, keeping its seqs, hashes and fences.

    ``adjust``: the engine's say on the new session's metadata (what of the exporting
    store's it keeps), called once the file has verified and before anything is created;
    it may refuse the import by raising.

    Two passes in bounded memory: the first verifies every record (nothing is created if
    one fails), the second reads the file again and appends; the writer re-checks each
    record's link, so a file changed in between cannot slip anything in. A sealed export
    (``export --ciphertext``) needs the master key that wrapped its key (the store's,
    ``store.master``): its records are decrypted, checked, and sealed again under the new
    session's own key when the store encrypts (MasterKeyError, exit 26, without it).
    """
    if project is not None:
        check_project(project)
    master: Any = store.master  # checked below: a sealed import needs it
    report = verify_file(path, max_record_bytes=store.max_commit_bytes, master=master)
    if report.kind == "format":
        raise FormatError(report.reason)
    if not report.ok:
        raise ChainBrokenError(
            f"{path}: refused to import: {report.reason}", seq=report.first_bad_seq
        )
    opened = exportfile.stream(path)
    _check_sealed_importable(path, opened, master)  # its header is read: no extra pass
    meta = _meta_for(opened, project, name)
    if adjust is not None:
        meta = adjust(meta)
    records: Iterable[Any] = opened.records
    if opened.sealed is not None:
        cipher = sealed_cipher(opened.sealed, master, path)
        records = (cipher.open_payload(r.payload, seq=r.seq, fence=r.fence) for r in records)
    store.create(meta)
    try:
        with store.writer(meta.uid) as writer:
            done = 0
            for batch in exportfile.iter_batches(records, store.max_commit_bytes):
                writer.append_records(batch)
                done += len(batch)
                if progress is not None:
                    progress(done, report.records)
    except AgentSessionsError:
        with contextlib.suppress(AgentSessionsError):
            store.delete(meta.uid)
        raise
    result: SessionInfo = store.get(meta.uid)
    return result


def _check_sealed_importable(path: Path, opened: exportfile.Stream, master: Any) -> None:
    """A sealed export is refused before anything is created (exit 26) when the store has
    no master key. Checked on the stream the import reads anyway: a pass of its own read a
    whole first line (a 22 MiB LogRecord line, say) once more, past the memory bound."""
    if master is None and opened.sealed is not None:
        from agentsessions.errors import MasterKeyError

        raise MasterKeyError(
            f"{path} is a ciphertext export: importing it needs the master key that "
            "wrapped its key",
            hint="give it: key_file, AGENTSESSIONS_KEY_FILE or AGENTSESSIONS_MASTER_KEY",
            param="key_file",
        )


def _meta_for(
    parsed: exportfile.Parsed | exportfile.Stream, project: str | None, name: str | None
) -> SessionMeta:
    base = SessionMeta(uid=new_uid())
    if parsed.meta is not None:  # checked as verify checks it (exportfile.check_header)
        base = SessionMeta.from_json({**parsed.meta, "uid": base.uid})
    annotations = dict(base.annotations)
    annotations.setdefault("agentsessions.io/imported-from", parsed.format)
    return replace(
        base,
        project=project or base.project or DEFAULT_PROJECT,
        name=name if name is not None else base.name,
        annotations=annotations,
        create_time_ns=time.time_ns(),
        parent_uid="",
        fork_seq=0,
    )
