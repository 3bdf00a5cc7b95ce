"""A contract suite per store capability (``journal/stores/capabilities.py``), run on each
backend that declares it: the file and memory stores, each also encrypted, and JetStream on
the run's real nats-server.

A backend joins a capability's suite by declaring the Protocol (a base of its class); the
fixtures below pick the backends from those declarations, and the first test holds the
declarations to the table in the capabilities module's docstring, so dropping one (or
claiming one it does not implement) fails here, not in a user's ``verify --all``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_store_contract import _file_store, _jetstream_store, _memory_store

from agentsessions.errors import (
    InvalidArgumentError,
    KeyShreddedError,
    MetadataCorruptError,
    NotFoundError,
    StoreCapabilityError,
)
from agentsessions.journal.crypto.keys import MasterKey
from agentsessions.journal.stores import capabilities as caps
from agentsessions.journal.stores.capabilities import Capability
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.memory.store import MemoryStore
from agentsessions.journal.stores.store import SessionMeta, Store, new_uid
from agentsessions.v1 import construct, workloadref

DECLARED = {
    "file": {
        "CancelRequests", "ToolReceipts", "Workloads", "ProjectIndex", "Reindexable",
        "SealedExport", "KeyManagement", "SessionFiles", "KeyClaims",
    },
    "memory": {"CancelRequests", "ToolReceipts", "Workloads", "ProjectIndex", "KeyClaims"},
    "jetstream": {
        "CancelRequests", "ToolReceipts", "Workloads", "ProjectIndex", "SealedExport",
        "KeyManagement", "StoredRecords", "RemoteWriters", "HarnessBook", "KeyClaims",
    },
}  # fmt: skip
"""The table of the capabilities module's docstring, as data."""

BACKENDS = (
    "file",
    "file-encrypted",
    "memory",
    "memory-encrypted",
    "jetstream",
    "jetstream-encrypted",
)


def _class_of(backend: str) -> type[Any]:
    kind = backend.split("-")[0]
    if kind == "jetstream":
        from agentsessions.journal.stores.jetstream.store import JetStreamStore

        return JetStreamStore
    return {"file": FileStore, "memory": MemoryStore}[kind]


def _open(request: pytest.FixtureRequest, tmp_path: Path, backend: str) -> Store:
    master = MasterKey.generate() if backend.endswith("-encrypted") else None
    if backend.startswith("jetstream"):
        store: Store = _jetstream_store(request.getfixturevalue("nats_server"), master=master)
        return store
    return {"file": _file_store, "memory": _memory_store}[backend.split("-")[0]](tmp_path, master)


def _declaring(cap: Capability[Any], *, encrypted: bool | None = None) -> list[str]:
    """The backends (as fixture params) whose store class declares ``cap``."""
    out = []
    for backend in BACKENDS:
        if encrypted is not None and backend.endswith("-encrypted") != encrypted:
            continue
        if cap.protocol.__name__ in DECLARED[backend.split("-")[0]]:
            out.append(backend)
    return out


