"""agentsessions.wire: the ``agentsessions.v1`` protocol, shared by both ends of every call.

The server (:mod:`agentsessions.server`) and the client (:mod:`agentsessions.client`) are
siblings on this package, and the remote runtime dials harnesses through it; none of them
imports another. It stands on :mod:`agentsessions.v1`, the :mod:`agentsessions.errors` tree
and the ``Sessions`` vocabulary (:mod:`agentsessions.sessions.values`), with two exceptions
that are the protocol's own: Harness.Connect speaks the harness SPI
(:mod:`agentsessions.controller.spi` and the working state its ``Start`` carries), which a
harness speaks either way, and :mod:`.convert` rebuilds each received record with the
journal's record format (canonical JSON) to check it against its hash.

- :mod:`.gen`: the code generated from ``proto/agentsessions/v1`` (``proto/generate.py``);
- :mod:`.convert` (events, records, sessions) and :mod:`.frames` (turn frames, reports,
  tool-store entries): the API's values as messages and back;
- :mod:`.status`: our exception tree as gRPC statuses and back;
- :mod:`.bounds`: the bounds on each request and caller; :mod:`.wirecheck`: every request
  checked against its field ranges before a handler runs; :mod:`.intercept`: one way to run
  a check around every handler;
- :mod:`.breaking`: the additive-only gate on the descriptors;
- :mod:`.harnesswire`, :mod:`.harnessclient` (the host's end of Harness.Connect) and
  :mod:`.harnessnode` (a harness served over it).

docs/WIRE.md says what is the reference's and what is ours. Importing this package imports
nothing else.
"""
