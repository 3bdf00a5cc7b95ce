"""The Harness service: any registered Python harness served over Harness.Connect.

``agentsessions harness serve NAME --listen ADDRESS`` runs one of these. Each Connect stream
is one execution (spec digest 1.3):

1. the host's first frame is ``start`` (with the envelope's session and execution id); every
   later frame repeats that envelope (else INVALID_ARGUMENT) and answers what the harness
   waits for (else FAILED_PRECONDITION): the stream is aborted, the server stays up;
2. the harness runs in a thread of its own against a :class:`WireSink`, which reads the host's
   frames and sends the events itself (:mod:`.harnessoutbox`): ``model`` sends
   EVENT_MODEL_CALL (its messages, tools and an id) and waits for the ModelResult with that
   id; ``tool`` sends EVENT_TOOL_CALL and waits for the ToolResult of that call id (after an
   ``approval`` frame, for a decided approval-gated call); ``output``, ``report`` and
   ``usage`` queue their event and go on (it crosses with the next one the harness waits
   on, a delta, or the end);
3. the run ends with exactly one EVENT_END (COMPLETED, or FAILED with the error's text, or
   CANCELED after a ``cancel`` frame), then the server closes its side;
4. a ``park`` frame answering a TOOL_CALL (the host made TOOL_CALL and APPROVAL_REQUEST
   durable) stops the harness (its ``sink.tool`` raises ApprovalParkedError, as in process);
   the server answers one EVENT_PARKED whose body is that ref and closes without END. A park
   for another call or execution is refused (FAILED_PRECONDITION), never acknowledged.

Nothing here is durable: the host records every effect before it answers, so a harness
process killed at any point loses nothing the host acknowledged. ``sink.state`` and
``sink.delta`` cross as transport-only events (``Event.state_commit``, answered by
``ControllerFrame.state``; ``Event.delta``): the host commits the state beside its journal.
Each execution runs on a fresh harness, so a harness whose memory is all in its working state
is described as STATELESS_REPLAY (it starts every run from ``Start.state``). The node keeps
each session's history it was sent (:class:`~.historysync.NodeHistories`, bounded), so a
Start with a base carries only what is new; a base it does not hold is refused before the
harness runs (FAILED_PRECONDITION with the ``agentsessions-history: miss`` trailer).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import grpc

from agentsessions.controller.spi import (
    REQUIRES_MEMORY_SNAPSHOT,
    STATELESS_REPLAY,
    Completion,
    Harness,
    HarnessDescriptor,
    Message,
    ModelRequest,
    Start,
)
from agentsessions.errors import (
    ApprovalParkedError,
    HarnessError,
    InvalidArgumentError,
    StateConflictError,
    TurnCanceledError,
    UnavailableError,
)
from agentsessions.journal.stores.store import Snapshot, WorkingState
from agentsessions.wire import harnesswire as wire
from agentsessions.wire import messagerefs
from agentsessions.wire.gen import common_pb2, harness_pb2, harness_pb2_grpc
from agentsessions.wire.harnessoutbox import NON_BLOCKING, Outbox, Pump, Refusal, Send
from agentsessions.wire.historysync import HistoryMiss, Mark, NodeHistories
from agentsessions.wire.workers import Workers

ERROR_CODE_INTERNAL = 13  # gRPC INTERNAL, as the reference records a failed harness
ERROR_CODE_CANCELLED = 1


class StreamGone(BaseException):
    """The stream ended under a waiting harness (host gone, or a refused frame): unwinds
    the harness whatever it catches (a BaseException, as KeyboardInterrupt)."""


@dataclass
class Exchange:
    """One execution's state, kept by the thread that runs the stream's executions.

    That thread reads the host's frames itself, from the stream's request iterator, when
    the harness waits for one, and sends the harness's events itself (:mod:`.harnessoutbox`):
    no thread between the harness and the wire, and only one reads or writes the stream."""

    session: str
    execution_id: str
    source: Iterator[harness_pb2.ControllerFrame]
    out: Outbox
    parked: common_pb2.ApprovalRef | None = None
    canceled: bool = False
    calls: int = 0
    json: bool = False  # the host reads events as Event.json (its Start said so)
    # the host reads a model call's messages named by history seq (.messagerefs): the seq
    # of each message of the kept history by its id, and where this run's history ends
    named: tuple[dict[int, int], int] | None = None

    def send(self, event: Mapping[str, Any]) -> None:
        """Queue ``event`` (a dict) for the host, stamped with the execution id."""
        stamped = {**event, "execution_id": self.execution_id}
        self.out.put(wire.event_to_wire(stamped, self.json))

    def send_call(self, body: dict[str, Any], messages: Sequence[Message]) -> None:
        """Queue the model call ``body`` with its ``messages``: those of the kept history
        named by seq to a host that reads them (.messagerefs), else every one in it."""
        if self.named is not None and (split := messagerefs.name(messages, *self.named)):
            inline, order = split
            call = {**body, "messages": inline} if inline else body
            event = {"kind": "EVENT_MODEL_CALL", "model": call, "execution_id": self.execution_id}
            named = messagerefs.named_event(event, order)
            if named is not None:
                self.out.put(named)
                return
        # canonical as it is built (a default left out, as the message would drop it), so
        # it crosses as Event.json to a host that reads it
        self.send(
            {"kind": "EVENT_MODEL_CALL", "model": {**body, "messages": [dict(m) for m in messages]}}
        )

    def refuse(self, code: grpc.StatusCode, details: str) -> StreamGone:
        """End the stream with ``code`` and unwind the harness."""
        self.out.refuse(Refusal(code, details))
        return StreamGone(details)

    def next_frame(self, waiting_for: str) -> harness_pb2.ControllerFrame:
        """The host's next frame; a cancel raises TurnCanceledError in the harness. A frame
        with another envelope, or a second start, is refused; one the server's wire checks
        refused (undecodable, a field out of range: .wirecheck) ends the stream
        INVALID_ARGUMENT. What waits in the outbox crosses first: the host may be waiting
        for it."""
        self.out.flush()
        try:
            frame = next(self.source)
        except InvalidArgumentError as exc:
            raise self.refuse(grpc.StatusCode.INVALID_ARGUMENT, exc.message) from None
        except (StopIteration, grpc.RpcError, ValueError):
            raise StreamGone(
                f"the host closed the stream while the harness waited for {waiting_for}"
            ) from None
        if frame.session != self.session or frame.execution_id != self.execution_id:
            raise self.refuse(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"frame for ({frame.session!r}, {frame.execution_id!r}) on the stream of "
                f"({self.session!r}, {self.execution_id!r})",
            )
        kind = frame.WhichOneof("frame")
        if kind == "start":
            raise self.refuse(
                grpc.StatusCode.FAILED_PRECONDITION, "a second start on one execution's stream"
            )
        if kind == "cancel":
            self.canceled = True
            raise TurnCanceledError(f"the host canceled the execution: {frame.cancel.reason}")
        return frame


class WireSink:
    """The Sink a served harness runs against: each effect is an Event to the host, and
    the answers it waits for are the host's frames."""

    def __init__(self, exchange: Exchange) -> None:
        self.x = exchange

    def model(self, request: ModelRequest) -> Completion:
        x = self.x
        x.calls += 1
        call_id = f"{x.execution_id}:model:{x.calls}"
        body: dict[str, Any] = {"id": call_id}
        if request.model:
            body["model"] = request.model
        if request.params:
            body["params"] = dict(request.params)
        if request.tools:
            body["tools"] = [dict(t) for t in request.tools]
        if request.tool_choice:
            body["tool_choice"] = dict(request.tool_choice)
        x.send_call(body, request.messages)
        frame = x.next_frame(f"the result of model call {call_id}")
        if frame.WhichOneof("frame") != "model" or frame.model.model_call_id != call_id:
            raise x.refuse(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"expected the ModelResult of {call_id}, got {_what(frame)}",
            )
        result = frame.model
        usage = wire.to_dict(result.usage, "Usage", "usage") if result.HasField("usage") else None
        return Completion(wire.to_dict(result.message, "Message", "model result"), usage or None)

    def output(self, message: Message) -> None:
        self.x.send({"kind": "EVENT_OUTPUT", "message": dict(message)})

    def report(self, result: dict[str, Any]) -> None:
        self.x.send({"kind": "EVENT_TOOL_RESULT", "result": dict(result)})

    def usage(self, usage: dict[str, Any]) -> None:
        self.x.send({"kind": "EVENT_USAGE", "usage": dict(usage)})

    def delta(self, text: str) -> None:
        """Streamed text: an ``Event{delta}`` (transport only, never answered), sent at once
        with what waited before it (a reader follows the text as it comes)."""
        x = self.x
        x.out.put(
            common_pb2.Event(execution_id=x.execution_id, delta=common_pb2.TextDelta(text=text))
        )
        x.out.flush()

    def state(self, data: bytes, *, covers_to: int = 0, expected_version: int | None = None) -> int:
        """Commit working state through the host: an ``Event{state_commit}``, answered by a
        ``ControllerFrame{state}`` with the new version or a conflict (StateConflictError)."""
        if not isinstance(data, bytes):
            raise InvalidArgumentError("working state must be bytes; nothing was recorded")
        x = self.x
        commit = common_pb2.StateCommit(data=data, covers_to=covers_to)
        if expected_version is not None:
            commit.expected_version = expected_version
        x.out.put(common_pb2.Event(execution_id=x.execution_id, state_commit=commit))
        frame = x.next_frame("the answer to a working-state commit")
        if frame.WhichOneof("frame") != "state":
            raise x.refuse(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"expected the StateResult of a working-state commit, got {_what(frame)}",
            )
        result = frame.state
        if result.conflict:
            snapshot = Snapshot(result.head_seq, result.head_hash, WorkingState(result.version))
            raise StateConflictError(
                result.message or "the working-state commit lost its compare-and-swap",
                head_seq=result.head_seq,
                head_hash=result.head_hash,
                snapshot=snapshot,
            )
        return int(result.version)

    def tool(self, call: Mapping[str, Any]) -> dict[str, Any]:
        x = self.x
        call_id = str(call.get("id", ""))
        x.send({"kind": "EVENT_TOOL_CALL", "tool": dict(call)})
        frame = x.next_frame(f"the result of tool call {call_id}")
        kind = frame.WhichOneof("frame")
        if kind == "park":
            raise self._park(frame.park, call_id, str(call.get("tool", "")))
        if kind == "approval":  # a decided gated call: the decision, then its receipt
            if frame.approval.tool_call_id != call_id:
                raise x.refuse(
                    grpc.StatusCode.FAILED_PRECONDITION,
                    f"the approval frame names call {frame.approval.tool_call_id!r}, "
                    f"not {call_id!r}",
                )
            frame = x.next_frame(f"the receipt of tool call {call_id}")
            kind = frame.WhichOneof("frame")
        if kind != "tool" or frame.tool.id != call_id:
            raise x.refuse(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"expected the ToolResult of call {call_id!r}, got {_what(frame)}",
            )
        return wire.to_dict(frame.tool, "ToolResult", "tool result")

    def _park(self, ref: common_pb2.ApprovalRef, call_id: str, tool: str) -> BaseException:
        x = self.x
        if (
            ref.execution_id != x.execution_id
            or ref.tool_call_id != call_id
            or ref.request_seq <= 0
        ):
            return x.refuse(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"park frame ({ref.execution_id}, {ref.tool_call_id}, {ref.request_seq}) does "
                f"not name this execution's pending call {call_id!r}",
            )
        x.parked = ref
        return ApprovalParkedError(
            f"tool call {call_id} ({tool}) is parked awaiting approval",
            execution_id=ref.execution_id,
            tool_call_id=ref.tool_call_id,
            request_seq=ref.request_seq,
            tool=tool,
        )


