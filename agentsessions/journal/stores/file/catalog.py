"""The listing index of a file store: one SQLite row per session, keyset-paged.

The catalog is an index, not the truth: every session directory holds its own
``session.json``, and :meth:`Catalog.rebuild` recreates the rows from them. It exists so that
the first page of ``list`` over 100,000 sessions reads a B-tree, not 100,000 directories.
Rows change only on create and delete (rare), so it runs with ``synchronous=FULL``; appends
never touch it (projections live beside each journal).

Connections are opened with ``check_same_thread=False``: one engine (``agentsessions.open``)
serves every thread of its process, and it serialises its calls into the store's catalog.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path

from agentsessions.errors import StorageError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions(
    uid        TEXT PRIMARY KEY,
    project    TEXT NOT NULL,
    created_ns INTEGER NOT NULL,
    deleted    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS sessions_listing
    ON sessions(project, deleted, created_ns DESC, uid);
"""


_SETUP_TRIES = 300  # x 0.1 s: as long as the connection's own busy timeout


def _setup(db: sqlite3.Connection) -> None:
    """WAL, full sync, the schema. Switching a new file to WAL takes an exclusive lock that
    SQLite refuses at once ("database is locked", no busy wait) while another process opens
    the same new home; that process is done in moments, so the switch is retried."""
    for attempt in range(_SETUP_TRIES):
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.executescript(_SCHEMA)
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == _SETUP_TRIES - 1:
                raise
            time.sleep(0.1)


class Catalog:
    """SQLite index of sessions by project and creation time."""

    def __init__(self, path: Path, *, db: sqlite3.Connection | None = None) -> None:
        self.path = path
        if db is not None:  # opened by read_only() or in_memory()
            self._db = db
            return
        try:
            self._db = sqlite3.connect(
                path, timeout=30.0, isolation_level=None, check_same_thread=False
            )
            _setup(self._db)
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open the session catalog {path}: {exc}") from exc

    @classmethod
    def read_only(cls, path: Path) -> Catalog | None:
        """The catalog at ``path`` opened without writing anything beside it, or None when
        that cannot be done faithfully (no file; a write-ahead log we cannot read).

        For a home that cannot be written (a read-only mount). With no ``-wal`` file (SQLite
        removes it when the last writer closes) the main file holds every row and
        ``immutable=1`` reads it alone, taking no locks and creating no ``-shm``. With one,
        ``mode=ro`` reads through it (SQLite needs the ``-shm`` its writer keeps); if that
        fails too the caller rebuilds the rows from the session directories instead.
        """
        if not path.is_file():
            return None
        uri = path.absolute().as_uri()
        wal = path.with_name(path.name + "-wal")
        modes = ["mode=ro"] if wal.exists() else ["mode=ro&immutable=1"]
        for mode in modes:
            try:
                db = sqlite3.connect(
                    f"{uri}?{mode}", uri=True, isolation_level=None, check_same_thread=False
                )
            except sqlite3.Error:
                continue
            try:
                db.execute("SELECT count(*) FROM sessions").fetchone()
            except sqlite3.Error:
                db.close()
                continue
            return cls(path, db=db)
        return None

    @classmethod
    def in_memory(cls, path: Path) -> Catalog:
        """An empty catalog held in memory (``path`` only names it in messages): the index of
        a read-only home whose catalog file cannot be read, filled by a directory scan."""
        db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        db.executescript(_SCHEMA)
        return cls(path, db=db)

    def entry(self, uid: str) -> tuple[str, int] | None:
        """``(project, created_ns)`` of ``uid``'s row, or None without one."""
        try:
            row = self._db.execute(
                "SELECT project, created_ns FROM sessions WHERE uid=?", (uid,)
            ).fetchone()
        except sqlite3.Error as exc:
            raise StorageError(f"cannot read the session catalog {self.path}: {exc}") from exc
        return None if row is None else (str(row[0]), int(row[1]))

    def add(self, uid: str, project: str, created_ns: int, *, deleted: bool = False) -> None:
        """Insert (or refresh) one row; durable when this returns."""
        self._run(
            "INSERT INTO sessions(uid, project, created_ns, deleted) VALUES(?,?,?,?) "
            "ON CONFLICT(uid) DO UPDATE SET project=excluded.project, "
            "created_ns=excluded.created_ns, deleted=excluded.deleted",
            (uid, project, created_ns, int(deleted)),
        )

    def mark_deleted(self, uid: str) -> None:
        self._run("UPDATE sessions SET deleted=1 WHERE uid=?", (uid,))

    def page(self, project: str, limit: int, after: tuple[int, str] | None) -> list[str]:
        """Up to ``limit`` uids of live sessions, newest first, strictly after ``after``."""
        if after is None:
            sql = (
                "SELECT uid FROM sessions WHERE project=? AND deleted=0 "
                "ORDER BY created_ns DESC, uid ASC LIMIT ?"
            )
            args: tuple[object, ...] = (project, limit)
        else:
            ns, uid = after
            sql = (
                "SELECT uid FROM sessions WHERE project=? AND deleted=0 "
                "AND (created_ns < ? OR (created_ns = ? AND uid > ?)) "
                "ORDER BY created_ns DESC, uid ASC LIMIT ?"
            )
            args = (project, ns, ns, uid, limit)
        try:
            return [row[0] for row in self._db.execute(sql, args)]
        except sqlite3.Error as exc:
            raise StorageError(f"cannot read the session catalog {self.path}: {exc}") from exc

    def count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM sessions").fetchone()[0])

    def rebuild(self, rows: Iterable[tuple[str, str, int, bool]], stale: Iterable[str] = ()) -> int:
        """Upsert ``(uid, project, created_ns, deleted)`` rows and drop the ``stale`` uids, in
        one transaction. Rows it is not told about stay: a session created meanwhile keeps
        the row its creator adds."""
        items = [(u, p, n, int(d)) for u, p, n, d in rows]
        try:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany("DELETE FROM sessions WHERE uid=?", [(u,) for u in stale])
            self._db.executemany(
                "INSERT INTO sessions(uid, project, created_ns, deleted) VALUES(?,?,?,?) "
                "ON CONFLICT(uid) DO UPDATE SET project=excluded.project, "
                "created_ns=excluded.created_ns, deleted=excluded.deleted",
                items,
            )
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            self._db.execute("ROLLBACK")
            raise StorageError(f"cannot rebuild the session catalog {self.path}: {exc}") from exc
        return len(items)

    def uids(self) -> list[str]:
        """Every uid with a row (live or deleted)."""
        return [row[0] for row in self._db.execute("SELECT uid FROM sessions")]

    def close(self) -> None:
        self._db.close()

    def _run(self, sql: str, args: tuple[object, ...]) -> None:
        try:
            self._db.execute(sql, args)
        except sqlite3.Error as exc:
            raise StorageError(f"cannot write the session catalog {self.path}: {exc}") from exc
