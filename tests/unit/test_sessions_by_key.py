"""``Sessions.ensure``, ``find`` and ``claim`` (``sessions/claims.py``) on the local engine
over the file, memory and JetStream stores: one session per key and project, found by one
lookup (never a listing), options checked before anything is claimed, a deleted session's
key free again (at once when ``ensure`` made it, lazily when its delete was cut), a claim
whose creator died completed, and the token scope. (The gRPC client runs the same promises
in ``tests/contract/test_sessions_contract.py``.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agentsessions
from agentsessions.errors import (
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    SessionDeletedError,
)
from agentsessions.journal.stores.capabilities import KEY_CLAIMS
from agentsessions.journal.stores.claims import ClaimKey
from agentsessions.journal.stores.memory.store import MemoryStore
from agentsessions.journal.stores.store import new_uid
from agentsessions.sessions.claims import CLAIM_ANNOTATION


@pytest.fixture(params=["file", "memory", "jetstream"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    store: Any = None
    if request.param == "memory":
        store = MemoryStore()
    elif request.param == "jetstream":
        from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
        from agentsessions.journal.stores.jetstream.store import JetStreamStore

        token = new_uid()[5:17]
        server = request.getfixturevalue("nats_server")
        url = server.store_url(stream=f"S{token}", prefix=f"s{token}")
        store = JetStreamStore(JetStreamOptions.parse(url))
    with agentsessions.open(tmp_path / "home", store=store) as eng:
        yield eng
    if store is not None:
        store.close()


def _no_listing(engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("a lookup by key listed the project")

    monkeypatch.setattr(engine.store, "list", refuse)


def test_ensure_creates_once_then_finds(engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_listing(engine, monkeypatch)
    assert engine.find("thread-1", project="p") is None
    made, created = engine.ensure(
        "thread-1", project="p", name="t1", harness="echo", labels={"a": "b"}
    )
    assert created and (made.project, made.name, made.harness) == ("p", "t1", "echo")
    assert made.labels == {"a": "b"}
    assert made.annotations[CLAIM_ANNOTATION] == ClaimKey.of("p", "thread-1").digest
    again, created = engine.ensure("thread-1", project="p", name="ignored")
    assert (again.uid, again.name, created) == (made.uid, "t1", False)
    found = engine.find("thread-1", project="p")
    assert found is not None and found.uid == made.uid
    assert engine.find("thread-1", project="q") is None  # a key is per project
    other, created = engine.ensure("thread-1", project="q")
    assert created and other.uid != made.uid


def test_bad_options_are_refused_before_anything_is_claimed(engine: Any, tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError):
        engine.ensure("k", project="p", model="no-such-provider:x")
    with pytest.raises(InvalidArgumentError):
        engine.ensure("", project="p")
    with pytest.raises(InvalidArgumentError):
        engine.ensure("k", project="a/b")
    assert KEY_CLAIMS.need(engine.store, "test").lookup(ClaimKey.of("p", "k")) == ""
    assert engine.list(project="p").sessions == ()


def test_deleting_releases_the_key(engine: Any) -> None:
    made, _ = engine.ensure("k", project="p")
    engine.delete(made.uid)
    assert (
        KEY_CLAIMS.need(engine.store, "test").lookup(ClaimKey.of("p", "k")) == ""
    )  # released at once
    assert engine.find("k", project="p") is None
    fresh, created = engine.ensure("k", project="p")
    assert created and fresh.uid != made.uid


def test_a_key_whose_delete_was_cut_before_its_release_is_free(engine: Any) -> None:
    made, _ = engine.ensure("k", project="p")
    engine.store.delete(made.uid)  # as if the engine died between delete and release
    assert KEY_CLAIMS.need(engine.store, "test").lookup(ClaimKey.of("p", "k")) == made.uid
    assert engine.find("k", project="p") is None  # a deleted session is not found
    fresh, created = engine.ensure("k", project="p")
    assert created and fresh.uid != made.uid
    assert KEY_CLAIMS.need(engine.store, "test").lookup(ClaimKey.of("p", "k")) == fresh.uid


def test_a_claim_whose_creator_died_is_completed(engine: Any) -> None:
    key, uid = ClaimKey.of("p", "k"), new_uid()
    KEY_CLAIMS.need(engine.store, "test").claim(
        key, uid
    )  # claimed; its process died before creating
    assert engine.find("k", project="p") is None
    made, created = engine.ensure("k", project="p", name="n")
    assert (made.uid, made.name, created) == (uid, "n", True)


def test_claim_binds_an_existing_session(engine: Any) -> None:
    parent, _ = engine.ensure("parent", project="p")
    engine.run(parent.uid, ["hi"], harness="echo")
    [child] = engine.fork(parent.uid, names=["child"])
    assert engine.claim("child", child.uid, project="p") == child.uid
    found = engine.find("child", project="p")
    assert found is not None and found.uid == child.uid
    assert engine.claim("child", parent.uid, project="p") == child.uid  # taken: the holder
    assert engine.claim("parent", child.uid, project="p") == parent.uid
    with pytest.raises(InvalidArgumentError, match="project"):
        engine.claim("x", child.uid, project="q")
    with pytest.raises(NotFoundError):
        engine.claim("x", new_uid(), project="p")
    engine.delete(child.uid)  # not made by ensure: its key is freed lazily
    with pytest.raises(SessionDeletedError):
        engine.claim("y", child.uid, project="p")
    assert engine.find("child", project="p") is None
    fresh, created = engine.ensure("child", project="p")
    assert created and fresh.uid != child.uid


def test_a_token_finds_and_ensures_only_in_its_projects(tmp_path: Path) -> None:
    from agentsessions.server.scoped import Scope
    from agentsessions.sessions.tokens import Principal
    from agentsessions.wire.bounds import Limits

    alice = Principal(name="alice", projects=frozenset({"a"}), token_id="0123456789ab", primary="a")
    with agentsessions.open(tmp_path / "home") as eng:
        theirs, _ = eng.ensure("k", project="b")
        scoped = Scope(eng, lambda: alice, Limits())()
        with pytest.raises(PermissionDeniedError):
            scoped.find("k", project="b")
        with pytest.raises(PermissionDeniedError):
            scoped.ensure("k", project="b")
        mine, created = scoped.ensure("k")  # no project named: the token's
        assert created and mine.project == "a" and mine.uid != theirs.uid
        found = scoped.find("k")
        assert found is not None and found.uid == mine.uid
        with pytest.raises(NotFoundError):  # another project's session is an unknown uid
            scoped.claim("other", theirs.uid, project="a")
