"""Admission: whether a call may start, decided before it takes (or waits for) a worker.

Where this runs, and why that matters (grpc 1.85's sync server, ``grpc/_server.py``): one
thread polls the completion queue; for each new call ``_process_event_and_continue`` takes
the server's lock and calls ``_find_method_handler``, which runs the interceptor pipeline
(each ``intercept_service``), and only then hands the handler to ``thread_pool.submit``. So
:meth:`Admission.intercept_service` runs on that serving thread, before the call has a
worker: a call counted and refused there never waits in the pool's queue, and a flood of
them cannot delay anyone's unary call. The call's metadata (its bearer token, so its
principal: :mod:`.auth` authenticates there too) is known at that point; its peer is not
(``HandlerCallDetails`` carries the method and the metadata only).

What is counted (the table in :mod:`agentsessions.wire.bounds`): per token, the requests of the last
moments (a token bucket), its open streams and its turns in flight; for the whole server, its long
calls. A *long call* is any streaming RPC (Exec, ResumeStream, Replay, Follow, Export,
Import, Harness.Connect, reflection) or turn (:data:`TURN_METHODS`, unary ones too: Resume
holds its worker for the whole turn).

How a long call is run: on a pool of its own of exactly ``max_streams`` workers, named by
the handler's ``experimental_thread_pool`` (the hook ``grpc_health`` uses for Watch), and
never more than ``max_streams`` are admitted, so a long call never waits for a worker and
the server's own pool (``app.UNARY_WORKERS``) is left to unary calls, which no number of
streams can take. This instead of ``grpc.aio``: the services, their interceptors and the
engine's API are blocking code; an asyncio server would need every handler rewritten or
run in threads anyway, where a cap needs one interceptor. A parked stream costs a thread
(its stack is reserved, a few pages touched), so a few dozen are cheap.

A slot is taken at admission and given back when the call's worker is done with it (the
future grpc's ``submit`` returns): whether the call ended done, failed, canceled or with
its peer gone, and also when its handler never ran (a caller that canceled before its
request arrived). A worker's end, not the RPC's status, is what frees a worker, so the
count is the workers in use.

A refused call gets a handler that only aborts (RESOURCE_EXHAUSTED naming the bound and
the ``serve`` flag that raises it), declared request-streaming, so grpc calls it at once
instead of first waiting for a request message that a hostile client may never send; and
run at once on the serving thread itself (:class:`_Inline`), not on a pool: the abort only
starts one batch in grpc's core (the status), which never blocks, so a refusal is done
before the serving thread takes the next call. A flood's refused calls then never queue
for a worker, and only that one thread (and grpc's core) allocates for them: measured with
bench/streams.py, the daemon's RSS after 10,000 refused streams went from 1.21x its idle
level (a pool of two threads refusing, a backlog of calls waiting for them) to 1.07x
(:mod:`.memory`). (Raising in ``intercept_service`` would be grpc's own UNKNOWN "Error in
service handler!"; returning None its UNIMPLEMENTED.)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import grpc

from agentsessions.errors import AgentSessionsError, ResourceExhaustedError
from agentsessions.server import memory
from agentsessions.wire import status
from agentsessions.wire.intercept import NOT_WRAPPED, Handler, PerMethod, on_pool, one_off

if TYPE_CHECKING:
    from agentsessions.sessions.tokens import Principal
    from agentsessions.wire.bounds import Limits

SERVICE = "/agentsessions.v1.Sessions/"
TURN_METHODS = frozenset(
    SERVICE + name for name in ("Exec", "ExecQuick", "ResumeStream", "Resume", "Compact", "Rerun")
)
"""The RPCs that run a turn (or re-drive them): counted against ``--max-turns-per-token``.
Not ExecRest: the turn it streams still holds the slot its ExecQuick kept (:func:`keep_slot`)."""
UNMETERED = ("/grpc.health.v1.Health/Check",)
"""Not rate-limited: a load balancer's probe must not fail because a caller without a token
floods the server (it is cheap, holds no lock, and grpc's own concurrency bound still holds)."""
PUBLIC_KEY = "public"
"""Whose budget a call without a principal spends (health, reflection:
:data:`.auth.PUBLIC_PREFIXES`)."""


class _Inline(futures.ThreadPoolExecutor):
    """The refusals' pool as grpc sees it: ``submit`` runs the work at once on the thread
    that submits it (grpc's serving thread) and returns its finished future. grpc takes only
    a ThreadPoolExecutor instance, so this is one by type; it starts no threads (the base
    ``__init__`` is deliberately not run). Only for work that never blocks: a refusal.
    (grpc's done-callback on the future takes the server's lock, which the serving thread
    holds while it submits; that lock is reentrant.)"""

    def __init__(self) -> None:
        pass

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> futures.Future[Any]:
        future: futures.Future[Any] = futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # as a pool's worker would: the future carries it
            future.set_exception(exc)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Nothing: no threads."""


INLINE = _Inline()
"""Where refusals run: on grpc's serving thread, at once (see the module)."""


def refusal(exc: AgentSessionsError) -> Handler:
    """A handler that ends its call with ``exc`` at once, on grpc's serving thread
    (:data:`INLINE`), without waiting for (or reading) a request: any method may be
    answered with it. (Measured with bench/streams.py: refusals of the method's own kind
    wait for each request message, fall behind a flood, and let grpc's backstop refuse
    bystanders; refusals on a pool of their own kept a flood's backlog of calls alive, and
    its heap, until the pool caught up.)"""

    def refuse(_requests: Any, context: grpc.ServicerContext) -> None:
        memory.TRIMMER.poke()
        status.abort(context, exc)

    return grpc.stream_stream_rpc_method_handler(one_off(on_pool(refuse, INLINE)))


@dataclass
class _Lease:
    """One admitted call's slot: given back when the call ends, unless the call kept it."""

    release: Callable[[], None]
    kept: bool = False


_LEASES = threading.local()


def keep_slot() -> Callable[[], None] | None:
    """Keep the admitted call's slot past the call's end: the work it stands for goes on
    (a turn ExecQuick paused runs until its rest is read or dropped), so it stays counted
    against the caller's bounds until the returned function (idempotent) is called. None
    when the calling thread runs no admitted call (a server without admission)."""
    lease: _Lease | None = getattr(_LEASES, "current", None)
    if lease is None:
        return None
    lease.kept = True
    return lease.release


_PENDING = threading.local()
"""The slot of the call grpc's serving thread has just admitted, until grpc submits it.
The handler is built once per method (it cannot carry a call's slot); grpc finds a call's
handler (this interceptor) and submits it to the handler's pool on that one thread, one
call after the other (``_handle_call``), so the slot crosses from one to the other here."""


def _hand_over(release: Callable[[], None] | None) -> None:
    """Leave ``release`` for the next submit on this thread; a slot left by a call grpc
    never submitted (it refused it after admission: its concurrency bound) is given back."""
    stale: Callable[[], None] | None = getattr(_PENDING, "release", None)
    _PENDING.release = release
    if stale is not None:
        stale()


class _Slots(futures.ThreadPoolExecutor):
    """The long-call pool as grpc sees it: ``submit`` runs a call's work on the shared pool
    and gives the call's slot (:func:`_hand_over`) back when that work ends, unless the call
    kept it (:func:`keep_slot`). grpc takes only a ThreadPoolExecutor instance (an
    ``isinstance`` check), so this is one by type; it starts no threads of its own (the base
    ``__init__`` is deliberately not run)."""

    def __init__(self, pool: futures.ThreadPoolExecutor) -> None:
        self._pool = pool

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> futures.Future[Any]:
        release: Callable[[], None] | None = getattr(_PENDING, "release", None)
        _PENDING.release = None
        if release is None:  # only Admission hands this pool out, each time with a slot
            return self._pool.submit(fn, *args, **kwargs)  # pragma: no cover
        lease = _Lease(release)

        def leased(*a: Any, **k: Any) -> Any:
            _LEASES.current = lease  # for keep_slot(), on the thread that runs the call
            try:
                return fn(*a, **k)
            finally:
                _LEASES.current = None

        try:
            future = self._pool.submit(leased, *args, **kwargs)
        except BaseException:  # the pool is shut down: the call never runs
            release()
            raise
        future.add_done_callback(lambda _done: None if lease.kept else lease.release())
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Nothing: the shared pool belongs to the :class:`Admission`."""


@dataclass
class _Held:
    streams: int = 0
    turns: int = 0


@dataclass
class _Bucket:
    tokens: float
    at: float


class Ledger:
    """The counts behind admission: thread-safe, O(1) per call, one entry per token that
    has a call open (or a bucket: one per token that called; tokens are the home's, so the
    map is as large as the token file at most)."""

    def __init__(self, limits: Limits, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self._clock = clock
        self._mutex = threading.Lock()
        self._long = 0
        self._held: dict[str, _Held] = {}
        self._buckets: dict[str, _Bucket] = {}

    def open_streams(self, key: str) -> int:
        """How many streams ``key`` (``token:<id>``, :data:`PUBLIC_KEY`) has open now."""
        with self._mutex:
            held = self._held.get(key)
            return held.streams if held else 0

    def open_turns(self, key: str) -> int:
        """How many turns ``key`` has in flight now."""
        with self._mutex:
            held = self._held.get(key)
            return held.turns if held else 0

    def open_long_calls(self) -> int:
        """How many long calls (streams and turns) the server has open now."""
        with self._mutex:
            return self._long

    def admit(
        self, key: str | None, *, stream: bool, turn: bool, metered: bool = True
    ) -> Callable[[], None] | None:
        """Count one call of ``key`` (None: the operator of a listener without auth, bound
        by the server's total only); the function that gives its slot back (None for a
        short call, which holds none), or ResourceExhaustedError naming the bound."""
        who = "callers without a token" if key == PUBLIC_KEY else "this token"
        lim = self.limits
        with self._mutex:
            if key is not None and metered and not self._take(key):
                raise exhausted(
                    f"too many requests for {who} (over {lim.max_rps_per_token} a second)",
                    "max_rps_per_token",
                    lim.max_rps_per_token,
                    "slow down and retry",
                )
            if not (stream or turn):
                return None
            if self._long >= lim.max_streams:
                raise exhausted(
                    f"the server has {self._long} of {lim.max_streams} streams and turns open",
                    "max_streams",
                    lim.max_streams,
                    "retry later",
                )
            held = self._held.get(key, _Held()) if key is not None else _Held()
            if stream and held.streams >= lim.max_streams_per_token:
                raise exhausted(
                    f"too many open streams for {who} "
                    f"({held.streams} of {lim.max_streams_per_token})",
                    "max_streams_per_token",
                    lim.max_streams_per_token,
                    "end a stream (a follow, an exec) first",
                )
            if turn and held.turns >= lim.max_turns_per_token:
                raise exhausted(
                    f"too many turns in flight for {who} "
                    f"({held.turns} of {lim.max_turns_per_token})",
                    "max_turns_per_token",
                    lim.max_turns_per_token,
                    "wait for a turn to end",
                )
            self._long += 1
            if key is not None:
                held.streams += stream
                held.turns += turn
                self._held[key] = held
        return self._releaser(key, stream, turn)

    def _take(self, key: str) -> bool:
        """One request from ``key``'s bucket (``max_rps_per_token`` a second, bursts of
        twice that); False when it is empty."""
        now, rate = self._clock(), float(self.limits.max_rps_per_token)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(2 * rate, now)
        bucket.tokens = min(2 * rate, bucket.tokens + (now - bucket.at) * rate)
        bucket.at = now
        if bucket.tokens < 1:
            return False
        bucket.tokens -= 1
        return True

    def _releaser(self, key: str | None, stream: bool, turn: bool) -> Callable[[], None]:
        done = [False]  # under the mutex: given back once (an Event per call cost ~2 us)

        def release() -> None:
            with self._mutex:
                if done[0]:
                    return
                done[0] = True
                self._long -= 1
                held = self._held.get(key) if key is not None else None
                if held is not None:
                    held.streams -= stream
                    held.turns -= turn
                    if not (held.streams or held.turns):
                        del self._held[key]  # type: ignore[arg-type]
                idle = self._long == 0
            if idle:
                memory.TRIMMER.poke()

        return release


def exhausted(message: str, limit: str, allowed: int, then: str) -> ResourceExhaustedError:
    """The refusal of a bound: ``message``, what to do ``then``, and the ``serve`` flag that
    raises ``limit`` (its trailers carry ``limit`` and ``allowed``)."""
    flag = "--" + limit.replace("_", "-")
    return ResourceExhaustedError(
        f"{message}: {then}, or ask the operator to raise serve {flag}",
        hint=f"serve {flag} N raises this bound",
        limit=limit,
        allowed=allowed,
    )


class Admission(grpc.ServerInterceptor):
    """Counts and refuses calls on grpc's serving thread (see the module); runs the ones it
    admits as long calls on its own pool of ``limits.max_streams`` workers.

    ``principal()`` is the caller's principal as the auth interceptor (which must come
    before this one) set it for the interceptors after it; None for a public method. Its
    token id keys the per-token bounds; a principal without one (the operator of a
    listener without auth) is bound only by the server's total."""

    def __init__(self, limits: Limits, principal: Callable[[], Principal | None]) -> None:
        self.ledger = Ledger(limits)
        self._principal = principal
        self.pool = futures.ThreadPoolExecutor(limits.max_streams, thread_name_prefix="stream")
        slots = _Slots(self.pool)
        self._handlers = PerMethod(lambda _method, handler: _on_pool(handler, slots))

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Handler | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Handler | None:
        method = handler_call_details.method
        if method in NOT_WRAPPED:  # holds no worker thread
            return continuation(handler_call_details)
        handler = continuation(handler_call_details)
        if handler is None:
            return None  # grpc's UNIMPLEMENTED
        stream = bool(handler.request_streaming or handler.response_streaming)
        turn = method in TURN_METHODS
        try:
            release = self.ledger.admit(
                _key(self._principal()), stream=stream, turn=turn, metered=method not in UNMETERED
            )
        except ResourceExhaustedError as exc:
            _hand_over(None)
            return refusal(exc)
        _hand_over(release)
        if release is None:
            return handler  # a short call: the server's own pool
        return self._handlers.get(method, handler)

    def close(self) -> None:
        """Let the long-call pool's idle threads go (after the server stopped)."""
        self.pool.shutdown(wait=False)


def _key(principal: Principal | None) -> str | None:
    if principal is None:
        return PUBLIC_KEY
    return f"token:{principal.token_id}" if principal.token_id else None


def _on_pool(handler: Handler, slots: _Slots) -> Handler:
    """``handler`` run on ``slots`` (the same kind, serializers and behaviour)."""
    for kind, make in (
        ("unary_unary", grpc.unary_unary_rpc_method_handler),
        ("unary_stream", grpc.unary_stream_rpc_method_handler),
        ("stream_unary", grpc.stream_unary_rpc_method_handler),
        ("stream_stream", grpc.stream_stream_rpc_method_handler),
    ):
        behavior = getattr(handler, kind, None)
        if behavior is not None:
            return make(
                on_pool(behavior, slots),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
    return handler  # pragma: no cover - grpc has no fifth kind
