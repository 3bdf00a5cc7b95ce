"""A turn's frames as a client of ours reads them from the server: the Exec stream, or
the ExecQuick reply (then its ExecRest stream when the turn went on).

Invariants, those of the local engine's frames:
- the first frame is read when the turn starts (a refused request raises then);
- every frame the server sent reaches the caller once, in order, a batch unpacked;
- a final frame that says the turn parked on an approval raises the ApprovalParkedError
  the call's trailers name; an ExecQuick reply whose trailers name another error raises it
  after its frames (what a stream would have ended with);
- closing the frames early reads the rest, so the turn's END is durable when it returns;
- a turn that went on past ExecQuick's window is running on the server: an ExecRest refused
  for the server's bounds (RESOURCE_EXHAUSTED: its streams, a token's rate) is asked again,
  backing off, for up to :data:`REST_PATIENCE` seconds (the server holds a rest for 60), so
  a busy server delays the rest of a turn it admitted instead of losing it to the caller.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

from agentsessions.errors import AgentSessionsError, ResourceExhaustedError
from agentsessions.sessions.values import Frame, SessionFrame
from agentsessions.wire import frames, status
from agentsessions.wire.gen import session_pb2

REST_PATIENCE = 50.0
"""Seconds a client asks again for a turn's rest the server refused for its bounds."""


class RemoteTurn(Iterator[Frame]):
    """A turn's frames: the first already read; closing reads the rest (the turn's END)."""

    def __init__(self, first: SessionFrame | Any, items: Iterator[Any]) -> None:
        self._first: Frame | None = first
        self._uid = first.uid
        self._items = items

    def __iter__(self) -> RemoteTurn:
        return self

    def __next__(self) -> Frame:
        if self._first is not None:
            first, self._first = self._first, None
            return first
        return frames.update_to_frame(next(self._items), self._uid)

    def close(self) -> None:
        """Wait for the turn to end, as the local engine's frames do (the rest is read)."""
        self._first = None
        try:
            for _ in self._items:
                pass
        except AgentSessionsError:
            pass  # the turn ended (and its error is durable); closing does not raise it

    def __del__(self) -> None:
        # a consumer that drops its frames mid-turn: the turn still ends on the server, and
        # the stream is drained so a caller that reads next sees the END
        with contextlib.suppress(Exception):
            self.close()


def unbatched(updates: Iterator[Any]) -> Iterator[Any]:
    """A turn's updates one by one: each message, then the ones it carries in ``batch``
    (what the server had ready with it; none from a server that does not batch)."""
    for update in updates:
        yield update
        yield from update.batch


def parking(call: Any, items: Iterator[Any]) -> Iterator[Any]:
    """A turn's updates; a final frame that says the turn parked on an approval raises the
    ApprovalParkedError the call's trailers name instead, as the local engine's frames do."""
    for update in items:
        if update.HasField("session") and update.frame.parked:
            for _ in items:  # the stream ends after it; its trailers are then readable
                pass
            parked = status.error_from_trailers(call.trailing_metadata())
            if parked is not None:
                raise parked
            continue
        yield update


def quick_updates(
    reply: session_pb2.ExecQuickResponse,
    call: Any,
    rest: Callable[[str], Iterator[Any]],
) -> Iterator[Any]:
    """The updates of an ExecQuick ``reply`` (``call``: its ended call, for the trailers),
    then, when the turn went on, those ``rest(reply.rest)`` streams (ExecRest)."""
    yield from parking(call, unbatched(iter((reply.update,))))
    if reply.rest:
        yield from rest(reply.rest)
        return
    failed = status.error_from_trailers(call.trailing_metadata())
    if failed is not None:  # the turn's error, after the frames it made
        raise failed


def patient(
    open_rest: Callable[[], Iterator[Any]],
    patience: float = REST_PATIENCE,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[Any]:
    """The updates of ``open_rest()`` (an ExecRest call), the call made again, backing off
    from 10 ms to 1 s, while the server refuses it for its bounds and ``patience`` lasts."""
    delay, give_up = 0.01, time.monotonic() + patience
    while True:
        items = open_rest()
        try:
            first = next(items)
        except StopIteration:
            return
        except ResourceExhaustedError:
            if time.monotonic() + delay > give_up:
                raise
            sleep(delay)
            delay = min(delay * 2, 1.0)
            continue
        yield first
        yield from items
        return
