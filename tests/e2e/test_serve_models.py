"""The model catalog and what a token holder may name, over a real in-process server
(``build_server`` with ``server_security``, as ``serve`` wires them), issue 18:

- ``scripted:file=<a server path>`` and ``openai:x,base_url=<the caller's listener>`` are
  PERMISSION_DENIED, the file is never quoted, nothing connects to the listener and the
  server's API key never leaves;
- a catalog NAME works (a scripted SPEC, and the fake OpenAI endpoint as SPEC, which gets
  the key: the operator chose that URL), and the session shows the NAME, never the SPEC;
- a spec a harness reaches on its own (a chat config's ``model``) is checked too;
- a 100 KB spec and a 10 KB page token come back with their own code, not RESOURCE_EXHAUSTED,
  and no 201-byte slice of either appears in the answer.
"""

from __future__ import annotations

import functools
import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from fake_openai import Endpoint, compatible_reply, serve

import agentsessions
from agentsessions.client import dial
from agentsessions.errors import PermissionDeniedError
from agentsessions.server.app import build_server
from agentsessions.server.auth import server_security
from agentsessions.server.modelpolicy import ModelPolicy
from agentsessions.sessions.local import open_local
from agentsessions.sessions.tokens import TokenStore
from agentsessions.wire.gen import common_pb2, session_pb2, session_pb2_grpc

KEY = "sk-server-secret-0123456789"


@dataclass
class Served:
    address: str
    token: str
    endpoint: Endpoint
    secret: Path
    engine: agentsessions.Sessions

    def stub(self) -> Any:
        channel = grpc.insecure_channel(self.address)
        return session_pb2_grpc.SessionsStub(channel)  # type: ignore[no-untyped-call]

    @property
    def meta(self) -> tuple[tuple[str, str]]:
        return (("authorization", f"Bearer {self.token}"),)


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    monkeypatch.setenv("MODEL_API_KEY", KEY)
    secret = tmp_path / "master.key"
    secret.write_text("the server's own secret\n")
    home = tmp_path / "home"
    with serve() as endpoint:
        endpoint.reply = compatible_reply(endpoint)
        catalog = {"fast": "scripted:seed=3", "remote": f"openai:gpt-test,base_url={endpoint.url}"}
        with open_local(home, runtime="local", models=catalog) as engine:
            _credentials, interceptors, scope = server_security(
                home, listen="127.0.0.1:0", engine=engine, models=ModelPolicy(engine.models)
            )
            server = build_server(engine, "127.0.0.1:0", interceptors=interceptors, scope=scope)
            token = TokenStore(home).create(projects=("a",))[0]
            try:
                yield Served(server.address, token, endpoint, secret, engine)
            finally:
                server.stop(None)


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A real socket a caller listens on: nothing may ever connect to it."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)
    yield sock
    sock.close()


def _nobody_came(sock: socket.socket) -> None:
    with pytest.raises(BlockingIOError):
        sock.accept()


def _refused(call: Any) -> tuple[grpc.StatusCode, str, str]:
    with pytest.raises(grpc.RpcError) as info:
        result = call()
        for _ in result if hasattr(result, "__iter__") else ():
            pass
    err: Any = info.value
    trailers = " ".join(v for _k, v in err.trailing_metadata() or ())
    return err.code(), err.details(), trailers


def _exec(model: str, **extra: Any) -> session_pb2.ExecRequest:
    inputs = [
        common_pb2.Message(
            role="user", parts=[common_pb2.Part(text=common_pb2.TextPart(text="hi"))]
        )
    ]
    return session_pb2.ExecRequest(inputs=inputs, harness="chat", model=model, **extra)


def test_a_server_path_or_a_callers_url_is_refused_before_anything(
    served: Served, listener: socket.socket
) -> None:
    port = listener.getsockname()[1]
    stub = served.stub()
    hostile = [
        f"scripted:file={served.secret}",
        f"scripted:seed=1,file={served.secret}",
        f"openai:x,base_url=http://127.0.0.1:{port}/v1",
        f"openai:gpt-test,base_url={served.endpoint.url}",  # the operator's URL, by spec
    ]
    before = served.engine.list(project="a").sessions
    for model in hostile:
        create = session_pb2.CreateSessionRequest(
            session=session_pb2.Session(harness="chat", model=model)
        )
        for call in (
            functools.partial(stub.Exec, _exec(model), metadata=served.meta),
            functools.partial(stub.CreateSession, create, metadata=served.meta),
        ):
            code, details, trailers = _refused(call)
            assert code == grpc.StatusCode.PERMISSION_DENIED, details
            assert "offered: fast, remote, echo, scripted" in details
            assert "serve --model NAME=SPEC" in trailers
            for told in (details, trailers):
                assert "the server's own secret" not in told
                assert KEY not in told
                assert "Errno" not in told
    assert served.engine.list(project="a").sessions == before  # nothing was written
    _nobody_came(listener)
    assert served.endpoint.seen == []  # the key never left: nothing was sent anywhere


def test_the_client_raises_permission_denied_and_compact_is_checked(served: Served) -> None:
    with dial(served.address, token=served.token) as client:
        uid = client.create(project="a", harness="chat", model="fast").uid
        client.run(uid, ["one"])
        with pytest.raises(PermissionDeniedError):
            client.compact(uid, keep_turns=0, model=f"scripted:file={served.secret}")
        with pytest.raises(PermissionDeniedError):
            client.run(uid, (), model="openai:gpt-test")


