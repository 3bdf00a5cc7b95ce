"""Is a session's writer open on another host? A probe through the NATS connection itself.

The file store's ``LOCK`` is an flock: its holder's death releases it, so ``cancel`` can tell
a live turn (ask it to stop: a cancel request) from an interrupted one (close it as its
writer). A JetStream writer on another host has no lock to test, and opening a writer there
fences the running turn instead of asking it. So while a store holds a session's journal
writer it answers requests on ``_AGS_LIVE.<stream>.<uid>`` (outside the stream's subjects):
a core subscription that lives exactly as long as the writer and the store's connection.
A probe is one request: an answer, or no answer in time (a stalled or partitioned host),
says a writer may be live; "no responders" (the server knows of no subscriber: the process
closed its writer, exited or was killed) says none is. Fencing stays what guarantees a
single writer; this only decides how ``cancel`` asks.
"""

from __future__ import annotations

import contextlib
from typing import Any

import nats.errors

from agentsessions.errors import UnavailableError
from agentsessions.journal.stores.jetstream_client import Client

PROBE_SECONDS = 2.0  # how long a probe waits for a live writer's answer


def owner_subject(stream: str, uid: str) -> str:
    """The subject the writer of ``uid``'s journal in ``stream`` answers on: outside the
    stream's ``P.>`` on purpose (a probe must reach a writer, not be stored)."""
    return f"_AGS_LIVE.{stream}.{uid}"


def serve(client: Client, subject: str) -> Any:
    """Answer probes on ``subject`` until :func:`stop` (the subscription is returned)."""
    assert client._nc is not None
    nc = client._nc

    async def answer(msg: Any) -> None:
        with contextlib.suppress(nats.errors.Error):
            await msg.respond(b"writer")

    async def subscribe() -> Any:
        sub = await nc.subscribe(subject, cb=answer)
        await nc.flush(timeout=max(1, int(client.options.timeout)))  # seen once open returns
        return sub

    return client._call(subscribe)


def stop(client: Client, sub: Any) -> None:
    """Stop answering (the writer closed), flushed: a probe after this finds nobody."""
    assert client._nc is not None
    nc = client._nc

    async def unsubscribe() -> None:
        with contextlib.suppress(nats.errors.Error):  # the connection went: so did the sub
            await sub.unsubscribe()
            await nc.flush(timeout=max(1, int(client.options.timeout)))

    with contextlib.suppress(UnavailableError):
        client._call(unsubscribe)


def probe(client: Client, subject: str) -> bool:
    """True if a writer answers on ``subject``, or might (no answer in time); False when
    the server says nobody listens there."""
    assert client._nc is not None
    nc = client._nc

    async def ask() -> bool:
        try:
            await nc.request(subject, b"", timeout=PROBE_SECONDS)
        except nats.errors.NoRespondersError:
            return False
        except nats.errors.TimeoutError:
            return True  # subscribed but silent: stalled, not gone
        return True

    return client._call(ask)
