"""The stores: the Store contract, the file and memory stores, the catalog, projections,
forking and the TAIL hint.

Built on :mod:`agentsessions.journal.format`; never imports :mod:`agentsessions.journal.tools`.
"""
