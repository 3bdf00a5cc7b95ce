"""Our exception tree as gRPC statuses, and back.

Each class of :mod:`agentsessions.errors` names its status (``grpc_code``, as the digest's
section 1.2 lists them: ABORTED for a lost CAS, a fence or a busy session,
FAILED_PRECONDITION, INVALID_ARGUMENT, NOT_FOUND, UNAVAILABLE, INTERNAL for a failed harness
...). The server sends the error's message as the status details and two trailing metadata
entries a client of ours reads to raise the same class again (a reference client sees an
ordinary status):

- ``agentsessions-error``: the class name (``NotFoundError``);
- ``agentsessions-hint``: the hint, when there is one;
- ``agentsessions-fields``: the error's fields (session, seq, head_seq, ...) as JSON, when
  it has any: the same context the CLI's ``--json`` error object carries;
- ``x-request-id``: the call's request id (on every reply, OK or not): the id the server's
  log line for the call, and its engine's and store's log lines, carry. The message itself
  stays the engine's word for word (a hidden session's NOT_FOUND equals an unknown one's).

An exception outside the tree is a bug: INTERNAL with a fixed message, its text withheld
(it may hold paths or payloads); the server's log has it.

Every text sent (details, hint, each field) is bounded (:func:`bounded`), whatever the
error's site quoted: a run of more than :data:`RUN_LIMIT` bytes without a space (a
caller's 100 KB spec or page token) keeps its start only, and the whole is cut at
:data:`TEXT_LIMIT` bytes, so caller input can never swell a status past gRPC's metadata
limit (which would turn the answer into RESOURCE_EXHAUSTED) nor be echoed back whole.
"""

from __future__ import annotations

import json
import re
from typing import Any

import grpc

from agentsessions import errors
from agentsessions.errors import AgentSessionsError
from agentsessions.telemetry import REQUEST_ID
from agentsessions.wire.intercept import note

ERROR_KEY = "agentsessions-error"
HINT_KEY = "agentsessions-hint"
FIELDS_KEY = "agentsessions-fields"
MESSAGE_KEY = "agentsessions-message"
REQUEST_ID_KEY = "x-request-id"  # every reply's, OK or not (.observe)
INTERNAL_MESSAGE = "internal error (the server's log has the details)"
RUN_LIMIT = 200  # bytes of one unbroken run of text kept (caller text is quoted in runs)
TEXT_LIMIT = 1024  # bytes of a whole text sent: details, hint, one field
_RUN = re.compile(rf"\S{{{RUN_LIMIT + 1},}}")


def _cut(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes (whole characters), marked when cut."""
    raw = text.encode("utf-8", "surrogateescape")
    if len(raw) <= limit:
        return text
    return raw[: limit - 24].decode("utf-8", "ignore") + f"...({len(raw)} bytes)"


def bounded(text: str) -> str:
    """``text`` as the server sends it: each run of more than :data:`RUN_LIMIT` bytes
    without whitespace cut to that, the whole to :data:`TEXT_LIMIT` bytes."""
    if len(text) <= RUN_LIMIT:
        return text
    return _cut(_RUN.sub(lambda m: _cut(m.group(0), RUN_LIMIT), text), TEXT_LIMIT)


def status_code(exc: BaseException) -> grpc.StatusCode:
    """The status an exception is sent as."""
    if isinstance(exc, AgentSessionsError):
        return grpc.StatusCode[exc.grpc_code]
    return grpc.StatusCode.INTERNAL


def _ascii(text: str) -> str:
    """Metadata values must be printable ASCII; anything else is escaped."""
    return text.encode("ascii", "backslashreplace").decode("ascii").replace("\n", " ")


def trailers(exc: BaseException) -> tuple[tuple[str, str], ...]:
    """The trailing metadata naming ``exc``'s class and hint (for a foreign error, only the
    request id), and the call's request id (``x-request-id``,
    :mod:`agentsessions.server.observe`)."""
    rid = REQUEST_ID.get()
    out = [(REQUEST_ID_KEY, rid)] if rid else []
    if not isinstance(exc, AgentSessionsError):
        return tuple(out)
    out.append((ERROR_KEY, type(exc).__name__))
    if exc.hint:
        out.append((HINT_KEY, _ascii(bounded(exc.hint))))
    if exc.fields:
        fields = {k: bounded(v) if isinstance(v, str) else v for k, v in exc.fields.items()}
        out.append((FIELDS_KEY, json.dumps(fields, default=str, sort_keys=True)))
    return tuple(out)


def details(exc: BaseException) -> str:
    """The status details: our error's message, or a fixed text for a foreign one."""
    return bounded(exc.message) if isinstance(exc, AgentSessionsError) else INTERNAL_MESSAGE


