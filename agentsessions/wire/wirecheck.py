"""What a request must be before any handler sees it: decodable, and each integer field the
server reads within its range (:data:`RANGES`, the one table of them).

:class:`WireChecks` is the innermost interceptor of every server we build
(:func:`~agentsessions.server.app.build_server`, the harness node): it replaces each method's
``request_deserializer`` with one that never fails (bytes that do not decode, or a message
with a field out of range, become a :class:`Refused` value instead of grpc's INTERNAL
"Exception deserializing request!") and its behaviour with one that answers a refused
request INVALID_ARGUMENT before the handler runs. The checks run after the outer
interceptors' (a call without a valid token is UNAUTHENTICATED whatever it sent), and
before the handler reads anything, so a refused request writes nothing.

- undecodable bytes: ``malformed request for /agentsessions.v1.Sessions/GetSession: not a
  valid agentsessions.v1.GetSessionRequest``;
- a field out of range: ``wait_ms must be 0..9223372036000 (milliseconds; 0: do not
  wait), got 4611686018427387904``, the field named in the error's ``field``;
- a request stream (Import, Harness.Connect): the first bad message ends the call with the
  same INVALID_ARGUMENT, whatever the handler made of the iterator's error.

``deadline_unix`` has an upper bound only: a negative or past deadline is not a malformed
request but one already expired, DEADLINE_EXCEEDED (:mod:`agentsessions.server.deadline`). 0 is
proto3's unset value and means "none" wherever a field's note says so (the wire cannot tell 0 from
unset).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.message import Message

from agentsessions.errors import InvalidArgumentError
from agentsessions.sessions.checks import MAX_WAIT_SECONDS
from agentsessions.v1.limits import MAX_FORK_CHILDREN
from agentsessions.wire import status
from agentsessions.wire.intercept import NON_BLOCKING, NOT_WRAPPED, Handler, PerMethod, note

MAX_INT64 = 2**63 - 1
MAX_INT32 = 2**31 - 1
MAX_WAIT_MS = int(MAX_WAIT_SECONDS) * 1000
"""The longest wait in milliseconds: the longest a lock can be asked to wait (the engine's
own bound, ``sessions/checks.py``); beyond it a timed wait overflows the platform's clock."""
MAX_DEADLINE_UNIX = 253_402_300_799
"""9999-12-31T23:59:59Z: the last second a timestamp (and a timer from now) can hold."""


@dataclass(frozen=True)
class Range:
    """The values a field may take: ``lo..hi`` (``lo`` None: no lower bound here)."""

    lo: int | None
    hi: int
    note: str

    def error(self, field: str, value: int) -> InvalidArgumentError | None:
        """The error for ``value`` out of range (None when it is in range)."""
        if (self.lo is None or value >= self.lo) and value <= self.hi:
            return None
        span = f"at most {self.hi}" if self.lo is None else f"{self.lo}..{self.hi}"
        return InvalidArgumentError(
            f"{field} must be {span} ({self.note}), got {value}", field=field
        )


SEQ = Range(0, MAX_INT64, "a seq; 0: the default")
WAIT = Range(0, MAX_WAIT_MS, "milliseconds; 0: do not wait")
PAGE = Range(0, MAX_INT32, "0: the default; above the server's maximum is clamped")
COUNT = Range(0, MAX_INT64, "a count")

