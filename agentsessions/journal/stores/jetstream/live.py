"""Is a session's writer open on another host, and is a turn running there? A probe through
the NATS connection itself.

The file store's ``LOCK`` is an flock: a second writer is refused while a turn runs
(``LockHeldError``, exit 6), and its holder's death releases it, so ``cancel`` can tell a
live turn (ask it to stop) from an interrupted one (close it as its writer). A JetStream
writer on another host has no lock to test, and opening a writer there fences it. So while
a store holds a session's journal writer it answers requests on ``_AGS_LIVE.<stream>.<uid>``
(outside the stream's subjects): a core subscription that lives as long as the writer and
the store's connection, and says what its :class:`Presence` says:

- **busy**: a turn (or any use of the writer outside a pool's idle shelf) is in progress;
  the answer names the holder (pid, host, program, since), as the file store's LOCK does.
  Opening a writer elsewhere is then refused with LockHeldError, like the file store's.
- **idle**: the writer is parked between turns (a pool keeps it for the next one). A probe
  that says it will take over (:data:`TAKE`) is answered idle once: the presence is then
  *yielded* (the holder's next turn opens a new writer, probing the taker) and unsubscribes,
  so a later probe hears the new writer (which answers from before its fence), or nobody;
  until the unsubscribe is through it says busy, being taken over.

A probe is one request: no answer in time (a stalled or partitioned host) says a writer may
be live but cannot say it is busy; "no responders" (the server knows of no subscriber: the
process closed its writer, exited or was killed) says none is. Fencing stays what
guarantees a single writer: the probe only decides whether to ask before taking over.

Taking over is atomic with the busy flag (:class:`Claim`, driven by the writer's open): read
the journal's head, probe, start answering busy, then append the fence with CAS at that
head. A writer opened by another host meanwhile answered busy before its own fence landed,
so either this probe heard it (refused), or its fence moved the head after this read (this
CAS fails; the open stops answering, reads again and probes again, and then hears it). So
a host never fences a writer that a turn is using because it probed before that writer
answered: two hosts opening one session at once end with one writer and one LockHeldError
(which the engine waits out), never a writer fenced mid-turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

import nats.errors

from agentsessions.errors import LockHeldError, UnavailableError
from agentsessions.journal.format.lock import program
from agentsessions.journal.stores.jetstream.client import Client, flush

PROBE_SECONDS = 2.0  # how long a probe waits for a live writer's answer
TAKE = b"take"  # a probe that takes the session over when the writer is idle
ASK = b"ask"  # a probe that only asks (cancel)

BUSY, IDLE, GONE, SILENT, UNKNOWN = "busy", "idle", "gone", "silent", "unknown"


def owner_subject(stream: str, uid: str) -> str:
    """The subject the writer of ``uid``'s journal in ``stream`` answers on: outside the
    stream's ``P.>`` on purpose (a probe must reach a writer, not be stored)."""
    return f"_AGS_LIVE.{stream}.{uid}"


class Presence:
    """What a writer's responder answers: busy (the default from open: a writer in use
    holds the session, as the file store's lock does) or idle (parked between turns).

    Thread-safe: the responder runs on the connection's event-loop thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._busy = True
        self._yielded = False
        self._since = int(time.time())

    @property
    def yielded(self) -> bool:
        """True once a taker was told this writer is idle: it is being taken over."""
        with self._lock:
            return self._yielded

    def set_busy(self, busy: bool) -> bool:
        """Mark the writer busy (a turn starts) or idle (parked). Claiming it busy fails
        (False) once it was yielded to a taker: the caller opens a new writer instead,
        which asks the taker in turn. Atomic with :meth:`answer`, so a turn never starts on
        a writer some host was just told it may take."""
        with self._lock:
            if busy and self._yielded:
                return False
            if busy and not self._busy:
                self._since = int(time.time())
            self._busy = busy
            return True

    def answer(self, take: bool) -> bytes:
        """The reply to one probe. Once yielded (until the responder's unsubscribe is
        through) it says busy, being taken over: silence would let a third host time out
        and fence the taker's first turn."""
        with self._lock:
            if self._yielded:
                return json.dumps({"state": BUSY, "yielded": True}).encode()
            if self._busy:
                return json.dumps(
                    {"state": BUSY, "pid": os.getpid(), "host": socket.gethostname(),
                     "program": program(), "since_unix": self._since}
                ).encode()  # fmt: skip
            self._yielded = take
            return json.dumps({"state": IDLE}).encode()


@dataclass(frozen=True)
class Answer:
    """What a probe heard: ``state`` is one of busy, idle, gone (no responders), silent (no
    answer in time) or unknown (an answer of an older version, which always took over);
    ``holder`` describes a busy writer (or says another host is taking it over)."""

    state: str
    holder: str = ""


