"""An operator's view of each call: its request id, its log line, its span and stream count.

:class:`RequestObserver` is the server's outermost interceptor (it sees the calls the token
check refuses too). For each call it:

- takes the caller's ``x-request-id`` (or ``x-correlation-id``) metadata when it is a
  plausible id (1..128 of ``A-Z a-z 0-9 . _ : -``), else makes one (16 hex digits); sets it
  in :data:`~agentsessions.telemetry.REQUEST_ID` for everything that works
  for the call (the engine's turn threads inherit it), and sends it back as the
  ``x-request-id`` trailer of every reply, OK or not (:mod:`agentsessions.wire.status` keeps it when
  an error replaces the trailers);
- writes ONE log line when the call has ended: method, status code, duration, request id,
  and what the call was found to act on (project, session uid, token id, principal, the
  error class), which the token check and the scope note
  (:func:`~agentsessions.wire.intercept.note`). Never a
  payload, a key, a token or a fence value: the fields are names, ids and numbers only;
- opens the installed telemetry's RPC span (the parent of the turn's spans) and counts
  open streams.

Health checks are logged at DEBUG (a load balancer asks every few seconds); a health Watch
is not observed at all (:data:`agentsessions.wire.intercept.NOT_WRAPPED`).
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import grpc

import agentsessions.telemetry as telemetry
from agentsessions.telemetry import REQUEST_ID, Span
from agentsessions.wire.intercept import (
    NOT_WRAPPED,
    Handler,
    PerMethod,
    notes_taken,
    take_notes,
    wrapped,
)

LOG = logging.getLogger("agentsessions.server.requests")
REQUEST_ID_KEYS = ("x-request-id", "x-correlation-id")
TRAILER = "x-request-id"
QUIET_PREFIXES = ("/grpc.health.v1.Health/",)
_PLAUSIBLE = re.compile(r"[A-Za-z0-9._:\-]{1,128}")


@dataclass
class CallInfo:
    """What one call was found to be about (filled in as the call runs)."""

    method: str
    request_id: str
    streaming: bool
    started: float = field(default_factory=time.monotonic)
    fields: dict[str, str] = field(default_factory=dict)
    code: grpc.StatusCode | None = None
    span: Span = telemetry.NULL_SPAN


def request_id_from(metadata: Any) -> str:
    """The caller's request id when it sent a plausible one, else a new one."""
    for key, value in metadata or ():
        plausible = isinstance(value, str) and _PLAUSIBLE.fullmatch(value)
        if key.lower() in REQUEST_ID_KEYS and plausible:
            return str(value)
    return os.urandom(8).hex()


class RequestObserver(grpc.ServerInterceptor):
    """Request ids, one log line per call, the RPC span and the open-stream count."""

    def __init__(self, log: logging.Logger = LOG) -> None:
        self.log = log
        self._handlers = PerMethod(self._wrap)

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Handler | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Handler | None:
        method = handler_call_details.method
        if method in NOT_WRAPPED:
            return continuation(handler_call_details)
        # the notes first, on the serving thread in the call's own context: the token check
        # notes its token there, the handler later on its worker
        take_notes({})
        return self._handlers.get(method, continuation(handler_call_details))

    def _wrap(self, method: str, handler: Handler) -> Handler | None:
        """``handler`` observed: built once per method (:class:`PerMethod`)."""

        def around(behavior: Callable[..., Any], streams_out: bool) -> Callable[..., Any]:
            return self._around(method, behavior, streams_out)

        return wrapped(handler, around)

    def _around(
        self, method: str, behavior: Callable[..., Any], streams_out: bool
    ) -> Callable[[Any, grpc.ServicerContext], Any]:
        # grpc runs this in the call's own context (agentsessions.wire.intercept), where the
        # interceptors set the principal and the notes: no copy of it is needed
        def call(request: Any, context: grpc.ServicerContext) -> Any:
            info = self._begin(method, context, streams_out)
            try:
                result = behavior(request, context)
            except BaseException:
                info.code = _set_code(context) or grpc.StatusCode.UNKNOWN
                raise
            if not streams_out:
                info.code = _set_code(context) or grpc.StatusCode.OK
                return result
            return _pulled(info, context, result)

        return call

    def _begin(self, method: str, context: grpc.ServicerContext, streaming: bool) -> CallInfo:
        metadata = context.invocation_metadata()
        info = CallInfo(method, request_id_from(metadata), streaming, fields=notes_taken())
        REQUEST_ID.set(info.request_id)
        context.set_trailing_metadata(((TRAILER, info.request_id),))
        tel = telemetry.current()
        headers = {k: v for k, v in metadata or () if isinstance(v, str)}
        info.span = tel.rpc(method, headers)
        info.span.__enter__()  # in this call's own context: the parent of its spans
        if streaming:
            tel.streams(+1)
        if not context.add_callback(lambda: self._end(info)):
            self._end(info)  # pragma: no cover - the call ended before it began
        return info

    def _end(self, info: CallInfo) -> None:
        """The call has ended (grpc's callback, on its own thread): close and log it."""
        code = info.code or grpc.StatusCode.CANCELLED  # a stream the caller left
        seconds = time.monotonic() - info.started
        tel = telemetry.current()
        info.span.set("rpc.grpc.status_code", code.value[0])
        info.span.__exit__(None, None, None)
        if info.streaming:
            tel.streams(-1)
        level = logging.DEBUG if info.method.startswith(QUIET_PREFIXES) else logging.INFO
        if not self.log.isEnabledFor(level):
            return
        fields = {
            "request_id": info.request_id,
            "method": info.method,
            "code": code.name,
            "duration_ms": round(seconds * 1000.0, 3),
            "project": info.fields.get("project", ""),
            "session": info.fields.get("session", ""),
            "token_id": info.fields.get("token_id", ""),
            **{k: v for k, v in info.fields.items() if k in ("principal", "error")},
        }
        self.log.log(level, "rpc", extra={"fields": fields})


def _set_code(context: grpc.ServicerContext) -> grpc.StatusCode | None:
    """The code the handler set or aborted with (grpc's ``ServicerContext.code()``, which
    its type stubs omit); None if it set none."""
    code: grpc.StatusCode | None = cast(Any, context).code()
    return code


def _pulled(info: CallInfo, context: grpc.ServicerContext, items: Iterator[Any]) -> Iterator[Any]:
    """A streaming reply (grpc pulls each item in the call's own context); its end is noted."""
    try:
        while True:
            try:
                item = next(items)
            except StopIteration:
                info.code = _set_code(context) or grpc.StatusCode.OK
                return
            except BaseException:
                info.code = _set_code(context) or grpc.StatusCode.UNKNOWN
                raise
            yield item
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()
