"""One session-directory layout object is shared by the file store and verify (issue 8, item 6).

The names of a session directory's files are spelled in :mod:`sessiondir` (and
``session.json`` in :mod:`metafile`, which it reuses) and nowhere else in the package; the
file store writes exactly the files the layout names, and verify reads them through it.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from agentsessions.errors import AcknowledgedDataMissingError
from agentsessions.journal.format.durable import DEFAULT_FS
from agentsessions.journal.stores.file.sessiondir import SessionDir
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.journal.tools.verify import verify_dir
from agentsessions.v1 import construct

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("session.json", "TAIL", "LOCK", "FENCE", "DELETED", "BASE", "journal")
# where the names may be spelled as string literals: the layout, and metafile's META_NAME
OWNERS = {
    "agentsessions/journal/stores/file/sessiondir.py",
    "agentsessions/journal/stores/metafile.py",
}


def _event(i: int) -> dict[str, object]:
    return construct.output_event(
        construct.text_message("assistant", f"m{i}"), execution_id=f"{i:016x}"
    )


def _session(tmp_path: Path, commits: int = 2) -> tuple[FileStore, str, SessionDir]:
    store = FileStore(tmp_path / "home")
    uid = store.create(SessionMeta(uid=new_uid(), project="p")).uid
    with store.writer(uid) as w:
        for i in range(commits):
            w.append([_event(i)])
    return store, uid, SessionDir(store.session_dir(uid))


def test_only_the_layout_spells_the_file_names() -> None:
    names = "|".join(re.escape(n) for n in NAMES)
    literal = re.compile(r"""["'](""" + names + r""")["']""")
    found = []
    for path in sorted((ROOT / "agentsessions").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name in OWNERS or "/gen/" in name:
            continue
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if literal.search(code) and "kind = " not in code:  # an error's kind, not a file
                found.append(f"{name}:{no}: {line.strip()}")
    assert not found, "use SessionDir instead of spelling a session file's name:\n" + "\n".join(
        found
    )


def test_the_store_writes_the_files_the_layout_names(tmp_path: Path) -> None:
    store, uid, sdir = _session(tmp_path)
    assert sdir.uid == uid
    assert sdir.is_session() and sdir.has_meta()
    for path in (sdir.meta_file, sdir.lock_file, sdir.fence_file, sdir.tail_file):
        assert path.is_file(), path
    assert sdir.read_meta().uid == uid
    assert not sdir.is_deleted() and not sdir.base_file.exists()
    store.delete(uid)
    assert sdir.is_deleted() and sdir.deleted_file.is_file()
    child = store.fork(uid, 1, [SessionMeta(uid=new_uid(), project="p")])[0]
    base = SessionDir(store.session_dir(child.uid)).read_base()
    assert base.last_seq == 1
    store.close()


def test_the_hint_round_trips_and_matches_the_store(tmp_path: Path) -> None:
    store, uid, sdir = _session(tmp_path, commits=3)
    position, tail = sdir.read_hint()
    assert position is not None and tail is not None
    assert (position.last_seq, tail.last_seq) == (3, 3)
    assert tail.last_hash == store.get(uid).last_hash
    sdir.write_hint(DEFAULT_FS, position, tail)
    assert sdir.read_hint() == (position, tail)
    assert [a.seq for a in sdir.hint_evidence()] == [3]
    store.close()


def test_hint_evidence_outlives_a_damaged_tail_state(tmp_path: Path) -> None:
    """The position alone is the evidence of an acknowledged head: a hint whose tail state
    cannot be read is not resumed from, yet still proves seq 2 was acknowledged."""
    store, _uid, sdir = _session(tmp_path)
    obj = json.loads(sdir.tail_file.read_bytes())
    obj["tail"] = "garbage"
    sdir.tail_file.write_text(json.dumps(obj))
    assert sdir.read_hint() == (None, None)
    assert [a.seq for a in sdir.hint_evidence()] == [2]
    store.close()


def test_verify_reads_a_copied_directory_through_the_layout(tmp_path: Path) -> None:
    store, _uid, sdir = _session(tmp_path)
    report = verify_dir(sdir.path)
    assert report.ok and report.last_seq == 2
    store.close()


def test_a_child_whose_parent_is_gone_is_refused_by_writers_readers_and_verify(
    tmp_path: Path,
) -> None:
    store, uid, sdir = _session(tmp_path)
    (child,) = store.fork(uid, 2, [SessionMeta(uid=new_uid())])
    cdir = SessionDir(store.session_dir(child.uid))
    cdir.check_parent(cdir.read_meta())  # the parent is beside it: nothing to say
    shutil.rmtree(sdir.path)
    with pytest.raises(AcknowledgedDataMissingError, match=f"parent session {uid}") as caught:
        cdir.check_parent(cdir.read_meta())
    assert caught.value.exit_code == 8 and caught.value.fields["acked_seq"] == 2
    before = sorted((p.name, p.stat().st_size) for p in cdir.path.rglob("*"))
    for attempt in (
        lambda: store.writer(child.uid),
        lambda: list(store.read(child.uid)),
        lambda: store.fork(child.uid, child.last_seq, [SessionMeta(uid=new_uid())]),
    ):
        with pytest.raises(AcknowledgedDataMissingError):
            attempt()
    assert [r.seq for r in store.read(child.uid, 3)] == [3]  # its own records still read
    report = verify_dir(cdir.path)
    assert (report.ok, report.kind, report.first_bad_seq) == (False, "corrupt", 1)
    assert sorted((p.name, p.stat().st_size) for p in cdir.path.rglob("*")) == before
    store.close()
