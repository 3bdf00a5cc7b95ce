"""Export a session to one portable file, and import journals from files.

An import verifies every record's hash and link *before* it creates anything, so a
truncated or tampered file leaves the store unchanged; the new session then gets the same
seqs, hashes and fences as the source.
"""

from __future__ import annotations

import contextlib
import io
import stat
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from agentsessions.errors import AgentSessionsError, ChainBrokenError, FormatError, StorageError
from agentsessions.journal import exportfile, zstdcodec
from agentsessions.journal.durable import DEFAULT_FS, FileSystem
from agentsessions.journal.store import (
    DEFAULT_PROJECT,
    SessionInfo,
    SessionMeta,
    check_project,
    new_uid,
)
from agentsessions.journal.verify import Progress, verify_file


def export_session(
    store: Any,
    uid: str,
    out: Path,
    *,
    compress: bool = True,
    progress: Progress | None = None,
    fs: FileSystem = DEFAULT_FS,
) -> dict[str, Any]:
    """Write session ``uid`` to ``out`` (zstd unless ``compress`` is False); returns a summary.

    A regular file is replaced atomically and durably through ``fs``; a device or pipe
    (``/dev/stdout``) is written in place."""
    info: SessionInfo = store.get(uid)
    head = (info.last_seq, info.last_hash)
    buf = io.BytesIO()
    records = store.read(uid, 1, info.last_seq) if info.last_seq else iter(())
    count = exportfile.write(buf, info.meta.to_json(), records, head)
    data = buf.getvalue()
    if compress:
        data = zstdcodec.compress(data)
    if is_stream(out):
        _write_through(out, data)
    else:
        # durable like every file the journal writes: tmp, fsync, replace, directory fsync,
        # so an acknowledged export survives a power loss and a crash never leaves half a file
        fs.write_file_atomic(out, data)
    if progress is not None:
        progress(count, count)
    return {
        "uid": uid,
        "records": count,
        "last_seq": info.last_seq,
        "last_hash": info.last_hash,
        "path": str(out),
        "compressed": compress,
        "bytes": len(data),
    }


def is_stream(path: Path) -> bool:
    """True if ``path`` names a device, pipe or socket (``/dev/stdout``, a FIFO): written in
    place, never renamed over, since a rename would replace the device node itself."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _write_through(out: Path, data: bytes) -> None:
    try:
        with out.open("wb") as stream:
            stream.write(data)
    except OSError as exc:
        raise StorageError(f"cannot write {out}: {exc.strerror}", path=str(out)) from exc


def import_file(
    store: Any,
    path: Path,
    *,
    project: str | None = None,
    name: str | None = None,
    progress: Progress | None = None,
) -> SessionInfo:
    """Create a new session from a journal file, keeping its seqs, hashes and fences.

    Two passes in bounded memory: the first verifies every record (nothing is created if
    one fails), the second reads the file again and appends; the writer re-checks each
    record's link, so a file changed in between cannot slip anything in.
    """
    if project is not None:
        check_project(project)
    report = verify_file(path, max_record_bytes=store.max_commit_bytes)
    if report.kind == "format":
        raise FormatError(report.reason)
    if not report.ok:
        raise ChainBrokenError(
            f"{path}: refused to import: {report.reason}", seq=report.first_bad_seq
        )
    opened = exportfile.stream(path)
    meta = _meta_for(opened, project, name)
    store.create(meta)
    try:
        with store.writer(meta.uid) as writer:
            done = 0
            for batch in exportfile.iter_batches(opened.records, store.max_commit_bytes):
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


def _meta_for(
    parsed: exportfile.Parsed | exportfile.Stream, project: str | None, name: str | None
) -> SessionMeta:
    base = SessionMeta(uid=new_uid())
    if parsed.meta is not None:
        with contextlib.suppress(KeyError, TypeError, ValueError):
            base = replace(SessionMeta.from_json(parsed.meta), uid=base.uid)
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
