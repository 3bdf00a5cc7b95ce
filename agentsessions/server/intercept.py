"""One way to run a check around every RPC handler, unary or streaming.

A server interceptor of grpc's sync API returns the method's handler; :func:`guarded` returns
the same kind of handler whose behaviour first runs ``guard(context, streaming)`` and then
the original, all inside one :class:`contextvars.Context` copied for this call: what the
guard sets in a context variable (the caller's principal) is seen by the handler, and by
every step of a streaming response, whichever worker thread grpc pulls the next item on. A
guard refuses a call by raising (through ``context.abort``); nothing of the handler runs then.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeAlias

import grpc

if TYPE_CHECKING:
    Handler: TypeAlias = grpc.RpcMethodHandler[Any, Any]  # generic in the stubs only
else:
    Handler = grpc.RpcMethodHandler

NOT_WRAPPED = ("/grpc.health.v1.Health/Watch",)
"""Methods every interceptor passes through unwrapped: grpc runs health's Watch without
holding a worker thread (its non-blocking hook), which a wrapper would lose; a load balancer
may watch for as long as the server runs."""

Guard = Callable[[grpc.ServicerContext, bool], None]
"""``guard(context, streaming)``: may set context variables, register callbacks, or abort."""

_KINDS = (
    ("unary_unary", grpc.unary_unary_rpc_method_handler, False),
    ("unary_stream", grpc.unary_stream_rpc_method_handler, True),
    ("stream_unary", grpc.stream_unary_rpc_method_handler, True),
    ("stream_stream", grpc.stream_stream_rpc_method_handler, True),
)


def _each_in(ctx: contextvars.Context, items: Iterator[Any]) -> Iterator[Any]:
    """``items``, each pulled inside ``ctx``; closing this closes ``items`` there too."""
    try:
        while True:
            try:
                item = ctx.run(next, items)
            except StopIteration:
                return
            yield item
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            ctx.run(close)


def _wrap(
    behavior: Callable[..., Any], guard: Guard, streaming: bool, streams_out: bool
) -> Callable[[Any, grpc.ServicerContext], Any]:
    def wrapped(request: Any, context: grpc.ServicerContext) -> Any:
        ctx = contextvars.copy_context()
        ctx.run(guard, context, streaming)
        result = ctx.run(behavior, request, context)
        return _each_in(ctx, result) if streams_out else result

    return wrapped


def guarded(handler: Handler | None, guard: Guard) -> Handler | None:
    """``handler`` with ``guard`` run first, in the call's own context (None stays None:
    an unknown method is grpc's UNIMPLEMENTED)."""
    if handler is None:
        return None
    for kind, make, streaming in _KINDS:
        behavior = getattr(handler, kind, None)
        if behavior is not None:
            return make(
                _wrap(behavior, guard, streaming, handler.response_streaming),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
    return handler  # pragma: no cover - grpc has no fifth kind


Around = Callable[[Callable[..., Any], bool], Callable[[Any, grpc.ServicerContext], Any]]
"""``around(behavior, streams_out)``: the behaviour to serve instead of ``behavior``."""


def wrapped(handler: Handler | None, around: Around) -> Handler | None:
    """``handler`` with its behaviour replaced by ``around(behavior, streams_out)`` (None
    stays None), for an interceptor that must see a call end as well as begin."""
    if handler is None:
        return None
    for kind, make, _ in _KINDS:
        behavior = getattr(handler, kind, None)
        if behavior is not None:
            return make(
                around(behavior, handler.response_streaming),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
    return handler  # pragma: no cover - grpc has no fifth kind
