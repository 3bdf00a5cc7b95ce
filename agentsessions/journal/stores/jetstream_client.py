"""The JetStream calls a store makes, as synchronous methods over a :class:`Loop`.

Every foreign exception is mapped here, where it enters: an unreachable server or a
missing stream is :class:`UnavailableError`; a lost CAS is reported as ``None`` from
:meth:`Client.publish`, for the writer to explain (a fence, a delete or another commit).
A publish whose answer does not come is an unknown outcome: it is retried with the SAME
``Nats-Msg-Id`` (the server's window turns a landed retry into ``duplicate``), and if the
retry meets a lost CAS, the subject's last message tells whether ours is the one that
landed. A commit is never appended twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client as NatsClient
from nats.js import api

from agentsessions.errors import UnavailableError
from agentsessions.journal.stores import jetstream_wire as wire
from agentsessions.journal.stores.jetstream_conn import (
    JetStreamOptions,
    check_server_synced,
    stream_config,
    stream_problems,
)
from agentsessions.journal.stores.jetstream_loop import Loop, OutcomeUnknown

WRONG_LAST_SEQUENCE = 10071  # Nats-Expected-Last-Subject-Sequence did not match
_PUBLISH_TRIES = 4
T = TypeVar("T")


class Client:
    """One connection to one stream, driven from synchronous code."""

    def __init__(self, options: JetStreamOptions) -> None:
        self.options = options
        self._loop = Loop()
        self._nc: NatsClient | None = None
        self.fetched = 0  # messages read from the stream so far (tests bound the cost)
        self.round_trips = 0  # batched reads (last_many) made so far (tests bound the cost)
        self.genesis = ""  # the stream identity this connection found (jetstream_identity)
        self.stream_config: Any = None  # the stream's settings, as found or created
        try:
            # connect first: a server that is down is named as such, not by its monitor
            self._nc = self._loop.call(self._connect(), options.timeout + 1)
            check_server_synced(options)
            self._js = self._nc.jetstream(timeout=options.timeout)
            self._loop.call(self._ensure_stream(), options.timeout + 1)
        except OutcomeUnknown:
            self.close()
            raise UnavailableError(
                f"the NATS server at {options.url} did not answer within {options.timeout:g}s"
            ) from None
        except BaseException:
            self.close()
            raise

    async def _connect(self) -> NatsClient:
        async def quiet(exc: Exception) -> None:  # nats-py prints tracebacks otherwise
            del exc

        try:
            nc = await nats.connect(
                self.options.url, error_cb=quiet, connect_timeout=2, max_reconnect_attempts=3,
                allow_reconnect=True,
            )  # fmt: skip
        except (OSError, nats.errors.Error) as exc:
            raise UnavailableError(
                f"cannot connect to the NATS server at {self.options.url}: {exc or type(exc)}",
                hint="is nats-server running with JetStream enabled?",
            ) from None
        if not nc._server_info.get("jetstream"):
            await nc.close()
            raise UnavailableError(f"the NATS server at {self.options.url} has no JetStream")
        return nc

    async def _ensure_stream(self) -> None:
        opts = self.options
        try:
            info = await self._js.stream_info(opts.stream)
        except nats.js.errors.NotFoundError:
            config = stream_config(opts)
            config["storage"] = api.StorageType(config["storage"])
            try:
                self.stream_config = (await self._js.add_stream(api.StreamConfig(**config))).config
            except nats.js.errors.APIError as exc:  # e.g. another stream holds P.>
                raise UnavailableError(
                    f"cannot create the JetStream stream {opts.stream!r} for {opts.prefix}.> "
                    f"at {opts.url}: {exc.description or exc}",
                    hint="another stream may hold these subjects: name it (?stream=NAME) or "
                    "use another prefix (?prefix=NAME)",
                ) from None
            return
        self.stream_config = info.config
        problems = stream_problems(info.config, opts)
        if problems:
            raise UnavailableError(
                f"the JetStream stream {opts.stream!r} at {opts.url} cannot hold journals: "
                + "; ".join(problems),
                hint="use another stream (?stream=NAME) or fix its settings",
            )

    @property
    def server_info(self) -> dict[str, Any]:
        """The server's INFO (``max_payload``, ``version``, ``jetstream``)."""
        assert self._nc is not None
        return dict(self._nc._server_info)

    def close(self) -> None:
        """Drain the connection and stop the loop (idempotent)."""
        if self._nc is not None:
            with contextlib.suppress(OutcomeUnknown, RuntimeError, nats.errors.Error):
                self._loop.call(self._nc.close(), self.options.timeout)  # nothing waits on it
        self._loop.close()

    # -- reads ------------------------------------------------------------------------
    def last(self, subject: str) -> wire.Message | None:
        """The subject's last message (None: none yet)."""
        return self._call(self._last(subject))

    async def _last(self, subject: str) -> wire.Message | None:
        try:
            raw = await self._js.get_msg(self.options.stream, subject=subject)
        except nats.js.errors.NotFoundError:
            return None
        self.fetched += 1
        return wire.decode(raw.data or b"", int(raw.seq or 0), subject)

    def at(self, subject: str, seq: int) -> wire.Message | None:
        """The first message on ``subject`` at stream sequence ``seq`` or after (None: none)."""
        return self._call(self._at(subject, seq))

    async def _at(self, subject: str, seq: int) -> wire.Message | None:
        try:
            raw = await self._js.get_msg(self.options.stream, seq=seq, subject=subject, next=True)
        except nats.js.errors.NotFoundError:
            return None
        self.fetched += 1
        return wire.decode(raw.data or b"", int(raw.seq or 0), subject)

    def messages(self, subject: str, after: int = 0, until: int = 0) -> list[wire.Message]:
        """The messages on ``subject`` with a stream sequence above ``after``, in order; with
        ``until``, none after the first whose head is at journal seq ``until`` or beyond."""
        return self._call(self._messages(subject, after, until))

    async def _messages(self, subject: str, after: int, until: int) -> list[wire.Message]:
        last = await self._last(subject)
        out: list[wire.Message] = []
        if last is None or last.stream_seq <= after:
            return out
        seq = after + 1
        while seq < last.stream_seq:
            msg = await self._at(subject, seq)
            if msg is None:
                break
            out.append(msg)
            if until and wire.head_seq(msg) >= until:
                return out
            seq = msg.stream_seq + 1
        if seq == last.stream_seq:
            out.append(last)  # already fetched, to know where the subject ends
        return out

    def subjects(self, pattern: str) -> dict[str, int]:
        """The stream's subjects matching ``pattern``, with their message counts."""
        return self._call(self._subjects(pattern))

    async def _subjects(self, pattern: str) -> dict[str, int]:
        info = await self._js.stream_info(self.options.stream, subjects_filter=pattern)
        return dict(info.state.subjects or {})

    def subscribe(self, subject: str) -> Any:
        """A core subscription on ``subject``: a wake-up for followers (each new message)."""
        assert self._nc is not None
        return self._call(self._nc.subscribe(subject))

    def wait(self, sub: Any, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for ``sub``'s next message; False if none came."""
        try:
            self._loop.call(sub.next_msg(timeout=timeout), timeout + self.options.timeout)
        except (OutcomeUnknown, nats.errors.TimeoutError):
            return False
        return True

    def unsubscribe(self, sub: Any) -> None:
        """End a follower's subscription."""
        with contextlib.suppress(UnavailableError, nats.errors.Error):
            self._call(sub.unsubscribe())  # if the connection went, so did the subscription

    # -- the one write ------------------------------------------------------------------
    def publish(self, subject: str, body: bytes, *, expect: int, token: str) -> int | None:
        """Append ``body`` if ``subject``'s last stream sequence is ``expect``; its stream
        sequence, or None if the CAS was lost. Retries an unknown outcome with one Msg-Id."""
        mid = wire.msg_id(subject, token)
        headers = {"Nats-Msg-Id": mid, "Nats-Expected-Last-Subject-Sequence": str(expect)}
        unknown = False
        for _ in range(_PUBLISH_TRIES):
            try:
                return self._loop.call(
                    self._publish(subject, body, headers, mid, unknown), self.options.timeout + 1
                )
            except OutcomeUnknown:
                unknown = True  # it may have landed: the retry carries the same Msg-Id
        raise UnavailableError(
            f"the NATS server at {self.options.url} did not acknowledge a commit on {subject} "
            f"after {_PUBLISH_TRIES} tries; it may or may not have landed (retrying with the "
            "same commit id resolves it)",
            hint="agentsessions get SESSION  # shows the head",
        )

    async def _publish(
        self, subject: str, body: bytes, headers: dict[str, str], mid: str, unknown: bool
    ) -> int | None:
        try:
            ack = await self._js.publish(subject, body, headers=dict(headers))
        except nats.js.errors.APIError as exc:
            if exc.err_code != WRONG_LAST_SEQUENCE:
                raise UnavailableError(f"JetStream refused a commit on {subject}: {exc}") from None
            if unknown:  # our earlier try may be the message that moved the subject
                raw = await self._js.get_msg(self.options.stream, subject=subject)
                if (raw.headers or {}).get("Nats-Msg-Id") == mid:
                    return int(raw.seq or 0)
            return None
        except nats.js.errors.NoStreamResponseError:  # a leader election: the next try may land
            await asyncio.sleep(0.05)
            raise OutcomeUnknown("no stream responded") from None
        except (nats.errors.ConnectionClosedError, nats.errors.OutboundBufferLimitError) as exc:
            raise UnavailableError(
                f"lost the NATS connection to {self.options.url}: {exc}"
            ) from exc
        return int(ack.seq)

    def run_js(self, fn: Callable[[Any], Coroutine[Any, Any, T]]) -> T:
        """Run ``fn(jetstream_context)`` on the loop, its errors mapped as every call's (the
        key stream's requests: ``jetstream_keys.py``)."""
        return self._call(fn(self._js))

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        try:
            return self._loop.call(coro, self.options.timeout + 1)
        except OutcomeUnknown:
            raise UnavailableError(
                f"the NATS server at {self.options.url} did not answer within "
                f"{self.options.timeout:g}s"
            ) from None
        except nats.errors.Error as exc:
            raise UnavailableError(f"NATS at {self.options.url}: {exc!r}") from None


class TooManyResults(Exception):
    """A batched read matched more subjects than the server answers in one batch."""


async def _batched_last(client: Client, filters: list[str]) -> dict[str, tuple[int, bytes]]:
    """One ``$JS.API.DIRECT.GET`` with ``multi_last``: the last message of every subject
    matching ``filters`` as (stream sequence, body), streamed back on one inbox."""
    assert client._nc is not None
    nc, opts = client._nc, client.options
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    out: dict[str, tuple[int, bytes]] = {}
    try:
        request = json.dumps({"multi_last": filters}).encode()
        await nc.publish(f"$JS.API.DIRECT.GET.{opts.stream}", request, reply=inbox)
        while True:
            msg = await sub.next_msg(timeout=opts.timeout)
            headers = msg.headers or {}
            status = headers.get("Status")
            if status in ("204", "404"):  # the end of the batch; no subject matched
                return out
            if status == "413":
                raise TooManyResults(filters)
            if status:
                raise UnavailableError(
                    f"JetStream refused a batched read of {opts.stream}: {status} "
                    f"{headers.get('Description', '')}"
                )
            out[headers["Nats-Subject"]] = (int(headers["Nats-Sequence"]), msg.data or b"")
    finally:
        with contextlib.suppress(nats.errors.Error):
            await sub.unsubscribe()


def last_many(client: Client, filters: list[str]) -> dict[str, tuple[int, bytes]]:
    """The last message of every subject matching ``filters`` (wildcards allowed), in one
    round trip: (stream sequence, body) by subject. :class:`TooManyResults` past the
    server's batch limit (1,024 subjects on 2.15): the caller splits the request."""
    client.round_trips += 1
    got = client._call(_batched_last(client, filters))
    client.fetched += len(got)
    return got


def watch(client: Client, pattern: str, on_subject: Callable[[str], None]) -> Any:
    """A core subscription calling ``on_subject(subject)`` (on the client's loop thread) for
    each message published on ``pattern``; in place on the server when this returns."""
    assert client._nc is not None
    nc = client._nc

    async def woke(msg: Any) -> None:
        on_subject(str(msg.subject))

    async def subscribe() -> Any:
        sub = await nc.subscribe(pattern, cb=woke)
        await nc.flush(timeout=max(1, int(client.options.timeout)))  # in place before a read
        return sub

    return client._call(subscribe())


def reconnects(client: Client) -> int:
    """How many times the connection was re-established (a core subscription may have
    missed messages across each)."""
    return int(client._nc.stats["reconnects"]) if client._nc is not None else 0


def stream_state(client: Client) -> Any:
    """The stream's state (first and last sequence, deleted count), as the server says."""

    async def info() -> Any:
        return (await client._js.stream_info(client.options.stream)).state

    return client._call(info())
