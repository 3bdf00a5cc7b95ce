"""What the framework adapters share, written once: the engine a ``where`` names
(:func:`engine_of`), the message that carries an adapter's record (:func:`message`), the
sessions of a project by name (:func:`named`, :func:`find_named`), a turn that creates its
named session on first write (:func:`run_named`), and a write a cancellation waits for
(:func:`settled`). None of it imports a framework.

Each adapter keeps one framework id (a conversation, a thread, an ADK scope) in one
agentsessions session of its project whose *name* is that id: a name is what
``agentsessions list`` shows and the engine already indexes, so no side table is needed.
Invariant kept here: when two processes create one name at once, the oldest such session
wins (creation time, then uid); a writer that finds another when it lists after its own
create soft-deletes its own (still verifiable) and, in :func:`run_named`, appends its turn
to the winner's (ADK's create, which must make a new session, refuses instead). Known gap: a
creator whose listing ran before the other's create was visible keeps its own session, and
if that one is the younger the two diverge; once a session exists, writers never diverge.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from agentsessions.sessions.api import SessionFrame, Sessions

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
    """The uid of the oldest live session named ``name`` in ``project``, or ""."""
    found = [(created, uid) for n, uid, created in named(engine, project) if n == name]
    return min(found)[1] if found else ""


def run_named(
    engine: Sessions,
    project: str,
    name: str,
    uid: str,
    messages: Sequence[Mapping[str, Any]],
    harness: str,
) -> SessionFrame:
    """Run one recording turn of ``messages`` on session ``uid``, or, with ``uid`` "", on a
    new session named ``name`` (joining an older one another process made meanwhile).
    The frame's ``session.uid`` is the session the turn went to."""
    if uid:
        return engine.run(uid, messages, harness=harness, wait=WAIT)
    frame = engine.run(None, messages, harness=harness, project=project, name=name)
    mine = frame.session.uid
    winner = find_named(engine, project, name)  # another process may have created it too
    if winner and winner != mine:  # it did, first: our turn joins its session
        frame = engine.run(winner, messages, harness=harness, wait=WAIT)
        engine.delete(mine)  # soft: hidden from list, still verifiable
    return frame


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
