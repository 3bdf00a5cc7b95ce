"""A turn's frames as the ``ExecUpdate`` messages of its stream (Exec, ResumeStream, Resume).

Invariants:

- every frame reaches the caller once, in the engine's order, and no later than it would
  one message a frame, but for the first (:data:`FIRST_WAIT`): nothing else waits to fill a
  batch. A caller that set ``batched`` on its request gets, in each message, the frame the
  stream was waiting for plus every frame the turn had queued meanwhile
  (:meth:`~agentsessions.sessions.turnstream.TurnStream.ready`), so records that committed
  together cost one message; its records travel as their committed bytes
  (``CommittedRecord``), not parsed into an ``Event`` message. A caller that did not (a
  reference client) gets one ``ExecUpdate`` a frame, records as ``LogRecord``;
- a record reaches the stream only once the engine hands it over, which it does once the
  record is durable;
- a turn that parks on an approval ends with a final session frame (AWAITING, its pending
  approval) and status OK, as the reference answers it; the trailers name the
  ApprovalParkedError the local engine raises, so our client raises it too;
- if the caller goes away, grpc stops taking from this generator; the turn goes on on the
  engine's thread and commits its END (closing the frames waits for it);
- :func:`windowed` (ExecQuick) is the same stream, batched, whose first message waits up to
  a window for the turn's end instead of :data:`FIRST_WAIT`: a quick turn is one message,
  sent as a unary reply; a turn still going at the window's end is paused there
  (:data:`PAUSE`) and its rest streamed by another call (ExecRest, :mod:`.rests`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Generator, Iterator

import grpc

from agentsessions.errors import ApprovalParkedError
from agentsessions.server import deadline
from agentsessions.sessions.api import Sessions
from agentsessions.sessions.turnstream import TurnStream
from agentsessions.sessions.values import DeltaFrame, Frame, LogRecord, RecordFrame, SessionFrame
from agentsessions.wire import frames, status
from agentsessions.wire.gen import session_pb2
from agentsessions.wire.intercept import note

FIRST_WAIT = 0.005
"""Seconds the first session frame of a batched stream waits for the turn's first records
(its inputs, committed at once) to travel with it: one message fewer a turn, and the
caller's ``exec`` returns once the inputs are durable. A turn whose first commit takes
longer sends its first frame alone, as before."""


PAUSE = None
"""What :func:`windowed` yields once its window has passed with the turn still going: the
caller sends what it has and hands the rest of the generator to another call."""


@dataclasses.dataclass
class Seen:
    """What the stream has carried so far: its session and its latest execution; and the
    call whose trailers a parked turn sets (a turn's rest may be read by another call)."""

    context: grpc.ServicerContext
    uid: str = ""
    _execution: str = ""
    _unread: list[LogRecord] = dataclasses.field(default_factory=list)

    def saw(self, record: LogRecord) -> None:
        """The stream carried ``record``; its execution id is read only when asked for
        (decoding each record's event for it cost ~8 us a record, and only a delta or a
        deadline asks)."""
        self._unread.append(record)

    @property
    def execution(self) -> str:
        """The execution id of the latest record carrying one (as if read record by record)."""
        if self._unread:
            for record in reversed(self._unread):
                found = str(record.event.get("execution_id", ""))
                if found:
                    self._execution = found
                    break
            self._unread.clear()
        return self._execution


def updates(
    engine: Sessions,
    stream: Iterator[Frame],
    context: grpc.ServicerContext,
    timer: deadline.Deadline | None = None,
    *,
    batched: bool = False,
) -> Iterator[session_pb2.ExecUpdate]:
    """The turn's frames as ExecUpdates (batched when the caller asked); a last frame
    AWAITING carries its pending approval; past ``timer``'s deadline the stream ends
    DEADLINE_EXCEEDED after the last frame."""
    for update in _updates(engine, stream, Seen(context), timer, batched, None):
        assert update is not None  # no window: never paused
        yield update


def windowed(
    engine: Sessions,
    stream: Iterator[Frame],
    seen: Seen,
    timer: deadline.Deadline | None,
    window: float,
) -> Generator[session_pb2.ExecUpdate | None, None, None]:
    """The turn's frames as batched ExecUpdates, the first message holding every frame the
    turn made within ``window`` seconds; :data:`PAUSE` after it when the turn goes on past
    the window (then the rest, as :func:`updates` streams it). ``seen.context`` is the call
    a parked turn's trailers go to: whoever reads the rest sets it to its own."""
    return _updates(engine, stream, seen, timer, True, window)


def _updates(
    engine: Sessions,
    stream: Iterator[Frame],
    seen: Seen,
    timer: deadline.Deadline | None,
    batched: bool,
    window: float | None,
) -> Generator[session_pb2.ExecUpdate | None, None, None]:
    ready = stream.ready if batched and isinstance(stream, TurnStream) else None
    # the first frame waits a little (or the whole window) for the turn's first records
    wait = FIRST_WAIT if window is None else window
    pause_at = None if window is None else time.monotonic() + window
    try:
        for frame in stream:
            group = [frame, *ready(wait)] if ready is not None else [frame]
            out = [_update(engine, f, seen, timer, batched) for f in group]
            head = out[0]
            head.batch.extend(out[1:])
            yield head
            last = group[-1]
            ended = isinstance(last, SessionFrame) and last.last
            if timer is not None and isinstance(last, SessionFrame) and ended:
                exceeded = timer.exceeded(last.turn is not None and last.turn.canceled)
                if exceeded is not None:  # the records and the last frame went first
                    raise exceeded
            # ready() returns early only at the turn's end (or its error): past the window,
            # the turn goes on; whoever reads the rest gets it streamed (a stream that
            # cannot wait for its frames is paused after its first)
            going = pause_at is not None and not ended
            if going and (ready is None or time.monotonic() >= (pause_at or 0.0)):
                yield PAUSE
            wait, pause_at = 0.0, None
    except ApprovalParkedError as parked:
        final = with_pending(engine, SessionFrame(engine.get(seen.uid), last=True))
        update = frames.frame_to_update(final)
        update.frame.parked = True
        seen.context.set_trailing_metadata(status.ok_trailers(parked))
        yield update


def _update(
    engine: Sessions,
    frame: Frame,
    seen: Seen,
    timer: deadline.Deadline | None,
    committed: bool,
) -> session_pb2.ExecUpdate:
    """One frame's ExecUpdate, noting what it says of the turn first."""
    if frame.uid and not seen.uid:
        note(session=frame.uid)  # a session the turn created (.observe)
    seen.uid = frame.uid or seen.uid
    if isinstance(frame, RecordFrame):
        seen.saw(frame.record)
    if timer is not None:
        timer.saw(seen.uid, seen.execution)
    if isinstance(frame, SessionFrame) and frame.last:
        frame = with_pending(engine, frame)
    if isinstance(frame, DeltaFrame):
        return frames.frame_to_update(frame, seen.execution, committed=committed)
    return frames.frame_to_update(frame, committed=committed)  # names no execution


def with_pending(engine: Sessions, frame: SessionFrame) -> SessionFrame:
    """The frame, its session carrying the approval request an awaiting turn parked on."""
    s = frame.session
    if s.exec_state != "EXEC_AWAITING" or s.pending_approval is not None:
        return frame
    pending = engine.get(s.uid).pending_approval
    return dataclasses.replace(frame, session=dataclasses.replace(s, pending_approval=pending))
