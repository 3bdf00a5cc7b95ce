"""ONE contract suite for the key-claims capability (``journal/stores/claims.py``), run on
every store that declares it: file, memory, JetStream, each plain and encrypted at rest.

Each test states a promise a caller of ``Sessions.ensure``/``find`` relies on: a claim is
create-only and says who won, a release undoes only its own binding, keys are per project,
the store keeps the key's digest and never the key, and creating one uid twice is refused
(SessionExistsError) on every store, so completing a claim twice is harmless.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentsessions.errors import InvalidArgumentError, SessionExistsError, StoreCapabilityError
from agentsessions.journal.crypto.keys import MasterKey
from agentsessions.journal.stores.capabilities import KEY_CLAIMS
from agentsessions.journal.stores.claims import ClaimKey
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.memory.store import MemoryStore
from agentsessions.journal.stores.store import SessionMeta, new_uid

SECRET = "issue #12 of owner/secret-repo"  # a key whose bytes must never be stored
KINDS = ["file", "memory", "file-encrypted", "memory-encrypted", "jetstream", "jetstream-encrypted"]


def _jetstream(request: pytest.FixtureRequest, master: MasterKey | None) -> Any:
    from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
    from agentsessions.journal.stores.jetstream.store import JetStreamStore

    token = new_uid()[5:17]
    url = request.getfixturevalue("nats_server").store_url(stream=f"K{token}", prefix=f"k{token}")
    return JetStreamStore(JetStreamOptions.parse(url), master=master)


@pytest.fixture(params=KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    kind: str = request.param
    master = MasterKey.generate() if kind.endswith("-encrypted") else None
    if kind.startswith("file"):
        made: Any = FileStore(tmp_path / "home", master=master)
    elif kind.startswith("memory"):
        made = MemoryStore(master=master)
    else:
        made = _jetstream(request, master)
    try:
        yield made
    finally:
        made.close()


def test_every_store_declares_the_capability(store: Any) -> None:
    assert KEY_CLAIMS.declared_by(type(store)) and KEY_CLAIMS.need(store, "find") is store


def test_a_store_without_it_is_refused_by_the_typed_lookup() -> None:
    with pytest.raises(StoreCapabilityError, match="find: the object has no key claims"):
        KEY_CLAIMS.need(object(), "find")


def test_a_claim_is_create_only_and_names_the_winner(store: Any) -> None:
    key, first, second = ClaimKey.of("p", "thread-1"), new_uid(), new_uid()
    assert store.lookup(key) == ""
    assert store.claim(key, first) == first
    assert store.claim(key, second) == first  # bound: the earlier winner's uid
    assert store.lookup(key) == first
    assert store.lookup(ClaimKey.of("p", "thread-2")) == ""


def test_a_release_undoes_only_its_own_binding(store: Any) -> None:
    key, first, second = ClaimKey.of("p", "k"), new_uid(), new_uid()
    store.claim(key, first)
    store.release(key, second)  # a stale releaser: nothing
    assert store.lookup(key) == first
    store.release(key, first)
    assert store.lookup(key) == ""
    store.release(key, first)  # idempotent
    assert store.claim(key, second) == second  # the key can be claimed again
    store.release(key, first)  # the old owner's late release leaves the new claim
    assert store.lookup(key) == second


def test_keys_are_per_project(store: Any) -> None:
    a, b = new_uid(), new_uid()
    assert store.claim(ClaimKey.of("p1", "same"), a) == a
    assert store.claim(ClaimKey.of("p2", "same"), b) == b
    assert store.lookup(ClaimKey.of("p1", "same")) == a


def test_threads_racing_on_one_key_all_get_one_uid(store: Any) -> None:
    key = ClaimKey.of("p", "race")
    uids = [new_uid() for _ in range(8)]
    got: list[str] = []
    barrier = threading.Barrier(len(uids))

    def claimer(uid: str) -> None:
        barrier.wait()
        got.append(store.claim(key, uid))

    threads = [threading.Thread(target=claimer, args=(u,)) for u in uids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == len(uids) and len(set(got)) == 1 and got[0] in uids
    assert store.lookup(key) == got[0]


def test_malformed_requests_are_refused(store: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        ClaimKey.of("p", "")
    with pytest.raises(InvalidArgumentError):
        ClaimKey.of("a/b", "k")
    with pytest.raises(InvalidArgumentError):
        ClaimKey.of("p", "x" * 5000)
    with pytest.raises(InvalidArgumentError):
        store.claim(ClaimKey.of("p", "k"), "not-a-uid")
    with pytest.raises(InvalidArgumentError):
        ClaimKey.from_digest("p", "abc")
    key = ClaimKey.of("p", "k")
    assert ClaimKey.from_digest("p", key.digest) == key


def test_creating_one_uid_twice_is_refused_on_every_store(store: Any) -> None:
    meta = SessionMeta(uid=new_uid(), project="p")
    store.create(meta)
    with pytest.raises(SessionExistsError):
        store.create(meta)
    assert store.get(meta.uid).meta.project == "p"


def test_the_store_keeps_the_keys_digest_never_the_key(store: Any) -> None:
    key = ClaimKey.of("p", SECRET)
    uid = new_uid()
    store.claim(key, uid)
    held = _held(store)
    assert SECRET.encode() not in held and b"secret-repo" not in held
    assert key.digest.encode() in held and uid.encode() in held


def _held(store: Any) -> bytes:
    """Every byte (and name) the store holds of its claims."""
    if isinstance(store, FileStore):
        files = sorted(store.home.rglob("*"))
        return b"\0".join(p.name.encode() + b"=" + p.read_bytes() for p in files if p.is_file())
    if isinstance(store, MemoryStore):
        return b"\0".join(f"{k}={v}".encode() for k, v in store._claims.items())
    subjects = store._client.subjects(f"{store._opts.prefix}.k.*")
    bodies = [store._client.last(s).head for s in subjects]
    return b"\0".join(f"{s}={b}".encode() for s, b in zip(subjects, bodies, strict=True))


# -- a model of the capability: any sequence of claims and releases ---------------------------

_OPS = st.lists(
    st.tuples(
        st.sampled_from(["claim", "release", "lookup"]),
        st.sampled_from(["k1", "k2", "k3"]),
        st.integers(0, 3),
    ),
    max_size=25,
)
_UIDS = [new_uid() for _ in range(4)]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=_OPS)
def test_any_sequence_of_claims_and_releases_behaves_as_a_create_only_map(
    ops: list[tuple[str, str, int]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    for store in (MemoryStore(), FileStore(tmp_path_factory.mktemp("claims") / "home")):
        model: dict[str, str] = {}
        for op, name, n in ops:
            key, uid = ClaimKey.of("p", name), _UIDS[n]
            if op == "claim":
                assert store.claim(key, uid) == model.setdefault(name, uid)
            elif op == "release":
                store.release(key, uid)
                if model.get(name) == uid:
                    del model[name]
            assert store.lookup(key) == model.get(name, "")
        store.close()
