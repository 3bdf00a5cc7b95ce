"""A file store opened only to list its sessions: :class:`FileListing`.

``list`` reads the catalog and, for each row, a session's ``session.json`` and its TAIL
hint (checked against the tail segment's size and mtime: :func:`.rows.listed_row`). That
needs the listing side of the store (:class:`~.listing.SessionListing`) and nothing that
opens, writes or decrypts a journal, which is most of what importing
:class:`~.store.FileStore` costs a command's start. So this is the listing alone, opened
exactly as the store opens it (the same ``_open_listing``); a row its hint cannot vouch
for is read by the whole store, opened on that first need, so every row says what the
store's ``list`` says.

Invariants: it writes only what opening a file store writes (the ``sessions/`` directory
and the catalog of a home that has none, rebuilt from the session directories); it takes
no session lock and opens no journal for writing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agentsessions.journal.format.durable import DEFAULT_FS, FileSystem
from agentsessions.journal.stores.file.listing import SessionListing

if TYPE_CHECKING:
    from agentsessions.journal.crypto.keys import MasterKey
    from agentsessions.journal.stores.file.store import FileStore
    from agentsessions.journal.stores.store import SessionInfo


class FileListing(SessionListing):
    """The sessions of the file store under ``home``, for listing (see the module docstring).

    ``fs``, ``read_only`` and ``master`` as for :class:`~.store.FileStore` (the master key
    reads an encrypted session whose row the store itself must read)."""

    def __init__(
        self,
        home: Path | str,
        *,
        fs: FileSystem = DEFAULT_FS,
        read_only: bool | None = None,
        master: MasterKey | None = None,
    ) -> None:
        self._master = master
        self._store: FileStore | None = None
        self._open_listing(home, fs, read_only)

    def get(self, uid: str) -> SessionInfo:
        """``uid``'s row as the whole store reads it (opened on the first call)."""
        if self._store is None:
            from agentsessions.journal.stores.file.store import FileStore

            self._store = FileStore(
                self.home, fs=self.fs, read_only=self.read_only, master=self._master
            )
        return self._store.get(uid)

    def close(self) -> None:
        """Close the catalog, and the store a row needed, if one did."""
        self.close_catalog()
        if self._store is not None:
            self._store.close()

    def __enter__(self) -> FileListing:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
