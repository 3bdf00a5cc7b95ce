"""Which project a session belongs to, asked of the store's index before any session read.

A front end that must answer another project's uid exactly as an unknown one (a token's
scope, ``server/scoped.py``) asks :func:`project_lookup` first: over a local engine whose
store keeps an index (:class:`~agentsessions.journal.stores.capabilities.ProjectIndex`: the file,
memory and JetStream stores), both kinds of uid take the same one index lookup and end at
the same check, so neither the answer nor its timing tells them apart. Any other engine (a
remote one) is asked through ``get``, which reads the session: correct, without that
timing promise.
"""

from __future__ import annotations

from collections.abc import Callable

from agentsessions.errors import NotFoundError
from agentsessions.journal.stores.capabilities import PROJECT_INDEX
from agentsessions.v1.ids import check_uid

from .api import Sessions

ProjectLookup = Callable[[str], "str | None"]
"""``lookup(uid)``: the session's project, None for a uid with no session; a malformed uid
is InvalidArgumentError, as every engine method answers it."""


def project_lookup(engine: Sessions) -> ProjectLookup:
    """How to ask ``engine`` for a uid's project (see the module docstring)."""
    from .local import LocalSessions

    index = PROJECT_INDEX.of(engine.store) if isinstance(engine, LocalSessions) else None
    if index is not None:

        def indexed(uid: str) -> str | None:
            return index.project_of(check_uid(uid))

        return indexed

    def read(uid: str) -> str | None:
        try:
            return engine.get(uid).project
        except NotFoundError:
            return None

    return read
