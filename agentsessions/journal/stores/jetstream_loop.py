"""One asyncio event loop on a background thread, owned by a JetStream store.

nats-py is asyncio-only while the store contract is synchronous: every call the store
makes goes through :meth:`Loop.call`, which runs a coroutine on this loop and waits for it
with a deadline. A deadline passing is reported as :class:`OutcomeUnknown`, never as a
failure: the coroutine may still have taken effect on the server (a timed-out publish was
seen to land), so the caller must resolve it (retry with the same Msg-Id, or read).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class OutcomeUnknown(Exception):
    """A call's deadline passed before it answered: it may or may not have taken effect."""


class Loop:
    """A daemon thread running one event loop until :meth:`close`."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="agentsessions-jetstream", daemon=True
        )
        self._thread.start()

    def call(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run ``coro`` on the loop and return its result; OutcomeUnknown after ``timeout``.

        The coroutine is cancelled when the deadline passes, so nothing keeps running
        behind the caller's back (what it already sent to the server stays sent).
        """
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise OutcomeUnknown(f"no answer within {timeout:g}s") from None
        except TimeoutError:  # the client's own request deadline (nats-py raises it)
            raise OutcomeUnknown(f"no answer within {timeout:g}s") from None

    def close(self) -> None:
        """Stop the loop and join its thread (idempotent)."""
        if self._loop.is_closed():
            return
        # cancel what the client left running (its read loop, pings, subscriptions), so no
        # task is destroyed pending when the loop goes
        with contextlib.suppress(concurrent.futures.TimeoutError):
            asyncio.run_coroutine_threadsafe(_cancel_all(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()


async def _cancel_all() -> None:
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
