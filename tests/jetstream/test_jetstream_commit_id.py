"""A turn's commit id on JetStream outlives its store client: an engine over a new
``JetStreamStore`` (another process or host) answers a retry with the landed turn, and
writes nothing; the id is in the session's own messages, not in the server's 120 s
``Nats-Msg-Id`` window."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import agentsessions
from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
from agentsessions.journal.stores.jetstream.store import JetStreamStore
from agentsessions.journal.stores.store import new_uid


def _engine(home: Path, url: str) -> tuple[Any, JetStreamStore]:
    store = JetStreamStore(JetStreamOptions.parse(url))
    return agentsessions.open(home, store=store), store


def test_a_retry_on_a_new_store_client_is_answered_by_the_landed_turn(
    nats_server: Any, tmp_path: Path
) -> None:
    token = new_uid()[5:17]
    url = nats_server.store_url(stream=f"C{token}", prefix=f"c{token}")
    engine, store = _engine(tmp_path / "a", url)
    try:
        uid = engine.create(harness="echo").uid
        first = engine.run(uid, ["hello"], commit_id="delivery-1")
        engine.run(uid, ["later"], commit_id="delivery-2")
        head = engine.get(uid).last_seq
    finally:
        engine.close()
        store.close()
    engine, store = _engine(tmp_path / "b", url)
    try:
        again = engine.run(uid, ["hello"], commit_id="delivery-1")
        assert again.turn is not None and first.turn is not None
        assert again.turn.duplicate and again.turn.model_calls == 0
        assert again.turn.last_seq == first.turn.last_seq
        assert engine.get(uid).last_seq == head
    finally:
        engine.close()
        store.close()
