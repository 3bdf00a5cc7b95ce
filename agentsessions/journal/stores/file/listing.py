"""Listing the sessions of a file store: the catalog index, its rebuild, and the scan of
session directories it is rebuilt from.

A mixin of :class:`~agentsessions.journal.stores.file.store.FileStore` (the job of finding
sessions, apart from reading and writing one). Invariants: the catalog
(``catalog.sqlite3``) is an index, never the truth: every row can be rebuilt from the
session directories (:meth:`SessionListing.reindex`), which drops rows whose directory is
gone and loses no row another process adds meanwhile; a session whose ``session.json`` is
damaged cannot get a row (its project is unknown) and is reported as ``unindexed``; a
read-only home gets an in-memory index scanned from its directories, nothing written.

A catalog that exists is opened on its first use (:attr:`SessionListing.catalog`), not
when the store opens: a turn, a ``get`` or a ``log`` of a session never asks it, and the
connection with its set-up cost a one-turn ``exec`` ~2 ms of CPU, mostly importing
``sqlite3`` (~0.13x of ``python -c pass``). One that does not exist is made when the store
opens, and rebuilt from the session directories beside it, as before; a read-only home's
is opened (or scanned) when the store opens too.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from agentsessions.errors import InvalidArgumentError, MetadataCorruptError, StorageError
from agentsessions.journal.format.durable import FileSystem
from agentsessions.journal.stores.file.rows import listed_row
from agentsessions.journal.stores.file.sessiondir import SessionDir
from agentsessions.journal.stores.paging import page_ask, page_of
from agentsessions.journal.stores.store import Page, SessionInfo
from agentsessions.v1.ids import check_uid

if TYPE_CHECKING:
    from agentsessions.journal.stores.capabilities import Reindexed
    from agentsessions.journal.stores.file.catalog import Catalog


class SessionListing:
    """The listing side of a file store: mixed into FileStore, and the whole of
    :class:`~.lister.FileListing` (a store opened only to list it)."""

    home: Path
    fs: FileSystem
    sessions_dir: Path
    read_only: bool
    _catalog: Catalog | None  # None until first used (module docstring)
    _catalog_path: Path
    _catalog_lock: threading.Lock
    _unindexed: tuple[MetadataCorruptError, ...]  # met by the last reindex

    if TYPE_CHECKING:  # the full store's (FileStore's own, or the one FileListing opens)

        def get(self, uid: str) -> SessionInfo: ...

    def _open_listing(self, home: Path | str, fs: FileSystem, read_only: bool | None) -> None:
        """Open the store's directories and catalog, as every open of a file store does.

        ``read_only``: None decides by whether ``home`` can be written (``fs.writable``): a
        read-only home (a read-only mount, say) is opened without creating or changing any
        file (its catalog read in place, or scanned into memory), and every write raises
        StorageError (exit 13) naming it. A catalog made afresh beside sessions that exist
        is rebuilt from them."""
        self.home = Path(home)
        self.fs = fs
        self.sessions_dir = self.home / "sessions"
        self._unindexed = ()
        self.read_only = self._decide_read_only() if read_only is None else read_only
        self._catalog_path = catalog_path = self.home / "catalog.sqlite3"
        self._catalog = None
        self._catalog_lock = threading.Lock()
        if self.read_only:
            from agentsessions.journal.stores.file.catalog import Catalog

            self._catalog = Catalog.read_only(catalog_path) or self._scanned(catalog_path)
            return
        try:
            self.sessions_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create the store at {self.home}: {exc.strerror}") from exc
        if not catalog_path.exists():
            self._catalog = self._open_catalog()

    @property
    def catalog(self) -> Catalog:
        """The listing catalog, opened on first use (module docstring)."""
        if self._catalog is None:
            with self._catalog_lock:  # one connection, whichever thread asks first
                if self._catalog is None:
                    self._catalog = self._open_catalog()
        return self._catalog

    def _open_catalog(self) -> Catalog:
        """Open the catalog; one made afresh beside sessions that exist is rebuilt from them."""
        from agentsessions.journal.stores.file.catalog import Catalog

        fresh = not self._catalog_path.exists()
        catalog = self._catalog = Catalog(self._catalog_path)
        if fresh and any(self._session_dirs()):
            self.reindex()
        return catalog

    def close_catalog(self) -> None:
        """Close the catalog if it was opened."""
        with self._catalog_lock:
            catalog, self._catalog = self._catalog, None
        if catalog is not None:
            catalog.close()

    def _decide_read_only(self) -> bool:
        """True when the store's directories (or, before they exist, the nearest existing
        directory above them) cannot be written: the catalog lives in the home, the
        sessions below it, so either one read-only makes the store read-only."""
        present = [d for d in (self.sessions_dir, self.home) if d.is_dir()]
        if present:
            return not all(self.fs.writable(d) for d in present)
        for where in self.home.parents:
            if where.is_dir():
                return not self.fs.writable(where)
        return False

    def check_writable(self, what: str) -> None:
        """Refuse a write to a read-only store before anything is attempted."""
        if self.read_only:
            raise StorageError(
                f"cannot {what}: the store at {self.home} is read-only",
                hint="use a writable home, or remount it read-write",
                param="home_read_only",
                path=str(self.home),
            )

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
        return str(self._catalog_path)

    def reindex(self) -> Reindexed:
        """Rebuild the listing catalog from the session directories: the row count, and the
        sessions whose metadata is damaged (no row can hold them: their project is unknown).

        Every readable session directory gets its row back (a crash between creating a
        session and indexing it leaves it out of ``list``); rows whose directory is gone
        are dropped. Safe while other processes create sessions: no row they add is lost.
        """
        from agentsessions.journal.stores.capabilities import Reindexed  # a rebuild is rare

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
        from agentsessions.journal.stores.file.catalog import Catalog

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
