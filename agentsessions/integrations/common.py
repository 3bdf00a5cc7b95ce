"""What the framework adapters share, written once: the engine a ``where`` names
(:func:`engine_of`), the message that carries an adapter's record (:func:`message`), a
project's sessions by name (:func:`named`, a listing, for the frameworks' own list
operations), one session by its framework id (:func:`find_named`, :func:`ensure_named`), a
turn that creates its session on first write (:func:`run_named`), and a write a
cancellation waits for (:func:`settled`). None of it imports a framework.

Each adapter keeps one framework id (a conversation, a thread, an ADK scope) in one
agentsessions session of its project whose *name* is that id, and the id is the session's
key (``Sessions.ensure``/``find``/``claim``): finding it is one indexed lookup, never a
listing, and two processes creating one new id at once get one session (the store binds the
key atomically; the second writer's turn waits for the first's and lands after it).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from agentsessions.errors import InvalidArgumentError

if TYPE_CHECKING:
    from agentsessions.sessions.api import Sessions
    from agentsessions.sessions.values import SessionFrame

T = TypeVar("T")
WAIT = 60.0
"""Seconds a write waits for another writer of the same session (then LockHeldError)."""


def engine_of(
    where: str | os.PathLike[str] | Sessions | None, key_file: str | None
) -> tuple[Sessions, bool]:
    """The engine an adapter works on, and whether the adapter owns it (closes it).

    ``where``: a home path or a store URL (``nats://...``), opened here with ``key_file``
    (owned); an open :class:`Sessions` engine (shared: its owner closes it); None: the
    default home (owned).
    """
    if where is not None and not isinstance(where, (str, os.PathLike)):
        return where, False
    from agentsessions.sessions.local import open_local

    if isinstance(where, str) and "://" in where:
        return open_local(None, store_url=where, key_file=key_file), True
    return open_local(where, key_file=key_file), True


def message(key: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """The turn input that carries an adapter's record ``body``: a ``user`` message with one
    DataPart ``{key: body}`` (``key`` names the adapter)."""
    return {"role": "user", "parts": [{"data": {"data": {key: body}}}]}


def named(engine: Sessions, project: str) -> Iterator[tuple[str, str, int]]:
    """(name, uid, creation time in ns) of every live session of ``project``."""
    cursor: str | None = None
    while True:
        page = engine.list(project=project, page_size=500, cursor=cursor)
        for s in page.sessions:
            yield s.name, s.uid, s.create_time_ns
        cursor = page.next_cursor
        if not cursor:
            return


def find_named(engine: Sessions, project: str, name: str) -> str:
    """The uid of the live session whose key is ``name`` in ``project``, or "" (one lookup)."""
    found = engine.find(name, project=project)
    return found.uid if found is not None else ""


def ensure_named(engine: Sessions, project: str, name: str, harness: str) -> tuple[str, bool]:
    """The uid of the live session whose key is ``name`` in ``project``, created (named
    ``name``, recorded with ``harness``) if there is none, atomically; and whether this
    call created it."""
    session, created = engine.ensure(name, project=project, name=name, harness=harness)
    return session.uid, created


def claim_named(engine: Sessions, project: str, name: str, uid: str) -> None:
    """Make ``name`` the key of session ``uid`` (a fork's child, made with that name);
    InvalidArgumentError, and the child deleted (soft), if a live session has it already."""
    bound = engine.claim(name, uid, project=project)
    if bound != uid:
        engine.delete(uid)
        raise InvalidArgumentError(f"{name!r} exists already; fork to a new id")


def run_named(
    engine: Sessions,
    project: str,
    name: str,
    uid: str,
    messages: Sequence[Mapping[str, Any]],
    harness: str,
) -> SessionFrame:
    """Run one recording turn of ``messages`` on session ``uid``, or, with ``uid`` "", on the
    session whose key is ``name`` (created if there is none: :func:`ensure_named`). The
    frame's ``session.uid`` is the session the turn went to."""
    if not uid:
        uid, _created = ensure_named(engine, project, name, harness)
    return engine.run(uid, messages, harness=harness, wait=WAIT)


async def settled(work: Awaitable[T]) -> T:
    """``work``'s outcome even if the caller is cancelled meanwhile, then the cancellation.

    A write runs in a worker thread that a cancellation cannot stop, so returning early
    would leave the caller not knowing whether it committed (and tempted to retry it): the
    frameworks' own stores wait for the outcome too, and cancellation after a committed
    write keeps the write.
    """
    task = asyncio.ensure_future(work)
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as exc:
            cancelled = cancelled or exc
    if cancelled is not None:
        if not task.cancelled():
            task.exception()  # retrieved: the cancellation is what the caller asked for
        raise cancelled
    return task.result()
