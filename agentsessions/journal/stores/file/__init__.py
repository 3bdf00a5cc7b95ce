"""The file store: one directory of append-only, fsync'd segment files per session.

``store`` (the :class:`~.store.FileStore`), ``writer`` (the single writer holding a
session's LOCK), ``opening`` (opening a journal reading only its tail), ``rows`` (what
``get`` and ``list`` say of a session), ``sessiondir`` (the names in a session directory),
``statefile`` (the working state's STATE frame), ``component`` (tool stores inside a
session directory), ``host`` (receipts and workloads beside a journal), ``catalog`` (the
SQLite listing index), ``watch`` (waking a follower) and ``crypt`` (data keys in ``KEY``
files, shredding, rewrap).

Built on the shared core in :mod:`agentsessions.journal.stores`; imports no other backend.
"""