class Claim:
    """One open's claim on a session's writer (see the module docstring): :meth:`take`
    before each fence try, :meth:`withdraw` after a lost one and when the writer closes."""

    def __init__(self, client: Client, subject: str, uid: str) -> None:
        self._client, self._subject, self._uid = client, subject, uid
        self.presence = Presence()  # busy until the writer's holder says otherwise
        self._sub: Any = None

    def take(self) -> None:
        """Probe the writer another host may hold (LockHeldError if a turn runs there),
        then answer probes busy: a host that asks from now on is refused."""
        refuse_busy(self._client, self._subject, self._uid, take=True)
        self.presence = Presence()
        self._sub = serve(self._client, self._subject, self.presence)

    def withdraw(self) -> None:
        """Stop answering (a lost fence try, or the writer closed): flushed, so a probe
        after this finds nobody here."""
        sub, self._sub = self._sub, None
        if sub is not None:
            stop(self._client, sub)


def refuse_busy(client: Client, subject: str, uid: str, *, take: bool = False) -> None:
    """LockHeldError if the writer answering on ``subject`` says a turn is running (the
    file store's lock refuses the same); ``take``: an idle one yields to the caller."""
    heard = probe(client, subject, take=take)
    if heard.state == BUSY:
        raise LockHeldError(
            f"session {uid} is busy: a turn is running on another host ({heard.holder})",
            hint=f"wait for it, or stop it: agentsessions cancel {uid}",
            session=uid, holder=heard.holder,
        )  # fmt: skip


def serve(client: Client, subject: str, presence: Presence) -> Any:
    """Answer probes on ``subject`` as ``presence`` says until :func:`stop` (the
    subscription is returned). Yielded, it unsubscribes, so later probes hear the taker."""
    assert client._nc is not None
    nc = client._nc
    subs: list[Any] = []

    async def drop() -> None:
        with contextlib.suppress(nats.errors.Error):
            await subs[0].unsubscribe()

    async def answer(msg: Any) -> None:
        reply = presence.answer(msg.data == TAKE)
        with contextlib.suppress(nats.errors.Error):
            await msg.respond(reply)
        if presence.yielded:  # after the reply, on its own task (not this callback's)
            asyncio.get_running_loop().create_task(drop())

    async def subscribe() -> Any:
        sub = await nc.subscribe(subject, cb=answer)
        subs.append(sub)
        await flush(nc, max(1, int(client.options.timeout)))  # seen once open returns
        return sub

    return client._call(subscribe)


def stop(client: Client, sub: Any) -> None:
    """Stop answering (the writer closed), flushed: a probe after this finds nobody."""
    assert client._nc is not None
    nc = client._nc

    async def unsubscribe() -> None:
        with contextlib.suppress(nats.errors.Error):  # the connection (or a yield) took it
            await sub.unsubscribe()
            await flush(nc, max(1, int(client.options.timeout)))

    with contextlib.suppress(UnavailableError):
        client._call(unsubscribe)


def probe(client: Client, subject: str, *, take: bool = False) -> Answer:
    """Ask the writer on ``subject`` (if any) whether it is busy; ``take``: the caller
    takes the session over on an idle answer (the writer then yields)."""
    assert client._nc is not None
    nc = client._nc

    async def ask() -> Answer:
        try:
            msg = await nc.request(subject, TAKE if take else ASK, timeout=PROBE_SECONDS)
        except nats.errors.NoRespondersError:
            return Answer(GONE)
        except nats.errors.TimeoutError:
            return Answer(SILENT)  # subscribed but silent: stalled, not gone
        return _decode(msg.data)

    answer: Answer = client._call(ask)
    return answer


def _decode(data: bytes) -> Answer:
    try:
        got = json.loads(data)
    except ValueError:
        return Answer(UNKNOWN)
    if not isinstance(got, dict) or got.get("state") not in (BUSY, IDLE):
        return Answer(UNKNOWN)
    if got["state"] == IDLE:
        return Answer(IDLE)
    if got.get("yielded"):
        return Answer(BUSY, "another host is taking it over")
    holder = f"pid {_clean(got.get('pid'))} on {_clean(got.get('host', '?'))}"
    holder += f": {_clean(got.get('program', '?')) or '?'}"
    since = got.get("since_unix")
    if isinstance(since, int) and 0 < since < 1 << 40:
        holder += f", since {time.strftime('%Y-%m-%d %H:%M:%SZ', time.gmtime(since))}"
    return Answer(BUSY, holder)


def _clean(value: object) -> str:
    """A field of another host's answer, fit for one error line (no control characters)."""
    text = str(value)[:80]
    return "".join(c if c.isprintable() else "?" for c in text)
