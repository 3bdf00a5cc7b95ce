"""A damaged ``WORKLOAD`` file is refused, not used (found by the torture suite).

The session's current workload (its tools: executors, their config such as a file path)
had no check: a flipped byte or a cut went unnoticed and the next turn would have run with
it. It is always kept by its digest too (``WORKLOAD.<digest>``), so a current text whose
kept copy is missing is damaged: JournalCorruptError. A session from before kept copies
existed has none at all and its workload is read as it is.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentsessions.errors import JournalCorruptError
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid

TOOLS = '[tools.append]\nmediation = "mediated"\nexecutor = "append_line"\n'


def _session(tmp_path: Path) -> tuple[Path, str]:
    with FileStore(tmp_path / "home") as store:
        uid = store.create(SessionMeta(uid=new_uid())).uid
        store.set_workload(uid, TOOLS)
        assert store.workload(uid) == TOOLS
        return store.session_dir(uid), uid


@pytest.mark.parametrize("damage", ["flip", "cut"])
def test_a_damaged_workload_is_refused(tmp_path: Path, damage: str) -> None:
    sdir, uid = _session(tmp_path)
    path = sdir / "WORKLOAD"
    raw = path.read_bytes()
    path.write_bytes(raw[:5] + b"X" + raw[6:] if damage == "flip" else raw[:20])
    with FileStore(tmp_path / "home") as store, pytest.raises(JournalCorruptError) as info:
        store.workload(uid)
    assert "kept copies" in str(info.value)


def test_a_workload_without_any_kept_copy_is_read_as_it_is(tmp_path: Path) -> None:
    sdir, uid = _session(tmp_path)
    for kept in sdir.glob("WORKLOAD.*"):
        kept.unlink()
    (sdir / "WORKLOAD.tmp").write_text("a write cut short")  # not a kept copy
    with FileStore(tmp_path / "home") as store:
        assert store.workload(uid) == TOOLS
