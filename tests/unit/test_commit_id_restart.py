"""A turn's commit id is remembered across a restart: an engine (and its store) opened anew
on the same home answers a retry with the landed turn and writes nothing. The JetStream
half is in ``tests/jetstream/test_jetstream_commit_id.py``."""

from __future__ import annotations

from pathlib import Path

import agentsessions


def test_a_retry_after_a_restart_is_answered_by_the_landed_turn(tmp_path: Path) -> None:
    with agentsessions.open(tmp_path / "home") as engine:
        uid = engine.create(harness="echo").uid
        first = engine.run(uid, ["hello"], commit_id="delivery-7")
        engine.run(uid, ["later"], commit_id="delivery-8")
        head = engine.get(uid).last_seq
    with agentsessions.open(tmp_path / "home") as engine:  # a new process, in effect
        again = engine.run(uid, ["hello"], commit_id="delivery-7")
        assert again.turn is not None and first.turn is not None
        assert again.turn.duplicate and again.turn.model_calls == 0
        assert again.turn.last_seq == first.turn.last_seq
        assert engine.get(uid).last_seq == head
        assert engine.verify(uid).ok
