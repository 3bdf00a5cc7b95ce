"""What the commit path was cut to (``bench/jetstream_rates.py``): a store call runs the
event loop in the calling thread, and a commit folds its events once, into a shadow of the
tail that becomes the tail only once the server acknowledged it."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from agentsessions.errors import FencedError
from agentsessions.journal.stores import projection
from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
from agentsessions.journal.stores.jetstream.store import JetStreamStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.v1 import construct


def _store(server: Any) -> JetStreamStore:
    token = new_uid()[5:17]
    url = server.store_url(stream=f"H{token}", prefix=f"h{token}")
    return JetStreamStore(JetStreamOptions.parse(url))


def _say(text: str) -> dict[str, Any]:
    return construct.output_event(construct.text_message("assistant", text), execution_id="e1")


def test_a_commit_folds_its_events_once(nats_server: Any, monkeypatch: Any) -> None:
    store = _store(nats_server)
    try:
        uid = new_uid()
        store.create(SessionMeta(uid=uid))
        with store.writer(uid) as w:
            w.append([_say("warm")])
            applied: list[int] = []
            real = projection.Projection.apply

            def counting(self: projection.Projection, event: Any, seq: int = 0) -> None:
                applied.append(seq)
                real(self, event, seq)

            monkeypatch.setattr(projection.Projection, "apply", counting)
            result = w.append([_say("a"), _say("b"), construct.end_event()], commit_id="c1")
            assert applied == [2, 3, 4]  # once each (the old path folded them twice)
            assert w.append([_say("a")], commit_id="c1").duplicate  # the id is remembered
            assert w.head == (result.last_seq, result.last_hash)
        monkeypatch.undo()
        row = store.get(uid)
        assert row.last_seq == 4 and row.exec_state == "EXEC_COMPLETED"
    finally:
        store.close()


def test_a_refused_commit_leaves_the_writer_as_it_was(nats_server: Any) -> None:
    # the shadow's projection is a shallow copy: folding into it must not reach the tail
    store, other = _store(nats_server), None
    try:
        uid = new_uid()
        store.create(SessionMeta(uid=uid))
        old = store.writer(uid)
        old.append([_say("running")])
        before = (old.head, old._tail.projection.to_json(), old._stream_seq)
        assert old.set_busy(False)  # parked between turns, as an engine's pool does
        other = JetStreamStore(store._opts)
        new = other.writer(uid)  # fences the old writer
        with pytest.raises(FencedError):
            old.append([construct.end_event()], commit_id="z")
        assert (old.head, old._tail.projection.to_json(), old._stream_seq) == before
        assert old._tail.duplicate("z") is None
        assert before[1]["exec_state"] == "EXEC_RUNNING"
        new.close()
        old.close()
    finally:
        store.close()
        if other is not None:
            other.close()


def test_store_calls_run_in_the_calling_thread(nats_server: Any, monkeypatch: Any) -> None:
    store = _store(nats_server)
    try:
        client = store._client
        seen: list[int] = []
        real = client._try_once

        def noting(*args: Any) -> Any:
            seen.append(threading.get_ident())
            return real(*args)

        monkeypatch.setattr(client, "_try_once", noting)
        uid = new_uid()
        store.create(SessionMeta(uid=uid))
        with store.writer(uid) as w:
            w.append([_say("a")])
        assert seen and set(seen) == {threading.get_ident()}
    finally:
        store.close()
