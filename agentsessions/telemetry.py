"""The engine's telemetry seam: what the core tells an operator's tools, with a no-op default.

The core (the journal and the controller) imports no tracing or metrics library: it calls
:func:`current` and tells the :class:`Telemetry` found there what it is doing (a turn, a
model call, a tool call, a commit, an fsync). The default does nothing and costs a few
attribute lookups; ``agentsessions serve`` installs another one (OpenTelemetry,
``agentsessions/server/otel.py``) only when asked to (docs/OPERATIONS.md).

The request id is here too: the server sets :data:`REQUEST_ID` for each call, every thread
that works for it inherits it (the engine runs a turn in a copy of the caller's context), and
the server's log lines and replies name it, so one id follows a request through the engine
and the store.

Invariants:
- a telemetry method never raises into the engine, and never changes what is journaled:
  it is told what happened, with names, counts and durations only, never payloads;
- a span context manager re-raises what its body raised (telling the telemetry first).
"""

from __future__ import annotations

import contextvars
from types import TracebackType
from typing import Self

REQUEST_ID: contextvars.ContextVar[str] = contextvars.ContextVar(
    "agentsessions_request_id", default=""
)
"""The id of the request this thread works for ("" outside a server call)."""

Value = str | int | float | bool


class Span:
    """One piece of work being timed (the no-op one); ``with`` it around the work."""

    __slots__ = ()

    def set(self, key: str, value: Value) -> None:
        """Note an attribute learnt during the work (a model's token counts, an outcome)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None


NULL_SPAN = Span()


class Telemetry:
    """What the engine reports; this base does nothing (subclasses override what they use).

    ``enabled`` False lets a hot path (fsync) skip even reading the clock.
    """

    enabled = False

    def turn(self, session: str, execution_id: str, *, resumed: bool) -> Span:
        """A turn (exec or resume) runs inside the returned span (``session`` and
        ``execution_id`` may be "" until known: then they are ``set`` on the span as
        ``agentsessions.session`` and ``agentsessions.execution_id``, with
        ``agentsessions.turn.outcome`` completed, canceled or none)."""
        return NULL_SPAN

    def model_call(self, model: str) -> Span:
        """A live model call; ``input_tokens``/``output_tokens`` are set when known."""
        return NULL_SPAN

    def tool_call(self, tool: str, call_id: str) -> Span:
        """A tool executor's run."""
        return NULL_SPAN

    def commit(self, session: str, events: int) -> Span:
        """One commit of ``events`` events to ``session``'s journal."""
        return NULL_SPAN

    def rpc(self, method: str, metadata: dict[str, str]) -> Span:
        """A server call (``metadata``: the call's headers, for trace propagation)."""
        return NULL_SPAN

    def fsync(self, seconds: float) -> None:
        """One fsync (or fdatasync) took ``seconds``."""

    def streams(self, delta: int) -> None:
        """A streaming call opened (+1) or ended (-1)."""

    def shutdown(self) -> None:
        """Flush and stop exporting (the server is stopping)."""


NULL = Telemetry()
_current: list[Telemetry] = [NULL]


def current() -> Telemetry:
    """The installed telemetry (the no-op one unless :func:`install` was called)."""
    return _current[0]


def install(telemetry: Telemetry | None) -> Telemetry:
    """Make ``telemetry`` (None: the no-op one) what :func:`current` returns; the previous."""
    previous, _current[0] = _current[0], telemetry or NULL
    return previous
