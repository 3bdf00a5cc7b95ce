"""Storage only, in three rooms that import one way: ``format`` (canonical JSON and the
chain rule, segments, durability, fence and lock files) <- ``stores`` (the store contract,
the file and memory stores, catalog, projections, forking) <- ``tools`` (verify, export
and import).

Imports nothing above it (no controller, CLI, server, harness or runtime); the vocabulary it
stores is :mod:`agentsessions.v1`.
"""