V1 = "agentsessions.v1."
RANGES: dict[str, tuple[tuple[str, Range], ...]] = {
    V1 + "ListSessionsRequest": (("page_size", PAGE),),
    V1 + "ExecRequest": (
        ("resume_from_seq", Range(0, 0, "not supported: Resume completes an open turn")),
        ("expected_last_seq", Range(0, MAX_INT64, "the head seq the turn expects")),
        ("deadline_unix", Range(None, MAX_DEADLINE_UNIX, "unix seconds; 0: none")),
        ("wait_ms", WAIT),
    ),
    V1 + "ReplayRequest": (("from_seq", SEQ), ("to_seq", Range(0, MAX_INT64, "0: the head"))),
    V1 + "ApproveRequest": (("request_seq", Range(0, MAX_INT64, "0: the pending one")),),
    V1 + "ResumeRequest": (("wait_ms", WAIT),),
    V1 + "ForkRequest": (
        ("at_seq", Range(0, MAX_INT64, "0: the head")),
        ("count", Range(1, MAX_FORK_CHILDREN, "children in one fork")),
    ),
    V1 + "CancelRequest": (("wait_ms", WAIT),),
    V1 + "FollowRequest": (
        ("from_seq", SEQ),
        ("idle_timeout_ms", Range(0, MAX_WAIT_MS, "milliseconds; 0: never")),
    ),
    V1 + "CompactRequest": (("keep_turns", Range(0, MAX_INT64, "turns kept whole")),),
    V1 + "ToolStoreRequest": (("from_seq", SEQ),),
    V1 + "ListHarnessesRequest": (("page_size", PAGE),),
    # the Harness service (a harness node): what the host sends it
    V1 + "ControllerFrame": (
        ("start.resume_from_seq", SEQ),
        ("start.state.version", COUNT),
        ("start.state.covers_from", SEQ),
        ("start.state.covers_to", SEQ),
        ("start.state.time_ns", Range(0, MAX_INT64, "nanoseconds since the epoch")),
        ("approval.request_seq", SEQ),
        ("tool.approval_request_seq", SEQ),
        ("tool.approval_decision_seq", SEQ),
        ("model.usage.input_tokens", COUNT),
        ("model.usage.output_tokens", COUNT),
        ("model.usage.reasoning_tokens", COUNT),
        ("park.request_seq", SEQ),
        ("state.version", COUNT),
        ("state.head_seq", SEQ),
    ),
}
"""Every integer field of a request the server reads, by message, with its range (a dotted
path goes through sub-messages; one that is unset is not checked). A test walks every
request message of our protos and fails on an integer field in neither this table nor
:data:`NOT_READ`."""

NOT_READ: dict[str, str] = {
    V1 + "CreateSessionRequest.session": "the session's metadata: the server reads its "
    "project, name, harness, model, labels and annotations (text); its numbers are the "
    "server's to assign and are ignored",
    V1 + "EnsureSessionRequest.session": "as CreateSessionRequest.session: text only is read",
    V1 + "ExecRequest.inputs": "messages: recorded as sent (their integers are content)",
    V1 + "ControllerFrame.start.history": "events the host committed: content",
}
"""Integer-carrying fields the server never acts on, and why."""


Plan = tuple[tuple[str | None, tuple[tuple[str, tuple[str, ...], Range], ...]], ...]
"""A message's checks grouped by the top-level field their path goes through (None: a
field of the message itself), each as (path, the rest of its path split, range)."""


def _plan(ranges: tuple[tuple[str, Range], ...]) -> Plan:
    groups: dict[str | None, list[tuple[str, tuple[str, ...], Range]]] = {}
    for path, rng in ranges:
        first, dot, rest = path.partition(".")
        key, parts = (first, tuple(rest.split("."))) if dot else (None, (first,))
        groups.setdefault(key, []).append((path, parts, rng))
    return tuple((key, tuple(checks)) for key, checks in groups.items())


_PLANS: dict[str, Plan] = {name: _plan(ranges) for name, ranges in RANGES.items()}
""":data:`RANGES` as each request is checked: every frame of a harness stream, every
request of the daemon, goes through here, so the paths are split once, and a sub-message
that is not set (a frame's other kinds) is skipped with all its fields at once."""


def check(msg: Message) -> InvalidArgumentError | None:
    """The error for the first field of ``msg`` out of its range (None: all in range)."""
    for field, checks in _PLANS.get(msg.DESCRIPTOR.full_name, ()):
        sub = msg
        if field is not None:
            if not msg.HasField(field):
                continue
            sub = getattr(msg, field)
        for path, parts, rng in checks:
            value = _value(sub, parts)
            if value is not None and (error := rng.error(path, value)) is not None:
                return error
    return None


def _value(msg: Message, parts: tuple[str, ...]) -> int | None:
    *through, last = parts
    for name in through:
        if not msg.HasField(name):
            return None
        msg = getattr(msg, name)
    return int(getattr(msg, last))


@dataclass(frozen=True)
class Refused:
    """A request the deserializer could not accept: the error to answer it with."""

    error: InvalidArgumentError


