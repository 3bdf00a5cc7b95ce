"""Listing sessions: one page of a store's sessions as :class:`~.session.Session` values.

The engine's ``list`` (:meth:`~.local.LocalSessions.list`) and a local ``list`` that opens
no engine (:func:`open_listing`: the file store's listing alone, the command line's) run
the one body, :func:`list_page`, so the two cannot say different things about a session.
Opening the engine imports its turns, controller and journal writers, which a listing
never uses and which cost most of a ``list`` command's start.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Protocol

from agentsessions.errors import InvalidArgumentError
from agentsessions.v1.ids import check_project

from .home import require_home, resolve_home
from .session import SessionPage
from .views import view

if TYPE_CHECKING:
    from agentsessions.errors import AgentSessionsError
    from agentsessions.journal.stores.file.lister import FileListing
    from agentsessions.journal.stores.store import Page


class Listable(Protocol):
    """A store's listing (every store's ``list``: :class:`~..journal.stores.store.Store`)."""

    def list(self, project: str, page_size: int = 0, cursor: str = "") -> Page: ...


def list_page(
    store: Listable, project: str, page_size: int, cursor: str | None
) -> tuple[SessionPage, tuple[AgentSessionsError, ...]]:
    """One page of ``project``'s sessions in ``store``, newest first (deleted hidden), and
    the sessions the store found but could not list (their metadata is damaged)."""
    check_project(project)
    if page_size < 0:
        raise InvalidArgumentError(f"page_size must be >= 0 (0 = 50), got {page_size}")
    page = store.list(project, page_size=page_size, cursor=cursor or "")
    return SessionPage(tuple(view(s) for s in page.sessions), page.next_cursor), page.unindexed


def open_listing(
    home: str | os.PathLike[str] | None = None,
    *,
    store_url: str | None = None,
    allow_unsynced: bool = False,
    key_file: str | None = None,
    must_exist: bool = False,
) -> FileListing | None:
    """The listing of the file store :func:`~.local.open_local` would open with the same
    arguments (the same home, configuration and master key), or None when they choose
    another store (a store URL): its listing is the engine's to open."""
    from agentsessions.sessions.config import resolve_choices

    resolved = resolve_home(home)
    url, _unsynced, master, _models = resolve_choices(resolved, store_url, allow_unsynced, key_file)
    if url:
        return None
    from agentsessions.journal.stores.file.lister import FileListing

    return FileListing(require_home(resolved) if must_exist else resolved, master=master)
