"""agentsessions.server: the ``Sessions`` API served over gRPC, and the wire it speaks.

:mod:`.gen` holds the code generated from ``proto/agentsessions/v1`` (``proto/generate.py``),
:mod:`.convert` the conversions between engine values and its messages, :mod:`.status` our
exception tree as gRPC statuses and back, :mod:`.service` the ``Sessions`` service over one
engine, :mod:`.breaking` the additive-only gate on the descriptors. docs/WIRE.md says what
is the reference's and what is ours. An operator's view (docs/OPERATIONS.md): :mod:`.observe`
(request ids, the per-call log line, the RPC span), :mod:`.logs` (``--log-format``),
:mod:`.telemetryenv` (the OTEL_* rule) and :mod:`.otel`, the one module that imports
OpenTelemetry. Importing this package imports nothing else. With
:mod:`agentsessions.client`, the only packages that import grpc and protobuf; a front end on
the top line of the layer map (:mod:`agentsessions`).
"""