def deserializer(method: str, inner: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    """``inner`` that never raises: a message, or :class:`Refused` for bytes that do not
    decode (or decode to a message with a field out of range)."""

    def decode(data: bytes) -> Any:
        try:
            msg = inner(data)
        except Exception:  # protobuf's DecodeError, or any failure of a foreign decoder
            name = method.rsplit("/", 1)[-1]
            return Refused(
                InvalidArgumentError(
                    f"malformed request for {method}: not a valid {name} request message",
                    hint="send the message the method's .proto declares",
                )
            )
        error = check(msg) if isinstance(msg, Message) else None
        return msg if error is None else Refused(error)

    return decode


class _Requests:
    """A request stream as a handler reads it: a :class:`Refused` item raises its error
    (noted, so the call ends with it whatever the handler does with the exception)."""

    def __init__(self, items: Iterator[Any]) -> None:
        self._items = items
        self._lock = threading.Lock()
        self.refused: InvalidArgumentError | None = None

    def __iter__(self) -> _Requests:
        return self

    def __next__(self) -> Any:
        item = next(self._items)
        if isinstance(item, Refused):
            with self._lock:
                self.refused = self.refused or item.error
            raise item.error
        return item


def _behavior(
    behavior: Callable[..., Any], streams_in: bool, streams_out: bool
) -> Callable[..., Any]:
    def checked(request: Any, context: grpc.ServicerContext) -> Any:
        if isinstance(request, Refused):
            status.abort(context, request.error)
        if not streams_in:
            return behavior(request, context)
        requests = _Requests(request)
        try:
            result = behavior(requests, context)
        except Exception:
            _refuse(context, requests)
            raise
        return _responses(result, requests, context) if streams_out else result

    if streams_in and getattr(behavior, NON_BLOCKING, False):
        return _non_blocking(behavior, checked)
    return checked


def _non_blocking(
    behavior: Callable[..., Any], plain: Callable[[Any, grpc.ServicerContext], Any]
) -> Callable[..., Any]:
    """A request-streaming ``behavior`` that sends its responses through grpc's callback
    (``experimental_non_blocking``, kept): the status it ends with is the refusal's when a
    request was refused, whatever the handler made of the iterator's error. Called without
    the callback (an outer wrapper dropped it), it is ``plain``, the checked behaviour."""

    def checked(
        requests: Any, context: grpc.ServicerContext, send: Callable[[Any], None] | None = None
    ) -> Any:
        if send is None:
            return plain(requests, context)
        checked_requests = _Requests(requests)

        def send_checked(response: Any) -> None:
            refused = checked_requests.refused
            if response is None and refused is not None:
                note(error=type(refused).__name__)
                context.set_trailing_metadata(status.trailers(refused))
                context.set_code(status.status_code(refused))
                context.set_details(status.details(refused))
            send(response)

        return behavior(checked_requests, context, send_checked)

    setattr(checked, NON_BLOCKING, True)
    return checked


def _responses(
    result: Iterator[Any], requests: _Requests, context: grpc.ServicerContext
) -> Iterator[Any]:
    try:
        yield from result
    except Exception:
        _refuse(context, requests)
        raise
    _refuse(context, requests)  # a handler that ended quietly on the error


def _refuse(context: grpc.ServicerContext, requests: _Requests) -> None:
    if requests.refused is not None:
        status.abort(context, requests.refused)


_KINDS = (
    ("unary_unary", grpc.unary_unary_rpc_method_handler),
    ("unary_stream", grpc.unary_stream_rpc_method_handler),
    ("stream_unary", grpc.stream_unary_rpc_method_handler),
    ("stream_stream", grpc.stream_stream_rpc_method_handler),
)


def checked(method: str, handler: Handler | None) -> Handler | None:
    """``handler`` whose requests are checked as the module docstring says (None stays
    None; a handler without a deserializer is left as it is)."""
    if handler is None or handler.request_deserializer is None:
        return handler
    for kind, make in _KINDS:
        behavior = getattr(handler, kind, None)
        if behavior is not None:
            return make(
                _behavior(behavior, handler.request_streaming, handler.response_streaming),
                request_deserializer=deserializer(method, handler.request_deserializer),
                response_serializer=handler.response_serializer,
            )
    return handler  # pragma: no cover - grpc has no fifth kind


class WireChecks(grpc.ServerInterceptor):
    """Checks every request of every method (see the module docstring); install it last,
    so its deserializer is the one every outer interceptor's handler carries. Each method's
    checked handler is built once (:class:`~agentsessions.wire.intercept.PerMethod`)."""

    def __init__(self) -> None:
        self._handlers = PerMethod(checked)

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Handler | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Handler | None:
        method = handler_call_details.method
        if method in NOT_WRAPPED:  # holds no worker thread; its request is grpc's own
            return continuation(handler_call_details)
        return self._handlers.get(method, continuation(handler_call_details))
