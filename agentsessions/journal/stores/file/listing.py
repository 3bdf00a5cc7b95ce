"""Listing the sessions of a file store: the catalog index, its rebuild, and the scan of
session directories it is rebuilt from.

A mixin of :class:`~agentsessions.journal.stores.file.store.FileStore` (the job of finding
sessions, apart from reading and writing one). Invariants: the catalog
(``catalog.sqlite3``) is an index, never the truth: every row can be rebuilt from the
session directories (:meth:`SessionListing.reindex`), which drops rows whose directory is
gone and loses no row another process adds meanwhile; a session whose ``session.json`` is
damaged cannot get a row (its project is unknown) and is reported as ``unindexed``; a
read-only home gets an in-memory index scanned from its directories, nothing written.
"""

from __future__ import annotations

import builtins
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from agentsessions.errors import InvalidArgumentError, MetadataCorruptError
from agentsessions.journal.stores.capabilities import Reindexed
from agentsessions.journal.stores.file.catalog import Catalog
from agentsessions.journal.stores.file.rows import listed_row
from agentsessions.journal.stores.file.sessiondir import SessionDir
from agentsessions.journal.stores.paging import page_ask, page_of
from agentsessions.journal.stores.store import Page, SessionInfo
from agentsessions.v1.ids import check_uid


class SessionListing:
    """The listing side of a file store (mixed into FileStore)."""

    sessions_dir: Path
    catalog: Catalog
    read_only: bool
    _unindexed: tuple[MetadataCorruptError, ...]  # met by the last reindex

    if TYPE_CHECKING:  # FileStore's, which this is mixed into

        def check_writable(self, what: str) -> None: ...

        def get(self, uid: str) -> SessionInfo: ...

    def project_of(self, uid: str) -> str | None:
        """``uid``'s project from its catalog row (one indexed read; SQLite's serialized
        mode lets any thread make it), None without a row (:class:`~.store.ProjectIndex`)."""
        entry = self.catalog.entry(uid)
        return None if entry is None else entry[0]

    def list(self, project: str, page_size: int = 0, cursor: str = "") -> Page:
        ask = page_ask(project, page_size, cursor)
        uids = self.catalog.page(project, ask.limit, ask.after)
        infos = [self._listed(uid) for uid in uids[: ask.size]]
        # the damaged sessions the last rebuild met: the catalog has no row to list them by
        return page_of(infos, ask, more=len(uids) > ask.size, unindexed=self._unindexed)

    def uids(self) -> tuple[str, ...]:
        """Every session uid here, deleted ones included, sorted; strays are skipped."""
        found = []
        for sdir in self._session_dirs():
            with contextlib.suppress(InvalidArgumentError):
                found.append(check_uid(sdir.uid))
        return tuple(sorted(found))

    @property
    def unindexed(self) -> tuple[MetadataCorruptError, ...]:
        """The sessions the last rebuild (on open, or :meth:`reindex`) could not index."""
        return self._unindexed

    @property
    def index_path(self) -> str:
        """Where the listing catalog lives (``catalog.sqlite3``)."""
        return str(self.catalog.path)

    def reindex(self) -> Reindexed:
        """Rebuild the listing catalog from the session directories: the row count, and the
        sessions whose metadata is damaged (no row can hold them: their project is unknown).

        Every readable session directory gets its row back (a crash between creating a
        session and indexing it leaves it out of ``list``); rows whose directory is gone
        are dropped. Safe while other processes create sessions: no row they add is lost.
        """
        self.check_writable("rebuild the session catalog")
        rows, damaged = self._scan_rows()
        self._unindexed = tuple(damaged)
        seen = {row[0] for row in rows}
        stale = [
            uid
            for uid in self.catalog.uids()
            if uid not in seen and not (self.sessions_dir / uid).is_dir()
        ]
        # a damaged session keeps the row it has (its directory exists, whatever became of
        # its session.json), so list still shows it as damaged; one without a row cannot
        # get one (its project is unknown)
        return Reindexed(self.catalog.rebuild(rows, stale), self._unindexed)

    def _scan_rows(
        self,
    ) -> tuple[builtins.list[tuple[str, str, int, bool]], builtins.list[MetadataCorruptError]]:
        """Catalog rows of every session directory, and the errors of those whose metadata is
        damaged (they cannot have a row: the project and creation time are unknown)."""
        rows, damaged = [], []
        for sdir in self._session_dirs():
            try:
                meta = sdir.read_meta()
            except MetadataCorruptError as exc:
                damaged.append(exc)
                continue
            rows.append((meta.uid, meta.project, meta.create_time_ns, sdir.is_deleted()))
        return rows, damaged

    def _scanned(self, path: Path) -> Catalog:
        """An in-memory index built from the session directories (read-only homes only)."""
        catalog = Catalog.in_memory(path)
        rows, _damaged = self._scan_rows()
        catalog.rebuild(rows)
        return catalog

    def _session_dirs(self) -> Iterator[SessionDir]:
        if self.read_only and not self.sessions_dir.is_dir():
            return  # a read-only home that never held a session
        with os.scandir(self.sessions_dir) as entries:  # closed even when a caller stops early
            for entry in entries:
                if entry.is_dir() and not entry.name.startswith("."):
                    yield SessionDir(Path(entry.path))

    def _listed(self, uid: str) -> SessionInfo:
        """The row ``list`` shows (:func:`.rows.listed_row`)."""
        return listed_row(self.sessions_dir, self.catalog, uid, self.get)