def abort(context: grpc.ServicerContext, exc: BaseException) -> None:
    """End the RPC with ``exc``'s status, details and trailers (raises, as grpc's abort);
    the call's log line names the error's class (never its message, which may quote input)."""
    note(error=type(exc).__name__ if isinstance(exc, AgentSessionsError) else "internal")
    context.set_trailing_metadata(trailers(exc))
    context.abort(status_code(exc), details(exc))


def ok_trailers(exc: AgentSessionsError) -> tuple[tuple[str, str], ...]:
    """The trailers of a stream that ends OK on an outcome our client raises (a turn parked
    on an approval): :func:`trailers` plus the message, which an OK status cannot carry."""
    return (*trailers(exc), (MESSAGE_KEY, _ascii(bounded(exc.message))))


def error_from_trailers(meta: Any) -> AgentSessionsError | None:
    """The error an OK stream's trailers name (:func:`ok_trailers`), None when none."""
    found = dict(meta or ())
    if ERROR_KEY not in found:
        return None
    return from_rpc_error(_Ended(str(found.get(MESSAGE_KEY, "")), tuple(meta)))  # type: ignore[arg-type]


class _Ended:
    """An ended call as :func:`from_rpc_error` reads one."""

    def __init__(self, message: str, meta: tuple[tuple[str, str], ...]) -> None:
        self._message, self._meta = message, meta

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.OK

    def details(self) -> str:
        return self._message

    def trailing_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._meta


def error_class(name: str) -> type[AgentSessionsError] | None:
    """The class of our tree named ``name`` (from a trailer), None if there is none."""
    cls: Any = getattr(errors, name, None)
    if isinstance(cls, type) and issubclass(cls, AgentSessionsError):
        return cls
    return None


def from_rpc_error(err: grpc.RpcError) -> AgentSessionsError:
    """The error of our tree a failed call stands for (the client's side of :func:`abort`).

    With our trailer: that class, message and hint. Without (a reference server, a proxy,
    the transport): the most specific class whose status it is (UnavailableError for UNAVAILABLE,
    its DeadlineExceededError for DEADLINE_EXCEEDED), else AgentSessionsError.
    """
    call: Any = err
    code = call.code() if hasattr(call, "code") else grpc.StatusCode.UNKNOWN
    message = (call.details() if hasattr(call, "details") else "") or str(code.name)
    meta = dict(call.trailing_metadata() or ()) if hasattr(call, "trailing_metadata") else {}
    cls = error_class(str(meta.get(ERROR_KEY, "")))
    hint = str(meta.get(HINT_KEY, ""))
    fields = _fields(str(meta.get(FIELDS_KEY, "")))
    if cls is None:
        cls = _BY_STATUS.get(code.name, AgentSessionsError)
    # built as every class of the tree builds itself (message, hint, fields, then each field
    # as an attribute), without calling a subclass __init__ whose fields a peer may not send
    exc = cls.__new__(cls)
    AgentSessionsError.__init__(exc, message, hint=hint, **fields)
    for name, value in exc.fields.items():
        if not hasattr(type(exc), name):  # never shadow a method or class attribute
            setattr(exc, name, value)
    exc.request_id = str(meta.get(REQUEST_ID_KEY, ""))
    return exc


def _fields(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


_BY_STATUS: dict[str, type[AgentSessionsError]] = {
    "INVALID_ARGUMENT": errors.InvalidArgumentError,
    "NOT_FOUND": errors.NotFoundError,
    "ABORTED": errors.ConflictError,
    "UNAVAILABLE": errors.UnavailableError,
    "DEADLINE_EXCEEDED": errors.DeadlineExceededError,
    "CANCELLED": errors.TurnCanceledError,
    "DATA_LOSS": errors.JournalCorruptError,
    "INTERNAL": errors.HarnessError,
    "ALREADY_EXISTS": errors.HarnessExistsError,
    "UNAUTHENTICATED": errors.UnauthenticatedError,
    "PERMISSION_DENIED": errors.PermissionDeniedError,
    "RESOURCE_EXHAUSTED": errors.ResourceExhaustedError,
}
"""A status with no trailer of ours, as the class a caller most likely handles."""
