"""The ``Sessions`` contract for origins, identities and input authors, run against every
implementation of :mod:`test_sessions_contract` (the local engine on the file, memory and
JetStream stores, and the gRPC client over TCP and a Unix socket): one suite, unchanged."""

# ruff: noqa: F811  (each test takes the imported ``sessions`` fixture by its name)
from __future__ import annotations

import pytest
from test_sessions_contract import sessions  # noqa: F401  (the fixture: every implementation)

from agentsessions.errors import InvalidArgumentError, SessionExistsError
from agentsessions.sessions.api import Sessions
from agentsessions.sessions.values import Authored, IdentityRef, Origin

ISSUE = Origin(source="github", subject="owner/repo#7", uri="https://x/7", attributes={"n": "7"})
NAMED = Origin(source="github", subject="owner/repo#7")
OCTOCAT = IdentityRef(principal="octocat", issuer="github")
APP = IdentityRef(principal="app", issuer="github", subject="42")


def _actors(sessions: Sessions, uid: str) -> list[object]:
    return [r.event.get("actor") for r in sessions.read(uid) if r.event["kind"] == "EVENT_INPUT"]


def test_create_keeps_origin_and_identity_and_find_finds_it(sessions: Sessions) -> None:
    made = sessions.create(project="origins", harness="echo", origin=ISSUE, identity=APP)
    assert (made.origin, made.identity) == (ISSUE, APP)
    got = sessions.get(made.uid)
    assert (got.origin, got.identity) == (ISSUE, APP)
    assert [s.origin for s in sessions.list(project="origins").sessions] == [ISSUE]
    found = sessions.find(origin=NAMED, project="origins")
    assert found is not None and found.uid == made.uid and found.identity == APP
    assert sessions.find(origin=NAMED, project="elsewhere") is None
    with pytest.raises(SessionExistsError):
        sessions.create(project="origins", origin=NAMED)


def test_ensure_by_origin_makes_one_session(sessions: Sessions) -> None:
    made, created = sessions.ensure(origin=ISSUE, identity=APP, project="origins")
    again, created_again = sessions.ensure(origin=NAMED, project="origins")
    assert (created, created_again, again.uid, again.origin) == (True, False, made.uid, ISSUE)
    with pytest.raises(InvalidArgumentError):
        sessions.ensure("a-key", origin=NAMED, project="origins")
    sessions.delete(made.uid)
    assert sessions.find(origin=NAMED, project="origins") is None


def test_exec_by_origin_reuses_the_session_and_records_authors(sessions: Sessions) -> None:
    first = sessions.run(
        inputs=[Authored("hello", OCTOCAT), "plain"], origin=ISSUE, identity=APP,
        project="origins", harness="echo",
    )  # fmt: skip
    assert first.turn is not None and first.turn.created
    frames = list(sessions.exec(inputs=["again"], origin=NAMED, project="origins"))
    start = frames[0]
    assert start.uid == first.session.uid and not getattr(start, "created", True)
    uid = first.session.uid
    assert _actors(sessions, uid) == [OCTOCAT, None, None]
    assert sessions.get(uid).identity == APP
    assert sessions.verify(uid).ok
    with pytest.raises(InvalidArgumentError):  # an origin never changes
        sessions.run(uid, ["x"], origin=Origin(source="github", subject="owner/repo#8"))
    with pytest.raises(InvalidArgumentError):
        sessions.run(inputs=["x"], origin=Origin(source="github"), project="origins")
