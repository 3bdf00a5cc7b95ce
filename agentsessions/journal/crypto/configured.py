"""Which master key a process uses: ``--key-file``, else ``AGENTSESSIONS_KEY_FILE``, else
``AGENTSESSIONS_MASTER_KEY``, else none (docs/FORMAT.md 15).

Every engine asks this when it opens a store, a keyless one included, so it imports
neither ``cryptography`` (only once a key is configured: :mod:`.keys`) nor the record
cipher (:mod:`.cipher`, which names it too): a ``list`` reads no record and seals none.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from agentsessions.errors import MasterKeyError

if TYPE_CHECKING:
    from agentsessions.journal.crypto.keys import MasterKey

KEY_FILE_ENV = "AGENTSESSIONS_KEY_FILE"
MASTER_KEY_ENV = "AGENTSESSIONS_MASTER_KEY"


def resolve_master(
    key_file: str | None = None, environ: Mapping[str, str] | None = None
) -> MasterKey | None:
    """The master key from ``key_file``, else ``AGENTSESSIONS_KEY_FILE``, else
    ``AGENTSESSIONS_MASTER_KEY``; None when none is configured. ``cryptography`` is imported
    only when one is: a keyless process never loads it."""
    env = os.environ if environ is None else environ
    if not (key_file or env.get(KEY_FILE_ENV) or env.get(MASTER_KEY_ENV)):
        return None
    try:
        from agentsessions.journal.crypto.keys import resolve_master_key
    except ImportError:
        raise MasterKeyError(
            "a master key is configured but encryption needs the 'cryptography' package",
            hint="pip install 'agentsessions[crypto]'",
        ) from None
    return resolve_master_key(key_file or None, env)
