"""Our harness SPI as the Harness service's messages, and back (spec digest 1.3).

Both ends of Harness.Connect use these: the harness side (:mod:`.harnessnode`) and the host
side (:mod:`.harnessclient`). Events cross as the proto3-JSON dicts the journal hashes, so a
MODEL_CALL, TOOL_CALL or TOOL_RESULT the host records from the wire is byte for byte what an
in-process harness would have produced (Struct numbers are normalised as the journal's are).

The reference's ``Start`` carries config, history, inputs and resume_from_seq; our additions
(docs/WIRE.md) carry the workload's tools, the working state and ``memory_restored``.
``Start.history`` crosses whole to a node that keeps nothing (each side then keeps the last
history per session, :class:`HistoryCache`, so that a turn converts only the events added
since); to a node that keeps histories it carries only what is new (:mod:`.historysync`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any

import msgspec
from google.protobuf import json_format
from google.protobuf.message import Message as ProtoMessage

from agentsessions.controller.history import StoreHistory, WriterHistory
from agentsessions.controller.spi import (
    Capabilities,
    Event,
    HarnessDescriptor,
    History,
    Start,
    ToolSpec,
)
from agentsessions.errors import FormatError, HarnessProtocolError
from agentsessions.journal.stores.store import WorkingState
from agentsessions.v1.normalize import normalize_message
from agentsessions.v1.schema import validate_event
from agentsessions.wire import fastconv
from agentsessions.wire.gen import common_pb2, harness_pb2
from agentsessions.wire.historysync import HistoryMiss, Mark, NodeHistories

MEDIATION = common_pb2.Mediation
RESUMABILITY = harness_pb2.Resumability


def to_dict(msg: ProtoMessage, schema: str, what: str) -> dict[str, Any]:
    """The canonical proto3-JSON dict of ``msg`` (schema ``schema`` of agentsessions.v1);
    HarnessProtocolError if it cannot be one (a peer sent garbage)."""
    fast = fastconv.to_dict(msg)  # the same dict, for the plain messages most are
    if fast is not None:
        return fast
    try:
        loose = json_format.MessageToDict(msg, preserving_proto_field_name=True)
        return normalize_message(loose, schema, what)
    except Exception as exc:  # a peer's bytes: whatever is wrong with them is its fault
        raise HarnessProtocolError(
            f"{what} is not a valid agentsessions.v1 {schema}: {exc}"
        ) from None


def parse(obj: Mapping[str, Any], cls: type[Any], what: str) -> Any:
    """``obj`` (proto3-JSON) as a new ``cls``; HarnessProtocolError if it does not fit."""
    fast = fastconv.to_proto(cls, obj)  # the same message, for the plain dicts most are
    if fast is not None:
        return fast
    try:
        return json_format.ParseDict(dict(obj), cls())
    except (json_format.ParseError, ValueError, TypeError) as exc:
        raise HarnessProtocolError(f"{what} is not valid proto3-JSON: {exc}") from None


def event_to_proto(event: Mapping[str, Any]) -> common_pb2.Event:
    """The ``Event`` of an event dict."""
    msg: common_pb2.Event = parse(event, common_pb2.Event, "event")
    return msg


def event_dict(msg: common_pb2.Event) -> dict[str, Any]:
    """The canonical event dict of an ``Event``, sent field by field or as ``Event.json``."""
    data = msg.json
    if data:
        return _json_event(msg, data)
    return to_dict(msg, "Event", "event")


_ENCODE = msgspec.json.Encoder()
_DECODE = msgspec.json.Decoder()


def json_event_size(n: int) -> int:
    """The wire size of an ``Event`` holding ``n`` bytes of ``json`` and nothing else: the
    field's two-byte key (field 1002), the length as a varint, the bytes."""
    return 2 + max(1, (n.bit_length() + 6) // 7) + n


def event_to_wire(event: Mapping[str, Any], json: bool) -> common_pb2.Event:
    """The ``Event`` of an event dict for a peer: as ``Event.json`` when ``json`` (the peer
    reads it) and the dict is exactly canonical and plain by the schema's fast checker (a
    few µs, where the message costs ~50 µs each way), else field by field, converted or
    refused as before. Plain: no float in a Struct or map value, which the message path
    would turn into an int where it is whole."""
    if json:
        try:
            plain = validate_event(event)
        except FormatError:
            plain = False  # the field-by-field path normalises it, or says why it cannot
        if plain:
            return common_pb2.Event(json=_ENCODE.encode(event))
    return event_to_proto(event)


def event_as_json(event: Mapping[str, Any]) -> common_pb2.Event:
    """The ``Event`` carrying ``event`` as its JSON, unchecked: for an event read from the
    journal (canonical as it was sealed; the receiver reads any other through the message)."""
    return common_pb2.Event(json=_ENCODE.encode(event))


def history_as_json(history: History, count: int) -> list[common_pb2.Event]:
    """The last ``count`` events of ``history`` as ``Event.json``: from a history the
    journal serves, the canonical bytes it stores (sliced out of each record: nothing is
    decoded to be encoded again, ~1 µs an event saved on the host's side of every turn);
    from any other, each event encoded."""
    if isinstance(history, (WriterHistory, StoreHistory)):
        return [common_pb2.Event(json=data) for data in history.tail_json(count)]
    return [event_as_json(e) for e in history.tail(count)]


def _json_event(msg: common_pb2.Event, data: bytes, size: int | None = None) -> dict[str, Any]:
    """The dict an ``Event.json`` carries, read as the field-by-field path reads the same
    event: as it is when canonical and plain (the fast checker says so in a few µs), else
    through the message (normalised, or refused: HarnessProtocolError). Alone in its
    message (``size``, the message's wire size when the caller has it, is exactly the
    field's: nothing else set, no unknown field), else refused."""
    if (msg.ByteSize() if size is None else size) != json_event_size(len(data)):
        raise HarnessProtocolError("an event sent as JSON has other fields set beside it")
    try:
        event: dict[str, Any] = _DECODE.decode(data)
    except msgspec.DecodeError as exc:
        raise HarnessProtocolError(f"an event sent as JSON is not JSON: {exc}") from None
    try:
        if validate_event(event):
            return event
    except FormatError:
        pass  # not canonical: the message path normalises it or says why it cannot
    try:
        return event_dict(event_to_proto(event))
    except HarnessProtocolError as exc:
        raise HarnessProtocolError(
            f"an event sent as JSON is not an agentsessions.v1 Event: {exc}"
        ) from None


# --------------------------------------------------------------------------- descriptors


def descriptor_to_proto(d: HarnessDescriptor) -> harness_pb2.HarnessDescriptor:
    """Our descriptor as ``HarnessDescriptor`` (``working_state`` is not on the wire;
    ``uses_session_model`` is an optional addition, unset when undeclared)."""
    caps = d.capabilities
    msg = harness_pb2.HarnessDescriptor(
        id=d.id,
        models=list(d.models),
        tools=[tool_to_proto(t) for t in d.tools],
        capabilities=harness_pb2.Capabilities(
            resumability=caps.resumability,
            fork_safe=caps.fork_safe,
            requires_gpu=caps.requires_gpu,
            streaming=caps.streaming,
            reasoning_replay=caps.reasoning_replay,
        ),
        version=d.version,
    )
    if caps.uses_session_model is not None:
        msg.capabilities.uses_session_model = caps.uses_session_model
    return msg


def descriptor_from_proto(msg: harness_pb2.HarnessDescriptor) -> HarnessDescriptor:
    """A remote harness's ``HarnessDescriptor`` as ours."""
    caps = msg.capabilities
    return HarnessDescriptor(
        id=msg.id,
        version=msg.version,
        models=tuple(msg.models),
        tools=tuple(tool_from_proto(t) for t in msg.tools),
        capabilities=Capabilities(
            resumability=RESUMABILITY.Name(caps.resumability),
            fork_safe=caps.fork_safe,
            requires_gpu=caps.requires_gpu,
            streaming=caps.streaming,
            reasoning_replay=caps.reasoning_replay,
            uses_session_model=(
                caps.uses_session_model if caps.HasField("uses_session_model") else None
            ),
        ),
    )


def tool_to_proto(t: ToolSpec) -> harness_pb2.ToolSpec:
    """A ``ToolSpec`` (its schema in the ``input_schema`` addition)."""
    msg = harness_pb2.ToolSpec(name=t.name, description=t.description, mediation=t.mediation)
    if t.input_schema:
        msg.input_schema.update(dict(t.input_schema))
    return msg


def tool_from_proto(msg: harness_pb2.ToolSpec) -> ToolSpec:
    """Ours of a ``ToolSpec``."""
    schema = json_format.MessageToDict(msg.input_schema) if msg.HasField("input_schema") else {}
    return ToolSpec(
        name=msg.name,
        description=msg.description,
        mediation=MEDIATION.Name(msg.mediation),
        input_schema=_ints(schema),
    )


def _ints(value: Any) -> Any:
    """A Struct's doubles back to ints where they are whole (2.0 is 2), as JSON had them."""
    if isinstance(value, dict):
        return {k: _ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_ints(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# --------------------------------------------------------------------------- start


class HistoryCache:
    """The last history sent or received per key (a session), so that a session's next
    Start converts only the events added since: converting an event between dict and
    proto costs ~40 µs, comparing one with the cached copy well under 1 µs, and a turn's
    history grows with the session. Bounded to ``size`` keys (least recently used out).
    Cached events are shared between runs: a harness must not mutate its history."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._by_key: OrderedDict[str, list[tuple[Any, Any]]] = OrderedDict()

    def convert(self, key: str, items: list[Any], same: Any, make: Any) -> list[Any]:
        """``make(item)`` for each item, reusing the cached result where ``same(item)``
        equals the cached item at that position."""
        with self._lock:
            cached = self._by_key.pop(key, [])
        out: list[tuple[Any, Any]] = []
        for i, item in enumerate(items):
            probe = same(item)
            if i < len(cached) and cached[i][0] == probe:
                out.append(cached[i])
            else:
                out.append((probe, make(item)))
        with self._lock:
            self._by_key[key] = out
            while len(self._by_key) > self.size:
                self._by_key.popitem(last=False)
        return [made for _, made in out]


HOST_HISTORY = HistoryCache()
NODE_HISTORY = HistoryCache()


def start_to_proto(
    start: Start,
    session: str = "",
    base: Mark | None = None,
    head: Mark | None = None,
    json: bool = False,
) -> harness_pb2.Start:
    """The ``Start`` of one execution (see :func:`start_into`)."""
    msg = harness_pb2.Start()
    start_into(msg, start, session, base, head, json)
    return msg


def start_into(
    msg: harness_pb2.Start,
    start: Start,
    session: str = "",
    base: Mark | None = None,
    head: Mark | None = None,
    json: bool = False,
) -> None:
    """Fill the empty ``msg`` (a frame's own ``start``: protobuf copies a sub-message handed
    to a constructor, so every part is set where it is sent from) with one execution: its
    history whole, or with ``base`` only the events after it (:mod:`.historysync`); ``head``
    is where the history ends, for a node to keep. With ``json`` (the node reads
    ``Event.json``) the history events cross as their JSON. The Start says this host reads
    events sent as JSON (``json_events``). Parts left at their defaults (no working state,
    no tools) are left unset, which a reader cannot tell from sent empty."""
    msg.config, msg.resume_from_seq = start.config, start.resume_from_seq
    msg.memory_restored, msg.json_events = start.memory_restored, True
    _add_history(msg.history, start, session, base, head, json)
    inputs = msg.inputs
    for m in start.inputs:
        inputs.append(parse(m, common_pb2.Message, "input"))
    if start.tools:
        msg.tools.extend(tool_to_proto(t) for t in start.tools)
    state = start.state
    if state != _NO_STATE:
        s = msg.state
        s.version, s.data, s.covers_from = state.version, state.data, state.covers_from
        s.covers_to, s.author, s.time_ns = state.covers_to, state.author, state.time_ns
    if base is not None and head is not None:
        _set_mark(msg.history_base, base)
    if head is not None:
        _set_mark(msg.history_head, head)


_NO_STATE = WorkingState()


def _add_history(
    into: Any, start: Start, session: str, base: Mark | None, head: Mark | None, json: bool
) -> None:
    """The Start's history events, added to its repeated field ``into`` (see
    :func:`start_to_proto`)."""
    if json:  # a few µs an event, or less as stored: no cache needed
        # with a base only what the node lacks: the journal is read from base on
        count = head.seq - base.seq if base is not None and head is not None else None
        history = start.history
        if isinstance(history, (WriterHistory, StoreHistory)):  # the stored bytes, as is
            add = into.add
            for data in history.tail_json(len(history) if count is None else count):
                add(json=data)
            return
        into.extend(history_as_json(history, len(history) if count is None else count))
    elif base is not None and head is not None:
        into.extend(event_to_proto(e) for e in start.history.tail(head.seq - base.seq))
    else:
        # tail(len): bounded by the execution's start however the history iterates
        events = start.history.tail(len(start.history))
        into.extend(HOST_HISTORY.convert(session, events, lambda e: e, event_to_proto))


def _set_mark(into: harness_pb2.HistoryMark, mark: Mark) -> None:
    into.fence, into.seq, into.hash = mark.fence, mark.seq, mark.hash


class ListHistory:
    """The first ``end`` events of a list (what crossed the wire, or what a node holds of a
    session: that list may grow past ``end`` for later runs), read as the SPI's History."""

    def __init__(self, events: list[Event], end: int | None = None) -> None:
        self._events = events
        self._end = len(events) if end is None else end

    def __len__(self) -> int:
        return self._end

    def __iter__(self) -> Iterator[Event]:
        return iter(self._events[: self._end])

    def tail(self, count: int) -> list[Event]:
        """The last ``count`` events, oldest first."""
        return self._events[max(0, self._end - count) : self._end] if count > 0 else []


def start_from_proto(
    execution_id: str,
    msg: harness_pb2.Start,
    session: str = "",
    kept: NodeHistories | None = None,
) -> Start:
    """Our ``Start`` of a received one (the envelope's execution id). With ``kept`` (a node
    that keeps histories) a Start with a head is kept, one with a base is completed from
    what is kept (HistoryMiss when the node does not hold that base). Parts the host left
    unset (no working state, no tools) are read as their defaults without a conversion."""
    return Start(
        execution_id=execution_id,
        config=msg.config,
        inputs=tuple(to_dict(m, "Message", "input") for m in msg.inputs),
        history=_history(msg, session, kept),
        resume_from_seq=msg.resume_from_seq,
        memory_restored=msg.memory_restored,
        state=_state(msg.state) if msg.HasField("state") else _NO_STATE,
        tools=tuple(tool_from_proto(t) for t in msg.tools) if msg.tools else (),
    )


def _state(s: harness_pb2.WorkingState) -> WorkingState:
    return WorkingState(
        version=s.version,
        data=s.data,
        covers_from=s.covers_from,
        covers_to=s.covers_to,
        author=s.author,
        time_ns=s.time_ns,
    )


def _history(msg: harness_pb2.Start, session: str, kept: NodeHistories | None) -> ListHistory:
    """The received history: completed from, or kept in, ``kept`` (see start_from_proto)."""
    head = Mark.of(msg.history_head) if msg.HasField("history_head") else None
    if msg.HasField("history_base"):
        base = Mark.of(msg.history_base)
        if kept is None or not session or head is None:
            raise HistoryMiss(f"session {session!r}: this node keeps no history to extend")
        if base.seq + len(msg.history) != head.seq or base.fence != head.fence:
            raise HarnessProtocolError(
                f"a Start from {base} with {len(msg.history)} events cannot end at {head}"
            )
        new, size = _received(msg.history)
        return ListHistory(kept.extend(session, base, head, new, size), head.seq)
    if kept is not None and session and head is not None and head.seq == len(msg.history):
        events, size = _received(msg.history)
        kept.put(session, head, events, size)
        return ListHistory(events)
    history = NODE_HISTORY.convert(
        session, list(msg.history), lambda e: e.SerializeToString(), event_dict
    )
    return ListHistory(history)


def _received(history: Any) -> tuple[list[Event], int]:
    """The events of a Start's ``history`` field, each read as :func:`event_dict` reads it,
    and their wire size (what a node keeps is bounded by it): one size per event, which
    also tells an ``Event.json`` alone in its message."""
    events: list[Event] = []
    size = 0
    for e in history:
        n = e.ByteSize()
        size += n
        data = e.json
        events.append(_json_event(e, data, n) if data else to_dict(e, "Event", "event"))
    return events, size
