"""A hosted harness's calls back to the controller, seen from inside the warm host.

During a ``run`` the harness in the host talks to a :class:`RemoteSink` and a
:class:`RemoteHistory`; each call is a frame sent over the run's connection
(:class:`Channel`) and answered by the caller's real sink or history, so every effect is
recorded by the caller's controller before the harness sees its result. A call the
caller's sink refused raises :class:`SinkFailed` (the caller keeps the original
exception); a lost connection raises :class:`CallerGone` and the harness unwinds.
"""

from __future__ import annotations

import base64
import socket
from collections.abc import Iterator, Mapping
from typing import Any

from agentsessions.controller.spi import Completion, Event, Message, ModelRequest
from agentsessions.runtimes import warm_wire as wire


class SinkFailed(Exception):
    """The caller's sink raised; the caller keeps the original exception for call ``call``."""

    def __init__(self, message: str, call: int) -> None:
        super().__init__(message)
        self.call = call


class CallerGone(ConnectionError):
    """The controller side of a run went away; the harness must unwind."""


class Channel:
    """The run's connection seen from the harness: calls answered by the caller."""

    def __init__(self, conn: socket.socket, timeout: float) -> None:
        self.conn = conn
        self.timeout = timeout
        self.calls = 0
        self.broken = False

    def call(self, frame: wire.Frame) -> Any:
        """Send a call and wait for its answer (the caller records effects first)."""
        self.calls += 1
        frame["n"] = self.calls
        self._send(frame)
        try:
            reply = wire.recv(self.conn, self.timeout)
        except OSError as exc:
            self.broken = True
            raise CallerGone(f"lost the controller during a run: {exc}") from None
        if reply.get("ok"):
            return reply.get("result")
        raise SinkFailed(str(reply.get("error")), self.calls)

    def tell(self, frame: wire.Frame) -> None:
        """Send a one-way notice (no answer awaited)."""
        self._send(frame)

    def _send(self, frame: wire.Frame) -> None:
        if self.broken:
            raise CallerGone("the controller connection is closed")
        try:
            wire.send(self.conn, frame)
        except OSError as exc:
            self.broken = True
            raise CallerGone(f"lost the controller during a run: {exc}") from None


class RemoteSink:
    """The Sink a hosted harness sees: each call is answered by the caller's real sink."""

    def __init__(self, channel: Channel) -> None:
        self._channel = channel

    def model(self, request: ModelRequest) -> Completion:
        result = self._channel.call({"call": "model", "request": wire.request_to_wire(request)})
        return wire.completion_from_wire(result)

    def output(self, message: Message) -> None:
        self._channel.call({"call": "output", "message": message})

    def report(self, result: dict[str, Any]) -> None:
        self._channel.call({"call": "report", "result": result})

    def usage(self, usage: dict[str, Any]) -> None:
        self._channel.call({"call": "usage", "usage": usage})

    def tool(self, call: Mapping[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self._channel.call({"call": "tool", "tool_call": dict(call)})
        return result

    def delta(self, text: str) -> None:
        self._channel.tell({"call": "delta", "text": text})

    def state(self, data: bytes, *, covers_to: int = 0, expected_version: int | None = None) -> int:
        frame = {
            "call": "state",
            "data": base64.b64encode(data).decode("ascii"),
            "covers_to": covers_to,
            "expected_version": expected_version,
        }
        return int(self._channel.call(frame))


class RemoteHistory:
    """The History a hosted harness sees: read from the caller on demand, in pages."""

    def __init__(self, channel: Channel) -> None:
        self._channel = channel
        self._length: int | None = None

    def __len__(self) -> int:
        if self._length is None:
            self._length = int(self._channel.call({"call": "history_len"}))
        return self._length

    def __iter__(self) -> Iterator[Event]:
        cursor = int(self._channel.call({"call": "history_open"}))
        while True:
            page = self._channel.call({"call": "history_next", "cursor": cursor})
            if not page:
                return
            yield from page

    def tail(self, count: int) -> list[Event]:
        events: list[Event] = self._channel.call({"call": "history_tail", "count": count})
        return events
