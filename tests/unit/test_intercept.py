"""Handlers built once per method (agentsessions.wire.intercept), and what that rests on.

The interceptors set a call's facts (its principal, its log notes) in context variables on
grpc's serving thread and pass the method's handler on unchanged; that is only right while
grpc runs the pipeline and the handler in one context of the call's own. The first tests
pin that behaviour of grpc on a real server, so an upgrade that changes it fails here."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest

from agentsessions.errors import ResourceExhaustedError
from agentsessions.server.admission import PUBLIC_KEY, Admission, refusal
from agentsessions.wire.bounds import Limits
from agentsessions.wire.intercept import Handler, PerMethod

WHO: contextvars.ContextVar[str | None] = contextvars.ContextVar("test_who", default=None)
IDENTITY = (lambda b: b, lambda b: b)


class SetsWho(grpc.ServerInterceptor):
    """Sets :data:`WHO` from the call's metadata, as the token check sets the principal."""

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Handler | None],
        details: grpc.HandlerCallDetails,
    ) -> Handler | None:
        who = dict(details.invocation_metadata or ()).get("who")
        if who is not None:
            WHO.set(who)
        return continuation(details)


def _unary(_request: bytes, _context: grpc.ServicerContext) -> bytes:
    return str(WHO.get()).encode()


def _stream(_request: bytes, _context: grpc.ServicerContext) -> Iterator[bytes]:
    for _ in range(3):
        yield str(WHO.get()).encode()


@pytest.fixture
def channel() -> Iterator[grpc.Channel]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2), interceptors=[SetsWho()])
    de, ser = IDENTITY
    handlers = {
        "Unary": grpc.unary_unary_rpc_method_handler(_unary, de, ser),
        "Stream": grpc.unary_stream_rpc_method_handler(_stream, de, ser),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("t.T", handlers),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as chan:
            yield chan
    finally:
        server.stop(None)


def test_grpc_runs_the_handler_in_the_context_its_interceptors_ran_in(
    channel: grpc.Channel,
) -> None:
    unary = channel.unary_unary("/t.T/Unary")
    stream = channel.unary_stream("/t.T/Stream")
    assert unary(b"", metadata=(("who", "ann"),)) == b"ann"
    assert list(stream(b"", metadata=(("who", "bob"),))) == [b"bob"] * 3
    # each call has a context of its own: nothing of the previous call is left
    assert unary(b"") == b"None"
    assert list(stream(b"")) == [b"None"] * 3


def _handler(behavior: Callable[..., Any] = _unary) -> Handler:
    return grpc.unary_unary_rpc_method_handler(behavior, *IDENTITY)


def test_per_method_builds_once_while_the_inner_handler_is_the_same() -> None:
    built: list[str] = []

    def build(method: str, inner: Handler) -> Handler:
        built.append(method)
        return _handler()

    handlers = PerMethod(build)
    inner, other = _handler(), _handler()
    first = handlers.get("/a", inner)
    assert handlers.get("/a", inner) is first and built == ["/a"]
    assert handlers.get("/b", inner) is not first and built == ["/a", "/b"]
    assert handlers.get("/a", other) is not first and built == ["/a", "/b", "/a"]
    assert handlers.get("/a", None) is None


def test_a_handler_made_for_one_call_is_wrapped_and_not_kept() -> None:
    handlers = PerMethod(lambda _method, inner: _handler())
    kept = handlers.get("/a", _handler())
    refused = refusal(ResourceExhaustedError("full"))
    assert handlers.get("/a", refused) is not kept
    assert handlers.get("/a", refused) is not kept  # built again: never kept
    assert handlers.get("/a", _handler()) is not kept


class _Details(grpc.HandlerCallDetails):
    def __init__(self, method: str) -> None:
        self.method = method
        self.invocation_metadata = ()


def test_admission_reuses_a_methods_handler_and_gives_back_a_slot_never_submitted() -> None:
    admission = Admission(Limits(), lambda: None)
    inner = grpc.unary_stream_rpc_method_handler(_stream, *IDENTITY)
    try:
        first = admission.intercept_service(lambda _d: inner, _Details("/t.T/Stream"))
        assert first is not None and admission.ledger.open_streams(PUBLIC_KEY) == 1
        # grpc refused that call after admission (its own bound) and never submitted it:
        # the next call admitted on this thread gives its slot back
        again = admission.intercept_service(lambda _d: inner, _Details("/t.T/Stream"))
        assert again is first
        assert admission.ledger.open_streams(PUBLIC_KEY) == 1
        pool = first.unary_stream.experimental_thread_pool
        done = pool.submit(lambda: list(_stream(b"", None)))  # type: ignore[arg-type]
        after = threading.Event()
        done.add_done_callback(lambda _f: after.set())  # runs after the slot's own callback
        assert done.result(10) == [b"None"] * 3 and after.wait(10)
        assert admission.ledger.open_streams(PUBLIC_KEY) == 0
    finally:
        admission.close()
