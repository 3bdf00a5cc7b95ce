"""The Sessions service in process: a real grpc server on loopback over a real engine,
driven by the generated stub (what a client built from the reference's protos uses)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest

import agentsessions
from agentsessions.errors import InvalidArgumentError, NotFoundError
from agentsessions.server import service
from agentsessions.sessions.api import Sessions
from agentsessions.wire import convert, status
from agentsessions.wire.gen import common_pb2, session_pb2, session_pb2_grpc


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Sessions]:
    with agentsessions.open(tmp_path / "home", runtime="auto") as eng:
        yield eng


@pytest.fixture
def stub(engine: Sessions) -> Iterator[session_pb2_grpc.SessionsStub]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    service.add_to_server(server, engine)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield session_pb2_grpc.SessionsStub(channel)
    finally:
        channel.close()
        server.stop(None).wait()


def _fails(call: object, code: grpc.StatusCode) -> grpc.RpcError:
    assert isinstance(call, grpc.RpcError)
    assert call.code() == code, (call.code(), call.details())
    return call


def test_create_then_get_is_the_engines_session(
    stub: session_pb2_grpc.SessionsStub, engine: Sessions
) -> None:
    req = session_pb2.Session(harness="echo", model="echo", labels={"a": "1"})
    req.metadata.project, req.metadata.name = "p1", "one"
    created = stub.CreateSession(session_pb2.CreateSessionRequest(session=req))
    assert created.metadata.uid.startswith("sess-")
    assert (created.metadata.project, created.metadata.name) == ("p1", "one")
    assert created.exec_state == session_pb2.EXEC_PENDING
    assert created.metadata.create_time.ToNanoseconds() > 0
    got = stub.GetSession(session_pb2.GetSessionRequest(uid=created.metadata.uid))
    local = engine.get(created.metadata.uid)
    assert convert.session_from_proto(got) == local
    assert local.labels == {"a": "1"} and local.harness == "echo"


def test_list_pages_newest_first_with_page_tokens(
    stub: session_pb2_grpc.SessionsStub, engine: Sessions
) -> None:
    uids = [engine.create(project="p2", name=str(i)).uid for i in range(3)]
    first = stub.ListSessions(session_pb2.ListSessionsRequest(project="p2", page_size=2))
    assert len(first.sessions) == 2 and first.next_page_token
    second = stub.ListSessions(
        session_pb2.ListSessionsRequest(project="p2", page_size=2, page_token=first.next_page_token)
    )
    assert second.next_page_token == ""
    listed = [s.metadata.uid for s in (*first.sessions, *second.sessions)]
    assert listed == [s.uid for s in engine.list(project="p2").sessions]
    assert sorted(listed) == sorted(uids)
    default = stub.ListSessions(session_pb2.ListSessionsRequest())  # project "" = default
    assert list(default.sessions) == []


BAD, NONE = grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND
UNKNOWN_UID = "sess-000000000000000000000000"


@pytest.mark.parametrize(
    ("request_", "code", "error"),
    [
        (session_pb2.GetSessionRequest(uid=""), BAD, "InvalidArgumentError"),
        (session_pb2.GetSessionRequest(uid=UNKNOWN_UID), NONE, "NotFoundError"),
        (session_pb2.GetSessionRequest(uid="../etc"), BAD, "InvalidArgumentError"),
        (session_pb2.ListSessionsRequest(page_size=-1), BAD, "InvalidArgumentError"),
        (session_pb2.ListSessionsRequest(page_token="not-a-token"), BAD, "InvalidArgumentError"),
    ],
    ids=["empty-uid", "unknown-uid", "bad-uid", "negative-page-size", "bad-page-token"],
)
def test_bad_requests_get_the_digests_status_and_our_error(
    stub: session_pb2_grpc.SessionsStub, request_: object, code: grpc.StatusCode, error: str
) -> None:
    method = (
        stub.GetSession
        if isinstance(request_, session_pb2.GetSessionRequest)
        else (stub.ListSessions)
    )
    with pytest.raises(grpc.RpcError) as info:
        method(request_)
    err = _fails(info.value, code)
    meta = dict(err.trailing_metadata())  # type: ignore[attr-defined]
    assert meta[status.ERROR_KEY] == error
    back = status.from_rpc_error(err)
    assert type(back).__name__ == error and str(back) == err.details()  # type: ignore[attr-defined]
    if code == grpc.StatusCode.NOT_FOUND:
        assert isinstance(back, NotFoundError)


@pytest.mark.parametrize("field", ["uid", "compute", "origin"])
def test_create_refuses_what_it_cannot_honour(
    stub: session_pb2_grpc.SessionsStub, engine: Sessions, field: str
) -> None:
    req = session_pb2.Session()
    if field == "uid":
        req.metadata.uid = "sess-000000000000000000000001"
    elif field == "compute":
        req.compute.CopyFrom(session_pb2.ComputeRef(runtime="local"))
    else:
        req.origin.CopyFrom(common_pb2.Origin(source="s"))  # no subject: not an origin
    with pytest.raises(grpc.RpcError) as info:
        stub.CreateSession(session_pb2.CreateSessionRequest(session=req))
    _fails(info.value, grpc.StatusCode.INVALID_ARGUMENT)
    assert isinstance(status.from_rpc_error(info.value), InvalidArgumentError)
    assert engine.list().sessions == ()  # nothing was created


def test_create_honours_origin_and_identity_and_get_returns_them(
    stub: session_pb2_grpc.SessionsStub, engine: Sessions
) -> None:
    req = session_pb2.Session()
    req.origin.CopyFrom(common_pb2.Origin(source="github", subject="o/r#1", attributes={"a": "b"}))
    req.identity.CopyFrom(common_pb2.IdentityRef(principal="someone", issuer="github"))
    made = stub.CreateSession(session_pb2.CreateSessionRequest(session=req))
    assert (made.origin, made.identity) == (req.origin, req.identity)
    got = stub.GetSession(session_pb2.GetSessionRequest(uid=made.metadata.uid))
    assert (got.origin, got.identity) == (req.origin, req.identity)
    listed = stub.ListSessions(session_pb2.ListSessionsRequest()).sessions
    assert [(s.origin, s.identity) for s in listed] == [(req.origin, req.identity)]
    found = stub.FindSession(
        session_pb2.FindSessionRequest(origin=common_pb2.Origin(source="github", subject="o/r#1"))
    )
    assert found.session.metadata.uid == made.metadata.uid
    local = engine.find(origin={"source": "github", "subject": "o/r#1"})
    assert local is not None and local.uid == made.metadata.uid


def test_every_rpc_of_the_service_is_mapped() -> None:
    methods = session_pb2.DESCRIPTOR.services_by_name["Sessions"].methods
    base = session_pb2_grpc.SessionsServicer
    unmapped = [
        m.name for m in methods if getattr(service.SessionsService, m.name) is getattr(base, m.name)
    ]
    assert unmapped == []


def test_a_foreign_exception_is_internal_without_its_text(
    stub: session_pb2_grpc.SessionsStub, engine: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(uid: str) -> None:
        raise RuntimeError("/secret/path leaked")

    monkeypatch.setattr(engine, "get", boom)
    with pytest.raises(grpc.RpcError) as info:
        stub.GetSession(session_pb2.GetSessionRequest(uid="sess-000000000000000000000000"))
    err = _fails(info.value, grpc.StatusCode.INTERNAL)
    assert "secret" not in err.details()  # type: ignore[attr-defined]
    assert err.details() == status.INTERNAL_MESSAGE  # type: ignore[attr-defined]
