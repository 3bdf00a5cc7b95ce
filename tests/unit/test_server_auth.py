"""Access control on a real grpc server on loopback: bearer tokens, project scope, TLS
(with and without client certificates) and the request bounds, as ``server_security`` sets
them up. The service is main's ``SessionsService`` reading the engine through the scope on
every call (what ``build_server(scope=...)`` does), plus a test-only streaming Replay that
stays open until its caller leaves, to count open streams."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

import agentsessions
from agentsessions.errors import InvalidArgumentError
from agentsessions.server import auth, service
from agentsessions.server.admission import Admission, Ledger
from agentsessions.server.scoped import Scope
from agentsessions.sessions.api import Sessions
from agentsessions.sessions.tokens import TokenStore
from agentsessions.wire import convert, status
from agentsessions.wire.bounds import Limits
from agentsessions.wire.gen import common_pb2, session_pb2, session_pb2_grpc
from tests.tlscerts import Authority, Pem

UNKNOWN = "sess-000000000000000000000000"


class ScopedService(service.SessionsService):
    """The service reading its Sessions through the scope on each RPC (as build_server
    makes it), with a Replay held open until the caller leaves (a stream to count)."""

    def __init__(self, scope: Scope) -> None:
        super().__init__(scope.engine, scope)

    def Replay(
        self, request: session_pb2.ReplayRequest, context: grpc.ServicerContext
    ) -> Iterator[common_pb2.LogRecord]:
        """The records, then held open until the caller cancels (a stream to count)."""
        try:
            records = list(self.sessions(context).read(request.session))
        except Exception as exc:
            status.abort(context, exc)
            raise
        yield from (convert.record_to_proto(r) for r in records)
        while context.is_active():
            time.sleep(0.01)


@dataclass
class Rig:
    engine: Sessions
    tokens: TokenStore
    server: grpc.Server
    port: int
    limiter: Ledger

    def token(self, *projects: str, name: str = "") -> str:
        return self.tokens.create(projects=projects, name=name)[0]


def _serve(
    engine: Sessions,
    home: Path,
    listen: str = "127.0.0.1:0",
    limits: Limits | None = None,
    **security: Any,
) -> Rig:
    limits = limits or Limits()
    credentials, interceptors, scope = auth.server_security(
        home, listen=listen, engine=engine, limits=limits, **security
    )
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=8),
        interceptors=interceptors,
        options=limits.grpc_options(),
    )
    session_pb2_grpc.add_SessionsServicer_to_server(ScopedService(scope), server)  # type: ignore[no-untyped-call]
    if credentials is None:
        port = server.add_insecure_port(listen)
    else:
        port = server.add_secure_port(listen, credentials)
    server.start()
    admission = interceptors[-1]
    assert isinstance(admission, Admission)
    return Rig(engine, TokenStore(home), server, port, admission.ledger)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Sessions]:
    with agentsessions.open(tmp_path / "home", runtime="local") as eng:
        yield eng


@pytest.fixture
def rig(engine: Sessions, tmp_path: Path) -> Iterator[Rig]:
    r = _serve(engine, tmp_path / "home", limits=Limits(max_streams_per_token=2))
    yield r
    r.server.stop(None).wait()


@pytest.fixture
def stub(rig: Rig) -> Iterator[session_pb2_grpc.SessionsStub]:
    with grpc.insecure_channel(f"127.0.0.1:{rig.port}") as channel:
        yield session_pb2_grpc.SessionsStub(channel)


def bearer(token: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {token}"),)


def _code(call: Any) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as info:
        call()
    err: Any = info.value
    return err.code(), err.details()


def _create(project: str = "", name: str = "") -> session_pb2.CreateSessionRequest:
    s = session_pb2.Session(harness="echo")
    s.metadata.project, s.metadata.name = project, name
    return session_pb2.CreateSessionRequest(session=s)


# --- tokens --------------------------------------------------------------------------------


def test_without_a_token_nothing_is_served(rig: Rig, stub: session_pb2_grpc.SessionsStub) -> None:
    code, details = _code(lambda: stub.ListSessions(session_pb2.ListSessionsRequest()))
    assert code == grpc.StatusCode.UNAUTHENTICATED
    assert details == "no bearer token: send metadata 'authorization: Bearer <token>'"
    code, _ = _code(lambda: stub.CreateSession(_create("a")))
    assert code == grpc.StatusCode.UNAUTHENTICATED
    assert rig.engine.list(project="a").sessions == ()  # nothing was created


@pytest.mark.parametrize(
    ("value", "details"),
    [
        ("Bearer agst_0123456789ab_nope", "invalid bearer token"),
        ("Bearer not-a-token", "malformed bearer token: expected agst_<id>_<secret>"),
        ("Basic dXNlcjpwYXNz", "authorization must be 'Bearer <token>'"),
    ],
)
def test_a_wrong_token_is_unauthenticated(
    rig: Rig, stub: session_pb2_grpc.SessionsStub, value: str, details: str
) -> None:
    rig.token("a")
    code, got = _code(
        lambda: stub.ListSessions(
            session_pb2.ListSessionsRequest(), metadata=(("authorization", value),)
        )
    )
    assert (code, got) == (grpc.StatusCode.UNAUTHENTICATED, details)


def test_a_tampered_secret_is_refused(rig: Rig, stub: session_pb2_grpc.SessionsStub) -> None:
    token = rig.token("a")
    tampered = token[:-1] + ("A" if token[-1] != "A" else "B")
    code, details = _code(
        lambda: stub.ListSessions(session_pb2.ListSessionsRequest(), metadata=bearer(tampered))
    )
    assert (code, details) == (grpc.StatusCode.UNAUTHENTICATED, "invalid bearer token")


def test_a_revoked_token_is_refused_from_the_next_call(
    rig: Rig, stub: session_pb2_grpc.SessionsStub
) -> None:
    token = rig.token("a")
    stub.ListSessions(session_pb2.ListSessionsRequest(), metadata=bearer(token))
    token_id = token.split("_")[1]
    rig.tokens.revoke(token_id)  # no restart: the server re-reads the file
    code, details = _code(
        lambda: stub.ListSessions(session_pb2.ListSessionsRequest(), metadata=bearer(token))
    )
    assert (code, details) == (
        grpc.StatusCode.UNAUTHENTICATED,
        f"bearer token {token_id} was revoked",
    )


def test_an_expired_token_is_refused(engine: Sessions, tmp_path: Path) -> None:
    home = tmp_path / "home"
    past = TokenStore(home, clock=lambda: time.time_ns() - 3_600_000_000_000)  # an hour ago
    token, info = past.create(projects=["a"], expires_in=60)  # a minute's life, long gone
    r = _serve(engine, home)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{r.port}") as channel:
            stub = session_pb2_grpc.SessionsStub(channel)
            code, details = _code(
                lambda: stub.ListSessions(session_pb2.ListSessionsRequest(), metadata=bearer(token))
            )
    finally:
        r.server.stop(None).wait()
    assert (code, details) == (grpc.StatusCode.UNAUTHENTICATED, f"bearer token {info.id} expired")


# --- project scope over the wire -----------------------------------------------------------


def test_a_token_for_a_can_neither_list_read_nor_write_b(
    rig: Rig, stub: session_pb2_grpc.SessionsStub
) -> None:
    theirs = rig.engine.create(project="b", name="theirs")
    meta = bearer(rig.token("a", name="alice"))
    code, details = _code(
        lambda: stub.ListSessions(session_pb2.ListSessionsRequest(project="b"), metadata=meta)
    )
    assert code == grpc.StatusCode.PERMISSION_DENIED and "project 'b'" in details
    code, details = _code(lambda: stub.CreateSession(_create("b"), metadata=meta))
    assert code == grpc.StatusCode.PERMISSION_DENIED
    # another project's session answers exactly as an unknown uid does
    other = _code(
        lambda: stub.GetSession(session_pb2.GetSessionRequest(uid=theirs.uid), metadata=meta)
    )
    unknown = _code(
        lambda: stub.GetSession(session_pb2.GetSessionRequest(uid=UNKNOWN), metadata=meta)
    )
    assert other[0] == unknown[0] == grpc.StatusCode.NOT_FOUND
    assert other[1] == unknown[1].replace(UNKNOWN, theirs.uid)
    assert [s.name for s in rig.engine.list(project="b").sessions] == ["theirs"]


def test_a_token_works_in_its_own_project(rig: Rig, stub: session_pb2_grpc.SessionsStub) -> None:
    meta = bearer(rig.token("a"))
    created = stub.CreateSession(_create(name="mine"), metadata=meta)  # no project: the token's
    assert created.metadata.project == "a"
    got = stub.GetSession(session_pb2.GetSessionRequest(uid=created.metadata.uid), metadata=meta)
    assert got.metadata.name == "mine"
    listed = stub.ListSessions(session_pb2.ListSessionsRequest(), metadata=meta)
    assert [s.metadata.uid for s in listed.sessions] == [created.metadata.uid]


# --- bounds --------------------------------------------------------------------------------


def test_an_oversized_message_is_resource_exhausted_and_the_server_stays_up(
    engine: Sessions, tmp_path: Path
) -> None:
    r = _serve(engine, tmp_path / "home", limits=Limits(max_message_bytes=64 * 1024))
    meta = bearer(r.token("a"))
    try:
        with grpc.insecure_channel(f"127.0.0.1:{r.port}") as channel:
            stub = session_pb2_grpc.SessionsStub(channel)
            big = _create("a")
            big.session.labels["blob"] = "x" * 100_000
            code, details = _code(lambda: stub.CreateSession(big, metadata=meta))
            assert code == grpc.StatusCode.RESOURCE_EXHAUSTED, details
            assert "larger than max" in details
            assert stub.CreateSession(_create("a"), metadata=meta).metadata.project == "a"
    finally:
        r.server.stop(None).wait()
    assert len(engine.list(project="a").sessions) == 1  # the big one never reached it


def _wait_until(condition: Any) -> None:
    """Wait (bounded) for the server to notice a stream ended: a cancel is asynchronous."""
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, "the server never released the stream"
        time.sleep(0.01)


def test_open_streams_per_client_are_bounded(rig: Rig, stub: session_pb2_grpc.SessionsStub) -> None:
    uid = rig.engine.run(None, ["hi"], harness="echo", project="a").session.uid
    alice, bob = rig.token("a"), rig.token("a")
    request = session_pb2.ReplayRequest(session=uid)
    first = stub.Replay(request, metadata=bearer(alice))
    second = stub.Replay(request, metadata=bearer(alice))
    next(first), next(second)  # both handlers run: two slots taken
    key = f"token:{alice.split('_')[1]}"
    assert rig.limiter.open_streams(key) == 2
    third = stub.Replay(request, metadata=bearer(alice))
    code, details = _code(lambda: next(third))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert details == (
        "too many open streams for this token (2 of 2): end a stream (a follow, an exec) "
        "first, or ask the operator to raise serve --max-streams-per-token"
    )
    # unary calls are not streams; another token has its own bound
    stub.GetSession(session_pb2.GetSessionRequest(uid=uid), metadata=bearer(alice))
    other = stub.Replay(request, metadata=bearer(bob))
    assert next(other).seq == 1
    other.cancel()
    first.cancel()  # the slot comes back once the server sees the stream end
    _wait_until(lambda: rig.limiter.open_streams(key) == 1)
    again = stub.Replay(request, metadata=bearer(alice))
    assert next(again).seq == 1
    again.cancel()
    second.cancel()
    _wait_until(lambda: rig.limiter.open_streams(key) == 0)


# --- server_security's refusals ------------------------------------------------------------


@pytest.mark.parametrize("listen", ["0.0.0.0:0", "[::]:0", "10.1.2.3:8080", "example.com:80"])
def test_no_auth_is_refused_on_a_listener_others_can_reach(
    engine: Sessions, tmp_path: Path, listen: str
) -> None:
    with pytest.raises(InvalidArgumentError, match="only a unix socket or a loopback"):
        auth.server_security(tmp_path, listen=listen, engine=engine, no_auth=True)
    with pytest.raises(InvalidArgumentError, match="without TLS would cross the network"):
        auth.server_security(tmp_path, listen=listen, engine=engine)


@pytest.mark.parametrize(
    "listen", ["127.0.0.1:0", "127.3.4.5:9", "[::1]:0", "localhost:8080", "unix:///tmp/x.sock"]
)
def test_no_auth_is_allowed_on_loopback_and_unix(
    engine: Sessions, tmp_path: Path, listen: str
) -> None:
    credentials, interceptors, _scope = auth.server_security(
        tmp_path, listen=listen, engine=engine, no_auth=True
    )
    assert credentials is None and isinstance(interceptors[0], auth.LocalOperator)


def test_without_auth_on_loopback_every_project_is_served(engine: Sessions, tmp_path: Path) -> None:
    r = _serve(engine, tmp_path / "home", no_auth=True)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{r.port}") as channel:
            stub = session_pb2_grpc.SessionsStub(channel)
            assert stub.CreateSession(_create("b")).metadata.project == "b"
            assert (
                len(stub.ListSessions(session_pb2.ListSessionsRequest(project="b")).sessions) == 1
            )
    finally:
        r.server.stop(None).wait()


# --- TLS -----------------------------------------------------------------------------------


@pytest.fixture
def ca(tmp_path: Path) -> Authority:
    return Authority(tmp_path / "pki")


def _tls_channel(port: int, ca: Authority, client: Pem | None = None) -> grpc.Channel:
    creds = grpc.ssl_channel_credentials(
        root_certificates=ca.pem.cert,
        private_key=client.key if client else None,
        certificate_chain=client.cert if client else None,
    )
    return grpc.secure_channel(f"localhost:{port}", creds)


def test_tls_serves_a_token_and_a_plaintext_client_fails_cleanly(
    engine: Sessions, tmp_path: Path, ca: Authority
) -> None:
    server_pem = ca.issue("localhost", server=True)
    r = _serve(
        engine, tmp_path / "home", tls_cert=server_pem.cert_path, tls_key=server_pem.key_path
    )
    meta = bearer(r.token("a"))
    try:
        with grpc.insecure_channel(f"127.0.0.1:{r.port}") as plain:
            code, _ = _code(
                lambda: session_pb2_grpc.SessionsStub(plain).ListSessions(
                    session_pb2.ListSessionsRequest(), metadata=meta, timeout=20
                )
            )
            assert code == grpc.StatusCode.UNAVAILABLE
        with _tls_channel(r.port, ca) as channel:  # the server is still up
            stub = session_pb2_grpc.SessionsStub(channel)
            assert stub.CreateSession(_create(), metadata=meta).metadata.project == "a"
            code, _ = _code(lambda: stub.ListSessions(session_pb2.ListSessionsRequest()))
            assert code == grpc.StatusCode.UNAUTHENTICATED  # TLS is not a token
    finally:
        r.server.stop(None).wait()


def test_a_client_ca_requires_a_client_certificate_it_signed(
    engine: Sessions, tmp_path: Path, ca: Authority
) -> None:
    server_pem = ca.issue("localhost", server=True)
    clients = Authority(tmp_path / "clients", name="client CA")
    r = _serve(
        engine,
        tmp_path / "home",
        tls_cert=server_pem.cert_path,
        tls_key=server_pem.key_path,
        client_ca=clients.pem.cert_path,
    )
    meta = bearer(r.token("a"))
    request = session_pb2.ListSessionsRequest()
    try:
        for client in (None, ca.issue("stranger", server=False)):  # none, or another CA's
            with _tls_channel(r.port, ca, client) as channel:
                call = session_pb2_grpc.SessionsStub(channel).ListSessions
                code, _ = _code(lambda c=call: c(request, metadata=meta, timeout=20))
                assert code == grpc.StatusCode.UNAVAILABLE
        with _tls_channel(r.port, ca, clients.issue("alice", server=False)) as channel:
            stub = session_pb2_grpc.SessionsStub(channel)
            assert stub.ListSessions(request, metadata=meta).sessions == []
    finally:
        r.server.stop(None).wait()


def test_tls_files_are_checked_before_anything_listens(
    engine: Sessions, tmp_path: Path, ca: Authority
) -> None:
    one, two = ca.issue("localhost", server=True), ca.issue("other", server=True)
    cases = [
        ({"tls_cert": one.cert_path, "tls_key": two.key_path}, "cannot be used"),
        ({"tls_cert": one.cert_path, "tls_key": tmp_path / "missing.key"}, "--tls-key"),
        ({"tls_cert": one.cert_path}, "go together"),
        ({"client_ca": ca.pem.cert_path}, "client certificates needs TLS"),
        ({"tls_cert": one.cert_path, "tls_key": one.key_path, "client_ca": one.key_path},
         "client CA bundle"),
    ]  # fmt: skip
    for security, message in cases:
        with pytest.raises(InvalidArgumentError, match=message):
            auth.server_security(tmp_path, listen="127.0.0.1:0", engine=engine, **security)


def test_a_damaged_token_file_refuses_calls_and_the_server_stays_up(
    rig: Rig, stub: session_pb2_grpc.SessionsStub
) -> None:
    token = rig.token("a")
    rig.tokens.path.write_text("{not json")
    code, details = _code(
        lambda: stub.ListSessions(session_pb2.ListSessionsRequest(), metadata=bearer(token))
    )
    assert (code, details) == (
        grpc.StatusCode.UNAUTHENTICATED,
        "the server cannot check tokens (see its log)",
    )
    rig.tokens.path.unlink()
    fresh = rig.token("a")
    assert (
        stub.ListSessions(session_pb2.ListSessionsRequest(), metadata=bearer(fresh)).sessions == []
    )


def _whoami(context: grpc.ServicerContext) -> bytes:
    principal = auth.current_principal()
    return principal.name.encode() if principal else b"(none)"


WHO = grpc.method_handlers_generic_handler(
    "test.Who",
    {
        "One": grpc.unary_unary_rpc_method_handler(lambda _r, c: _whoami(c)),
        "Steps": grpc.unary_stream_rpc_method_handler(lambda _r, c: (_whoami(c) for _ in range(3))),
        "Echo": grpc.stream_stream_rpc_method_handler(lambda it, c: (_whoami(c) for _ in it)),
        "Count": grpc.stream_unary_rpc_method_handler(lambda it, c: _whoami(c) * len(list(it))),
    },
)


def test_every_kind_of_handler_sees_the_callers_principal_on_every_step(
    rig: Rig, stub: session_pb2_grpc.SessionsStub
) -> None:
    rig.server.add_generic_rpc_handlers((WHO,))
    meta = bearer(rig.token("a", name="alice"))
    with grpc.insecure_channel(f"127.0.0.1:{rig.port}") as channel:
        assert channel.unary_unary("/test.Who/One")(b"", metadata=meta) == b"alice"
        assert list(channel.unary_stream("/test.Who/Steps")(b"", metadata=meta)) == [b"alice"] * 3
        echoed = channel.stream_stream("/test.Who/Echo")(iter([b"1", b"2"]), metadata=meta)
        assert list(echoed) == [b"alice"] * 2
        assert channel.stream_unary("/test.Who/Count")(iter([b"1", b"2"]), metadata=meta) == (
            b"alicealice"
        )
        code, _ = _code(lambda: list(channel.unary_stream("/test.Who/Steps")(b"")))
        assert code == grpc.StatusCode.UNAUTHENTICATED
    _wait_until(lambda: rig.limiter.open_streams(f"token:{meta[0][1].split('_')[1]}") == 0)


# --- the serve command's flags -------------------------------------------------------------


def test_the_serve_flags_build_a_working_secured_server(engine: Sessions, tmp_path: Path) -> None:
    from agentsessions.cli import serveauth
    from agentsessions.wire import bounds

    assert serveauth.DEFAULT_MAX_MESSAGE == bounds.DEFAULT_MAX_MESSAGE_BYTES
    assert serveauth.DEFAULT_MAX_STREAMS == bounds.DEFAULT_MAX_STREAMS
    assert serveauth.DEFAULT_MAX_STREAMS_PER_TOKEN == bounds.DEFAULT_MAX_STREAMS_PER_TOKEN
    assert serveauth.DEFAULT_MAX_TURNS_PER_TOKEN == bounds.DEFAULT_MAX_TURNS_PER_TOKEN
    assert serveauth.DEFAULT_MAX_RPS_PER_TOKEN == bounds.DEFAULT_MAX_RPS_PER_TOKEN
    home = tmp_path / "home"
    sec = serveauth.security(home, "127.0.0.1:0", engine, max_message_bytes=4096)
    assert sec.credentials is None
    assert ("grpc.max_receive_message_length", 4096) in sec.options
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=2),
        interceptors=sec.interceptors,
        options=sec.options,
    )
    session_pb2_grpc.add_SessionsServicer_to_server(ScopedService(sec.scope), server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        token, _ = TokenStore(home).create(projects=["a"])
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = session_pb2_grpc.SessionsStub(channel)
            assert stub.CreateSession(_create(), metadata=bearer(token)).metadata.project == "a"
            code, _ = _code(lambda: stub.CreateSession(_create()))
            assert code == grpc.StatusCode.UNAUTHENTICATED
    finally:
        server.stop(None).wait()
    flags = ("max_streams", "max_streams_per_token", "max_turns_per_token", "max_rps_per_token")
    for flag in flags:
        dashed = "--" + flag.replace("_", "-")
        with pytest.raises(InvalidArgumentError, match=f"{dashed} must be at least 1"):
            serveauth.security(home, "127.0.0.1:0", engine, **{flag: 0})
