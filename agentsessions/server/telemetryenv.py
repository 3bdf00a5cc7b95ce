"""Whether ``serve`` reports to OpenTelemetry, decided by the standard ``OTEL_*`` variables.

The rule (docs/OPERATIONS.md): telemetry is on when ``OTEL_TRACES_EXPORTER`` or
``OTEL_METRICS_EXPORTER`` names an exporter (anything but empty or ``none``) and
``OTEL_SDK_DISABLED`` is not ``true``. Unset means off, unlike the SDK's own default
(``otlp``): installing the extra alone never makes the daemon send anything anywhere.
Exporters are found by name as every OpenTelemetry distribution finds them (the
``opentelemetry_traces_exporter`` and ``opentelemetry_metrics_exporter`` entry points:
``console`` ships with the SDK, ``otlp`` with ``opentelemetry-exporter-otlp``), and they read
their own variables (``OTEL_EXPORTER_OTLP_ENDPOINT`` ...); ``OTEL_SERVICE_NAME`` and
``OTEL_RESOURCE_ATTRIBUTES`` name the resource (service ``agentsessions`` by default);
``OTEL_PROPAGATORS`` chooses how a caller's trace context is read (W3C by default).

Nothing of OpenTelemetry is imported unless the rule says on. On, without the ``otel``
extra installed, is a warning (the daemon runs without telemetry); an exporter name that no
installed package provides is refused before anything listens.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from importlib import metadata
from typing import Any

import agentsessions.telemetry as telemetry
from agentsessions.errors import InvalidArgumentError
from agentsessions.telemetry import Telemetry

TRACES = "OTEL_TRACES_EXPORTER"
METRICS = "OTEL_METRICS_EXPORTER"


def exporter_names(environ: Mapping[str, str], variable: str) -> list[str]:
    """The exporters ``variable`` names (``none`` and blanks dropped)."""
    names = [n.strip().lower() for n in environ.get(variable, "").split(",")]
    return [n for n in names if n and n != "none"]


def wanted(environ: Mapping[str, str] | None = None) -> bool:
    """True if the ``OTEL_*`` variables ask for telemetry (see the module docstring)."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return bool(exporter_names(env, TRACES) or exporter_names(env, METRICS))


def from_environment(
    environ: Mapping[str, str] | None = None, warn: Any = None
) -> Telemetry | None:
    """The OpenTelemetry :class:`Telemetry` the variables ask for, or None (off, or the extra
    missing: then ``warn(text)`` is told why). InvalidArgumentError names an exporter no
    installed package provides."""
    env = os.environ if environ is None else environ
    if not wanted(env):
        return None
    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        if warn is not None:
            warn(
                f"{TRACES}/{METRICS} ask for OpenTelemetry, which is not installed: "
                "no traces or metrics (pip install 'agentsessions[otel]')"
            )
        return None
    from agentsessions.server.otel import OtelTelemetry

    defaults = {} if env.get("OTEL_SERVICE_NAME") else {"service.name": "agentsessions"}
    resource = Resource.create(defaults)
    tracer_provider = TracerProvider(resource=resource)
    for exporter in _exporters(env, TRACES, "opentelemetry_traces_exporter"):
        tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
    readers = [
        PeriodicExportingMetricReader(exporter)
        for exporter in _exporters(env, METRICS, "opentelemetry_metrics_exporter")
    ]
    return OtelTelemetry(tracer_provider, MeterProvider(resource=resource, metric_readers=readers))


def _exporters(env: Mapping[str, str], variable: str, group: str) -> list[Any]:
    out = []
    for name in exporter_names(env, variable):
        found = metadata.entry_points(group=group, name=name)
        if not found:
            known = sorted(e.name for e in metadata.entry_points(group=group))
            raise InvalidArgumentError(
                f"{variable}={name}: no installed package provides that exporter "
                f"(installed: {', '.join(known) or 'none'})",
                hint="pip install opentelemetry-exporter-otlp for otlp, or use console",
            )
        out.append(next(iter(found)).load()())
    return out


def observe(log_format: str, warn: Callable[[str], None]) -> Callable[[], None]:
    """What ``serve`` sets up before it opens its engine: the log handler
    (:func:`.logs.configure`) and the telemetry the variables ask for, installed as the
    engine's; the function that uninstalls it and flushes what it holds."""
    from agentsessions.server import logs

    logs.configure(log_format)
    found = from_environment(warn=warn)
    telemetry.install(found)

    def shutdown() -> None:
        telemetry.install(None)
        if found is not None:
            found.shutdown()

    return shutdown
