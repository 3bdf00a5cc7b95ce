"""One way to run a check around every RPC handler, unary or streaming.

A server interceptor of grpc's sync API returns the method's handler; :func:`guarded` returns
the same kind of handler whose behaviour first runs ``guard(context, streaming)`` and then
the original, all inside one :class:`contextvars.Context` copied for this call: what the
guard sets in a context variable (the caller's principal) is seen by the handler, and by
every step of a streaming response, whichever worker thread grpc pulls the next item on. A
guard refuses a call by raising (through ``context.abort``); nothing of the handler runs then.

A behaviour may name the pool grpc runs it on (``experimental_thread_pool``, :func:`on_pool`;
:mod:`agentsessions.server.admission` runs long calls on their own); every wrapper here keeps that
choice.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from concurrent import futures
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

_NOTES: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "agentsessions_call_notes", default=None
)


def take_notes(notes: dict[str, str]) -> None:
    r"""Collect what this call's code :func:`note`\ s into ``notes`` (the server's observer
    sets it when a call begins, in the call's own context; its log line reads it)."""
    _NOTES.set(notes)


def note(**fields: str) -> None:
    """Note what the current call acts on (``session``, ``project``, ``token_id``,
    ``principal``, ``error``) for its log line; the first value of a field stays, outside
    a call nothing happens. Names and ids only: never a payload or a secret."""
    notes = _NOTES.get()
    if notes is None:
        return
    for key, value in fields.items():
        if value and key not in notes:
            notes[key] = value


Guard = Callable[[grpc.ServicerContext, bool], None]
"""``guard(context, streaming)``: may set context variables, register callbacks, or abort."""

_KINDS = (
    ("unary_unary", grpc.unary_unary_rpc_method_handler, False),
    ("unary_stream", grpc.unary_stream_rpc_method_handler, True),
    ("stream_unary", grpc.stream_unary_rpc_method_handler, True),
    ("stream_stream", grpc.stream_stream_rpc_method_handler, True),
)


POOL_ATTR = "experimental_thread_pool"
"""The attribute grpc's sync server reads on a behaviour: the pool to submit it to."""


def on_pool(behavior: Callable[..., Any], pool: futures.ThreadPoolExecutor) -> Callable[..., Any]:
    """``behavior`` as grpc runs it on ``pool`` instead of the server's own pool."""

    def run(*args: Any) -> Any:
        return behavior(*args)

    setattr(run, POOL_ATTR, pool)
    return run


def _keep_pool(new: Callable[..., Any], old: Callable[..., Any]) -> Callable[..., Any]:
    """``new`` on the pool ``old`` named, if it named one."""
    pool = getattr(old, POOL_ATTR, None)
    if pool is not None:
        setattr(new, POOL_ATTR, pool)
    return new


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
                _keep_pool(_wrap(behavior, guard, streaming, handler.response_streaming), behavior),
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
                _keep_pool(around(behavior, handler.response_streaming), behavior),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
    return handler  # pragma: no cover - grpc has no fifth kind
