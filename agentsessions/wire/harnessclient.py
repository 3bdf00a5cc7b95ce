"""The host side of Harness.Connect: a harness at an address, run as if it were local.

:class:`RemoteHarness` is a :class:`~agentsessions.controller.spi.Harness` whose ``run``
drives one Connect stream and relays each event the harness sends into the controller's
sink, so recording before effect, idempotency, approvals and replay are the controller's,
unchanged: EVENT_MODEL_CALL becomes ``sink.model`` (its answer goes back as the ModelResult
of that call id; on replay the sink serves the recorded completion, so an out-of-process
harness replays with zero model calls), EVENT_TOOL_CALL becomes ``sink.tool`` (a decided
approval-gated call is answered with ``approval`` then ``tool``), EVENT_OUTPUT, a reported
EVENT_TOOL_RESULT and EVENT_USAGE become ``output``, ``report`` and ``usage``; the
transport-only ``Event.delta`` becomes ``sink.delta`` and ``Event.state_commit`` becomes
``sink.state`` (a STATE record beside the journal), answered by ``ControllerFrame.state``.

Every event is checked before it is relayed. A stream that breaks the protocol (another
execution's id, an event only the host writes, PARKED without a park, anything after END,
no END) is cancelled and the run fails with HarnessProtocolError, which the controller
journals as it does any failed harness. When the sink parks an approval-gated call the host
sends ``park`` and needs one EVENT_PARKED whose body equals the ref: a wrong or missing ack
cancels the stream and raises HarnessAckError, which the controller does not journal (the
APPROVAL_REQUEST stays the last record: nothing may follow an open approval intent). A
harness that cannot be reached, or dies mid-turn, raises UnavailableError: nothing is
journaled for it, and the turn is left for resume. A failure of the host's own sink (a
cancel, a replay divergence, a refused tool call) cancels the stream and propagates as is.

A live run's Start to a node that keeps histories carries only the events that node lacks
(:mod:`.historysync`: its base is checked against this host's journal; a node's miss is
answered with the whole history on a new stream). The node's descriptor is asked once per
connection (:mod:`.described`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import grpc

from agentsessions.controller.spi import HarnessDescriptor, ModelRequest, Sink, Start
from agentsessions.errors import (
    ApprovalParkedError,
    HarnessAckError,
    HarnessError,
    HarnessProtocolError,
    StateConflictError,
    UnavailableError,
)
from agentsessions.wire import harnesswire as wire
from agentsessions.wire import messagerefs
from agentsessions.wire.described import described, forget
from agentsessions.wire.gen import common_pb2, harness_pb2, harness_pb2_grpc
from agentsessions.wire.harnesslinks import LANES, ConnectLink, Link, StaleLane
from agentsessions.wire.historysync import (
    MISS,
    TRAILER,
    HistoryMiss,
    Mark,
    SentHistories,
    head_of,
)

DESCRIBE_TIMEOUT = 10.0  # seconds: a harness that does not describe itself is unreachable
SENT = SentHistories()
"""What each node accepted of each session's history, as this process sent it."""
_CHANNELS: dict[str, grpc.Channel] = {}
_LOCK = threading.Lock()


def channel(address: str) -> grpc.Channel:
    """One channel per address per process (channels are made to be shared)."""
    with _LOCK:
        if address not in _CHANNELS:
            _CHANNELS[address] = grpc.insecure_channel(address)
        return _CHANNELS[address]


def describe(address: str, timeout: float = DESCRIBE_TIMEOUT) -> HarnessDescriptor:
    """The descriptor of the harness at ``address``; UnavailableError if it cannot say."""
    return wire.descriptor_from_proto(_describe(address, timeout))


def _describe(address: str, timeout: float = DESCRIBE_TIMEOUT) -> harness_pb2.HarnessDescriptor:
    stub = harness_pb2_grpc.HarnessStub(channel(address))  # type: ignore[no-untyped-call]
    try:
        reply: harness_pb2.HarnessDescriptor = stub.Describe(
            harness_pb2.DescribeRequest(), timeout=timeout
        )
    except grpc.RpcError as exc:
        raise _unreachable(address, exc) from None
    return reply


