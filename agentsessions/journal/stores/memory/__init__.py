"""The in-memory store: the contract with nothing durable, for tests and embedding.

``store`` (the :class:`~.store.MemoryStore`) and ``crypt`` (encryption at rest in memory).

Built on the shared core in :mod:`agentsessions.journal.stores`; imports no other backend.
"""
