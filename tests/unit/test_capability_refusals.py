"""The engine over a store that lacks a capability a command needs: one line naming the
capability and the command (StoreCapabilityError: exit 2, INVALID_ARGUMENT), nothing done;
and what it gets from one that has it, through the lookup (no probing).

The memory store is the store that lacks most: no listing index, no session keys to manage,
no session directories, no sealed export.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import agentsessions
from agentsessions.errors import InvalidArgumentError, StoreCapabilityError
from agentsessions.journal.crypto.keys import MasterKey
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.memory.store import MemoryStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.sessions.local import LocalSessions


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[LocalSessions]:
    made = agentsessions.open(tmp_path / "home", store=MemoryStore(), runtime="local")
    assert isinstance(made, LocalSessions)
    yield made
    made.close()


REFUSED: dict[str, tuple[Callable[[LocalSessions, str], Any], str]] = {
    "reindex": (lambda e, uid: e.reindex(), "reindex: the MemoryStore has no listing index"),
    "catalog": (lambda e, uid: e.catalog_path, "reindex: the MemoryStore has no listing index"),
    "shred": (lambda e, uid: e.shred(uid), "shred: the MemoryStore has no session keys"),
    "check": (lambda e, uid: e.check_shreddable(uid), "shred: the MemoryStore has no session"),
    "rotate": (
        lambda e, uid: e.rotate_master_key(MasterKey.generate(), MasterKey.generate()),
        "keys rotate: the MemoryStore has no session keys to manage",
    ),
    "export --ciphertext": (
        lambda e, uid: e.export(uid, Path("/nonexistent/x"), encryption="ciphertext"),
        "",  # a plaintext session refuses first (it has no ciphertext), whatever the store
    ),
}


@pytest.mark.parametrize("command", sorted(REFUSED))
def test_a_command_the_store_cannot_serve_is_refused_in_one_line(
    engine: LocalSessions, command: str
) -> None:
    uid = engine.create().uid
    call, message = REFUSED[command]
    with pytest.raises(InvalidArgumentError) as info:
        call(engine, uid)
    assert "\n" not in info.value.message
    if message:
        assert isinstance(info.value, StoreCapabilityError)
        assert info.value.message.startswith(message)
        assert info.value.exit_code == 2 and info.value.grpc_code == "INVALID_ARGUMENT"


def test_the_engine_reports_a_rebuilds_damaged_sessions_before_any_list(tmp_path: Path) -> None:
    """A lost catalog is rebuilt on open; the session it could not index is reported by the
    engine at once (serve says so at start), and by each list after."""
    home = tmp_path / "home"
    with FileStore(home) as store:
        good = store.create(_meta()).uid
        bad = store.create(_meta()).uid
        (store.session_dir(bad) / "session.json").write_text("{}")
    (home / "catalog.sqlite3").unlink()
    with agentsessions.open(home, runtime="local") as engine:
        assert isinstance(engine, LocalSessions)
        assert [e.fields["session"] for e in engine.unindexed] == [bad]
        assert [s.uid for s in engine.list().sessions] == [good]
        assert [e.fields["session"] for e in engine.unindexed] == [bad]


def _meta() -> SessionMeta:
    return SessionMeta(uid=new_uid())
