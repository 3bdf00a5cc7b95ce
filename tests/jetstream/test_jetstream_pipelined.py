"""Sessions committing at once through ONE store (as a daemon holds them) have their
publishes in flight together, their acks awaited together, never one queued behind another
session's round trip: on the lean publisher each thread's on a connection of its own (the
pool of ``jetstream/lean.py``); on nats-py (TLS or credentials) served by whichever thread
runs the event loop, on the store's one connection. One session never has two in flight
(its writer publishes one message at a time, and waits for its answer before the next)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import Counter
from typing import Any

import pytest

from agentsessions.journal.stores.jetstream import lean
from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
from agentsessions.journal.stores.jetstream.store import JetStreamStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.v1 import construct

SESSIONS = 8
GATE_SECONDS = 1.0  # below one publish try (2 s): a gate that never opens fails the count


@pytest.mark.parametrize("path", ["lean", "nats-py"])
def test_eight_sessions_in_one_store_have_their_commits_in_flight_together(
    nats_server: Any, monkeypatch: Any, path: str
) -> None:
    token = new_uid()[5:17]
    store = JetStreamStore(JetStreamOptions.parse(
        nats_server.store_url(stream=f"PL{token}", prefix=f"pl{token}")
    ))  # fmt: skip
    try:
        client = store._client
        writers = []
        for _ in range(SESSIONS):
            uid = new_uid()
            store.create(SessionMeta(uid=uid))
            writers.append(store.writer(uid))
        in_flight: Counter[str] = Counter()
        most: Counter[str] = Counter()
        everyone = asyncio.Event()  # on the store's loop: set once all are in flight
        real = client._publish
        if path == "lean":
            _gate_lean(monkeypatch, in_flight, most)
        else:
            client._lean.close()
            client._lean = None

        async def gated(subject: str, body: bytes, headers: dict[str, str]) -> Any:
            in_flight[subject] += 1
            in_flight["*"] += 1
            most[subject] = max(most[subject], in_flight[subject])
            most["*"] = max(most["*"], in_flight["*"])
            if in_flight["*"] == SESSIONS:
                everyone.set()
            with contextlib.suppress(TimeoutError):  # hold each until all are out (or not)
                await asyncio.wait_for(everyone.wait(), GATE_SECONDS)
            try:
                return await real(subject, body, headers)
            finally:
                in_flight[subject] -= 1
                in_flight["*"] -= 1

        if path == "nats-py":
            monkeypatch.setattr(client, "_publish", gated)
        start = threading.Barrier(SESSIONS)
        errors: list[BaseException] = []

        def commit(w: Any) -> None:
            try:
                start.wait()
                w.append([construct.output_event(construct.text_message("assistant", "hi"),
                                             execution_id="e1")], commit_id="c1")  # fmt: skip
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=commit, args=(w,)) for w in writers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        monkeypatch.undo()
        assert not errors, errors
        assert most.pop("*") == SESSIONS  # every session's commit was out at once
        assert set(most.values()) == {1}  # and no session ever had two
        assert all(w.head[0] == 1 for w in writers)  # each one acknowledged
        for w in writers:
            w.close()
    finally:
        store.close()


def _gate_lean(monkeypatch: Any, in_flight: Counter[str], most: Counter[str]) -> None:
    """Hold each lean publish, on its socket, until all SESSIONS are out (or GATE_SECONDS)."""
    real = lean._Connection.publish
    lock, everyone = threading.Lock(), threading.Event()

    def gated(conn: Any, subject: str, body: bytes, headers: dict[str, str]) -> Any:
        with lock:
            in_flight[subject] += 1
            in_flight["*"] += 1
            most[subject] = max(most[subject], in_flight[subject])
            most["*"] = max(most["*"], in_flight["*"])
            if in_flight["*"] == SESSIONS:
                everyone.set()
        everyone.wait(GATE_SECONDS)
        try:
            return real(conn, subject, body, headers)
        finally:
            with lock:
                in_flight[subject] -= 1
                in_flight["*"] -= 1

    monkeypatch.setattr(lean._Connection, "publish", gated)
