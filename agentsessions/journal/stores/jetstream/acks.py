"""A JetStream publish and its acknowledgement, answered on one reply subscription.

nats-py's ``JetStreamContext.publish`` makes every publish a request: a random token per
call (a getrandom syscall), an ``asyncio.wait_for`` timer, and the ack parsed into a
dataclass through ``dataclasses.fields``. Profiled per commit, that was ~30 us of the
~150 us of CPU nats-py spent on one publish (1 and 8 publishers alike). Here a connection
subscribes ONCE to ``<inbox>.*`` and each publish names a reply subject of its own on it
(a counter, not a random token): its future is resolved when the server answers, and the
caller's deadline (``Loop.call``) bounds the wait, cancelling it.

Nothing about what the server says is changed: an :class:`Ack` carries its stream sequence
(the first message's on a duplicate), or its API error codes, or that nobody answered
(``503`` no responders: no stream leader, nothing stored).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from dataclasses import dataclass
from typing import Any

NO_RESPONDERS = "503"  # the status of the server's answer when no stream took the message


@dataclass(frozen=True)
class Ack:
    """The server's answer to one publish."""

    seq: int = 0  # the message's stream sequence (0 when it was not stored)
    code: int = 0  # an API error's HTTP-like code (0: no error)
    err_code: int = 0  # and its JetStream error code
    description: str = ""
    no_responders: bool = False  # no stream took it (an election): nothing was stored


def parse(headers: dict[str, str] | None, data: bytes) -> Ack:
    """The :class:`Ack` a reply with ``headers`` and body ``data`` says; ValueError for a
    body that is not a JetStream publish answer."""
    if headers and headers.get("Status") == NO_RESPONDERS:
        return Ack(no_responders=True)
    answer = json.loads(data)
    if not isinstance(answer, dict):
        raise ValueError(f"not a publish acknowledgement: {data[:80]!r}")
    error = answer.get("error")
    if error is not None:
        return Ack(
            code=int(error.get("code") or 0), err_code=int(error.get("err_code") or 0),
            description=str(error.get("description", "")),
        )  # fmt: skip
    seq = answer.get("seq")
    if not isinstance(seq, int) or seq <= 0:
        raise ValueError(f"an acknowledgement without a stream sequence: {data[:80]!r}")
    return Ack(seq=seq)


class Acks:
    """The reply subscription of one connection and the publishes waiting on it."""

    def __init__(self, nc: Any) -> None:
        self._nc = nc
        self._prefix = ""
        self._waiting: dict[str, asyncio.Future[Any]] = {}
        self._count = itertools.count()

    async def start(self) -> None:
        """Subscribe to the replies (nats-py subscribes again after a reconnect)."""
        self._prefix = self._nc.new_inbox() + "."
        await self._nc.subscribe(self._prefix + "*", cb=self._answered)

    async def _answered(self, msg: Any) -> None:
        future = self._waiting.pop(msg.subject, None)
        if future is not None and not future.done():
            future.set_result(msg)

    async def publish(self, subject: str, body: bytes, headers: dict[str, str]) -> Ack:
        """Publish ``body`` on ``subject`` and wait for the server's answer (no deadline of
        its own: the caller's cancels it, and its reply is then dropped)."""
        reply = f"{self._prefix}{next(self._count)}"
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[reply] = future
        try:
            await self._nc.publish(subject, body, reply=reply, headers=headers)
            msg = await future
        finally:
            self._waiting.pop(reply, None)
        return parse(msg.headers, msg.data or b"")