_OURS: dict[str, tuple[harness_pb2.HarnessDescriptor, HarnessDescriptor]] = {}


def _ours(address: str, reply: harness_pb2.HarnessDescriptor) -> HarnessDescriptor:
    """Ours of the descriptor the node at ``address`` answered, converted once per reply:
    a turn describes its harness twice, each on a new instance, and :mod:`.described`
    hands back the same reply while the connection stays up (ours is frozen: shared)."""
    with _LOCK:
        kept = _OURS.get(address)
    if kept is not None and kept[0] is reply:
        return kept[1]
    ours = wire.descriptor_from_proto(reply)
    with _LOCK:
        _OURS[address] = (reply, ours)
    return ours


def _unreachable(address: str, exc: grpc.RpcError) -> UnavailableError:
    details = exc.details() if hasattr(exc, "details") else str(exc)
    return UnavailableError(
        f"the harness at {address} is unreachable: {details}",
        hint="start it (agentsessions harness serve NAME --listen ADDRESS), then resume the "
        "session's open turn",
        address=address,
    )


class RemoteHarness:
    """A harness someone runs at ``address`` (``host:port`` or ``unix:///path``)."""

    def __init__(self, address: str, name: str = "") -> None:
        self.address = address
        self.name = name
        self._descriptor: HarnessDescriptor | None = None
        self.node = ""  # the node's history_node as it last described itself
        self.lanes = False  # it serves Harness.Executions: executions go on kept streams
        self.json = False  # it reads a Start's history as Event.json
        self.refs = True  # its model calls may name messages of the history (.messagerefs)

    def describe(self) -> HarnessDescriptor:
        """Asked of the harness once per instance, and not again while the connection that
        answered stays up (:mod:`.described`)."""
        if self._descriptor is None:
            address = self.address
            reply = described(address, channel(address), lambda: _describe(address))
            self.node, self.lanes = reply.history_node, reply.executions
            self.json = reply.json_events
            self._descriptor = _ours(address, reply)
        return self._descriptor

    def run(self, start: Start, sink: Sink) -> None:
        """One execution over one stream (see the module docstring); to a node that keeps
        histories, only what it lacks of this one (:mod:`.historysync`)."""
        lineage = start.lineage
        self.describe()
        lanes = self.lanes
        if lineage is None:  # a v0.1.2 journal's replay: the history crosses whole
            Connection(self.address, start, sink, lanes=lanes, json=self.json, refs=self.refs).run()
            return
        head = head_of(lineage, len(start.history))
        if not self.node or head is None:
            plan = Plan(lineage.uid)
            Connection(self.address, start, sink, plan, lanes, self.json, self.refs).run()
            return
        key = (self.address, self.node, lineage.uid)
        plan = Plan(lineage.uid, key, SENT.base(key, lineage, head), head)
        try:
            Connection(self.address, start, sink, plan, lanes, self.json, self.refs).run()
        except HistoryMiss:  # evicted, restarted, or fed by another controller meanwhile
            forget(self.address)  # ask again: a restarted node has a new id
            reply = _describe(self.address)
            self.node, self.lanes = reply.history_node, reply.executions
            self.json = reply.json_events
            again = (self.address, self.node, lineage.uid) if self.node else None
            plan = Plan(lineage.uid, again, None, head)
            Connection(self.address, start, sink, plan, self.lanes, self.json, self.refs).run()


@dataclass(frozen=True)
class Plan:
    """How one Start's history crosses: the session (the envelope's), and for a node that
    keeps histories the key of what it holds, the base sent from (None: whole) and the
    head where the history ends."""

    session: str
    key: tuple[str, str, str] | None = None
    base: Mark | None = None
    head: Mark | None = None

    def accepted(self) -> None:
        """The node took the Start (it sent an event): it holds ``head`` now."""
        if self.key is not None and self.head is not None:
            SENT.accepted(self.key, self.head)

    def unknown(self) -> None:
        """The stream failed before the node took the Start: what it holds is unknown."""
        if self.key is not None:
            SENT.forget(self.key)


