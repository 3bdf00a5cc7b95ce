"""Master-key rotation as one store method, ``rewrap_keys(old, new) -> RewrapCount``, on the file
store as on the JetStream store: every session's and tool store's KEY is rewrapped, a wrong
old key changes nothing, and a second run (a rotation cut short) has nothing left to do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentsessions.errors import MasterKeyError
from agentsessions.journal.crypto.keys import KeyDir, MasterKey
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.v1 import construct


def _say(text: str) -> dict[str, Any]:
    return construct.input_event(construct.text_message("user", text), execution_id="e1")


def test_rewrap_keys_rotates_every_key_of_the_file_store(tmp_path: Path) -> None:
    old, new = MasterKey.generate(), MasterKey.generate()
    store = FileStore(tmp_path / "home", master=old)
    uids = [new_uid(), new_uid()]
    for uid in uids:
        store.create(SessionMeta(uid=uid))
        with store.writer(uid) as w:
            w.append([_say(f"hello {uid}")])
    with store.component(uids[0], "tool").writer() as w:
        w.append([_say("t")])
    tool = KeyDir(store.component(uids[0], "tool").path, f"{uids[0]}/tool")
    if not tool.key_path.exists():  # tool stores not sealed yet: a key as they will have
        tool.create(old)
    kdirs = [KeyDir(store.session_dir(uid), uid) for uid in uids] + [tool]
    with pytest.raises(MasterKeyError):
        store.rewrap_keys(MasterKey.generate(), new)
    assert {k.wrapped_by() for k in kdirs} == {old.key_id}  # nothing changed
    assert store.rewrap_keys(old, new) == (3, 0, 0)
    assert {k.wrapped_by() for k in kdirs} == {new.key_id}
    assert store.rewrap_keys(old, new) == (0, 3, 0)
    store.close()
    rotated = FileStore(tmp_path / "home", master=new)
    assert [r.seq for r in rotated.read(uids[1])] == [1]
    with pytest.raises(MasterKeyError, match="wrapped by master key"):
        list(FileStore(tmp_path / "home", master=old).read(uids[1]))
    rotated.close()
