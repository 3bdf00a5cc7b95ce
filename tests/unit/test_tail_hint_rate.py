"""The TAIL hint is rewritten every HINT_EVERY_COMMITS synced commits, at most once in
HINT_MIN_SECONDS, and always when the writer closes (docs/FORMAT.md 14).

Replacing the file is the costliest thing a commit can do on ext4 (a new inode, and the
flush a rename over a file starts), so a fast conversation must not pay it every 64
commits; a slow one still gets a hint every 64 commits, and closing always leaves one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentsessions.journal.stores.file import writer as file_writer
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.v1 import construct


def _hinted_seq(home: Path, uid: str) -> int:
    hint = home / "sessions" / uid / "TAIL"
    return int(json.loads(hint.read_bytes())["position"]["last_seq"]) if hint.exists() else 0


def _commit_past_a_hint_step(home: Path, uid: str, store: FileStore) -> tuple[int, int]:
    """The hinted seq after HINT_EVERY_COMMITS + 1 synced commits, then after closing."""
    event = construct.input_event(dict(construct.text_message("user", "hi")))  # type: ignore[arg-type]
    with store.writer(uid) as writer:
        before = _hinted_seq(home, uid)
        for _ in range(file_writer.HINT_EVERY_COMMITS + 1):
            writer.append([event], expected_last_seq=writer.head[0])
        during = _hinted_seq(home, uid)
        assert during == before or during >= file_writer.HINT_EVERY_COMMITS
    return during, _hinted_seq(home, uid)


@pytest.mark.parametrize("min_seconds", [0.0, 3600.0])
def test_the_hint_step_waits_for_its_minimum_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, min_seconds: float
) -> None:
    monkeypatch.setattr(file_writer, "HINT_MIN_SECONDS", min_seconds)
    with FileStore(tmp_path) as store:
        uid = new_uid()
        store.create(SessionMeta(uid=uid, project="default", harness="echo"))
        during, closed = _commit_past_a_hint_step(tmp_path, uid, store)
        head = store.get(uid).last_seq
    assert head == file_writer.HINT_EVERY_COMMITS + 1
    if min_seconds:
        assert during < file_writer.HINT_EVERY_COMMITS  # no step within the interval
    else:
        assert during == file_writer.HINT_EVERY_COMMITS  # the 64th commit's step
    assert closed == head  # closing always leaves a fresh hint
