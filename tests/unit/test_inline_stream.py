"""A stream-stream call driven by its caller's thread (agentsessions.wire.inlinestream).

It rests on grpc internals (a segregated call, grpc's single-threaded reader), so these
tests pin what the host relies on: the installed grpc has them, the call runs with no
thread of grpc's started for it, messages cross both ways in order, a server's status
arrives as grpc's own ``RpcError`` (code, details, trailers), an ended call drops what is
sent after it and says so at the next read, and :func:`open_stream` falls back to grpc's
threaded stream on a channel it cannot drive (an intercepted one).
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest

from agentsessions.wire import inlinestream
from agentsessions.wire.inlinestream import InlineStream, ThreadedStream, open_stream

METHOD = "/test.Echo/Chat"


def _echo(requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
    """Answers each request with itself reversed; b"fail" ends the call with a status."""
    for request in requests:
        if request == b"fail":
            context.set_trailing_metadata((("why", "asked"),))
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "asked to fail")
        yield request[::-1]


@pytest.fixture
def address() -> Iterator[str]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    handler = grpc.stream_stream_rpc_method_handler(_echo)
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("test.Echo", {"Chat": handler}),)
    )
    where = f"unix://{tempfile.mkdtemp(prefix='ash-', dir='/tmp')}/echo.sock"
    server.add_insecure_port(where)
    server.start()
    yield where
    server.stop(0)


def _same(data: bytes) -> bytes:
    return data


def _grpc_client_threads(before: set[threading.Thread]) -> list[str]:
    """The threads grpc's threaded client started since ``before`` (its request thread and
    its channel's spin thread: grpc names each after the ``_run`` of its thread wrapper;
    the server's threads are named otherwise)."""
    return [t.name for t in set(threading.enumerate()) - before if t.name.endswith("(_run)")]


def test_the_installed_grpc_has_what_the_inline_stream_needs() -> None:
    assert inlinestream.INLINE  # else every host turn silently pays grpc's threads again


def test_messages_cross_both_ways_on_the_callers_thread(address: str) -> None:
    with grpc.insecure_channel(address) as channel:
        before = set(threading.enumerate())
        stream = open_stream(channel, METHOD, _same, _same)
        assert isinstance(stream, InlineStream)
        for word in (b"one", b"two", b"three"):
            stream.send(word)
            assert next(stream) == word[::-1]
        assert not _grpc_client_threads(before)  # no request thread, no channel spin thread
        assert stream.is_active()
        stream.end()
        assert not stream.is_active()


def test_a_status_arrives_as_grpcs_own_error(address: str) -> None:
    with grpc.insecure_channel(address) as channel:
        stream = open_stream(channel, METHOD, _same, _same)
        stream.send(b"fail")
        with pytest.raises(grpc.RpcError) as caught:
            next(stream)
        error: Any = caught.value
        assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert error.details() == "asked to fail"
        assert ("why", "asked") in tuple(error.trailing_metadata())
        assert not stream.is_active()
        stream.send(b"late")  # over: dropped, and the next read says how it ended
        with pytest.raises(grpc.RpcError):
            next(stream)
        stream.end()  # nothing left to take: returns at once


def test_an_ended_stream_says_so_at_its_next_read(address: str) -> None:
    with grpc.insecure_channel(address) as channel:
        stream = open_stream(channel, METHOD, _same, _same)
        stream.send(b"ab")
        assert next(stream) == b"ba"
        stream.end()
        stream.send(b"cd")
        with pytest.raises(grpc.RpcError) as caught:
            next(stream)
        assert caught.value.code() == grpc.StatusCode.CANCELLED  # type: ignore[attr-defined]


def test_an_unreachable_node_fails_the_first_read_unavailable() -> None:
    where = f"unix://{tempfile.mkdtemp(prefix='ash-', dir='/tmp')}/nobody.sock"
    with grpc.insecure_channel(where) as channel:
        stream = open_stream(channel, METHOD, _same, _same)
        stream.send(b"hello")
        with pytest.raises(grpc.RpcError) as caught:
            next(stream)
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE  # type: ignore[attr-defined]
        stream.end()


class _Nothing(grpc.StreamStreamClientInterceptor):
    def intercept_stream_stream(self, continuation: Any, details: Any, requests: Any) -> Any:
        return continuation(details, requests)


def test_an_intercepted_channel_gets_grpcs_threaded_stream(address: str) -> None:
    with grpc.insecure_channel(address) as plain:
        channel = grpc.intercept_channel(plain, _Nothing())
        before = set(threading.enumerate())
        stream = open_stream(channel, METHOD, _same, _same)
        assert isinstance(stream, ThreadedStream)
        stream.send(b"xy")
        assert next(stream) == b"yx"
        assert _grpc_client_threads(before)  # the test above can fail: these threads are named so
        stream.end()


def test_internals_that_moved_get_grpcs_threaded_stream(
    address: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def moved(*args: Any) -> None:
        raise TypeError("_SingleThreadedRendezvous() takes another shape in this grpc")

    monkeypatch.setattr(inlinestream._grpc_channel, "_SingleThreadedRendezvous", moved)
    with grpc.insecure_channel(address) as channel:
        stream = open_stream(channel, METHOD, _same, _same)
        assert isinstance(stream, ThreadedStream)
        stream.send(b"ab")
        assert next(stream) == b"ba"
        stream.end()