class Connection:
    """One execution's stream: the frames we send, the events we check and relay."""

    def __init__(
        self,
        address: str,
        start: Start,
        sink: Sink,
        plan: Plan | None = None,
        lanes: bool = False,
        json: bool = False,
        refs: bool = True,
    ) -> None:
        self.address = address
        self.start = start
        self.sink = sink
        self.plan = plan or Plan(_session_of(sink))
        self.session = self.plan.session
        self.lanes = lanes
        self.json = json  # the node reads the Start's history as Event.json
        self.refs = refs  # the Start says this host reads named messages (.messagerefs)
        self.accepted = False
        self.ended = False  # END (or a checked park ack) came and nothing after it
        self.link: Link | None = None

    def frame(self, **frame: Any) -> harness_pb2.ControllerFrame:
        """A frame with the Start's envelope (a part given here is copied in: a large one
        is better set on the frame's own field)."""
        return harness_pb2.ControllerFrame(
            session=self.session, execution_id=self.start.execution_id, **frame
        )

    def send(self, **frame: Any) -> None:
        """Queue one frame, its envelope the Start's."""
        assert self.link is not None
        self.link.send(self.frame(**frame))

    def run(self) -> None:
        plan = self.plan
        first = self.frame()  # the Start is built in the frame that carries it
        start = first.start
        wire.start_into(start, self.start, self.session, plan.base, plan.head, self.json)
        start.history_refs = self.refs  # a model call may name messages of this history
        chan = channel(self.address)
        if not self.lanes:
            self._attempt(ConnectLink(chan), first)
            return
        try:
            self._attempt(LANES.take(self.address, chan), first)
        except StaleLane:  # the node never took it: again, on a new stream
            self._attempt(LANES.take(self.address, chan, fresh=True), first)

    def _attempt(self, link: Link, first: harness_pb2.ControllerFrame) -> None:
        self.link = link
        link.send(first)
        try:
            self._relay(link)
        except StaleLane:
            raise
        except BaseException as exc:  # the harness is told why, best effort, then cut off
            if not self.accepted:
                self.plan.unknown()
            if not self.ended:
                self.send(cancel=harness_pb2.Cancel(reason=f"{type(exc).__name__}: {exc}"[:1000]))
            raise
        finally:
            link.close(clean=self.ended)

    def _next(
        self, events: Iterator[common_pb2.Event], *, transport: bool = True
    ) -> dict[str, Any] | None:
        """The next event as a checked dict, or None at the stream's clean end. The
        transport-only events (a delta, a working-state commit) are relayed on the way when
        ``transport``; where the harness may send none (the park ack, after END) they break
        the protocol."""
        while True:
            try:
                msg = next(events)
            except StopIteration:
                if self._stale():
                    raise StaleLane(self.address) from None
                return None
            except grpc.RpcError as exc:
                raise self._broken(exc) from None
            if not self.accepted:
                self.accepted = True
                self.plan.accepted()
            body = msg.WhichOneof("body")
            if body not in ("delta", "state_commit"):
                break
            if msg.execution_id != self.start.execution_id or not transport:
                raise self._violation(f"sent a {body} where it may not")
            if body == "delta":
                self.sink.delta(msg.delta.text)
            else:
                self._state(msg.state_commit)
        # a model call may name messages of the history this host sent (.messagerefs)
        if msg.message_seqs:
            event = messagerefs.resolve(msg, self.start.history)
        else:
            event = wire.event_dict(msg)
        got = str(event.get("execution_id", ""))
        if got != self.start.execution_id:
            raise HarnessProtocolError(
                f"the harness at {self.address} sent an event of execution {got!r} on the "
                f"stream of {self.start.execution_id}",
                address=self.address,
            )
        return event

    def _stale(self) -> bool:
        """A reused lane ended before the node took the start (see :mod:`.harnesslinks`)."""
        return not self.accepted and self.link is not None and self.link.reused

    def _broken(self, exc: grpc.RpcError) -> Exception:
        code = exc.code() if hasattr(exc, "code") else None
        if not self.accepted and self.plan.base is not None and _missed(exc):
            return HistoryMiss(f"the harness at {self.address} does not hold {self.plan.base}")
        if self._stale() and code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED):
            return StaleLane(self.address)
        if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED, None):
            return _unreachable(self.address, exc)
        return HarnessProtocolError(
            f"the harness at {self.address} ended the stream with {code.name}: {exc.details()}",
            address=self.address,
        )

    def _relay(self, events: Iterator[common_pb2.Event]) -> None:
        while (event := self._next(events)) is not None:
            kind = str(event.get("kind", ""))
            if kind == "EVENT_END":
                self._ended(event, events)
                return
            if kind == "EVENT_MODEL_CALL":
                self._model(event.get("model", {}))
            elif kind == "EVENT_TOOL_CALL":
                self._tool(event.get("tool", {}), events)
            elif kind == "EVENT_OUTPUT":
                self.sink.output(event.get("message", {}))
            elif kind == "EVENT_TOOL_RESULT":
                self.sink.report(event.get("result", {}))
            elif kind == "EVENT_USAGE":
                self.sink.usage(event.get("usage", {}))
            else:
                raise self._violation(
                    f"sent {kind or 'an event without a kind'}, which a harness never sends here"
                )
        raise self._violation("closed the stream without EVENT_END")

    def _violation(self, what: str) -> HarnessProtocolError:
        return HarnessProtocolError(
            f"the harness at {self.address} broke the Connect protocol: it {what} "
            f"(execution {self.start.execution_id}); the stream was cancelled",
            address=self.address,
        )

    def _model(self, call: dict[str, Any]) -> None:
        request = ModelRequest(
            model=str(call.get("model", "")),
            messages=tuple(call.get("messages", ())),
            params=call.get("params") or None,
            tools=tuple(call.get("tools", ())),
            tool_choice=call.get("tool_choice"),
        )
        completion = self.sink.model(request)
        frame = self.frame()  # the result is set on the frame's own field: one copy less
        result = frame.model
        result.model_call_id = str(call.get("id", ""))
        result.message.CopyFrom(wire.parse(completion.message, common_pb2.Message, "completion"))
        if completion.usage:
            result.usage.CopyFrom(wire.parse(completion.usage, common_pb2.Usage, "usage"))
        assert self.link is not None
        self.link.send(frame)

    def _state(self, commit: common_pb2.StateCommit) -> None:
        """Commit the harness's working state through the host's sink (a STATE record beside
        the journal, never an event); answer the version, or the conflict."""
        expected = commit.expected_version if commit.HasField("expected_version") else None
        try:
            version = self.sink.state(
                commit.data, covers_to=commit.covers_to, expected_version=expected
            )
        except StateConflictError as exc:
            self.send(
                state=harness_pb2.StateResult(
                    conflict=True,
                    message=str(exc)[:4000],
                    version=int(exc.state_version),
                    head_seq=int(exc.fields.get("head_seq", 0) or 0),
                    head_hash=str(exc.fields.get("head_hash", "") or ""),
                )
            )
            return
        self.send(state=harness_pb2.StateResult(version=version))

    def _tool(self, call: dict[str, Any], events: Iterator[common_pb2.Event]) -> None:
        try:
            result = self.sink.tool(call)
        except ApprovalParkedError as parked:
            self._park(parked, events)
            raise
        request_seq = int(result.get("approval_request_seq", 0) or 0)
        if request_seq:  # a decided gated call: the decision goes before its receipt
            approved = result.get("code") != "APPROVAL_DENIED"
            self.send(
                approval=common_pb2.ApprovalResult(
                    tool_call_id=str(call.get("id", "")), approved=approved, request_seq=request_seq
                )
            )
        self.send(tool=wire.parse(result, common_pb2.ToolResult, "tool result"))

    def _park(self, parked: ApprovalParkedError, events: Iterator[common_pb2.Event]) -> None:
        """Send ``park`` and check the harness's EVENT_PARKED (HarnessAckError if wrong)."""
        ref = {
            "execution_id": parked.execution_id,
            "tool_call_id": parked.tool_call_id,
            "request_seq": int(parked.request_seq),
        }
        self.send(
            park=common_pb2.ApprovalRef(
                execution_id=parked.execution_id,
                tool_call_id=parked.tool_call_id,
                request_seq=int(parked.request_seq),
            )
        )
        try:
            ack = self._next(events, transport=False)
        except (HarnessError, UnavailableError) as exc:
            raise self._bad_ack(parked, str(exc)) from None
        if ack is None or ack.get("kind") != "EVENT_PARKED":
            got = "nothing" if ack is None else str(ack.get("kind"))
            raise self._bad_ack(parked, f"it answered {got}")
        body = dict(ack.get("parked", {}))
        body["request_seq"] = int(body.get("request_seq", 0) or 0)
        if body != {k: v for k, v in ref.items() if v}:
            raise self._bad_ack(parked, f"its ack names {body}, not {ref}")
        if self.lanes:  # a Connect just ends; a lane's execution must be over
            self._over(events, "EVENT_PARKED")

    def _bad_ack(self, parked: ApprovalParkedError, why: str) -> HarnessAckError:
        return HarnessAckError(
            f"the harness at {self.address} did not acknowledge the park of tool call "
            f"{parked.tool_call_id} ({why}); the stream was cancelled, the approval request "
            f"(seq {parked.request_seq}) stays journaled and the turn stays parked",
            hint="fix the harness; approve or deny, then resume",
            address=self.address,
            execution_id=parked.execution_id,
            tool_call_id=parked.tool_call_id,
            request_seq=parked.request_seq,
        )

    def _ended(self, event: dict[str, Any], events: Iterator[common_pb2.Event]) -> None:
        """END: COMPLETED returns, FAILED/CANCELED raise HarnessError; then the execution
        must be over (a second END, or anything after it, is a protocol error)."""
        end = dict(event.get("end", {}))
        self._over(events, "EVENT_END")
        state = str(end.get("state", ""))
        if state == "COMPLETED":
            return
        why = str(dict(end.get("error", {})).get("description", "")) or "no reason given"
        if state in ("FAILED", "CANCELED"):
            raise HarnessError(f"the harness at {self.address} ended the turn {state}: {why}")
        raise self._violation(f"ended with END state {state!r}")

    def _over(self, events: Iterator[common_pb2.Event], last: str) -> None:
        """The execution's ``last`` event came: a Connect must end now; a lane must hold
        nothing more of it (the node sends nothing between executions)."""
        assert self.link is not None
        more: dict[str, Any] | None = None
        if not self.lanes:
            more = self._next(events, transport=False)
        elif self.link.leftover():
            more = wire.event_dict(next(events))
        if more is not None:
            raise self._violation(f"sent {more.get('kind')} after {last}")
        self.ended = True


def _missed(exc: grpc.RpcError) -> bool:
    """The node refused a Start's base (its trailer says so)."""
    trailers = exc.trailing_metadata() if hasattr(exc, "trailing_metadata") else None
    return any(m.key == TRAILER and m.value in (MISS, MISS.encode()) for m in trailers or ())


def _session_of(sink: Sink) -> str:
    """The session uid for the envelope, when the sink says (a live one does; a replay's
    names none, and its envelope then carries "")."""
    live = getattr(sink, "live", None)
    tools = getattr(live, "tools", None)
    return str(getattr(tools, "session_uid", "") or "")
