"""A harness node's sending side (:mod:`agentsessions.wire.harnessoutbox`).

The thread that runs an execution sends its events itself through grpc's send callback:
what needs no answer waits until the harness waits on the host or ends, and crosses in one
message. A server whose interceptors drop that hook (they call a behaviour with two
arguments) serves the same turns and the same refusals through the handler, as before.
"""

from __future__ import annotations

import queue
import tempfile
from collections.abc import Callable, Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest

import agentsessions
from agentsessions.sessions.harnessbook import static_remotes
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.wire.gen import common_pb2, harness_pb2, harness_pb2_grpc
from agentsessions.wire.harnessnode import HarnessServer, HarnessServicer, add_to_server
from agentsessions.wire.intercept import NON_BLOCKING, Handler, wrapped
from agentsessions.wire.wirecheck import WireChecks, checked


def _socket(tag: str) -> str:
    return f"unix://{tempfile.mkdtemp(prefix='ash-', dir='/tmp')}/{tag}.sock"


def _frame(**body: Any) -> harness_pb2.ControllerFrame:
    return harness_pb2.ControllerFrame(session="s", execution_id="e1", **body)


def _kinds(batch: harness_pb2.Events) -> list[str]:
    return [common_pb2.EventKind.Name(e.kind) for e in batch.events]


def test_what_needs_no_answer_crosses_in_one_message_with_the_end() -> None:
    server = HarnessServer(HARNESSES.factory("chat"), _socket("outbox"))
    chan = grpc.insecure_channel(server.address)
    frames: queue.SimpleQueue[harness_pb2.ControllerFrame | None] = queue.SimpleQueue()
    try:
        stub = harness_pb2_grpc.HarnessStub(chan)  # type: ignore[no-untyped-call]
        replies = iter(stub.Executions(iter(frames.get, None), timeout=30))
        hi = common_pb2.Message(
            role="user", parts=[common_pb2.Part(text=common_pb2.TextPart(text="hi"))]
        )
        frames.put(_frame(start=harness_pb2.Start(inputs=[hi])))
        first = next(replies)
        assert _kinds(first) == ["EVENT_MODEL_CALL"]  # the harness waits: it crossed alone
        call_id = first.events[0].model.id
        answer = common_pb2.Message(
            role="assistant", parts=[common_pb2.Part(text=common_pb2.TextPart(text="hi"))]
        )
        usage = common_pb2.Usage(input_tokens=1, output_tokens=1)
        result = harness_pb2.ModelResult(model_call_id=call_id, message=answer, usage=usage)
        frames.put(_frame(model=result))
        last = _kinds(next(replies))
        assert "EVENT_USAGE" in last and last[-1] == "EVENT_END"  # one message, in order
        frames.put(None)
        assert list(replies) == []  # the host closed the stream: it ends OK
    finally:
        chan.close()
        server.stop(0)


def test_the_node_as_checked_hands_its_streams_grpcs_send_callback() -> None:
    servicer = HarnessServicer(HARNESSES.factory("echo"))
    for method in ("Connect", "Executions"):
        handler = grpc.stream_stream_rpc_method_handler(
            getattr(servicer, method),
            request_deserializer=harness_pb2.ControllerFrame.FromString,
            response_serializer=harness_pb2.Events.SerializeToString,
        )
        kept = checked(f"/agentsessions.v1.Harness/{method}", handler)
        assert kept is not None and getattr(kept.stream_stream, NON_BLOCKING, False)


class _TwoArguments(grpc.ServerInterceptor):
    """An interceptor that calls every behaviour with (request, context) only."""

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Handler | None],
        details: grpc.HandlerCallDetails,
    ) -> Handler | None:
        def around(behavior: Callable[..., Any], streams_out: bool) -> Callable[..., Any]:
            return lambda request, context: behavior(request, context)

        return wrapped(continuation(details), around)


@pytest.fixture
def hookless() -> Iterator[str]:
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=8), interceptors=[_TwoArguments(), WireChecks()]
    )
    add_to_server(server, HARNESSES.factory("chat"))
    address = _socket("hookless")
    server.add_insecure_port(address)
    server.start()
    yield address
    server.stop(0)


def test_without_the_hook_the_handler_sends_the_same_turns(tmp_path: Path, hookless: str) -> None:
    static_remotes([f"r-hookless={hookless}"])
    with agentsessions.open(tmp_path / "home", runtime="local") as engine:
        uid = engine.run(harness="r-hookless", inputs=["one"]).session.uid
        for text in ("two", "three"):
            turn = engine.run(uid, [text]).turn
            assert turn is not None and turn.outputs == (f"echo:{text}",)
        report = engine.rerun(uid)
        assert report.identical and report.model_calls == 0


def test_without_the_hook_a_refusal_still_ends_the_stream_with_its_status(hookless: str) -> None:
    chan = grpc.insecure_channel(hookless)
    try:
        stub = harness_pb2_grpc.HarnessStub(chan)  # type: ignore[no-untyped-call]
        late = _frame(cancel=harness_pb2.Cancel(reason="late"))
        with pytest.raises(grpc.RpcError) as caught:
            list(stub.Executions(iter([late]), timeout=30))
        assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "the first frame must be start" in str(caught.value.details())
    finally:
        chan.close()
