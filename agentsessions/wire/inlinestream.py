"""A bidirectional gRPC stream the calling thread drives itself: no thread of grpc's between.

grpc's sync client runs a stream-stream call on two threads besides the caller's: one
drains the request iterator (each message the caller queues wakes it, and it sleeps again
until the channel's thread reports the message sent), and the channel's spin thread takes
every completion and wakes the reader. On a host's kept harness stream that is four thread
hand-offs a turn (two frames out, two answers in), each a context switch and a trip of the
interpreter lock: with a node that answers at once, 45% of the whole exchange (0.37 ms a
turn against 0.21 ms without them, ``bench/harness_wire.py``'s floor rows).

grpc runs a call on its caller's thread for its own single-threaded unary-stream option
(``grpc.experimental.ChannelOptions.SingleThreadedUnaryStream``): a *segregated* call, whose
completion queue only its caller polls. :class:`InlineStream` opens a stream-stream call the
same way and reads it with grpc's own single-threaded reader (``_SingleThreadedRendezvous``:
the same state, status and ``grpc.RpcError`` as grpc's reader). ``send`` starts a message on
the caller's thread (once the one before it is out: a call has one send in flight at most,
as grpc's own request thread waits too) and ``next`` starts a receive and takes the call's
completions until a message or the status comes. Nothing runs while no thread asks: a kept
stream that the node ended while idle says so at its next read, as before.

These are grpc internals (``grpc._channel``, ``cygrpc``), pinned by the grpcio version the
project requires and by ``tests/unit/test_inline_stream.py``; :func:`open_stream` falls back
to grpc's threaded stream (:class:`ThreadedStream`) for a channel it cannot drive this way
(an intercepted channel) or a grpc without these internals. One thread at a time may use a
stream (a lane belongs to one execution at a time); :meth:`InlineStream.end` may be called
from any thread once no other uses it.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import grpc

try:  # grpc's own single-threaded call machinery (see the module docstring)
    from grpc import _channel as _grpc_channel
    from grpc._cython import cygrpc as _cygrpc  # type: ignore[attr-defined]  # no stubs

    _OPS = _cygrpc.OperationType
    _INITIAL_DUE = (
        _OPS.send_initial_metadata,
        _OPS.receive_initial_metadata,
        _OPS.receive_status_on_client,
    )
    _NEEDED = ("Channel", "_RPCState", "_SingleThreadedRendezvous")
    INLINE = all(hasattr(_grpc_channel, name) for name in _NEEDED)
except (ImportError, AttributeError):  # pragma: no cover - another grpc: the threaded stream
    INLINE = False

Serialize = Callable[[Any], bytes]
Deserialize = Callable[[bytes], Any]


class Stream(Protocol):
    """One bidirectional call: messages out, messages in (``grpc.RpcError`` on failure)."""

    def send(self, message: Any) -> None:
        """Send ``message`` (after the one before it; dropped once the call is over)."""

    def __next__(self) -> Any:
        """The next message; StopIteration at an OK end, the call's ``grpc.RpcError`` else."""

    def is_active(self) -> bool:
        """No status is known yet."""

    def end(self) -> None:
        """Cancel the call (if it is not over) and release what it holds."""


class InlineStream:
    """A stream-stream call on ``channel`` run on the caller's thread (module docstring)."""

    def __init__(
        self, channel: grpc.Channel, method: str, serialize: Serialize, deserialize: Deserialize
    ) -> None:
        self._serialize = serialize
        state = _grpc_channel._RPCState(_INITIAL_DUE, None, None, None, None)
        state.method, state.target = method, channel._channel.target().decode()  # type: ignore[attr-defined]
        state.rpc_start_time = time.perf_counter()  # what grpc's end-of-call stats read
        self._state = state
        batches = (
            (_cygrpc.SendInitialMetadataOperation(None, 0),),
            (_cygrpc.ReceiveStatusOnClientOperation(0),),
            (_cygrpc.ReceiveInitialMetadataOperation(0),),
        )
        call = channel._channel.segregated_call(  # type: ignore[attr-defined]
            _cygrpc.PropagationConstants.GRPC_PROPAGATE_DEFAULTS,
            method.encode(),
            None,  # host
            None,  # deadline: none, as a kept stream has none
            None,  # metadata
            None,  # credentials
            tuple((ops, None) for ops in batches),
            None,  # census context
            None,  # registered call handle
        )
        try:
            self._reader = _grpc_channel._SingleThreadedRendezvous(state, call, deserialize, None)
        except BaseException:
            call.cancel(_cygrpc.StatusCode.cancelled, "the inline reader failed")
            raise
        self._call = call

    def send(self, message: Any) -> None:
        """Start sending ``message`` once the message before it is out (its completion is
        taken here, with any other that came first); nothing once the call is over."""
        state = self._state
        while _OPS.send_message in state.due:
            self._reader._consume_next_event()
        data = self._serialize(message)
        with state.condition:
            if state.code is not None:
                return  # over: the next read says how
            state.due.add(_OPS.send_message)  # before the op starts: its completion removes it
            started = False
            try:
                started = self._call.operate((_cygrpc.SendMessageOperation(data, 0),), None)
            finally:
                if not started:
                    state.due.discard(_OPS.send_message)

    def __iter__(self) -> InlineStream:
        return self

    def __next__(self) -> Any:
        return self._reader._next()

    def is_active(self) -> bool:
        """No status is known yet (one that came while nobody read is not known)."""
        return bool(self._reader.is_active())

    def end(self) -> None:
        """Cancel the call unless it is over, then take its last completions (what the
        call and its completion queue hold is released only once all came back)."""
        self._reader.cancel()
        while self._state.due:
            self._reader._consume_next_event()


class ThreadedStream:
    """grpc's own stream-stream call, its requests fed from a queue (grpc drains it on a
    thread of its own): for a channel :class:`InlineStream` cannot drive."""

    def __init__(
        self, channel: grpc.Channel, method: str, serialize: Serialize, deserialize: Deserialize
    ) -> None:
        self._frames: queue.SimpleQueue[Any] = queue.SimpleQueue()
        multicallable = channel.stream_stream(
            method, request_serializer=serialize, response_deserializer=deserialize
        )
        self._call: Any = multicallable(iter(self._frames.get, None))
        self._replies: Iterator[Any] = iter(self._call)

    def send(self, message: Any) -> None:
        """Queue ``message`` for grpc's request thread."""
        self._frames.put(message)

    def __iter__(self) -> ThreadedStream:
        return self

    def __next__(self) -> Any:
        return next(self._replies)

    def is_active(self) -> bool:
        """No status is known yet."""
        return bool(self._call.is_active())

    def end(self) -> None:
        """Close the requests and cancel the call."""
        self._frames.put(None)
        self._call.cancel()


def open_stream(
    channel: grpc.Channel, method: str, serialize: Serialize, deserialize: Deserialize
) -> Stream:
    """A stream-stream call of ``method`` on ``channel``: inline where grpc allows it."""
    if INLINE and isinstance(channel, _grpc_channel.Channel):
        try:
            return InlineStream(channel, method, serialize, deserialize)
        except (TypeError, AttributeError):  # internals that moved: grpc's own stream still works
            pass
    return ThreadedStream(channel, method, serialize, deserialize)
