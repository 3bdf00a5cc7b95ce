"""agentsessions: durable AI-agent sessions on an append-only, hash-chained event journal.

Layers import one way only:
``journal`` <- ``controller`` <- ``runtimes``/``models`` <- ``cli``/``server``.
"""

__version__ = "0.1.0"
