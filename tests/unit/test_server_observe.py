"""An operator's view of the daemon (issue 17, section 6): request ids, the per-call log
line, the standard health service and server reflection, on a real in-process server with
bearer tokens (what ``serve`` builds: :func:`build_server` over :func:`server_security`).
"""

from __future__ import annotations

import io
import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from needs import need

import agentsessions
import agentsessions.telemetry as telemetry
from agentsessions.errors import NotFoundError
from agentsessions.server import logs
from agentsessions.server.app import RunningServer, build_server
from agentsessions.server.auth import server_security
from agentsessions.server.observe import request_id_from
from agentsessions.sessions.api import Sessions
from agentsessions.sessions.tokens import TokenStore
from agentsessions.v1 import construct
from agentsessions.wire import status
from agentsessions.wire.gen import session_pb2, session_pb2_grpc

health_pb2 = need("grpc_health.v1.health_pb2", "grpc")
health_pb2_grpc = need("grpc_health.v1.health_pb2_grpc", "grpc")
reflection_pb2 = need("grpc_reflection.v1alpha.reflection_pb2", "grpc")
reflection_pb2_grpc = need("grpc_reflection.v1alpha.reflection_pb2_grpc", "grpc")


class Lines(io.StringIO):
    """A log stream a test can wait on: a call's line is written once grpc has ended the
    call, which can be just after the caller has its reply."""

    def __init__(self) -> None:
        super().__init__()
        self.changed = threading.Condition()

    def write(self, text: str) -> int:
        with self.changed:
            n = super().write(text)
            self.changed.notify_all()
        return n

    def wait_for(self, count: int) -> None:
        with self.changed:
            done = self.changed.wait_for(lambda: self.getvalue().count('"msg": "rpc"') >= count, 60)
        assert done, self.getvalue()  # a hang guard, not a timing assertion


@dataclass
class Rig:
    server: RunningServer
    channel: grpc.Channel
    token: str
    token_id: str
    log: Lines

    @property
    def stub(self) -> Any:
        return session_pb2_grpc.SessionsStub(self.channel)  # type: ignore[no-untyped-call]

    def auth(self, *extra: tuple[str, str]) -> list[tuple[str, str]]:
        return [("authorization", f"Bearer {self.token}"), *extra]

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.getvalue().splitlines()]


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Sessions]:
    with agentsessions.open(tmp_path / "home", runtime="local") as eng:
        yield eng


@pytest.fixture
def rig(engine: Sessions, tmp_path: Path) -> Iterator[Rig]:
    home = tmp_path / "home"
    token, info = TokenStore(home).create(projects=["acme"])
    log = Lines()
    handler = logs.configure("json", log)
    _, interceptors, scope = server_security(home, listen="127.0.0.1:0", engine=engine)
    server = build_server(engine, "127.0.0.1:0", interceptors=interceptors, scope=scope)
    channel = grpc.insecure_channel(server.address)
    try:
        yield Rig(server, channel, token, info.id, log)
    finally:
        channel.close()
        server.stop(None)
        logs.configure("none")
        assert handler is not None


def _create(rig: Rig, *extra: tuple[str, str]) -> tuple[Any, Any]:
    request = session_pb2.CreateSessionRequest()
    request.session.metadata.project = "acme"
    return rig.stub.CreateSession.with_call(request, metadata=rig.auth(*extra))


def _request_lines(rig: Rig, count: int = 1) -> list[dict[str, Any]]:
    rig.log.wait_for(count)
    return [line for line in rig.lines() if line["msg"] == "rpc"]


# -- request ids ------------------------------------------------------------------------------
def test_a_callers_request_id_is_kept_and_sent_back(rig: Rig) -> None:
    made, call = _create(rig, ("x-request-id", "req-42.a:b"))
    assert ("x-request-id", "req-42.a:b") in [tuple(m) for m in call.trailing_metadata()]
    (line,) = _request_lines(rig)
    assert line["request_id"] == "req-42.a:b"
    assert line["method"] == "/agentsessions.v1.Sessions/CreateSession"
    assert (line["code"], line["project"], line["session"]) == ("OK", "acme", made.metadata.uid)
    assert line["token_id"] == rig.token_id and line["duration_ms"] >= 0


def test_a_correlation_id_is_taken_too_and_an_implausible_one_replaced() -> None:
    assert request_id_from([("x-correlation-id", "abc")]) == "abc"
    made = request_id_from([("x-request-id", "has spaces"), ("x-request-id", "x" * 200)])
    assert len(made) == 16 and int(made, 16) >= 0  # one of ours, not the caller's
    assert request_id_from(None) != request_id_from(None)


def test_an_error_carries_the_request_id_and_keeps_its_message(rig: Rig) -> None:
    unknown = "sess-" + "0" * 24
    with pytest.raises(grpc.RpcError) as caught:
        rig.stub.GetSession(
            session_pb2.GetSessionRequest(uid=unknown), metadata=rig.auth(("x-request-id", "r1"))
        )
    err: Any = caught.value
    assert err.code() == grpc.StatusCode.NOT_FOUND
    assert err.details() == f"session {unknown} not found"  # the engine's text, word for word
    trailers = dict(err.trailing_metadata())
    assert trailers["x-request-id"] == "r1" and trailers["agentsessions-error"] == "NotFoundError"
    raised = status.from_rpc_error(err)  # what our client raises: the id comes along
    assert isinstance(raised, NotFoundError) and raised.request_id == "r1"
    assert "request_id" not in raised.to_dict()  # the --json error object is unchanged
    (line,) = _request_lines(rig)
    assert (line["code"], line["session"], line["error"]) == ("NOT_FOUND", unknown, "NotFoundError")


