"""The file store's key claims (``stores/file/claims.py``) under power loss and damage: a
claim cut at any step leaves no claim or a whole one, never a torn file; an acknowledged
claim survives the loss of everything unsynced; a damaged claim file is exit 8 naming it;
and creating a uid whose directory another process renamed into place first is
SessionExistsError (the rename race that completing one claim twice can run into)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from agentsessions.errors import JournalCorruptError, SessionExistsError, StorageError
from agentsessions.journal.format.durable import DEFAULT_FS, CrashFileSystem, SimulatedCrash
from agentsessions.journal.stores.claims import ClaimKey
from agentsessions.journal.stores.file.claims import FileClaims
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid

KEY = ClaimKey.of("p", "conversation-1")


def _ops_of_one_claim(tmp_path: Path) -> int:
    fs = CrashFileSystem()
    home = tmp_path / "count"
    home.mkdir()
    FileClaims(home, fs).claim(KEY, new_uid())
    return len(fs.ops)


def test_a_claim_cut_at_any_step_is_absent_or_whole_after_power_loss(tmp_path: Path) -> None:
    steps = _ops_of_one_claim(tmp_path)
    assert steps >= 5  # mkdir's home sync, create, write, sync, link, unlink, dir sync
    for k in range(1, steps + 2):
        home = tmp_path / f"h{k}"
        home.mkdir()
        fs = CrashFileSystem(crash_at_op=k)
        uid = new_uid()
        acknowledged = False
        with contextlib.suppress(SimulatedCrash):
            acknowledged = FileClaims(home, fs).claim(KEY, uid) == uid
        fs.crash()  # everything after the last sync is lost
        claims = FileClaims(home, DEFAULT_FS)
        found = claims.lookup(KEY)  # never a torn file: no JournalCorruptError
        assert found in ("", uid), k
        if acknowledged:
            assert found == uid, f"an acknowledged claim was lost (crash at op {k})"
        other = new_uid()
        assert claims.claim(KEY, other) == (found or other)  # the key works on


def test_a_damaged_claim_file_is_reported_naming_it(tmp_path: Path) -> None:
    claims = FileClaims(tmp_path, DEFAULT_FS)
    claims.claim(KEY, new_uid())
    (tmp_path / "claims" / KEY.digest).write_text('{"uid": "nonsense"}')
    with pytest.raises(JournalCorruptError, match=KEY.digest):
        claims.lookup(KEY)


def test_a_read_only_store_finds_claims_and_refuses_new_ones(tmp_path: Path) -> None:
    uid = new_uid()
    FileStore(tmp_path / "home").claim(KEY, uid)
    frozen = FileStore(tmp_path / "home", read_only=True)
    assert frozen.lookup(KEY) == uid
    with pytest.raises(StorageError, match="read-only"):
        frozen.claim(ClaimKey.of("p", "other"), new_uid())
    with pytest.raises(StorageError, match="read-only"):
        frozen.release(KEY, uid)


def test_a_uid_renamed_into_place_by_another_process_first_is_session_exists(
    tmp_path: Path,
) -> None:
    """Two processes completing one claim both pass the "no such directory" check; the
    second rename is refused by the kernel (the target is a non-empty directory)."""
    store = FileStore(tmp_path / "home")
    meta = SessionMeta(uid=new_uid(), project="p")
    store.create(meta)
    late = store.sessions_dir / f".tmp-{meta.uid}-late"
    (late / "journal").mkdir(parents=True)
    with pytest.raises(SessionExistsError, match=meta.uid):
        store._rename_new(late, store.sessions_dir / meta.uid, meta.uid)
    assert store.get(meta.uid).meta.project == "p"


def test_a_claims_dir_left_by_a_maker_that_died_before_its_sync_is_synced(
    tmp_path: Path,
) -> None:
    """The maker of ``claims/`` may die between its mkdir and the home's fsync: the next
    claimer syncs the home too, so the claim it returns cannot vanish with the directory."""
    (tmp_path / "claims").mkdir()  # made, never synced
    fs = CrashFileSystem()
    FileClaims(tmp_path, fs).claim(KEY, new_uid())
    assert ("sync_dir", str(tmp_path)) in fs.ops


def test_a_first_create_syncs_the_home_and_its_parent_before_the_rename(tmp_path: Path) -> None:
    """Opening a store makes ``home/sessions/`` unsynced (reads cost no fsync); the first
    create syncs the entries of both before it acknowledges a session."""
    fs = CrashFileSystem()
    home = tmp_path / "new-home"
    store = FileStore(home, fs=fs)
    store.create(SessionMeta(uid=new_uid(), project="p"))
    syncs = [path for op, path in fs.ops if op == "sync_dir"]
    assert str(home) in syncs and str(tmp_path) in syncs
    store.create(SessionMeta(uid=new_uid(), project="p"))
    assert [p for op, p in fs.ops if op == "sync_dir"].count(str(home)) == 1  # once per store
