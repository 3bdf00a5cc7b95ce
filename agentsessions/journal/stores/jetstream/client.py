"""The JetStream calls a store makes, as synchronous methods over a :class:`Loop`.

Every foreign exception is mapped here, where it enters: an unreachable server or a
missing stream is :class:`UnavailableError`; a lost CAS is reported as ``None`` from
:meth:`Client.publish`, for the writer to explain (a fence, a delete or another commit).
A publish whose answer does not come is an unknown outcome: it is retried with the SAME
``Nats-Msg-Id`` and the same CAS (the server's window turns a landed retry into
``duplicate`` on three replicas), and if a retry meets a lost CAS (10071 on one node, or
10164, which R3 was seen to return with no other writer), the first message after the
expected sequence tells: ours means it landed, another's means the subject moved, none
means retry. During a leader election publishes fail at once (no responders); they are
retried the same way until ``commit_timeout``. A commit is never appended twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable, Coroutine
from dataclasses import replace
from typing import Any, TypeVar

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client as NatsClient
from nats.js import api

from agentsessions.errors import UnavailableError
from agentsessions.journal.stores.jetstream import lean, outcome, shards, wire
from agentsessions.journal.stores.jetstream.acks import Acks
from agentsessions.journal.stores.jetstream.conn import (
    JetStreamOptions,
    check_server_synced,
    stream_config,
    stream_problems,
)
from agentsessions.journal.stores.jetstream.loop import Loop, OutcomeUnknown
from agentsessions.journal.stores.jetstream.outcome import Try as _Try

_TRY_SECONDS = 2.0  # one publish try (acks take ms; a longer wait is resolved by reading)
_RETRY_FIRST, _RETRY_MAX = 0.05, 0.5  # backoff between tries during an election
_UNKNOWN, _CAS_LOST, _NO_LEADER = _Try.UNKNOWN, _Try.CAS_LOST, _Try.NO_LEADER
_NOTHING_STORED = (_Try.NO_LEADER, _Try.UNREACHED)  # a try that cannot have landed
T = TypeVar("T")


class Client:
    """One connection to one stream, driven from synchronous code."""

    def __init__(self, options: JetStreamOptions) -> None:
        self.options = options
        self._loop = Loop()
        self._nc: NatsClient | None = None
        self.fetched = 0  # messages read from the stream so far (tests bound the cost)
        self.round_trips = 0  # read requests made so far (tests bound the cost)
        self.genesis = ""  # the stream identity this connection found (jetstream/identity.py)
        self.shards = 1  # streams the deployment's sessions are spread over (jetstream/shards.py)
        self.shard_ids: list[str] = []  # shard k's genesis id at [k - 1], as the genesis says
        self.stream_config: Any = None  # the stream's settings, as found or created
        self._try = min(options.timeout, _TRY_SECONDS)
        self._lean: lean.LeanPublisher | None = None  # the commit path's publisher (lean.py)
        try:
            # connect first: a server that is down is named as such, not by its monitor
            self._nc = self._loop.call(self._connect(), options.timeout + 1)
            check_server_synced(options)
            self._js = self._nc.jetstream(timeout=options.timeout)
            self._acks = Acks(self._nc)
            self._loop.call(self._acks.start(), options.timeout + 1)
            self._loop.call(self._ensure_stream(options), options.timeout + 1)
            usable = lean.usable(options, self._nc._server_info)
            self._lean = lean.LeanPublisher(options) if usable else None
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

        limit = self.options.connect_timeout
        try:  # the whole first connection within connect_timeout, not each try of it
            nc = await asyncio.wait_for(nats.connect(
                servers=self.options.servers, error_cb=quiet, connect_timeout=limit,
                max_reconnect_attempts=3, allow_reconnect=True,
            ), limit)  # fmt: skip
        except (OSError, nats.errors.Error, TimeoutError) as exc:
            why = f"not reached within {limit:g}s" if isinstance(exc, TimeoutError) else exc
            raise UnavailableError(
                f"cannot connect to the NATS server at {self.options.url}: {why or type(exc)}",
                hint="is nats-server running with JetStream enabled? (the store URL's "
                "connect_timeout=SECONDS sets how long to try)",
            ) from None
        if not nc._server_info.get("jetstream"):
            await nc.close()
            raise UnavailableError(f"the NATS server at {self.options.url} has no JetStream")
        return nc

    def ensure_shard(self, k: int) -> Any:
        """Find (or create) the stream of shard ``k``, held to the home stream's rules; its
        state (first and last sequence, deleted count)."""
        stream = shards.shard_stream(self.options.stream, k)
        prefix = shards.shard_prefix(self.options.prefix, k)
        opts = replace(self.options, stream=stream, prefix=prefix)
        return self._call(lambda: self._ensure_stream(opts))

    def stream_for(self, subject: str) -> str:
        """The stream holding ``subject`` (or a pattern): its shard's (jetstream/shards.py)."""
        k = shards.shard_index(self.options.prefix, subject)
        return shards.shard_stream(self.options.stream, k)

    async def _ensure_stream(self, opts: JetStreamOptions) -> Any:
        """Find (or create) ``opts.stream`` held to a journal's rules; its state."""
        try:
            info = await self._js.stream_info(opts.stream)
        except nats.js.errors.NotFoundError:
            config = stream_config(opts)
            config["storage"] = api.StorageType(config["storage"])
            try:
                made = await self._js.add_stream(api.StreamConfig(**config))
                self.stream_config = self.stream_config or made.config
            except nats.js.errors.APIError as exc:  # e.g. another stream holds P.>
                raise UnavailableError(
                    f"cannot create the JetStream stream {opts.stream!r} for {opts.prefix}.> "
                    f"at {opts.url}: {exc.description or exc}",
                    hint="another stream may hold these subjects: name it (?stream=NAME) or "
                    "use another prefix (?prefix=NAME)",
                ) from None
            return made.state
        self.stream_config = self.stream_config or info.config  # the home stream's
        problems = stream_problems(info.config, opts)
        if problems:
            raise UnavailableError(
                f"the JetStream stream {opts.stream!r} at {opts.url} cannot hold journals: "
                + "; ".join(problems),
                hint="use another stream (?stream=NAME) or fix its settings",
            )
        return info.state

    @property
    def server_info(self) -> dict[str, Any]:
        """The server's INFO (``max_payload``, ``version``, ``jetstream``)."""
        assert self._nc is not None
        return dict(self._nc._server_info)

    def close(self) -> None:
        """Drain the connection and stop the loop (idempotent)."""
        if self._lean is not None:
            self._lean.close()
        if self._nc is not None:
            with contextlib.suppress(OutcomeUnknown, RuntimeError, nats.errors.Error):
                self._loop.call(self._nc.close(), self.options.timeout)  # nothing waits on it
        self._loop.close()

    # -- reads ------------------------------------------------------------------------
    def last(self, subject: str) -> wire.Message | None:
        """The subject's last message (None: none yet)."""
        return self._call(lambda: self._last(subject))

    async def _last(self, subject: str) -> wire.Message | None:
        try:
            self.round_trips += 1
            raw = await self._js.get_msg(self.stream_for(subject), subject=subject)
        except nats.js.errors.NotFoundError:
            return None
        self.fetched += 1
        return wire.decode(raw.data or b"", int(raw.seq or 0), subject)

    def at(self, subject: str, seq: int) -> wire.Message | None:
        """The first message on ``subject`` at stream sequence ``seq`` or after (None: none)."""
        return self._call(lambda: self._at(subject, seq))

    async def _at(self, subject: str, seq: int) -> wire.Message | None:
        try:  # through the leader (STREAM.MSG.GET): it has every acknowledged message
            self.round_trips += 1
            stream = self.stream_for(subject)
            raw = await self._js.get_msg(stream, seq=seq, subject=subject, next=True)
        except nats.js.errors.NotFoundError:
            return None
        self.fetched += 1
        return wire.decode(raw.data or b"", int(raw.seq or 0), subject)

    def messages(self, subject: str, after: int = 0, until: int = 0) -> list[wire.Message]:
        """The messages on ``subject`` with a stream sequence above ``after``, in order; with
        ``until``, none after the first whose head is at journal seq ``until`` or beyond."""
        return self._call(lambda: self._messages(subject, after, until))

    async def _messages(self, subject: str, after: int, until: int) -> list[wire.Message]:
        last = await self._last(subject)  # through the leader: it has every acknowledged one
        if last is None or last.stream_seq <= after:
            return []
        return await _read_to(self, subject, after, last, until, 0)

    def subjects(self, pattern: str) -> dict[str, int]:
        """The stream's subjects matching ``pattern``, with their message counts."""
        return self._call(lambda: self._subjects(pattern))

    async def _subjects(self, pattern: str) -> dict[str, int]:
        info = await self._js.stream_info(self.stream_for(pattern), subjects_filter=pattern)
        return dict(info.state.subjects or {})

    def subscribe(self, subject: str) -> Any:
        """A core subscription on ``subject``: a wake-up for followers (each new message)."""
        nc = self._nc
        assert nc is not None
        return self._call(lambda: nc.subscribe(subject))

    def wait(self, sub: Any, timeout: float) -> bytes | None:
        """Wait up to ``timeout`` seconds for ``sub``'s next message: its body (what was
        published, which may not be stored yet, or ever), or None if none came."""
        try:
            msg = self._loop.call(sub.next_msg(timeout=timeout), timeout + self.options.timeout)
        except (OutcomeUnknown, nats.errors.TimeoutError):
            return None
        return bytes(msg.data or b"")

    def unsubscribe(self, sub: Any) -> None:
        """End a follower's subscription."""
        with contextlib.suppress(UnavailableError, nats.errors.Error):
            self._call(sub.unsubscribe)  # if the connection went, so did the subscription

    # -- the one write ------------------------------------------------------------------
    def publish(self, subject: str, body: bytes, *, expect: int, token: str) -> int | None:
        """Append ``body`` if ``subject``'s last stream sequence is ``expect``: its stream
        sequence, or None if the CAS was lost to another message. The one place that rides
        out a leader election and resolves an unknown outcome (the module docstring):
        every try carries the same ``Nats-Msg-Id`` and the same CAS, until it is answered
        or ``commit_timeout`` has passed (then UnavailableError)."""
        mid = wire.msg_id(subject, token)
        headers = {"Nats-Msg-Id": mid, "Nats-Expected-Last-Subject-Sequence": str(expect)}
        deadline = time.monotonic() + self.options.commit_timeout
        sent = False  # a try may have reached the stream: it may have landed
        delay = _RETRY_FIRST
        while True:
            try:
                got = self._try_once(subject, body, headers)
            except OutcomeUnknown:
                got, sent = _UNKNOWN, True
            if isinstance(got, int):
                return got  # stored, or a duplicate: the first try's sequence
            if got is _CAS_LOST and not sent:
                return None  # nothing of ours is out there: the subject moved
            if got not in _NOTHING_STORED:  # an unknown outcome, or a CAS miss that may be ours
                try:
                    found = self._loop.call(self._landed(subject, expect, mid), self._try + 1)
                except OutcomeUnknown:
                    found = _UNKNOWN
                if isinstance(found, int):
                    return found  # ours is the message after the expected one: it landed
                if found is _CAS_LOST:
                    return None
            if time.monotonic() + delay >= deadline:
                raise self._unanswered(subject, sent, got is _Try.UNREACHED)
            time.sleep(delay)  # an election takes seconds (FACTS.md: 4-8 s)
            delay = min(delay * 2, _RETRY_MAX)

    def _try_once(self, subject: str, body: bytes, headers: dict[str, str]) -> int | _Try:
        """One try, bounded by ``_try``: a sequence, or _CAS_LOST, _NO_LEADER (nothing
        stored), _UNKNOWN; OutcomeUnknown when it went unanswered. Published on the lean
        path (``jetstream/lean.py``) unless the servers ask for TLS or credentials."""
        publisher = self._lean
        if publisher is None:
            return self._loop.call(self._publish(subject, body, headers), self._try)
        try:
            ack = publisher.publish(subject, body, headers, self._try)
        except lean.Unreached:
            return _Try.UNREACHED
        except lean.NotLean:  # a server asks for TLS or credentials: nats-py honours them
            self._lean = None
            publisher.close()
            return self._loop.call(self._publish(subject, body, headers), self._try)
        except ValueError as exc:
            raise UnavailableError(f"JetStream answered a commit on {subject}: {exc}") from None
        return outcome.meaning(ack, subject)

    async def _publish(self, subject: str, body: bytes, headers: dict[str, str]) -> int | _Try:
        """One try through nats-py (jetstream/acks.py); what :meth:`_try_once` returns."""
        try:
            ack = await self._acks.publish(subject, body, headers)
        except (nats.errors.ConnectionClosedError, nats.errors.OutboundBufferLimitError) as exc:
            raise UnavailableError(
                f"lost the NATS connection to {self.options.url}: {exc}"
            ) from exc
        except ValueError as exc:
            raise UnavailableError(f"JetStream answered a commit on {subject}: {exc}") from None
        return outcome.meaning(ack, subject)

    def run_js(self, fn: Callable[[Any], Coroutine[Any, Any, T]]) -> T:
        """Run ``fn(jetstream/context.py)`` on the loop, its errors mapped as every call's (the
        key stream's requests: ``jetstream/keys.py``)."""
        return self._call(lambda: fn(self._js))

    async def _landed(self, subject: str, expect: int, mid: str) -> int | _Try:
        """Whether our message landed: the first message on ``subject`` after ``expect``
        is the one the CAS let in. Ours: its sequence; another's: _CAS_LOST; none: _UNKNOWN
        (the subject has not moved, so a retry cannot land twice)."""
        try:
            raw = await self._js.get_msg(
                self.stream_for(subject), seq=expect + 1, subject=subject, next=True
            )
        except nats.js.errors.NotFoundError:
            return _UNKNOWN
        except nats.errors.Error:
            return _UNKNOWN  # an election: ask again on the next round
        if (raw.headers or {}).get("Nats-Msg-Id") == mid:
            return int(raw.seq or 0)
        return _CAS_LOST

    def _unanswered(self, subject: str, sent: bool, unreached: bool) -> UnavailableError:
        within = f"within {self.options.commit_timeout:g}s (commit_timeout=)"
        if not sent and unreached:
            return UnavailableError(
                f"cannot reach the NATS server at {self.options.url} to commit on {subject} "
                f"{within}; nothing was written",
                hint="is nats-server running? (the store URL lists every server to try)",
            )
        if not sent:
            return UnavailableError(
                f"no JetStream node at {self.options.url} took a commit on {subject} {within} "
                "(no stream leader); nothing was written",
                hint="is a majority of the cluster's nodes running?",
            )
        return UnavailableError(
            f"the NATS server at {self.options.url} did not acknowledge a commit on {subject} "
            f"{within}; it may or may not have landed (retrying with the same commit id "
            "resolves it)",
            hint="agentsessions get SESSION  # shows the head",
        )

    def _call(self, coro: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Run a read; one that meets an election (no responders, 503, no answer) is asked
        again until ``commit_timeout`` has passed: reads change nothing, so a retry is safe."""
        deadline = time.monotonic() + self.options.commit_timeout
        delay = _RETRY_FIRST
        while True:
            try:
                return self._loop.call(coro(), self.options.timeout + 1)
            except OutcomeUnknown:  # e.g. asked of a leader that died: the next one answers
                if time.monotonic() + delay >= deadline:
                    raise UnavailableError(
                        f"the NATS server at {self.options.url} did not answer within "
                        f"{self.options.timeout:g}s"
                    ) from None
            except nats.errors.Error as exc:
                if not _electing(exc) or time.monotonic() + delay >= deadline:
                    raise UnavailableError(f"NATS at {self.options.url}: {exc!r}") from None
            time.sleep(delay)
            delay = min(delay * 2, _RETRY_MAX)


def _electing(exc: Exception) -> bool:
    """A read refused because the stream has no leader right now (it will have one)."""
    if isinstance(exc, (nats.errors.NoRespondersError, nats.js.errors.NoStreamResponseError)):
        return True
    return isinstance(exc, nats.js.errors.APIError) and exc.code == 503


class TooManyResults(Exception):
    """A batched read matched more subjects than the server answers in one batch."""


def _batch_ended(headers: dict[str, str], what: str) -> bool:
    """Whether a batched direct get's message with ``headers`` ends the batch (204 or 404);
    False for a message that carries one. A refusal raises: 503 (no responders: an election)
    as NoRespondersError, which ``_call`` waits out; any other as UnavailableError."""
    status = headers.get("Status")
    if not status:
        return False
    if status in ("204", "404"):
        return True
    if status == "503":
        raise nats.errors.NoRespondersError
    raise UnavailableError(
        f"JetStream refused a batched read of {what}: {status} {headers.get('Description', '')}"
    )


async def _batched_last(
    client: Client, stream: str, filters: list[str]
) -> dict[str, tuple[int, bytes]]:
    """One ``$JS.API.DIRECT.GET`` with ``multi_last`` to ``stream``: the last message of
    every subject matching ``filters`` as (stream sequence, body), on one inbox."""
    assert client._nc is not None
    nc, opts = client._nc, client.options
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    out: dict[str, tuple[int, bytes]] = {}
    try:
        request = json.dumps({"multi_last": filters}).encode()
        await nc.publish(f"$JS.API.DIRECT.GET.{stream}", request, reply=inbox)
        while True:
            msg = await sub.next_msg(timeout=opts.timeout)
            headers = msg.headers or {}
            if headers.get("Status") == "413":
                raise TooManyResults(filters)
            if _batch_ended(headers, stream):  # no subject matched, or all were sent
                return out
            out[headers["Nats-Subject"]] = (int(headers["Nats-Sequence"]), msg.data or b"")
    finally:
        with contextlib.suppress(nats.errors.Error):
            await sub.unsubscribe()


def last_many(client: Client, filters: list[str]) -> dict[str, tuple[int, bytes]]:
    """The last message of every subject matching ``filters`` (wildcards allowed), in one
    round trip: (stream sequence, body) by subject. :class:`TooManyResults` past the
    server's batch limit (1,024 subjects on 2.15): the caller splits the request. Filters
    in several shards' streams take a request per stream."""
    by_stream: dict[str, list[str]] = {}
    for name in filters:
        by_stream.setdefault(client.stream_for(name), []).append(name)
    got: dict[str, tuple[int, bytes]] = {}
    for stream, names in by_stream.items():
        client.round_trips += 1
        got.update(client._call(lambda s=stream, n=names: _batched_last(client, s, n)))  # type: ignore[misc]
    client.fetched += len(got)
    return got


READ_BATCH = 256  # messages one batched read asks for
READ_BATCH_BYTES = 8 << 20  # and bytes (a batch holds at least one message, however large)


async def _batch(
    client: Client, subject: str, seq: int, limit: int, max_bytes: int
) -> list[tuple[wire.Message, int]]:
    """One ``$JS.API.DIRECT.GET`` with ``batch``: up to ``limit`` messages on ``subject``
    from stream sequence ``seq`` on (and up to ``max_bytes``), streamed back on one inbox,
    each with its size. Any replica may answer (the stream allows direct gets), from what
    it has applied: the subject's messages in order with no gap, but maybe not the newest."""
    assert client._nc is not None
    nc, opts = client._nc, client.options
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    out: list[tuple[wire.Message, int]] = []
    try:
        request = {"seq": seq, "next_by_subj": subject, "batch": limit, "max_bytes": max_bytes}
        client.round_trips += 1
        stream = client.stream_for(subject)
        await nc.publish(f"$JS.API.DIRECT.GET.{stream}", json.dumps(request).encode(), inbox)
        while True:
            msg = await sub.next_msg(timeout=opts.timeout)
            headers = msg.headers or {}
            if _batch_ended(headers, subject):  # nothing (more) from seq on
                return out
            client.fetched += 1
            data = msg.data or b""
            out.append((wire.decode(data, int(headers["Nats-Sequence"]), subject), len(data)))
            if "Nats-Num-Pending" not in headers:  # a server before 2.11: one message, no EOB
                return out
    finally:
        with contextlib.suppress(nats.errors.Error):
            await sub.unsubscribe()


async def _read_to(
    client: Client,
    subject: str,
    after: int,
    last: wire.Message,
    until: int,
    budget: int,
    known: int = 0,
) -> list[wire.Message]:
    """The messages on ``subject`` above stream sequence ``after`` through ``last`` (read
    through the leader), in order, ending with ``last``, in batches; with ``until``, none
    after the first whose head is at journal seq ``until`` or beyond; with ``budget``, none
    after the batch that brings the bodies read to ``budget`` bytes. ``known``: a journal
    seq the messages after ``after`` are known to be past (so a batch up to ``until``
    asks for no more messages than there are records left; 0: unknown).

    A batch may be answered by a replica that has not applied the newest messages yet (a
    direct get is not read-after-write coherent: ADR-31). Each batch is still a gapless run
    of the subject from where it starts (a replica applies the log in order, and the stream
    denies delete and purge), so a short batch only means "ask again from there"; one that
    brings nothing is asked of the leader instead, for one message. ``last`` itself comes
    from the leader, so what a writer was acknowledged is always read."""
    out: list[wire.Message] = []
    seq, end, spent = after + 1, last.stream_seq, 0
    while seq < end:
        room = READ_BATCH_BYTES if not budget else min(READ_BATCH_BYTES, budget - spent)
        limit = READ_BATCH  # every message but a fence brings a record: so many are left
        if until and known:
            limit = max(1, min(READ_BATCH, until - known))
        got = await _batch(client, subject, seq, limit, room)
        if not got:  # the replica that answered lags behind seq: the leader has them all
            msg = await client._at(subject, seq)
            if msg is None:
                break
            got = [(msg, 0)]
        for msg, size in got:
            if msg.stream_seq >= end:  # at last (or past it: landed since)
                seq = end
                break
            out.append(msg)
            spent += size
            seq, known = msg.stream_seq + 1, max(known, wire.head_seq(msg))
            if until and known >= until:
                return out
        if budget and spent >= budget and seq < end:
            return out
    if seq == end:
        out.append(last)  # already fetched, to know where the subject ends
    return out


def read_to(
    client: Client,
    subject: str,
    after: int,
    last: wire.Message,
    until: int = 0,
    budget: int = 0,
    known: int = 0,
) -> list[wire.Message]:
    """:meth:`Client.messages` for a caller that has already read the subject's ``last``
    message (through :meth:`Client.last`), bounded by ``budget`` bytes of bodies if given:
    it ends with ``last`` unless ``until`` or ``budget`` stopped it first. ``known``: a
    journal seq the messages after ``after`` are past (it sizes batches up to ``until``)."""
    if last.stream_seq <= after:
        return []
    return client._call(lambda: _read_to(client, subject, after, last, until, budget, known))


def last_and_prior(client: Client, subject: str) -> tuple[wire.Message | None, int]:
    """The subject's last message (through the leader, as :meth:`Client.last`) and the
    stream sequence its publish expected to follow (its CAS header: the message before it
    on the subject; 0: none, or published without one)."""

    async def get() -> tuple[wire.Message | None, int]:
        try:
            client.round_trips += 1
            raw = await client._js.get_msg(client.stream_for(subject), subject=subject)
        except nats.js.errors.NotFoundError:
            return None, 0
        client.fetched += 1
        prior = (raw.headers or {}).get("Nats-Expected-Last-Subject-Sequence", "0")
        msg = wire.decode(raw.data or b"", int(raw.seq or 0), subject)
        return msg, int(prior) if prior.isdigit() else 0

    return client._call(get)


async def flush(nc: NatsClient, timeout: int) -> None:
    """``nc.flush(timeout)`` (what was sent has reached the server), except that a PONG
    coming after the deadline is harmless. nats-py cancels a timed-out flush's PONG future
    but leaves it queued, and the late PONG's ``set_result`` on it raises InvalidStateError
    in the connection's read loop, which logs it and stops reading for good (seen after a
    server stalled: every later call then timed out). Here that future is never cancelled
    (shielded), so a late PONG resolves it and the read loop goes on."""
    if nc._reading_task is None or nc._reading_task.done():
        await nc.flush(timeout=timeout)  # nats-py's own fallback: no PING without a reader
        return
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    await nc._send_ping(future)
    try:
        await asyncio.wait_for(asyncio.shield(future), timeout)
    except TimeoutError:
        raise nats.errors.FlushTimeoutError from None


def watch(client: Client, pattern: str, on_subject: Callable[[str], None]) -> Any:
    """A core subscription calling ``on_subject(subject)`` (on the client's loop thread) for
    each message published on ``pattern``; in place on the server when this returns."""
    assert client._nc is not None
    nc = client._nc

    async def woke(msg: Any) -> None:
        on_subject(str(msg.subject))

    async def subscribe() -> Any:
        sub = await nc.subscribe(pattern, cb=woke)
        await flush(nc, max(1, int(client.options.timeout)))  # in place before a read
        return sub

    return client._call(subscribe)


def reconnects(client: Client) -> int:
    """How many times the connection was re-established (a core subscription may have
    missed messages across each)."""
    return int(client._nc.stats["reconnects"]) if client._nc is not None else 0


def stream_state(client: Client, stream: str = "") -> Any:
    """A stream's state (first and last sequence, deleted count), as the server says (the
    home stream's unless ``stream`` names a shard's)."""

    async def info() -> Any:
        return (await client._js.stream_info(stream or client.options.stream)).state

    return client._call(info)
