"""A damaged TAIL hint is not served (found by the torture suite's damage run).

The hint's position is checked against the segment it names, but the tail state it
carries (the projection, the working state's place and version, the recent commit ids) was
used as it is: a flipped byte there changed what ``get`` and ``state`` answered (the
working state's version read as 0, the exec state as another) while ``verify`` passed. The
hint now carries a checksum of its fields; a hint whose checksum does not match is ignored
like a missing one (the tail is read instead), and a hint from before checksums is used.
"""

from __future__ import annotations

import json
from pathlib import Path

import agentsessions
from agentsessions.journal.stores.file.sessiondir import HINT_SUM
from agentsessions.journal.stores.file.store import FileStore


def _session(tmp_path: Path) -> tuple[Path, str]:
    with agentsessions.open(tmp_path / "home", runtime="local") as engine:
        uid = engine.create(harness="echo").uid
        list(engine.exec(uid, ["hello"]))
    return tmp_path / "home", uid


def test_a_damaged_hint_is_ignored_and_the_tail_read_instead(tmp_path: Path) -> None:
    home, uid = _session(tmp_path)
    hint = home / "sessions" / uid / "TAIL"
    raw = hint.read_bytes()
    assert json.loads(raw)[HINT_SUM]
    assert b'"exec_state":"EXEC_COMPLETED"' in raw
    hint.write_bytes(raw.replace(b"EXEC_COMPLETED", b"EXEC_RUNNING\x20\x20"))
    with FileStore(home) as store:
        assert store.get(uid).exec_state == "EXEC_COMPLETED"  # from the journal, not the hint


def test_a_hint_without_a_checksum_is_used(tmp_path: Path) -> None:
    home, uid = _session(tmp_path)
    hint = home / "sessions" / uid / "TAIL"
    body = json.loads(hint.read_bytes())
    del body[HINT_SUM]
    hint.write_text(json.dumps(body))  # as an older writer left it
    with FileStore(home) as store:
        info = store.get(uid)
        assert info.exec_state == "EXEC_COMPLETED" and info.last_seq == len(list(store.read(uid)))
