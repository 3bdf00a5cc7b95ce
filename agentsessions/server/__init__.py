"""agentsessions.server: the ``Sessions`` service over one engine, as ``serve`` runs it.

It stands on :mod:`agentsessions.wire` (the generated code, conversions, status mapping and
bounds, shared with the client) and reaches storage and turns only through the ``Sessions``
Protocol (:mod:`agentsessions.sessions`): never the journal or the controller.
:mod:`.service` is the service, :mod:`.scoped` the engine as one caller may use it,
:mod:`.auth`, :mod:`agentsessions.sessions.tokens` and :mod:`.tls` who may call, :mod:`.admission`
whether a call may start, :mod:`.registry` the HarnessRegistry service, :mod:`.app` the server as
built and run. An operator's view (docs/OPERATIONS.md): :mod:`.observe` (request ids, the per-call
log line, the RPC span), :mod:`.logs` (``--log-format``), :mod:`.telemetryenv` (the OTEL_* rule)
and :mod:`.otel`, the one module that imports OpenTelemetry. Importing this package imports
nothing else.
With :mod:`agentsessions.client`, the only packages that import grpc and protobuf (through
:mod:`agentsessions.wire`); a front end on the top line of the layer map (:mod:`agentsessions`).
"""