def test_a_refused_call_is_logged_without_a_principal(rig: Rig) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        rig.stub.ListSessions(session_pb2.ListSessionsRequest())
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED  # type: ignore[attr-defined]
    assert "x-request-id" in dict(caught.value.trailing_metadata())  # type: ignore[attr-defined]
    (line,) = _request_lines(rig)
    assert (line["code"], line["token_id"], line["error"]) == (
        "UNAUTHENTICATED",
        "",
        "UnauthenticatedError",
    )


class Recording(telemetry.Telemetry):
    """A telemetry that notes the request id each report was made under."""

    enabled = True

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def turn(self, session: str, execution_id: str, *, resumed: bool) -> telemetry.Span:
        self.seen.append(("turn", telemetry.REQUEST_ID.get()))
        return telemetry.NULL_SPAN

    def commit(self, session: str, events: int) -> telemetry.Span:
        self.seen.append(("commit", telemetry.REQUEST_ID.get()))
        return telemetry.NULL_SPAN

    def fsync(self, seconds: float) -> None:
        self.seen.append(("fsync", telemetry.REQUEST_ID.get()))


def test_the_request_id_follows_the_turn_into_the_engine_and_the_store(rig: Rig) -> None:
    made, _ = _create(rig)
    recording = Recording()
    previous = telemetry.install(recording)
    try:
        request = session_pb2.ExecRequest(session=made.metadata.uid)
        request.inputs.add().CopyFrom(_message("hello"))
        stream = rig.stub.Exec(request, metadata=rig.auth(("x-request-id", "turn-7")))
        list(stream)
    finally:
        telemetry.install(previous)
    kinds = {kind for kind, _ in recording.seen}
    assert {"turn", "commit", "fsync"} <= kinds  # the turn ran on the engine's own thread
    assert {rid for _, rid in recording.seen} == {"turn-7"}
    assert ("x-request-id", "turn-7") in [tuple(m) for m in stream.trailing_metadata()]


def _message(text: str) -> Any:
    from agentsessions.wire import convert

    return convert.message_to_proto(construct.text_message("user", text))


def test_a_log_line_written_for_a_request_names_it(rig: Rig) -> None:
    token = telemetry.REQUEST_ID.set("inside-1")
    try:
        logging.getLogger("agentsessions.journal").warning("a store said something")
    finally:
        telemetry.REQUEST_ID.reset(token)
    (line,) = [x for x in rig.lines() if x["msg"] == "a store said something"]
    assert (line["level"], line["request_id"]) == ("warning", "inside-1")


def test_the_text_format_is_one_line_of_key_values() -> None:
    record = logging.LogRecord("agentsessions.x", logging.INFO, "", 0, "rpc", None, None)
    record.fields = {"code": "OK", "project": "", "method": "/a/B"}
    text = logs.TextFormatter().format(record)
    assert text.endswith(' INFO agentsessions.x rpc code=OK project="" method=/a/B')


# -- health and reflection --------------------------------------------------------------------
def test_health_answers_without_a_token_and_turns_not_serving_on_a_stop(rig: Rig) -> None:
    health = health_pb2_grpc.HealthStub(rig.channel)
    for service in ("", "agentsessions.v1.Sessions"):
        answer = health.Check(health_pb2.HealthCheckRequest(service=service))
        assert answer.status == health_pb2.HealthCheckResponse.SERVING
    watch = health.Watch(health_pb2.HealthCheckRequest(service=""))
    assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
    rig.server.draining()  # what stop() and a signal do before the grace period
    assert next(watch).status == health_pb2.HealthCheckResponse.NOT_SERVING
    answer = health.Check(health_pb2.HealthCheckRequest(service="agentsessions.v1.Sessions"))
    assert answer.status == health_pb2.HealthCheckResponse.NOT_SERVING
    watch.cancel()
    with pytest.raises(grpc.RpcError) as caught:  # an unknown service is NOT_FOUND, as standard
        health.Check(health_pb2.HealthCheckRequest(service="no.Such"))
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND  # type: ignore[attr-defined]


def test_reflection_lists_the_services_without_a_token(rig: Rig) -> None:
    stub = reflection_pb2_grpc.ServerReflectionStub(rig.channel)
    (answer,) = stub.ServerReflectionInfo(
        iter([reflection_pb2.ServerReflectionRequest(list_services="")])
    )
    names = {s.name for s in answer.list_services_response.service}
    assert {
        "agentsessions.v1.Sessions",
        "grpc.health.v1.Health",
        "grpc.reflection.v1alpha.ServerReflection",
    } <= names
    (described,) = stub.ServerReflectionInfo(
        iter(
            [
                reflection_pb2.ServerReflectionRequest(
                    file_containing_symbol="agentsessions.v1.Sessions"
                )
            ]
        )
    )
    assert described.file_descriptor_response.file_descriptor_proto  # the schema, for grpcurl


def test_the_sessions_service_still_needs_a_token(rig: Rig) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        rig.stub.GetSession(session_pb2.GetSessionRequest(uid="sess-" + "0" * 24))
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED  # type: ignore[attr-defined]


def test_health_watchers_hold_no_worker_thread(rig: Rig) -> None:
    from agentsessions.server.app import UNARY_WORKERS

    health = health_pb2_grpc.HealthStub(rig.channel)
    request = health_pb2.HealthCheckRequest()
    watches = [health.Watch(request, timeout=30) for _ in range(UNARY_WORKERS + 8)]  # hang guard
    try:
        for watch in watches:  # every one answered: none waits for a free worker
            assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
        assert all(w.is_active() for w in watches)  # none had to end to free one
        made, _ = _create(rig)  # and the service still has its workers
        assert made.metadata.uid
    finally:
        for watch in watches:
            watch.cancel()