def test_a_catalog_name_works_and_the_session_shows_the_name(served: Served) -> None:
    stub = served.stub()
    updates = list(stub.Exec(_exec("fast", project="a"), metadata=served.meta))
    uid = updates[-1].session.metadata.uid
    assert uid
    got = stub.GetSession(session_pb2.GetSessionRequest(uid=uid), metadata=served.meta)
    assert got.model == "fast"
    listed = stub.ListSessions(session_pb2.ListSessionsRequest(project="a"), metadata=served.meta)
    assert [s.model for s in listed.sessions] == ["fast"]
    assert "seed" not in str(listed)
    with dial(served.address, token=served.token) as client:
        text = json.dumps([r.event for r in client.read(uid)])
    assert "scripted-3-" in text  # the catalog's SPEC answered
    assert "seed=3" not in text and "scripted:" not in text  # the journal has the NAME

    updates = list(stub.Exec(_exec("remote", project="a"), metadata=served.meta))
    remote = updates[-1].session.metadata.uid
    got = stub.GetSession(session_pb2.GetSessionRequest(uid=remote), metadata=served.meta)
    assert got.model == "remote"
    assert served.endpoint.url not in str(got)
    seen = [{k.lower(): v for k, v in s.headers.items()} for s in served.endpoint.seen]
    assert [h.get("authorization") for h in seen] == [f"Bearer {KEY}"]  # the operator's URL
    assert [s.body["model"] for s in served.endpoint.seen] == ["gpt-test"]  # the SPEC's model
    with dial(served.address, token=served.token) as client:
        text = json.dumps([r.event for r in client.read(remote)])
    assert "fake:hi" in text and served.endpoint.url not in text

    served.endpoint.models = frozenset({"other"})  # the endpoint now refuses it: HTTP 404
    _code, details, trailers = _refused(
        lambda: stub.Exec(_exec("", session=remote), metadata=served.meta)
    )
    assert "HTTP 404" in details and "<the operator's endpoint>" in details
    assert "127.0.0.1" not in details + trailers  # the catalog's URL stays the operator's


def test_a_recorded_model_is_checked_for_a_token_holders_turn(served: Served) -> None:
    # the operator's (or an imported) session names a file: a token's turn may not use it
    uid = served.engine.create(
        project="a", harness="chat", model=f"scripted:file={served.secret}"
    ).uid
    stub = served.stub()
    code, details, _t = _refused(lambda: stub.Exec(_exec("", session=uid), metadata=served.meta))
    assert code == grpc.StatusCode.PERMISSION_DENIED, details
    assert "the server's own secret" not in details
    assert [r.seq for r in served.engine.read(uid)] == []  # nothing was written


def test_a_model_a_harness_reaches_by_itself_is_checked(served: Served) -> None:
    stub = served.stub()
    config = json.dumps({"model": f"scripted:file={served.secret}"}).encode()
    code, details, _t = _refused(
        lambda: stub.Exec(_exec("fast", project="a", config=config), metadata=served.meta)
    )
    assert code == grpc.StatusCode.PERMISSION_DENIED, details
    assert "the server's own secret" not in details


def test_huge_caller_text_gets_its_own_code_and_is_not_echoed(served: Served) -> None:
    stub = served.stub()
    spec = "openai:" + "m" * 100_000
    token = "p" * 10_000
    uid = served.engine.run(None, ["one"], project="a", harness="chat", model="fast").session.uid
    for call, want, sent in (
        (lambda: stub.Exec(_exec(spec), metadata=served.meta), "PERMISSION_DENIED", spec),
        (
            lambda: stub.ListSessions(
                session_pb2.ListSessionsRequest(project="a", page_token=token),
                metadata=served.meta,
            ),
            "INVALID_ARGUMENT",
            token,
        ),
        (
            lambda: stub.Compact(
                session_pb2.CompactRequest(
                    session=uid, keep_turns=0, model="scripted:seed=" + token
                ),
                metadata=served.meta,
            ),
            "INVALID_ARGUMENT",  # a scripted option the scripted model refuses, quoted clipped
            token,
        ),
        (
            lambda: stub.ListSessions(
                session_pb2.ListSessionsRequest(project=token), metadata=served.meta
            ),
            "PERMISSION_DENIED",  # the scope quotes the project: the status bounds it
            token,
        ),
    ):
        code, details, trailers = _refused(call)
        assert code.name == want, details[:300]
        for told in (details, trailers):
            assert len(told.encode()) < 4096
            assert not any(sent[i : i + 201] in told for i in range(0, len(sent) - 200, 97))


def test_the_cli_over_server_names_a_catalog_model_and_is_refused_a_file(
    served: Served, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from agentsessions.cli.app import app

    def cli(*args: str) -> Any:
        argv = ["--server", served.address, "--token", served.token, *args]
        return CliRunner().invoke(app, argv, env={"COLUMNS": "200"})

    ran = cli("exec", "--project", "a", "--harness", "chat", "--model", "fast", "--input", "hi")
    assert ran.exit_code == 0, ran.stderr
    assert "scripted-3-" in ran.stdout
    listed = cli("list", "--project", "a", "--json")
    assert listed.exit_code == 0, listed.stderr
    assert "fast" in listed.stdout and "seed=3" not in listed.stdout
    refused = cli("exec", "--project", "a", "--harness", "chat", "--input", "hi",
                  "--model", f"scripted:file={served.secret}")  # fmt: skip
    assert refused.exit_code == 31, refused.stderr  # PermissionDeniedError
    assert "is not offered to callers" in refused.stderr
    assert "the server's own secret" not in refused.stderr + refused.stdout