def _store_fixture(cap: Capability[Any], *, encrypted: bool | None = None) -> Any:
    @pytest.fixture(params=_declaring(cap, encrypted=encrypted))
    def made(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
        store = _open(request, tmp_path, request.param)
        yield store
        store.close()

    return made


cancels = _store_fixture(caps.CANCEL_REQUESTS)
receipts = _store_fixture(caps.TOOL_RECEIPTS)
workloads = _store_fixture(caps.WORKLOADS)
indexed = _store_fixture(caps.PROJECT_INDEX)
reindexable = _store_fixture(caps.REINDEXABLE)
sealed = _store_fixture(caps.SEALED_EXPORT, encrypted=True)
keyed = _store_fixture(caps.KEY_MANAGEMENT, encrypted=True)
keyed_plain = _store_fixture(caps.KEY_MANAGEMENT, encrypted=False)
local = _store_fixture(caps.SESSION_FILES)
walked = _store_fixture(caps.STORED_RECORDS)
remote = _store_fixture(caps.REMOTE_WRITERS)
harnesses = _store_fixture(caps.HARNESS_BOOK)


def _new(store: Store, project: str = "default") -> str:
    uid = new_uid()
    store.create(SessionMeta(uid=uid, project=project))
    return uid


def _with_events(store: Store, n: int = 3) -> str:
    uid = _new(store)
    with store.writer(uid) as w:
        for i in range(n):
            w.append(
                [construct.input_event(construct.text_message("user", f"m{i}"), execution_id="e")]
            )
    return uid


# --- the declarations ------------------------------------------------------------------------


def _table() -> dict[str, set[str]]:
    """The capabilities module docstring's table: backend -> the capabilities marked."""
    lines = (caps.__doc__ or "").splitlines()
    header = next(line for line in lines if line.split()[:2] == ["capability", "file"])
    columns = {name: header.index(name) for name in ("file", "memory", "jetstream")}
    table: dict[str, set[str]] = {name: set() for name in columns}
    names = {c.protocol.__name__ for c in caps.STORE_CAPABILITIES}
    for line in lines:
        if line.split()[:1] and line.split()[0] in names:
            cells = line[: header.index("what for")]
            for x in (i for i, ch in enumerate(cells) if ch == "x"):
                nearest = min(columns, key=lambda name: abs(columns[name] - x))
                table[nearest].add(line.split()[0])
    return table


@pytest.mark.parametrize("backend", ["file", "memory", "jetstream"])
def test_each_backend_declares_the_capabilities_of_the_table(backend: str) -> None:
    cls = _class_of(backend)
    declared = {c.protocol.__name__ for c in caps.STORE_CAPABILITIES if c.declared_by(cls)}
    assert declared == DECLARED[backend] == _table()[backend]


@pytest.mark.parametrize("backend", ["file", "memory", "jetstream"])
def test_a_declared_capability_is_implemented_not_inherited_from_its_protocol(
    backend: str,
) -> None:
    """A Protocol named as a base brings its stubs (bodies of ``...``) into the class: a
    method the backend forgot, or one a base earlier in the MRO does not supply, would run
    the stub and return None. mypy refuses to build such a class; this says so at run time."""
    cls = _class_of(backend)
    for cap in caps.STORE_CAPABILITIES:
        if not cap.declared_by(cls):
            continue
        for name, member in vars(cap.protocol).items():
            if callable(member) and not name.startswith("_"):
                assert vars(cls).get(name, None) is not member, (cls.__name__, name)
                owner = next(k for k in cls.__mro__ if name in vars(k))
                assert owner is not cap.protocol, f"{cls.__name__}.{name} is the stub"


def test_a_missing_capability_is_one_line_naming_it_and_the_command() -> None:
    store = MemoryStore()
    assert caps.KEY_MANAGEMENT.of(store) is None
    with pytest.raises(StoreCapabilityError) as info:
        caps.KEY_MANAGEMENT.need(store, "shred", session="sess-x")
    err = info.value
    assert err.message == "shred: the MemoryStore has no session keys to manage"
    assert "\n" not in err.message and err.fields["capability"] == "KeyManagement"
    assert isinstance(err, InvalidArgumentError)  # exit 2, INVALID_ARGUMENT, as its siblings
    assert (err.exit_code, err.grpc_code) == (2, "INVALID_ARGUMENT")


def test_the_lookup_is_the_declaration_not_the_methods_an_object_has() -> None:
    """An object with every method of a capability but no declaration does not have it."""

    class LooksIndexed:
        def project_of(self, uid: str) -> str | None:
            return "acme"

    assert caps.PROJECT_INDEX.of(LooksIndexed()) is None
    assert caps.PROJECT_INDEX.of(MemoryStore()) is not None


# --- one suite per capability ----------------------------------------------------------------


def test_cancel_requests_are_kept_named_and_cleared(cancels: Store) -> None:
    store = caps.CANCEL_REQUESTS.need(cancels, "cancel")
    uid = _new(cancels)
    assert store.cancel_requested(uid) is None and store.cancel_reason(uid) == ""
    store.request_cancel(uid, "exec-1", "USER")
    assert store.cancel_requested(uid) == "exec-1" and store.cancel_reason(uid) == "USER"
    store.clear_cancel(uid)
    store.clear_cancel(uid)  # idempotent
    assert store.cancel_requested(uid) is None


def test_tool_receipts_are_kept_by_key(receipts: Store) -> None:
    store = caps.TOOL_RECEIPTS.need(receipts, "exec")
    uid = _new(receipts)
    assert store.tool_receipt(uid, "k1") is None
    store.record_tool_receipt(uid, "k1", {"result": {"text": "done"}})
    assert store.tool_receipt(uid, "k1") == {"result": {"text": "done"}}
    assert store.tool_receipt(uid, "k2") is None


def test_workloads_are_kept_now_and_by_digest(workloads: Store) -> None:
    store = caps.WORKLOADS.need(workloads, "--tools")
    uid = _new(workloads)
    assert store.workload(uid) is None
    first, second = "# one\n", "# two\n"
    store.set_workload(uid, first)
    digest = store.keep_workload(uid, second)
    assert digest == workloadref.digest_of(second)
    assert store.workload(uid) == first
    assert store.workload_at(uid, digest) == second
    assert store.workload_at(uid, workloadref.digest_of(first)) == first  # set keeps it too
    assert store.workload_at(uid, workloadref.digest_of("# never\n")) is None


def test_the_index_gives_a_sessions_project_and_none_for_an_unknown_uid(indexed: Store) -> None:
    """What a token's scope asks before any session read."""
    index = caps.PROJECT_INDEX.need(indexed, "serve --tokens")
    uid = _new(indexed, project="acme")
    (child,) = indexed.fork(uid, 0, [SessionMeta(uid=new_uid(), project="acme")])
    indexed.delete(uid)  # deleted sessions are still read (and so still someone's)
    assert index.project_of(uid) == "acme" and index.project_of(child.uid) == "acme"
    assert index.project_of(new_uid()) is None


def test_reindex_rebuilds_and_reports_the_damaged_as_a_value(reindexable: Store) -> None:
    store = caps.REINDEXABLE.need(reindexable, "reindex")
    files = caps.SESSION_FILES.need(reindexable, "reindex")
    good, bad = _new(reindexable), _new(reindexable)
    (files.session_dir(bad) / "session.json").write_text("{}")
    done = store.reindex()
    assert done.indexed == 1 and [e.fields["session"] for e in done.unindexed] == [bad]
    assert all(isinstance(e, MetadataCorruptError) for e in store.unindexed)
    page = reindexable.list("default")  # a damaged session keeps the row it had, as damaged
    assert {s.uid: bool(s.damaged) for s in page.sessions}.get(good) is False
    assert [e.fields["session"] for e in page.unindexed] == [bad]
    assert Path(store.index_path).is_file()


def test_a_sealed_export_is_the_wrapped_key_and_the_records_as_stored(sealed: Store) -> None:
    store = caps.SEALED_EXPORT.need(sealed, "export --ciphertext")
    uid = _with_events(sealed)
    head, records = store.sealed_export(uid)
    assert head["scope"] == uid and head["key"]
    stored = list(records)
    plain = list(sealed.read(uid))
    assert [r.seq for r in stored] == [1, 2, 3]
    assert [r.content_hash for r in stored] == [r.content_hash for r in plain]
    assert all(
        b"m0" not in r.payload and r.payload != p.payload
        for r, p in zip(stored, plain, strict=True)
    )


def test_shred_destroys_the_keys_for_good_and_again_is_false(keyed: Store) -> None:
    keys = caps.KEY_MANAGEMENT.need(keyed, "shred")
    uid = _with_events(keyed, 1)
    keys.check_shreddable(uid)
    assert keys.shred(uid) is True
    with pytest.raises(KeyShreddedError):
        list(keyed.read(uid))
    assert keys.shred(uid) is False


def test_rewrap_moves_every_key_to_the_new_master(keyed: Store) -> None:
    keys = caps.KEY_MANAGEMENT.need(keyed, "keys rotate")
    shredded = _with_events(keyed, 1)
    _with_events(keyed, 1)
    keys.shred(shredded)
    old, new = keyed.master, MasterKey.generate()
    assert old is not None
    # (``shredded`` is not compared: the file store counts a shredded session's KEY files,
    # JetStream's shred purges its key messages, leaving nothing to count)
    first = keys.rewrap_keys(old, new)
    assert (first.rewrapped, first.already) == (1, 0)
    again = keys.rewrap_keys(old, new)  # a cut rotation, run again: finished, nothing moved
    assert (again.rewrapped, again.already) == (0, 1)


def test_a_plaintext_session_has_no_key_to_shred(keyed_plain: Store) -> None:
    keys = caps.KEY_MANAGEMENT.need(keyed_plain, "shred")
    uid = _new(keyed_plain)
    with pytest.raises(InvalidArgumentError, match="is not encrypted"):
        keys.check_shreddable(uid)


def test_session_files_name_the_directories_on_disk(local: Store) -> None:
    files = caps.SESSION_FILES.need(local, "verify")
    uid = _new(local)
    assert files.session_dir(uid).is_dir() and files.session_dir(uid).parent == files.sessions_dir
    assert files.sessions_dir.parent == files.home
    assert files.component_dir(uid, "notes").parent.parent == files.session_dir(uid)
    with pytest.raises(NotFoundError):
        files.session_dir(new_uid())


def test_stored_records_walk_every_record_by_its_chain(walked: Store) -> None:
    store = caps.STORED_RECORDS.need(walked, "verify")
    uid = _with_events(walked)
    items = list(store.verify_items(uid))
    assert [(i.seq, i.content_hash) for i in items] == [
        (r.seq, r.content_hash) for r in walked.read(uid)
    ]
    assert all(i.sealed == (walked.master is not None) for i in items)


def test_remote_writers_see_no_writer_elsewhere_for_an_idle_or_own_session(remote: Store) -> None:
    store = caps.REMOTE_WRITERS.need(remote, "cancel")
    uid = _new(remote)
    assert store.writer_elsewhere(uid) is False
    with remote.writer(uid) as w:
        assert store.writer_elsewhere(uid) is False  # this store's own: the engine's lock decides
        takeover = caps.WRITER_TAKEOVER.need(w, "exec")
        assert takeover.superseded() is False and takeover.set_busy(True) is True


def test_harness_registrations_are_kept_in_the_store(harnesses: Store) -> None:
    book = caps.HARNESS_BOOK.need(harnesses, "harness register").harness_records()
    assert book.read() == {}

    def add(regs: dict[str, Any]) -> bool:
        regs["echo"] = {"address": "unix:/tmp/x"}
        return True

    book.update(add)
    assert book.read() == {"echo": {"address": "unix:/tmp/x"}}
    book.update(lambda regs: False)  # kept unchanged when the change says no
    assert json.dumps(book.read()) == json.dumps({"echo": {"address": "unix:/tmp/x"}})
