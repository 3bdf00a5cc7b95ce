"""OpenTelemetry traces and metrics for the daemon (the ``otel`` extra; docs/OPERATIONS.md).

:class:`OtelTelemetry` is the :class:`~agentsessions.telemetry.Telemetry`
the engine reports to when ``serve`` runs with OpenTelemetry configured
(:func:`agentsessions.server.telemetryenv.from_environment` decides; this module is imported
only then). It makes:

- spans: one per RPC (SERVER, ``{service}/{method}``, the caller's W3C ``traceparent``
  continued), one per turn (``agentsessions.turn``), and under it one per model call (CLIENT,
  ``chat {model}``, GenAI semantic conventions: ``gen_ai.operation.name``,
  ``gen_ai.provider.name``, ``gen_ai.request.model``, ``gen_ai.usage.input_tokens`` and
  ``output_tokens``), per tool call (``execute_tool {tool}``) and per commit
  (``agentsessions.commit``);
- metrics: ``agentsessions.turns`` and ``agentsessions.commits`` (counters),
  ``agentsessions.turn.duration``, ``agentsessions.fsync.duration`` (histograms, seconds),
  ``agentsessions.streams.open`` (up-down counter), ``gen_ai.client.operation.duration`` and
  ``gen_ai.client.token.usage`` (GenAI), ``rpc.server.call.duration``.

Attributes are names, ids and counts: never a payload, a key or a token; a failed span
records its exception's class, not its message.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import SpanKind, Status, StatusCode, TracerProvider

from agentsessions import __version__
from agentsessions.telemetry import Span, Telemetry, Value

SCOPE = "agentsessions"
_PARKED = "ApprovalParkedError"  # a turn that waits for a decision has not failed
_SERVER_ERRORS = (2, 4, 12, 13, 14, 15)  # UNKNOWN DEADLINE_EXCEEDED UNIMPLEMENTED INTERNAL
# UNAVAILABLE DATA_LOSS: the codes semantic conventions count as a server's failure


class _Timed(Span):
    """A span of ours around an OpenTelemetry span (made current while it runs)."""

    __slots__ = ("_attrs", "_began", "_done", "_otel", "_span", "_token")

    def __init__(
        self,
        owner: OtelTelemetry,
        name: str,
        kind: SpanKind,
        attrs: dict[str, Any],
        parent: otel_context.Context | None = None,
    ) -> None:
        self._otel = owner
        self._attrs = attrs
        self._span = owner.tracer.start_span(name, parent, kind=kind, attributes=attrs)
        self._token: Any = None  # otel_context.attach's token
        self._began = time.perf_counter()
        self._done: Any = None

    def set(self, key: str, value: Value) -> None:
        self._attrs[key] = value
        self._span.set_attribute(key, value)

    def __enter__(self) -> Self:
        self._token = otel_context.attach(trace.set_span_in_context(self._span))
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        failed = kind is not None and kind.__name__ != _PARKED
        if failed and kind is not None:
            self._span.set_attribute("error.type", kind.__name__)
            self._span.set_status(Status(StatusCode.ERROR, kind.__name__))
        self._span.end()
        if self._token is not None:
            otel_context.detach(self._token)
        if self._done is not None:
            self._done(time.perf_counter() - self._began, kind, self._attrs)


class _RpcSpan(_Timed):
    """The span of one call: entered in the call's own context copy and ended by grpc's
    callback on another thread, so it is attached for good (the copy dies with the call)."""

    __slots__ = ()

    def __enter__(self) -> Self:
        otel_context.attach(trace.set_span_in_context(self._span))
        return self

    def set(self, key: str, value: Value) -> None:
        super().set(key, value)
        if key == "rpc.grpc.status_code" and value in _SERVER_ERRORS:
            self._span.set_status(Status(StatusCode.ERROR))


class OtelTelemetry(Telemetry):
    """The engine's reports as OpenTelemetry spans and metrics (see the module docstring)."""

    enabled = True

    def __init__(self, tracer_provider: TracerProvider, meter_provider: MeterProvider) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.tracer = tracer_provider.get_tracer(SCOPE, __version__)
        meter = meter_provider.get_meter(SCOPE, __version__)
        self._turns = meter.create_counter("agentsessions.turns", "{turn}", "Turns run")
        self._turn_time = meter.create_histogram(
            "agentsessions.turn.duration", "s", "How long a turn ran"
        )
        self._commits = meter.create_counter("agentsessions.commits", "{commit}", "Commits")
        self._fsync = meter.create_histogram(
            "agentsessions.fsync.duration", "s", "How long one fsync of the journal took"
        )
        self._streams = meter.create_up_down_counter(
            "agentsessions.streams.open", "{stream}", "Streaming calls open now"
        )
        self._model_time = meter.create_histogram(
            "gen_ai.client.operation.duration", "s", "GenAI operation duration"
        )
        self._tokens = meter.create_histogram(
            "gen_ai.client.token.usage", "{token}", "Tokens used per model call"
        )
        self._rpc_time = meter.create_histogram(
            "rpc.server.call.duration", "s", "How long a call took on the server"
        )

    # -- spans -----------------------------------------------------------------------------
    def _span(self, name: str, kind: SpanKind, attrs: dict[str, Any]) -> _Timed:
        return _Timed(self, name, kind, attrs)

    def rpc(self, method: str, metadata: dict[str, str]) -> Span:
        service, _, name = method.lstrip("/").partition("/")
        attrs: dict[str, Any] = {"rpc.system": "grpc", "rpc.service": service, "rpc.method": name}
        parent = propagate.extract(metadata)  # the caller's traceparent, if it sent one
        span = _RpcSpan(self, f"{service}/{name}", SpanKind.SERVER, attrs, parent)
        span._done = self._rpc_done
        return span

    def turn(self, session: str, execution_id: str, *, resumed: bool) -> Span:
        attrs = {
            "agentsessions.session": session,
            "agentsessions.execution_id": execution_id,
            "agentsessions.turn.resumed": resumed,
        }
        span = self._span("agentsessions.turn", SpanKind.INTERNAL, attrs)
        span._done = self._turn_done
        return span

    def model_call(self, model: str) -> Span:
        provider, _, rest = model.partition(":")
        name = rest.split(",", 1)[0] if rest else model  # never a spec's options (URLs)
        attrs = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider or model,
            "gen_ai.request.model": name,
        }
        span = _ModelSpan(self, f"chat {name}", SpanKind.CLIENT, attrs)
        span._done = self._model_done
        return span

    def tool_call(self, tool: str, call_id: str) -> Span:
        attrs = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": call_id,
        }
        return self._span(f"execute_tool {tool}", SpanKind.INTERNAL, attrs)

    def commit(self, session: str, events: int) -> Span:
        attrs = {"agentsessions.session": session, "agentsessions.commit.events": events}
        span = self._span("agentsessions.commit", SpanKind.INTERNAL, attrs)
        span._done = self._commit_done
        return span

    # -- metrics ---------------------------------------------------------------------------
    def fsync(self, seconds: float) -> None:
        self._fsync.record(seconds)

    def streams(self, delta: int) -> None:
        self._streams.add(delta)

    def _rpc_done(self, seconds: float, kind: Any, attrs: Mapping[str, Any]) -> None:
        keys = ("rpc.system", "rpc.service", "rpc.method", "rpc.grpc.status_code")
        self._rpc_time.record(seconds, {k: attrs[k] for k in keys if k in attrs})

    def _turn_done(self, seconds: float, kind: Any, attrs: Mapping[str, Any]) -> None:
        if kind is None:
            outcome = str(attrs.get("agentsessions.turn.outcome", "completed"))
            if outcome == "none":  # a resume with no open turn ran nothing
                return
        else:
            outcome = "parked" if kind.__name__ == _PARKED else "failed"
        self._turns.add(1, {"outcome": outcome})
        self._turn_time.record(seconds, {"outcome": outcome})

    def _commit_done(self, seconds: float, kind: Any, attrs: Mapping[str, Any]) -> None:
        if kind is None:
            self._commits.add(1)

    def _model_done(self, seconds: float, kind: Any, attrs: Mapping[str, Any]) -> None:
        keys = ("gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model")
        base = {k: attrs[k] for k in keys}
        if kind is not None:
            base["error.type"] = kind.__name__
        self._model_time.record(seconds, base)
        for which in ("input", "output"):
            count = attrs.get(f"gen_ai.usage.{which}_tokens")
            if isinstance(count, int):
                self._tokens.record(count, {**base, "gen_ai.token.type": which})

    def shutdown(self) -> None:
        for provider in (self.tracer_provider, self.meter_provider):
            stop = getattr(provider, "shutdown", None)  # the SDK's; the API's have none
            if stop is not None:
                stop()


class _ModelSpan(_Timed):
    """A model call's span: the engine's usage keys become the GenAI attributes."""

    __slots__ = ()

    def set(self, key: str, value: Value) -> None:
        if key in ("input_tokens", "output_tokens"):
            try:
                count = int(value)  # proto3-JSON writes int64 as a string
            except (TypeError, ValueError):
                return
            super().set(f"gen_ai.usage.{key}", count)
