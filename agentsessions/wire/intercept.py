"""The pieces every interceptor of our servers shares: handlers built once per method.

grpc's sync server (1.85, ``grpc/_server.py``) gives each call a fresh
:class:`contextvars.Context` (``_RPCState.context``), runs the interceptor pipeline inside it
on its serving thread, and then runs the method's behaviour inside the same context on a
worker (``thread_pool.submit(state.context.run, ...)``). So what an interceptor sets in a
context variable for the call (the caller's principal, the log line's notes) is seen by the
handler, and by every step of a streaming reply, without a wrapper per call; a test pins
this behaviour of grpc (tests/unit/test_intercept.py). The handlers an interceptor returns
then depend on the method only, and :class:`PerMethod` builds each once (built per call,
four interceptors rebuilt it four times: a unary call's interception cost 8.0 us, now 5.1).

A behaviour may name the pool grpc runs it on (``experimental_thread_pool``, :func:`on_pool`;
:mod:`agentsessions.server.admission` runs long calls on their own); every wrapper here keeps that
choice.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
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
    sets it when grpc finds the call's handler, in the call's own context; its log line
    reads it)."""
    _NOTES.set(notes)


def notes_taken() -> dict[str, str]:
    """The notes this call collects (:func:`take_notes`); a new dict, taken, outside one."""
    notes = _NOTES.get()
    if notes is None:
        notes = {}
        _NOTES.set(notes)
    return notes


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


_KINDS = (
    ("unary_unary", grpc.unary_unary_rpc_method_handler),
    ("unary_stream", grpc.unary_stream_rpc_method_handler),
    ("stream_unary", grpc.stream_unary_rpc_method_handler),
    ("stream_stream", grpc.stream_stream_rpc_method_handler),
)


POOL_ATTR = "experimental_thread_pool"
"""The attribute grpc's sync server reads on a behaviour: the pool to submit it to."""


NON_BLOCKING = "experimental_non_blocking"
"""The attribute grpc's sync server reads on a behaviour: call it with a third argument, a
callback that sends one response from any thread (the harness node's streams,
:mod:`.harnessoutbox`); :mod:`.wirecheck` keeps it, other wrappers call the behaviour
without it."""


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


Around = Callable[[Callable[..., Any], bool], Callable[[Any, grpc.ServicerContext], Any]]
"""``around(behavior, streams_out)``: the behaviour to serve instead of ``behavior``."""


def wrapped(handler: Handler | None, around: Around) -> Handler | None:
    """``handler`` with its behaviour replaced by ``around(behavior, streams_out)`` (None
    stays None), for an interceptor that must see a call end as well as begin."""
    if handler is None:
        return None
    for kind, make in _KINDS:
        behavior = getattr(handler, kind, None)
        if behavior is not None:
            return make(
                _keep_pool(around(behavior, handler.response_streaming), behavior),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
    return handler  # pragma: no cover - grpc has no fifth kind


ONE_OFF_ATTR = "agentsessions_one_off"
"""Set on the behaviour of a handler made for one call (a refusal): :class:`PerMethod`
wraps it without keeping it, so a flood of refusals never displaces a method's handler."""


def one_off(behavior: Callable[..., Any]) -> Callable[..., Any]:
    """``behavior`` marked as made for one call (see :data:`ONE_OFF_ATTR`)."""
    setattr(behavior, ONE_OFF_ATTR, True)
    return behavior


def behavior_of(handler: Handler) -> Callable[..., Any]:
    """The one behaviour a handler carries (grpc sets exactly one of its four)."""
    for kind, _ in _KINDS:
        behavior = getattr(handler, kind, None)
        if behavior is not None:
            return behavior  # type: ignore[no-any-return]
    raise TypeError("a method handler without a behaviour")  # pragma: no cover


MAX_METHODS = 1024
"""Methods :class:`PerMethod` keeps a handler for: a server has a few dozen; the bound only
keeps a generic handler that answers any name from growing the map without end."""


class PerMethod:
    """Handlers built by ``build(method, inner)`` once per method and reused while the inner
    handler is the same object (the services register theirs once). An inner handler made
    for one call (:func:`one_off`) is wrapped each time and not kept; None stays None."""

    def __init__(self, build: Callable[[str, Handler], Handler | None]) -> None:
        self._build = build
        self._built: dict[str, tuple[Handler, Handler | None]] = {}

    def get(self, method: str, inner: Handler | None) -> Handler | None:
        """The handler for ``method`` over ``inner``."""
        if inner is None:
            return None
        hit = self._built.get(method)
        if hit is not None and hit[0] is inner:
            return hit[1]
        made = self._build(method, inner)
        one_call = getattr(behavior_of(inner), ONE_OFF_ATTR, False)
        if not one_call and len(self._built) < MAX_METHODS:
            self._built[method] = (inner, made)
        return made
