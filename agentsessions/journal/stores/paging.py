"""``list`` paging, the same in every store: newest first, keyset cursors, one shape of page.

A listing orders a project's live sessions by creation time, newest first, ties by uid; a
page's ``next_cursor`` names its last row, and the next page starts strictly after it, so a
session created or deleted between two calls never shifts a row into another page (as the
Go reference's page token). Each store finds the rows its own way (the file store's SQLite
catalog, a scan of the memory or JetStream store's metadata) and shares the rest here.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from agentsessions.errors import InvalidArgumentError, MetadataCorruptError
from agentsessions.journal.stores.store import (
    Page,
    SessionInfo,
    SessionMeta,
)
from agentsessions.v1.ids import check_project, check_uid
from agentsessions.v1.limits import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from agentsessions.valueclass import value

T = TypeVar("T")


@value(frozen=True, slots=True)
class PageAsk:
    """One ``list`` call's request, checked: the page size and the row it starts after."""

    project: str
    size: int
    after: tuple[int, str] | None

    @property
    def limit(self) -> int:
        """Rows to find: one more than a page, to tell whether another page follows."""
        return self.size + 1


def page_ask(project: str, page_size: int, cursor: str) -> PageAsk:
    """``list``'s arguments checked (InvalidArgumentError for a bad project or cursor)."""
    check_project(project)
    return PageAsk(project, clamp_page_size(page_size), decode_cursor(cursor) if cursor else None)


def newest_first(rows: Iterable[T], meta: Callable[[T], SessionMeta], ask: PageAsk) -> list[T]:
    """Up to ``ask.limit`` of ``rows`` (each a session whose metadata ``meta`` gives), in
    listing order, after ``ask``'s cursor: for a store that scans every row."""

    def key(row: T) -> tuple[int, str]:
        m = meta(row)
        return -m.create_time_ns, m.uid

    ordered = sorted(rows, key=key)
    if ask.after is not None:
        ns, uid = ask.after
        ordered = [r for r in ordered if key(r) > (-ns, uid)]
    return ordered[: ask.limit]


def page_of(
    infos: list[SessionInfo],
    ask: PageAsk,
    more: bool,
    unindexed: Sequence[MetadataCorruptError] = (),
) -> Page:
    """The page of the first ``ask.size`` rows of ``infos``; ``more`` says whether rows
    follow (its cursor then names the page's last row); ``unindexed`` as
    :class:`~.store.Page` has it."""
    shown = infos[: ask.size]
    if not more:
        return Page(shown, unindexed=tuple(unindexed))
    last = shown[-1]
    return Page(shown, encode_cursor(last.meta.create_time_ns, last.uid), tuple(unindexed))


def clamp_page_size(page_size: int) -> int:
    """0 (or less) means the default page; more than the maximum is clamped, as the reference."""
    if page_size <= 0:
        return DEFAULT_PAGE_SIZE
    return min(page_size, MAX_PAGE_SIZE)


def encode_cursor(create_time_ns: int, uid: str) -> str:
    """The opaque keyset cursor after a row: base64url (no padding) of ``"<ns>\\0<uid>"``.

    The same shape as the Go reference's page token, so the two agree on what a cursor means.
    """
    raw = f"{create_time_ns}\x00{uid}".encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def decode_cursor(cursor: str) -> tuple[int, str]:
    """Inverse of :func:`encode_cursor`; anything else is an InvalidArgumentError."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        raw = base64.urlsafe_b64decode(padded.encode("ascii")).decode()
        ns_text, uid = raw.split("\x00")
        ns = int(ns_text)
        check_uid(uid)
    except (ValueError, UnicodeError, InvalidArgumentError):
        raise InvalidArgumentError(
            f"invalid page cursor {cursor!r}", hint="use the cursor printed by the previous page"
        ) from None
    return ns, uid
