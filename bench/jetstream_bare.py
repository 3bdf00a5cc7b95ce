"""The server's own ceiling for ``bench/jetstream_rates.py``: bare nats-py publishes.

What a synced JetStream server acknowledges when nothing of this package runs: the same
stream settings the store creates (``conn.stream_config``), each commit one message of the
same events' bytes with the same headers the store sends (``Nats-Msg-Id`` and the CAS
``Nats-Expected-Last-Subject-Sequence``), each publisher awaiting its ack before its next
publish, all publishers as tasks on ONE connection and one event loop (no threads, no
journal). With several sessions, ``streams`` spreads them over that many streams (one
stream fsyncs its messages one at a time; streams fsync side by side). The store's rows
against these are what the store itself costs; these against the file loop are the
server's.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from typing import Any

from agentsessions.journal.stores.jetstream.conn import JetStreamOptions, stream_config


async def _stream(js: Any, options: JetStreamOptions) -> None:
    from nats.js import api

    config = stream_config(options)
    config["storage"] = api.StorageType(config["storage"])
    await js.add_stream(api.StreamConfig(**config))


async def _rate(url: str, blob: bytes, sessions: int, commits: int, streams: int) -> float:
    import nats

    async def quiet(exc: Exception) -> None:
        del exc

    base = JetStreamOptions.parse(url, allow_unsynced=True)
    nc = await nats.connect(servers=base.servers, error_cb=quiet)
    try:
        js = nc.jetstream(timeout=base.timeout)
        token = secrets.token_hex(4)
        prefixes = [f"bare{token}s{k}" for k in range(streams)]
        for k, prefix in enumerate(prefixes):
            options = JetStreamOptions(url=base.url, stream=f"BARE{token}S{k}", prefix=prefix)
            await _stream(js, options)

        async def publisher(n: int, count: int, expect: list[int]) -> None:
            subject = f"{prefixes[n % streams]}.j.s{n}"
            for _ in range(count):
                headers = {
                    "Nats-Msg-Id": secrets.token_hex(20),
                    "Nats-Expected-Last-Subject-Sequence": str(expect[n]),
                }
                ack = await js.publish(subject, blob, headers=headers)
                expect[n] = int(ack.seq)

        expect = [0] * sessions
        await asyncio.gather(*(publisher(n, 1, expect) for n in range(sessions)))  # warm
        t0 = time.perf_counter()
        await asyncio.gather(*(publisher(n, commits, expect) for n in range(sessions)))
        return sessions * commits / (time.perf_counter() - t0)
    finally:
        await nc.close()


def bare_rate(url: str, blob: bytes, sessions: int, commits: int, streams: int = 1) -> float:
    """Commits/s of ``sessions`` bare publishers of ``blob`` (``commits`` each) on one
    connection, over ``streams`` fresh streams (see the module docstring)."""
    return asyncio.run(_rate(url, blob, sessions, commits, streams))
