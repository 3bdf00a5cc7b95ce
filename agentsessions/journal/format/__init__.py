"""The journal's byte format: canonical JSON and the chain rule, records, segment framing,
the segment log, durability, fence and lock files.

Imports only ``agentsessions.errors`` and the ``agentsessions.v1`` vocabulary; the stores and
the tools build on it, never the other way round.
"""
