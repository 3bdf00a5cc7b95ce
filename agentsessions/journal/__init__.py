"""Storage only, in four rooms that import one way: ``format`` (canonical JSON and the
chain rule, segments, durability, fence and lock files) <- ``crypto`` (data keys, sealed
records) <- ``stores`` (the store contract and what every backend shares, then one
subpackage per backend: ``file``, ``jetstream``, ``memory``) <- ``tools`` (verify, export
and import).

On the layer map (:mod:`agentsessions`) it stands on ``v1`` and ``errors`` and imports nothing
above it (no controller, CLI, server, harness or runtime); the vocabulary it stores is
:mod:`agentsessions.v1`.
"""
