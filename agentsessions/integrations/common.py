"""What every framework adapter needs from the engine, written once.

:func:`settled` awaits a write that runs in a worker thread to its outcome, and
:func:`engine_of` opens the engine a home path or a store URL names (or takes one given).
Neither imports a framework.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from agentsessions.sessions.api import Sessions

T = TypeVar("T")


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
