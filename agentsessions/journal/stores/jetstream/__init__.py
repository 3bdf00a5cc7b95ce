"""The NATS JetStream store: sessions any host can read, follow and take over.

``store`` (the :class:`~.store.JetStreamStore`), ``writer`` (one journal subject's single
writer), ``wire`` (subject names and message bodies), ``client``, ``conn`` and ``loop`` (the
JetStream calls, the connection, the event loop), ``checkpoint``, ``identity``, ``follow``,
``listing``, ``live``, ``extras``, ``component`` (tool stores), ``crypt`` and ``keys``.

Built on the shared core in :mod:`agentsessions.journal.stores`; imports no other backend.
"""
