"""The floor under a remote harness turn: the same messages over gRPC, and nothing else.

A node (:class:`BareNode`) that answers a turn's frames at once with canned events, and a
host that sends them on a kept ``Harness.Executions`` stream as the remote harness does: a
start answered by one event (the model call), a model result answered by one message of
three events (output, usage, end). No harness, no journal, no conversion beyond protobuf's
own. What this costs per turn is what the wire alone adds to a turn in process; used by
``harness_wire.py`` for its floor row.

:class:`ThreadedNode` answers the same way from a thread of its own, as a node must run a
synchronous harness: that thread reads the frames and sends the answers itself, through the
send callback grpc's sync server hands a behaviour marked ``experimental_non_blocking``
(the node's runner, ``harnessnode.HarnessServicer._executions``, and its outbox). Its cost
is the floor of such a node: the bare exchange plus the thread hop a harness needs.

A ``synced`` floor syncs a file (through the journal's own :class:`FileSystem`) before each
exchange, outside its timing, as a turn commits its first records before its Start goes out:
both ends of the exchange then start from threads that slept through a sync, as a turn's do,
where back-to-back exchanges find them just run.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc

from agentsessions.journal.format.durable import DEFAULT_FS
from agentsessions.wire.gen import common_pb2, harness_pb2, harness_pb2_grpc
from agentsessions.wire.harnesslinks import EXECUTIONS
from agentsessions.wire.harnessnode import add_to_server
from agentsessions.wire.historysync import NodeHistories
from agentsessions.wire.inlinestream import InlineStream, Stream, ThreadedStream
from agentsessions.wire.intercept import NON_BLOCKING, wrapped
from agentsessions.wire.wirecheck import WireChecks

_FRAME = harness_pb2.ControllerFrame.SerializeToString
_CALL = common_pb2.Event(execution_id="e", kind=common_pb2.EVENT_MODEL_CALL)
_ENDING = harness_pb2.Events(
    events=[
        common_pb2.Event(execution_id="e", kind=kind)
        for kind in (common_pb2.EVENT_OUTPUT, common_pb2.EVENT_USAGE, common_pb2.EVENT_END)
    ]
)


class BareNode(harness_pb2_grpc.HarnessServicer):
    """Answers each frame of an Executions stream at once: start -> the model call; any
    other frame -> output, usage and end in one message."""

    def Executions(self, frames: Iterator[Any], context: Any) -> Iterator[harness_pb2.Events]:
        for frame in frames:
            if frame.WhichOneof("frame") == "start":
                yield harness_pb2.Events(events=[_CALL])
            else:
                yield _ENDING


class ThreadedNode(harness_pb2_grpc.HarnessServicer):
    """BareNode's answers from a runner thread (one per stream) that sends them itself."""

    def Executions(self, frames: Iterator[Any], context: Any, send: Any = None) -> None:
        threading.Thread(target=self._answer, args=(frames, send), daemon=True).start()

    @staticmethod
    def _answer(frames: Iterator[Any], send: Any) -> None:
        try:
            for frame in frames:
                start = frame.WhichOneof("frame") == "start"
                send(harness_pb2.Events(events=[_CALL]) if start else _ENDING)
        except grpc.RpcError:
            pass  # the stream ended under it
        finally:
            send(None)


setattr(ThreadedNode.Executions, NON_BLOCKING, True)


class Floor:
    """A bare node on ``address`` and a kept stream to it, driven as the host drives a lane
    (:mod:`agentsessions.wire.inlinestream`); ``turn()`` is one turn's exchange
    (``threaded``: answered from a thread of the node's own, :class:`ThreadedNode`;
    ``grpc_threads``: the host's end on grpc's threaded client stream instead, its request
    and channel threads between the host and the wire, as hosts ran before; ``synced``: each
    exchange after a sync of a file, untimed, as a turn's Start follows its first commit)."""

    def __init__(
        self,
        address: str,
        threaded: bool = False,
        grpc_threads: bool = False,
        synced: bool = False,
    ) -> None:
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        node = ThreadedNode() if threaded else BareNode()
        harness_pb2_grpc.add_HarnessServicer_to_server(node, self.server)  # type: ignore[no-untyped-call]
        self.server.add_insecure_port(address)
        self.server.start()
        self.channel = grpc.insecure_channel(address)
        kind = ThreadedStream if grpc_threads else InlineStream
        self.stream: Stream = kind(self.channel, EXECUTIONS, _FRAME, harness_pb2.Events.FromString)
        envelope = {"session": "s", "execution_id": "e"}
        self.start = harness_pb2.ControllerFrame(start=harness_pb2.Start(), **envelope)
        result = harness_pb2.ModelResult(model_call_id="e:model:1")
        self.result = harness_pb2.ControllerFrame(model=result, **envelope)
        self._fd = -1
        if synced:  # a file beside the bench's journals (the same file system)
            self._dir = tempfile.mkdtemp(prefix="ash-floor-")
            path = os.path.join(self._dir, "synced")
            self._fd = DEFAULT_FS.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)

    def turn(self) -> tuple[float, float]:
        """(wall seconds, CPU seconds of this process: both ends) of one turn's exchange."""
        if self._fd >= 0:  # a commit's write and sync, before the exchange and outside it
            DEFAULT_FS.write_all(self._fd, b"x" * 256)
            DEFAULT_FS.sync(self._fd)
        began, cpu = time.perf_counter(), time.process_time()
        self.stream.send(self.start)
        next(self.stream)
        self.stream.send(self.result)
        next(self.stream)
        return time.perf_counter() - began, time.process_time() - cpu

    def close(self) -> None:
        """End the stream and the node."""
        self.stream.end()
        self.channel.close()
        self.server.stop(0)
        if self._fd >= 0:
            DEFAULT_FS.close(self._fd)


class _TwoArguments(grpc.ServerInterceptor):
    """Calls every behaviour with (request, context) only, as a wrapper that does not know
    grpc's send hook does: the node's handler then sends what its runner queues."""

    def intercept_service(self, continuation: Any, details: grpc.HandlerCallDetails) -> Any:
        def around(behavior: Any, streams_out: bool) -> Any:
            return lambda request, context: behavior(request, context)

        return wrapped(continuation(details), around)


def hookless_node(factory: Any, address: str) -> grpc.Server:
    """The harness node ``factory`` serves, on ``address``, without grpc's send hook (its
    structure before the runner sent its own events): the same node behind a wrapper."""
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=16), interceptors=[_TwoArguments(), WireChecks()]
    )
    add_to_server(server, factory, NodeHistories(), 8)
    server.add_insecure_port(address)
    server.start()
    return server
