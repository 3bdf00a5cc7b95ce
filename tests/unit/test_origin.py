"""Origins and identities (``agentsessions.v1.provenance``) on the local engine over the
file, memory and JetStream stores: ``create``/``ensure``/``exec`` with an origin and an
identity, ``find(origin=)`` in one lookup (never a listing), an origin's key space apart
from callers' keys, an origin that never changes, and inputs' authors recorded as their
INPUT events' ``actor``, hashed in the chain like every other field."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import rfc8785

import agentsessions
from agentsessions.errors import InvalidArgumentError, SessionExistsError
from agentsessions.journal.stores.capabilities import KEY_CLAIMS
from agentsessions.journal.stores.claims import ClaimKey
from agentsessions.journal.stores.memory.store import MemoryStore
from agentsessions.journal.stores.store import new_uid
from agentsessions.sessions.claims import CLAIM_ANNOTATION
from agentsessions.v1.provenance import (
    ORIGIN_SPACE,
    Authored,
    check_identity,
    check_origin,
    origin,
    origin_key,
)

ISSUE = {"source": "github", "subject": "owner/repo#12", "uri": "https://github.com/o/r/12"}
BOT = {"principal": "app/bot", "issuer": "github"}
OCTOCAT = {"principal": "octocat", "issuer": "github", "subject": "583231"}


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
        url = server.store_url(stream=f"O{token}", prefix=f"o{token}")
        store = JetStreamStore(JetStreamOptions.parse(url))
    with agentsessions.open(tmp_path / "home", store=store) as eng:
        yield eng
    if store is not None:
        store.close()


def _no_listing(engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("a lookup by origin listed the project")

    monkeypatch.setattr(engine.store, "list", refuse)


def test_values_are_checked_and_kept_in_proto3_json_form() -> None:
    assert origin("github", "o/r#1") == {"source": "github", "subject": "o/r#1"}
    made = origin("github", "o/r#1", uri="u", attributes={"repo": "o/r"})
    assert made == {
        "source": "github",
        "subject": "o/r#1",
        "uri": "u",
        "attributes": {"repo": "o/r"},
    }
    assert check_identity({"principal": "a", "issuer": ""}) == {"principal": "a"}
    assert check_identity({"principal": ""}) is None  # all empty: none, as the reference
    bad_ones: list[dict[str, Any]] = [
        {"source": "github"},
        {"subject": "x"},
        {"source": "g", "subject": "x", "k": "v"},
        {"source": 1, "subject": "x"},
        {"source": "g", "subject": "x", "attributes": {"a": 1}},
    ]
    for bad in bad_ones:
        with pytest.raises(InvalidArgumentError):
            check_origin(bad)
    with pytest.raises(InvalidArgumentError, match="principal, issuer, subject"):
        check_identity({"name": "a"})
    # injective in (source, subject); uri and attributes do not name the session
    assert origin_key({"source": "a:b", "subject": "c"}) != origin_key(
        {"source": "a", "subject": "b:c"}
    )
    assert origin_key(ISSUE) == origin_key({**ISSUE, "uri": "other", "attributes": {"x": "y"}})


def test_an_origin_key_space_is_apart_from_callers_keys() -> None:
    key = origin_key(ISSUE)
    assert ClaimKey.of("p", key, space=ORIGIN_SPACE) != ClaimKey.of("p", key)
    # a caller's key's digest input starts with the project, never a NUL: no key of a
    # caller's (whatever its text) hashes what an origin's does
    spaced = b"\0" + ORIGIN_SPACE.encode() + b"\0" + b"p\0" + key.encode()
    assert ClaimKey.of("p", key, space=ORIGIN_SPACE).digest == hashlib.sha256(spaced).hexdigest()


def test_an_origins_claim_digest_is_what_format_md_says() -> None:
    # the digest names claim files on disk and CAS subjects on JetStream: pinned, so that a
    # change to how it is derived cannot silently orphan every existing origin's claim
    key = origin_key({"source": "github", "subject": "owner/repo#12 é", "uri": "ignored"})
    assert key == '["github", "owner/repo#12 é"]'
    expected = hashlib.sha256(b"\0origin\0default\0" + key.encode()).hexdigest()
    assert expected == "4ef434c13310f0a464b18e8dc901912ee44774a8f70a67d47f496f19bb9148bf"
    assert ClaimKey.of("default", key, space=ORIGIN_SPACE).digest == expected


def test_create_with_an_origin_and_identity_then_find_it(
    engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = engine.create(project="p", harness="echo", origin=ISSUE, identity=BOT)
    assert made.origin == ISSUE and made.identity == BOT
    assert engine.get(made.uid).origin == ISSUE and engine.get(made.uid).identity == BOT
    assert made.to_json()["origin"] == ISSUE and made.to_json()["identity"] == BOT
    _no_listing(engine, monkeypatch)
    found = engine.find(origin=ISSUE, project="p")
    assert found is not None and found.uid == made.uid
    # uri and attributes describe it; source and subject name it
    found = engine.find(origin={"source": "github", "subject": "owner/repo#12"}, project="p")
    assert found is not None and found.uid == made.uid
    assert engine.find(origin={**ISSUE, "subject": "owner/repo#13"}, project="p") is None
    assert engine.find(origin=ISSUE, project="q") is None  # per project
    assert engine.find(origin_key(ISSUE), project="p") is None  # a caller's key is not it
    with pytest.raises(SessionExistsError, match=made.uid):  # an origin names one session
        engine.create(project="p", origin=ISSUE)


def test_ensure_by_origin_creates_once(engine: Any) -> None:
    made, created = engine.ensure(origin=ISSUE, identity=BOT, project="p", name="i12")
    assert created and made.origin == ISSUE and made.identity == BOT and made.name == "i12"
    assert (
        made.annotations[CLAIM_ANNOTATION]
        == ClaimKey.of("p", origin_key(ISSUE), space="origin").digest
    )
    again, created = engine.ensure(origin={**ISSUE, "uri": "changed"}, project="p")
    assert (again.uid, again.origin, created) == (made.uid, ISSUE, False)  # never changed
    with pytest.raises(InvalidArgumentError, match="one of them"):
        engine.ensure("k", origin=ISSUE, project="p")
    with pytest.raises(InvalidArgumentError, match="one of them"):
        engine.find(project="p")
    engine.delete(made.uid)  # releases the origin at once
    assert engine.find(origin=ISSUE, project="p") is None
    fresh, created = engine.ensure(origin=ISSUE, project="p")
    assert created and fresh.uid != made.uid


def test_bad_provenance_is_refused_before_anything_is_made(engine: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        engine.create(project="p", origin={"source": "github"})
    with pytest.raises(InvalidArgumentError):
        engine.create(project="p", identity={"who": "x"})
    with pytest.raises(InvalidArgumentError):
        engine.run(inputs=["hi"], project="p", harness="echo", origin={"subject": "x"})
    with pytest.raises(InvalidArgumentError):
        engine.run(inputs=[Authored("hi", {"name": "x"})], project="p", harness="echo")
    assert engine.list(project="p").sessions == ()


def test_exec_by_origin_reuses_or_creates_the_session(engine: Any) -> None:
    first = engine.run(inputs=["one"], project="p", harness="echo", origin=ISSUE, identity=BOT)
    assert first.turn.created and first.session.origin == ISSUE and first.session.identity == BOT
    uid = first.session.uid
    second = engine.run(inputs=["two"], project="p", harness="echo", origin=ISSUE)
    assert not second.turn.created and second.session.uid == uid
    frames = list(
        engine.exec(
            inputs=["three"], project="p", origin=ISSUE, expected_last_seq=second.session.last_seq
        )
    )
    assert frames[0].uid == uid and not frames[0].created
    texts = [r.event["message"]["parts"][0]["text"]["text"] for r in engine.read(uid)
             if r.event.get("kind") == "EVENT_INPUT"]  # fmt: skip
    assert texts == ["one", "two", "three"]
    found = engine.find(origin=ISSUE, project="p")
    assert found is not None and found.uid == uid
    assert [s.uid for s in engine.list(project="p").sessions] == [uid]


def test_a_sessions_origin_never_changes(engine: Any) -> None:
    made = engine.run(inputs=["one"], project="p", harness="echo", origin=ISSUE).session
    other = {"source": "github", "subject": "owner/repo#99"}
    with pytest.raises(InvalidArgumentError, match="never changes"):
        engine.run(made.uid, ["two"], origin=other)
    plain = engine.create(project="p", harness="echo")
    with pytest.raises(InvalidArgumentError, match="never changes"):
        engine.run(plain.uid, ["two"], origin=ISSUE)
    assert engine.run(made.uid, ["two"], origin=ISSUE).session.uid == made.uid  # its own: fine


def test_authored_inputs_record_their_actor_in_the_chain(engine: Any) -> None:
    done = engine.run(
        inputs=[
            Authored("from octocat", OCTOCAT),
            "anonymous",
            Authored({"role": "user", "parts": [{"text": {"text": "m"}}]}, BOT),
        ],
        project="p",
        harness="echo",
    )
    uid = done.session.uid
    inputs = [r for r in engine.read(uid) if r.event.get("kind") == "EVENT_INPUT"]
    assert [r.event.get("actor") for r in inputs] == [OCTOCAT, None, BOT]
    for record in inputs:  # hashed as the reference's recipe: the actor is in the bytes
        body = {"event": record.event, "prev_hash": record.prev_hash, "seq": str(record.seq)}
        assert hashlib.sha256(rfc8785.dumps(body)).hexdigest() == record.content_hash
    assert engine.verify(uid).ok
    plain = engine.run(inputs=["no author"], project="p", harness="echo").session.uid
    [only] = [r for r in engine.read(plain) if r.event.get("kind") == "EVENT_INPUT"]
    assert "actor" not in only.event and b"actor" not in only.payload  # bytes as before


def test_the_metadata_check_covers_the_origin(tmp_path: Path) -> None:
    from agentsessions.errors import MetadataCorruptError

    with agentsessions.open(tmp_path / "home") as eng:
        made = eng.create(project="p", origin=ISSUE)
        path = next((tmp_path / "home").rglob(f"{made.uid}/session.json"))
    obj = json.loads(path.read_bytes())
    obj["origin"]["subject"] = "owner/repo#13"  # a hostile edit, sums left as they were
    path.write_bytes(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode())
    with (
        agentsessions.open(tmp_path / "home") as eng,
        pytest.raises(MetadataCorruptError, match="origin"),
    ):
        eng.get(made.uid)


def test_claims_of_origins_are_the_stores_own(engine: Any) -> None:
    made, _ = engine.ensure(origin=ISSUE, project="p")
    ck = ClaimKey.of("p", origin_key(ISSUE), space=ORIGIN_SPACE)
    assert KEY_CLAIMS.need(engine.store, "test").lookup(ck) == made.uid


def test_export_and_import_keep_the_origin_and_its_claim(tmp_path: Path) -> None:
    with agentsessions.open(tmp_path / "a") as a:
        done = a.run(
            inputs=[Authored("hi", OCTOCAT)], project="p", harness="echo", origin=ISSUE,
            identity=BOT,
        )  # fmt: skip
        a.export(done.session.uid, tmp_path / "s.jsonl")
        with pytest.raises(SessionExistsError, match=done.session.uid):  # the origin's own
            a.import_(tmp_path / "s.jsonl")
        assert [s.uid for s in a.list(project="p").sessions] == [done.session.uid]
    with agentsessions.open(tmp_path / "b") as b:
        moved = b.import_(tmp_path / "s.jsonl")
        assert (moved.origin, moved.identity, moved.project) == (ISSUE, BOT, "p")
        found = b.find(origin=ISSUE, project="p")
        assert found is not None and found.uid == moved.uid
        [record] = [r for r in b.read(moved.uid) if r.event.get("kind") == "EVENT_INPUT"]
        assert record.event["actor"] == OCTOCAT
        other = b.import_(tmp_path / "s.jsonl", project="q")  # another project: its own claim
        assert other.annotations[CLAIM_ANNOTATION] == (
            ClaimKey.of("q", origin_key(ISSUE), space=ORIGIN_SPACE).digest
        )
        found = b.find(origin=ISSUE, project="q")
        assert found is not None and found.uid == other.uid
        b.delete(other.uid)  # its claim is released with it
        assert b.find(origin=ISSUE, project="q") is None
        again = b.run(inputs=["next"], project="p", origin=ISSUE)  # exec by origin reuses it
        assert again.session.uid == moved.uid


def test_an_imported_key_claim_is_not_carried_over(tmp_path: Path) -> None:
    with agentsessions.open(tmp_path / "a") as a:
        made, _ = a.ensure("thread-1", project="p")
        a.export(made.uid, tmp_path / "s.jsonl")
    with agentsessions.open(tmp_path / "b") as b:
        moved = b.import_(tmp_path / "s.jsonl")
        assert CLAIM_ANNOTATION not in moved.annotations  # the key is unknown here
        assert b.find("thread-1", project="p") is None


def test_exec_by_origin_completes_a_claim_whose_creator_died(engine: Any) -> None:
    ck, uid = ClaimKey.of("p", origin_key(ISSUE), space=ORIGIN_SPACE), new_uid()
    KEY_CLAIMS.need(engine.store, "test").claim(ck, uid)  # its process died before creating
    assert engine.find(origin=ISSUE, project="p") is None
    done = engine.run(inputs=["hi"], project="p", harness="echo", origin=ISSUE)
    assert done.session.uid == uid and done.turn is not None and done.turn.created
    assert done.session.origin == ISSUE and engine.verify(uid).ok
