"""A turn's frames as a client of ours reads them from the server: the Exec stream, or
the ExecQuick reply (then its ExecRest stream when the turn went on).

Invariants, those of the local engine's frames:
- the first frame is read when the turn starts (a refused request raises then);
- every frame the server sent reaches the caller once, in order, a batch unpacked;
- an ExecQuick reply is read whole when the turn starts: each of its frames converted
  and checked (a record's hash and JSON) before the caller sees the first, in one pass
  (a client reads two sessions and several records a turn: one loop, not a generator
  a layer), and what the frames end with raised after those before it;
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

from agentsessions.errors import AgentSessionsError, ResourceExhaustedError, UnavailableError
from agentsessions.sessions.values import Frame, Session
from agentsessions.wire import convert, frames, status
from agentsessions.wire.gen import session_pb2

REST_PATIENCE = 50.0
"""Seconds a client asks again for a turn's rest the server refused for its bounds."""

SessionOf = Callable[[session_pb2.Session], Session]
"""What converts a session frame's Session message (:class:`LastSession`)."""


class LastSession:
    """A client's converter of Session messages that remembers the last one it converted.

    A turn's first frame is, byte for byte, the session its turn before on that session
    ended with (the server reads the same head), so a client running turns on a session
    converts one Session a turn instead of two. Equal bytes are an equal message, so the
    Session handed back is the one converting would make, its checks passed (a message that
    fails them is never remembered); a frozen value, so one object may be handed out twice.
    Any other message (another session, a later head) is converted and takes its place.
    """

    def __init__(self) -> None:
        self._last: tuple[bytes, Session] | None = None  # replaced whole: safe across threads

    def __call__(self, msg: session_pb2.Session) -> Session:
        raw = msg.SerializeToString()
        last = self._last
        if last is not None and last[0] == raw:
            return last[1]
        session = convert.session_from_proto(msg)
        self._last = (raw, session)
        return session


class RemoteTurn(Iterator[Frame]):
    """A turn's frames: those already converted and checked (a whole ExecQuick reply, or a
    stream's first frame), then those ``items`` brings; closing reads the rest (the turn's
    END). ``failed``: what the received frames ended with (raised after them, once)."""

    def __init__(
        self,
        ready: list[Frame],
        items: Iterator[Any],
        session_of: SessionOf,
        failed: AgentSessionsError | None = None,
    ) -> None:
        self._ready: Iterator[Frame] | None = iter(ready)
        self._uid = ready[0].uid
        self._items = items
        self._session_of = session_of
        self._failed = failed

    def __iter__(self) -> RemoteTurn:
        return self

    def __next__(self) -> Frame:
        ready = self._ready
        if ready is not None:
            frame = next(ready, None)  # frames are never None
            if frame is not None:
                return frame
            self._ready = None
            failed, self._failed = self._failed, None
            if failed is not None:
                raise failed
        return frames.update_to_frame(next(self._items), self._uid, self._session_of)

    def close(self) -> None:
        """Wait for the turn to end, as the local engine's frames do (the rest is read)."""
        self._ready = self._failed = None
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


def started(items: Iterator[Any], address: str, session_of: SessionOf) -> RemoteTurn:
    """A turn whose frames ``items`` streams, its first read now (a refused turn raises
    here)."""
    try:
        first = frames.update_to_frame(next(items), "", session_of)
    except StopIteration:
        raise UnavailableError(f"the server at {address} ended a turn's stream empty") from None
    return RemoteTurn([first], items, session_of)


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


def quick_turn(
    reply: session_pb2.ExecQuickResponse,
    call: Any,
    rest: Callable[[str], Iterator[Any]],
    address: str,
    session_of: SessionOf,
) -> RemoteTurn:
    """The turn of an ExecQuick ``reply`` (``call``: its ended call, for the trailers): every
    frame the reply carries converted and checked now, in one pass (a record's hash and JSON
    before any caller sees it), then, when the turn went on, those ``rest(reply.rest)``
    streams (ExecRest). What the reply's frames end with (a record that fails its checks, a
    park, the turn's error in the trailers) is raised after the frames before it; at once
    when there are none."""
    ready, failed = reply_frames(reply, call, session_of)
    items = rest(reply.rest) if reply.rest else iter(())
    if failed is None and not reply.rest:
        failed = status.error_from_trailers(call.trailing_metadata())  # after the frames
    if ready:
        return RemoteTurn(ready, items, session_of, failed)
    if failed is not None:
        raise failed
    return started(items, address, session_of)


def reply_frames(
    reply: session_pb2.ExecQuickResponse, call: Any, session_of: SessionOf
) -> tuple[list[Frame], AgentSessionsError | None]:
    """The frames of an ExecQuick reply's updates (the first, then its batch), and what they
    end with: the error of a record that fails its checks, or of a final frame that says the
    turn parked on an approval (the ApprovalParkedError the trailers name; such a frame is
    not a frame of the turn)."""
    first = reply.update
    ready: list[Frame] = []
    uid = ""
    try:
        for update in (first, *first.batch):
            if update.HasField("session") and update.frame.parked:
                parked = status.error_from_trailers(call.trailing_metadata())
                if parked is not None:
                    return ready, parked
                continue
            frame = frames.update_to_frame(update, uid, session_of)
            uid = uid or frame.uid  # the session's, from the first frame
            ready.append(frame)
    except AgentSessionsError as exc:
        return ready, exc
    return ready, None


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