def _what(frame: harness_pb2.ControllerFrame) -> str:
    kind = frame.WhichOneof("frame") or "an empty frame"
    if kind == "model":
        return f"the ModelResult of {frame.model.model_call_id!r}"
    if kind == "tool":
        return f"the ToolResult of {frame.tool.id!r}"
    return f"a {kind} frame"


class HarnessServicer(harness_pb2_grpc.HarnessServicer):
    """Serves one harness (built fresh for each execution by ``factory``), keeping the
    history each session was sent in ``kept`` (None: keep nothing; every Start is whole),
    with at most ``lanes`` Executions streams kept open between executions; ``named``: a
    model call names the messages of a kept history to a host that reads them (False:
    every message crosses, as from a node before :mod:`.messagerefs`)."""

    def __init__(
        self,
        factory: Callable[[], Harness],
        kept: NodeHistories | None = None,
        lanes: int = 8,
        named: bool = True,
    ) -> None:
        self.factory = factory
        self.kept = kept
        self.named = named
        self.lanes = lanes
        self.workers = Workers()  # each execution's harness, on reused threads
        self._descriptor: HarnessDescriptor | None = None
        self._lock = threading.Lock()
        self._lanes = 0  # Executions streams open that are kept between executions

    @property
    def lanes_open(self) -> int:
        """Executions streams open that are kept between executions (at most ``lanes``)."""
        with self._lock:
            return self._lanes

    def descriptor(self) -> HarnessDescriptor:
        """The harness's descriptor as served (asked once): a harness that keeps all its
        memory in its working state is STATELESS_REPLAY here, since each execution runs on
        a fresh instance that starts from ``Start.state``."""
        if self._descriptor is None:
            d = self.factory().describe()
            caps = d.capabilities
            if caps.resumability == REQUIRES_MEMORY_SNAPSHOT and caps.working_state:
                d = replace(d, capabilities=replace(caps, resumability=STATELESS_REPLAY))
            self._descriptor = d
        return self._descriptor

    def Describe(
        self, request: harness_pb2.DescribeRequest, context: grpc.ServicerContext
    ) -> harness_pb2.HarnessDescriptor:
        msg = wire.descriptor_to_proto(self.descriptor())
        if self.kept is not None:
            msg.history_node = self.kept.node
        msg.executions = True
        msg.json_events = True
        return msg

    def Connect(
        self,
        request_iterator: Iterator[harness_pb2.ControllerFrame],
        context: grpc.ServicerContext,
        send: Send | None = None,
    ) -> Iterator[common_pb2.Event] | None:
        """One execution on this stream, each event its own message."""
        return self._serve(self._connect, request_iterator, context, send, False)

    def Executions(
        self,
        request_iterator: Iterator[harness_pb2.ControllerFrame],
        context: grpc.ServicerContext,
        send: Send | None = None,
    ) -> Iterator[harness_pb2.Events] | None:
        """Executions one after another on this stream, each as Connect runs one; the
        events ready at once cross as one ``Events``. Past ``lanes`` such streams open at
        once, a stream serves one execution and ends (a stream kept idle holds a thread of
        this process, and without grpc's send callback a worker thread of the server too,
        which Describe and Connect must always find)."""
        with self._lock:
            keep = self._lanes < self.lanes
            self._lanes += keep
        return self._serve(self._executions, request_iterator, context, send, True, keep)

    def _serve(
        self,
        runner: Callable[..., None],
        frames: Iterator[harness_pb2.ControllerFrame],
        context: grpc.ServicerContext,
        send: Send | None,
        batch: bool,
        *args: Any,
    ) -> Iterator[Any] | None:
        """Run the stream's ``runner`` on a worker, which reads the frames, runs each
        execution and sends its events itself (:mod:`.harnessoutbox`): with grpc's ``send``
        this handler returns at once, without it it yields what the runner queues."""
        if send is not None:
            self.workers.run(runner, frames, Outbox(send, context, batch=batch), *args)
            return None
        pump = Pump()
        self.workers.run(runner, frames, Outbox(pump.send, context, batch=batch), *args)
        return pump.messages()

    def _connect(self, frames: Iterator[harness_pb2.ControllerFrame], out: Outbox) -> None:
        """The runner of a Connect stream: its one execution, then the stream's end."""
        try:
            first = _next_start(frames)
            if first is None:
                return
            begun = first if isinstance(first, Refusal) else self._begin(first, frames, out)
            if isinstance(begun, Refusal):
                out.refuse(begun)
                return
            self._run(*begun)
        finally:
            out.end()

    def _executions(
        self, frames: Iterator[harness_pb2.ControllerFrame], out: Outbox, keep: bool
    ) -> None:
        """The runner of an Executions stream: each start read, checked and run here, until
        the host closes the stream (or a refusal ends it, or ``keep`` is False after one)."""
        try:
            while (first := _next_start(frames)) is not None:
                begun = first if isinstance(first, Refusal) else self._begin(first, frames, out)
                if isinstance(begun, Refusal):
                    out.refuse(begun)
                    return
                self._run(*begun)
                if not keep or out.ended:
                    return
        finally:
            with self._lock:
                self._lanes -= keep
            out.end()

    def _begin(
        self, first: harness_pb2.ControllerFrame, frames: Iterator[Any], out: Outbox
    ) -> tuple[Exchange, Start] | Refusal:
        """One execution's exchange and Start from its first frame, or why the stream is
        refused before the harness runs (not a start, no execution id, a history miss, a
        Start that cannot be read)."""
        if first.WhichOneof("frame") != "start":
            return Refusal(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"the first frame must be start, not {_what(first)}",
            )
        if not first.execution_id:
            return Refusal(grpc.StatusCode.INVALID_ARGUMENT, "start names no execution_id")
        json = first.start.json_events
        x = Exchange(first.session, first.execution_id, frames, out, json=json)
        try:
            start = wire.start_from_proto(first.execution_id, first.start, first.session, self.kept)
        except HistoryMiss as exc:  # before the harness runs: the host resends it whole
            return Refusal(grpc.StatusCode.FAILED_PRECONDITION, str(exc), miss=True)
        except HarnessError as exc:
            return Refusal(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        sent = first.start
        kept = self.kept
        if kept is not None and self.named and sent.history_refs and sent.HasField("history_head"):
            head = Mark.of(sent.history_head)
            seqs = kept.seqs(first.session, head)
            x.named = None if seqs is None else (seqs, head.seq)
        return x, start

    def _run(self, x: Exchange, start: Start) -> None:
        """Run the harness; then PARKED (parked), END, or nothing (the stream is gone)."""
        end: dict[str, Any] | None = {"state": "COMPLETED"}
        try:
            self.factory().run(start, WireSink(x))
        except StreamGone:
            end = None
        except ApprovalParkedError as exc:
            if x.parked is None:  # not the host's park: the harness failed
                why = f"{type(exc).__name__}: {exc}"[:4000]
                end = {
                    "state": "FAILED",
                    "error": {"code": ERROR_CODE_INTERNAL, "description": why},
                }
        except TurnCanceledError as exc:
            code = ERROR_CODE_CANCELLED if x.canceled else ERROR_CODE_INTERNAL
            end = {"state": "CANCELED", "error": {"code": code, "description": str(exc)}}
        except Exception as exc:
            why = f"{type(exc).__name__}: {exc}"[:4000]
            end = {"state": "FAILED", "error": {"code": ERROR_CODE_INTERNAL, "description": why}}
        if x.parked is not None:
            ref = x.parked
            x.send(
                {
                    "kind": "EVENT_PARKED",
                    "parked": {
                        "execution_id": ref.execution_id,
                        "tool_call_id": ref.tool_call_id,
                        "request_seq": ref.request_seq,
                    },
                }
            )
        elif end is not None:
            x.send({"kind": "EVENT_END", "end": end})
        x.out.flush()


# grpc's sync server hands these a send callback (see .harnessoutbox)
setattr(HarnessServicer.Connect, NON_BLOCKING, True)
setattr(HarnessServicer.Executions, NON_BLOCKING, True)


def _next_start(
    frames: Iterator[harness_pb2.ControllerFrame],
) -> harness_pb2.ControllerFrame | Refusal | None:
    """The next execution's first frame on an Executions stream (None: the host closed it,
    or went away; a Refusal: the server's wire checks refused the frame, .wirecheck)."""
    try:
        return next(frames, None)
    except InvalidArgumentError as exc:
        return Refusal(grpc.StatusCode.INVALID_ARGUMENT, exc.message)
    except (grpc.RpcError, ValueError):
        return None


def add_to_server(
    server: grpc.Server,
    factory: Callable[[], Harness],
    kept: NodeHistories | None = None,
    lanes: int = 8,
    named: bool = True,
) -> HarnessServicer:
    """Register a Harness service serving ``factory``'s harness on ``server`` (the
    ``extra_services`` seam of :func:`agentsessions.server.app.build_server`), keeping
    sessions' histories in ``kept`` (None: none kept) and at most ``lanes`` Executions
    streams open between executions (keep it under the server's worker threads); ``named``
    as :class:`HarnessServicer` takes it."""
    servicer = HarnessServicer(factory, kept, lanes, named)
    harness_pb2_grpc.add_HarnessServicer_to_server(servicer, server)  # type: ignore[no-untyped-call]
    return servicer


class HarnessServer:
    """A gRPC server serving one harness at ``listen`` (``HOST:PORT`` or ``unix:///path``).

    ``address`` is where it listens (a TCP port 0 is replaced by the one it got). It keeps
    the history each session was sent (``kept``; a default-sized one unless given, none
    with ``keep_history=False``), so a session's next Start carries only what is new
    (:mod:`.historysync`), and its model calls name the messages of it they resend, to a
    host that reads them (:mod:`.messagerefs`; ``named=False``: every message crosses)."""

    def __init__(
        self,
        factory: Callable[[], Harness],
        listen: str,
        *,
        workers: int = 16,
        kept: NodeHistories | None = None,
        keep_history: bool = True,
        named: bool = True,
    ) -> None:
        from concurrent import futures

        check_listen(listen)
        from agentsessions.wire.wirecheck import WireChecks

        self.server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=workers), interceptors=[WireChecks()]
        )
        default = NodeHistories() if keep_history else None
        self.kept = kept if kept is not None else default
        # half the workers at most wait on open Executions streams: the rest serve the others
        lanes = max(1, workers // 2)
        self.servicer = add_to_server(self.server, factory, self.kept, lanes, named)
        try:
            port = self.server.add_insecure_port(listen)
        except RuntimeError as exc:  # grpc raises it for an address it cannot bind
            raise UnavailableError(f"cannot listen on {listen}: {exc}") from None
        if not port:
            raise UnavailableError(
                f"cannot listen on {listen}",
                hint="is the address in use, or its directory missing?",
            )
        self.port = port
        self.address = listen if listen.startswith("unix:") else _with_port(listen, port)
        self.server.start()

    def stop(self, grace: float | None = 5.0) -> None:
        """Stop accepting streams; running ones get ``grace`` seconds."""
        self.server.stop(grace).wait()

    def serve_forever(self) -> None:
        """Block until SIGINT or SIGTERM, then stop gracefully."""
        import signal

        done = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: done.set())
        done.wait()
        self.stop()


def check_listen(listen: str) -> None:
    """Refuse an address that is neither ``HOST:PORT`` nor ``unix:///path``."""
    from agentsessions.errors import InvalidArgumentError

    if listen.startswith("unix:"):
        if not listen.removeprefix("unix://").removeprefix("unix:").startswith("/"):
            raise InvalidArgumentError(f"invalid address {listen!r}: use unix:///absolute/path")
        return
    host, sep, port = listen.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise InvalidArgumentError(f"invalid address {listen!r}: use HOST:PORT or unix:///path")


def _with_port(listen: str, port: int) -> str:
    host = listen.rpartition(":")[0]
    return f"{host}:{port}"
