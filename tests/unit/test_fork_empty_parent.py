"""A fork of an empty session verifies after its parent grows (found by the torture suite).

Forking a session with no record yet makes a child with ``fork_seq`` 0: no prefix. verify
walked the parent "through seq 0", which its walker reads as "all of it", so as soon as the
parent had a turn the child failed with "sequence gap: expected seq 6, found 1" although
its reads and its replay were right.
"""

from __future__ import annotations

from pathlib import Path

import agentsessions


def test_a_child_of_an_empty_session_verifies_after_both_grow(tmp_path: Path) -> None:
    with agentsessions.open(tmp_path / "home", runtime="local") as engine:
        parent = engine.create(harness="echo").uid
        (child,) = engine.fork(parent)
        assert engine.get(child.uid).fork_seq == 0
        list(engine.exec(parent, ["to the parent"]))
        list(engine.exec(child.uid, ["to the child"]))
        report = engine.verify(child.uid)
        assert report.ok, report.to_json()
        seqs = [r.seq for r in engine.read(child.uid)]
        assert seqs == list(range(1, report.last_seq + 1))
        assert engine.verify(parent).ok
