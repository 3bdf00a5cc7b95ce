"""Origins, identities and input authors over gRPC, with the real client against a real
server on loopback: what the local engine does (create, ensure, exec and find by origin,
authors on INPUT events), and what a token may say: its inputs and the sessions it makes
carry the token's identity unless the operator minted it with ``name_authors``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agentsessions
from agentsessions.client import RemoteSessions, dial
from agentsessions.errors import InvalidArgumentError, SessionExistsError
from agentsessions.server import auth
from agentsessions.server.app import build_server
from agentsessions.sessions.api import Sessions
from agentsessions.sessions.tokens import TOKEN_ISSUER, TokenStore
from agentsessions.v1.provenance import Authored
from agentsessions.wire.bounds import Limits

ISSUE = {"source": "github", "subject": "owner/repo#12", "attributes": {"repo": "owner/repo"}}
OCTOCAT = {"principal": "octocat", "issuer": "github"}
BOT = {"principal": "app/bot", "issuer": "github"}


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Sessions]:
    with agentsessions.open(tmp_path / "home", runtime="local") as eng:
        yield eng


@pytest.fixture
def served(engine: Sessions, tmp_path: Path) -> Iterator[str]:
    """The address of a server over ``engine`` that asks for a token."""
    credentials, interceptors, scope = auth.server_security(
        tmp_path / "home", listen="127.0.0.1:0", engine=engine, limits=Limits()
    )
    running = build_server(
        engine, "127.0.0.1:0", credentials=credentials, interceptors=interceptors, scope=scope
    )
    yield running.address
    running.stop()


def _client(address: str, home: Path, **flags: Any) -> RemoteSessions:
    token, _ = TokenStore(home).create(projects=["p"], name=flags.pop("name", "ci"), **flags)
    return dial(address, token=token)


def _inputs(engine: Sessions, uid: str) -> list[tuple[str, Any]]:
    return [
        (r.event["message"]["parts"][0]["text"]["text"], r.event.get("actor"))
        for r in engine.read(uid)
        if r.event.get("kind") == "EVENT_INPUT"
    ]


def test_a_producer_token_names_authors_and_creators(
    engine: Sessions, served: str, tmp_path: Path
) -> None:
    with _client(served, tmp_path / "home", name_authors=True) as remote:
        first = remote.run(
            inputs=[Authored("a comment", OCTOCAT), "unsigned"],
            origin=ISSUE, identity=BOT, harness="echo",
        )  # fmt: skip
        uid = first.session.uid
        assert first.turn is not None and first.turn.created
        assert (first.session.origin, first.session.identity) == (ISSUE, BOT)
        again = remote.run(inputs=[Authored("more", OCTOCAT)], origin=ISSUE)
        assert again.session.uid == uid and again.turn is not None and not again.turn.created
        found = remote.find(origin={"source": "github", "subject": "owner/repo#12"})
        assert found is not None and found.uid == uid and found.origin == ISSUE
        assert remote.get(uid).identity == BOT
        assert [s.origin for s in remote.list().sessions] == [ISSUE]
        with pytest.raises(SessionExistsError, match=uid):
            remote.create(origin=ISSUE)
        with pytest.raises(InvalidArgumentError, match="never changes"):
            remote.run(uid, ["x"], origin={"source": "github", "subject": "other"})
        made, created = remote.ensure(origin={"source": "slack", "subject": "C1/170"}, identity=BOT)
        assert created and made.identity == BOT and made.project == "p"
    assert _inputs(engine, uid) == [("a comment", OCTOCAT), ("unsigned", None), ("more", OCTOCAT)]
    assert engine.verify(uid).ok


def test_a_token_that_may_not_name_authors_is_recorded_as_itself(
    engine: Sessions, served: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    with _client(served, home, name="relay") as remote:
        token_id = TokenStore(home).list()[0].id
        me = {"principal": "relay", "issuer": TOKEN_ISSUER, "subject": token_id}
        done = remote.run(
            inputs=[Authored("claims to be octocat", OCTOCAT), "plain"],
            origin=ISSUE, identity=BOT, harness="echo",
        )  # fmt: skip
        assert done.session.identity == me  # the client's claim is not recorded
        made = remote.create(identity=BOT)
        assert made.identity == me
    assert _inputs(engine, done.session.uid) == [("claims to be octocat", me), ("plain", me)]


def test_the_operator_names_authors_without_a_token(engine: Sessions, tmp_path: Path) -> None:
    running = build_server(engine, "127.0.0.1:0")
    try:
        with dial(running.address) as remote:
            done = remote.run(inputs=[Authored("hi", OCTOCAT)], origin=ISSUE, harness="echo")
            assert remote.find(origin=ISSUE) is not None
    finally:
        running.stop()
    assert _inputs(engine, done.session.uid) == [("hi", OCTOCAT)]
