"""The stores, one subpackage per backend over a shared core.

The core, here: the Store contract (``store``), the named capabilities a backend declares
beyond it and the one lookup the engine asks them with (``capabilities``), what a writer
knows of its journal's end (``tail``), projections, forking, tool receipts and
``session.json`` (``metafile``), which every backend uses. The backends: :mod:`.file`
(segment files on a local disk), :mod:`.jetstream` (NATS JetStream) and :mod:`.memory`
(nothing durable). A backend imports the core and never another backend; the core imports
no backend.

Built on :mod:`agentsessions.journal.format` and :mod:`agentsessions.journal.crypto`; never
imports :mod:`agentsessions.journal.tools`.
"""
