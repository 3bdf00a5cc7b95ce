"""What a file store says about a session: its row (``SessionInfo``) from its tail and
directory, the cheap row a listing shows from the TAIL hint, and the row of a session that
cannot be read (a listing says why instead of failing or leaving it out).

The store's ``get``, ``list`` and every writer's ``info`` build their rows here, so the
three say the same about a session.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agentsessions.errors import (
    AgentSessionsError,
    JournalError,
    MetadataCorruptError,
    NotFoundError,
    SessionKeyError,
)
from agentsessions.journal.format import fencefile
from agentsessions.journal.stores.file.sessiondir import DELETED_NAME, FENCE_NAME, SessionDir
from agentsessions.journal.stores.store import SessionInfo, SessionMeta
from agentsessions.journal.stores.tail import Tail
from agentsessions.v1.ids import check_uid

if TYPE_CHECKING:
    from agentsessions.journal.stores.file.catalog import Catalog


def session_row(
    sdir: SessionDir,
    meta: SessionMeta,
    tail: Tail,
    newest_ns: int | None = None,
    names: frozenset[str] | None = None,
) -> SessionInfo:
    """The session's row; ``newest_ns`` and ``names`` (the session directory's entries)
    save the listing from looking again."""
    update_ns = meta.create_time_ns
    if tail.last_seq:
        with contextlib.suppress(OSError):
            if newest_ns is None:
                newest_ns = sdir.newest_mtime_ns()
            update_ns = max(update_ns, newest_ns)

    def has(name: str) -> bool:
        return names is None or name in names

    return SessionInfo(
        meta=meta,
        last_seq=tail.last_seq,
        last_hash=tail.last_hash,
        compute_state=tail.projection.compute_state,
        exec_state=tail.projection.exec_state,
        update_time_ns=update_ns,
        fence=max(fencefile.read(sdir.fence_file) if has(FENCE_NAME) else 0, tail.max_fence),
        deleted=has(DELETED_NAME) and sdir.is_deleted(),
        exec_seq=tail.projection.exec_seq,
        exec_id=tail.projection.exec_id,
        snapshot=tail.projection.snapshot,
        state_version=tail.state.version,
        state_covers=(tail.state.covers_from, tail.state.covers_to),
        state_size=tail.state_size,
    )


def listed_row(
    sessions_dir: Path, catalog: Catalog, uid: str, get: Callable[[str], SessionInfo]
) -> SessionInfo:
    """The row ``list`` shows: what ``get`` (the store's) says, from the TAIL hint alone when
    the journal provably has not changed since the hint was written (else from ``get``).

    ``get`` opens the journal and checks the hint's last frame (CRC, hash) before it
    uses it. A listing skips that when the hint names the tail segment, the tail holds
    nothing but free space (zeros) or its end at the hint's offset, and was not modified
    after the hint was written (mtime): every commit writes a frame at the commit end
    and every rotation makes a new tail, so no acknowledged commit can be missing from
    the row. What the listing does not catch,
    damage that changes neither size nor mtime, is ``verify``'s and ``open``'s to find;
    a listing never feeds a writer, which always opens with full validation.
    """
    try:
        sdir = SessionDir(sessions_dir / check_uid(uid))
        with os.scandir(sdir.path) as it:  # one listing instead of probing each small file
            names = {entry.name: entry for entry in it}
        meta = sdir.read_meta()
        found = sdir.trusted_tail(names)
    except (OSError, AgentSessionsError, ValueError):
        found = None
    if found is None:
        try:
            return get(uid)
        except (JournalError, SessionKeyError) as exc:  # a row saying why, not a crash
            return damaged_row(sessions_dir, catalog, uid, exc)
        except NotFoundError as exc:  # the catalog's row outlived a directory removed by hand
            return damaged_row(sessions_dir, catalog, uid, exc)
    tail, newest_ns = found
    try:
        return session_row(sdir, meta, tail, newest_ns, frozenset(names))
    except JournalError as exc:  # a damaged FENCE: the row says so, as get's error does
        return damaged_row(sessions_dir, catalog, uid, exc)


def damaged_row(
    sessions_dir: Path, catalog: Catalog, uid: str, exc: AgentSessionsError
) -> SessionInfo:
    """The listing row of a session that cannot be read: its uid, what the catalog
    knows (project, creation time: the cursor needs it) and why, instead of no row."""
    created_ns = (catalog.entry(uid) or ("", 0))[1]
    # damaged metadata: its project is unknown (the index's copy is no proof), so ""
    # (no project-scoped token sees the row); the creation time keeps the cursor working
    meta = SessionMeta(uid=uid, project="", create_time_ns=created_ns)
    if not isinstance(exc, MetadataCorruptError):  # the journal is damaged, not this
        with contextlib.suppress(MetadataCorruptError):
            meta = SessionDir(sessions_dir / uid).read_meta()
    deleted = SessionDir(sessions_dir / uid).is_deleted()
    why = str(exc.fields.get("problem") or exc)  # "session.json is not valid JSON (...)"
    if isinstance(exc, NotFoundError):
        why = "the session directory is gone ('agentsessions reindex' drops this row)"
    return SessionInfo(meta=meta, update_time_ns=created_ns, deleted=deleted, damaged=why)
