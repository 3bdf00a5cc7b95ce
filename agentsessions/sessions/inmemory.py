"""An engine on an in-memory store: ``serve --store memory``, sessions that live as long as
the engine does (tests, demos, a scratch daemon).

The store is the journal's own in-memory backend, so the engine, its checks and its turns
are the same as on the file store; only where records live differs. The home still
resolves (its configuration file's model catalog applies), and the master key resolves as
for any store (``key_file``, else ``AGENTSESSIONS_KEY_FILE``, else
``AGENTSESSIONS_MASTER_KEY``), so encryption at rest is exercised in memory too.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from agentsessions.sessions.api import Sessions
from agentsessions.sessions.defaults import DEFAULT_RUNTIME


def open_in_memory(
    home: str | os.PathLike[str] | None = None,
    *,
    runtime: str = DEFAULT_RUNTIME,
    model: str | None = None,
    key_file: str | None = None,
    models: Mapping[str, str] | None = None,
) -> Sessions:
    """A ready engine on a fresh in-memory store; ``models`` over the config file's."""
    from agentsessions.journal.crypto.cipher import resolve_master
    from agentsessions.journal.stores.memory.store import MemoryStore
    from agentsessions.sessions.config import load_config
    from agentsessions.sessions.home import resolve_home
    from agentsessions.sessions.local import open_local

    memory = MemoryStore(master=resolve_master(key_file))
    catalog = {**load_config(resolve_home(home)).models, **(models or {})}
    return open_local(home, store=memory, runtime=runtime, model=model, models=catalog)
