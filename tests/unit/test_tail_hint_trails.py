"""A held writer's TAIL hint trails its head by at most HINT_EVERY_COMMITS commits, however
fast it commits (docs/FORMAT.md 14).

Why it is pinned: every reader that is not the held writer (an adapter's ``get_items``, a
``list`` row, an open) reads the journal from the hint to the tail, so a hint let fall
further behind makes each of those reads cost more as the session grows. A hint rewritten
at most once a second was measured: the Agents SDK adapter's turns/s fell 547 -> 245 and
its last-100 / first-100 flatness 0.96 -> 0.46 (``bench/integrations.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

from agentsessions.journal.stores.file import writer as file_writer
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.v1 import construct


def _hinted_seq(home: Path, uid: str) -> int:
    hint = home / "sessions" / uid / "TAIL"
    return int(json.loads(hint.read_bytes())["position"]["last_seq"]) if hint.exists() else 0


def test_a_fast_held_writers_hint_trails_by_at_most_one_step(tmp_path: Path) -> None:
    step = file_writer.HINT_EVERY_COMMITS
    event = construct.input_event(dict(construct.text_message("user", "hi")))  # type: ignore[arg-type]
    with FileStore(tmp_path) as store:
        uid = new_uid()
        store.create(SessionMeta(uid=uid, project="default", harness="echo"))
        with store.writer(uid) as writer:
            for _ in range(3 * step + 5):  # as fast as the disk allows: well under a second
                writer.append([event], expected_last_seq=writer.head[0])
                assert writer.head[0] - _hinted_seq(tmp_path, uid) <= step
        assert _hinted_seq(tmp_path, uid) == store.get(uid).last_seq  # closing leaves one
