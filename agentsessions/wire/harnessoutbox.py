"""What a harness node sends on one stream, sent by the thread that runs its executions.

grpc's sync server sends only what a handler yields, so a node whose harness runs on a
thread of its own used to hand every event to the handler's thread through a queue: each
message the node sent woke that thread, and it woke again when grpc had sent the message.
grpc's sync server also calls a behaviour that carries ``experimental_non_blocking`` with a
third argument, a callback that sends one response (None: the status) from whichever
thread calls it; a node's handler then returns at once and the thread that reads the
host's frames and runs the harness sends its events itself (:class:`Outbox`). A server whose
interceptors wrap the behaviour without that hook calls it with two arguments: the handler
then yields what a :class:`Pump` queues, as before.

Events that need no answer (output, a reported result, usage) wait in the outbox until the
harness waits on the host, streams a delta, or ends, and cross together as one message of
an ``Executions`` stream (a ``Connect`` sends them one message each): the host reads them in
the order they were sent, and what a host acts on before it answers is already there.
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc

from agentsessions.wire.gen import common_pb2, harness_pb2
from agentsessions.wire.historysync import MISS, TRAILER
from agentsessions.wire.intercept import NON_BLOCKING

__all__ = ["NON_BLOCKING", "Outbox", "Pump", "Refusal", "Send"]

Send = Callable[[Any], None]
"""Send one message on the stream; None ends it with the status set on its context."""


@dataclass
class Refusal:
    """Why the server ends a stream: a status and its details (``miss``: a history miss,
    told to the host in the trailer so that it resends the history whole)."""

    code: grpc.StatusCode
    details: str
    miss: bool = False

    def set_on(self, context: grpc.ServicerContext) -> None:
        """Make this the status the stream ends with (any thread may call it)."""
        if self.miss:
            context.set_trailing_metadata(((TRAILER, MISS),))
        context.set_code(self.code)
        context.set_details(self.details)


class Outbox:
    """One stream's sending side: events wait here until :meth:`flush`; ``batch``: they
    cross as one ``Events`` message (Executions), else one message each (Connect)."""

    def __init__(self, send: Send, context: grpc.ServicerContext, *, batch: bool) -> None:
        self._send = send
        self._context = context
        self._batch = batch
        self._pending: list[common_pb2.Event] = []
        self.ended = False

    def put(self, event: common_pb2.Event) -> None:
        """Queue ``event``; it crosses at the next :meth:`flush`."""
        self._pending.append(event)

    def flush(self) -> None:
        """Send what is queued (nothing once the stream ended)."""
        pending = self._pending
        if not pending or self.ended:
            pending.clear()
            return
        self._pending = []
        if self._batch:
            self._send(harness_pb2.Events(events=pending))
        else:
            for event in pending:
                self._send(event)

    def refuse(self, refusal: Refusal) -> None:
        """Send what came before, then end the stream with ``refusal``'s status."""
        if self.ended:
            return
        self.flush()
        refusal.set_on(self._context)
        self.end()

    def end(self) -> None:
        """Send what is queued, then end the stream (its status: OK unless one was set)."""
        if self.ended:
            return
        self.flush()
        self.ended = True
        self._send(None)


class Pump:
    """The way out for a behaviour called without grpc's send callback: the handler yields
    what the runner queues, up to the None that ends the stream."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def send(self, message: Any) -> None:
        """Queue ``message`` for the handler (None: the stream ends)."""
        self._queue.put(message)

    def messages(self) -> Iterator[Any]:
        """What the handler yields."""
        yield from iter(self._queue.get, None)
