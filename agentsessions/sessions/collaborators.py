"""The local engine's collaborators, each made on its first use: :class:`Collaborators`.

A ``list``, a ``get`` or a ``read`` needs none of them, and importing their modules (turns,
claims, approvals, resolutions, master keys) is a measurable part of a command's start, so
:class:`~.local.LocalSessions` makes each only when something asks for it: once per
engine, whichever thread asks first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar, cast

from .core import EngineCore

if TYPE_CHECKING:
    from .api import Sessions
    from .approvals import Approvals
    from .claims import SessionClaims
    from .keys import MasterKeys
    from .resolving import Resolver
    from .turning import TurnRunner

_Part = TypeVar("_Part")


class Collaborators:
    """A base of :class:`~.local.LocalSessions`: its collaborators as properties over
    ``core``, made on first use (:meth:`_start_collaborators` in its ``__init__``)."""

    core: EngineCore
    _turns: TurnRunner | None = None  # :attr:`turns`, once made

    def _start_collaborators(self) -> None:
        self._parts: dict[str, object] = {}
        self._parts_lock = threading.RLock()  # turns asks for claims while it is made

    def _part(self, name: str, make: Callable[[], _Part]) -> _Part:
        """The collaborator ``name``, made by ``make`` on first use."""
        with self._parts_lock:
            part = self._parts.get(name)
            if part is None:
                part = self._parts[name] = make()
        return cast("_Part", part)

    @property
    def claims(self) -> SessionClaims:
        """Creation and sessions by key (:class:`.SessionClaims`)."""
        from .claims import SessionClaims

        return self._part("claims", lambda: SessionClaims(self.core))

    @property
    def turns(self) -> TurnRunner:
        """Turns (:class:`.TurnRunner`)."""
        runner = self._turns
        if runner is None:  # kept in a field: every turn asks, and _part takes a lock
            from .turning import TurnRunner

            runner = self._turns = self._part("turns", lambda: TurnRunner(self.core, self.claims))
        return runner

    @property
    def approvals(self) -> Approvals:
        """Approval decisions (:class:`.Approvals`)."""
        from .approvals import Approvals

        return self._part("approvals", lambda: Approvals(self.core))

    @property
    def resolver(self) -> Resolver:
        """Resolutions of unresolved calls (:class:`.Resolver`), over this engine."""
        from .resolving import Resolver

        return self._part("resolver", lambda: Resolver(self.core, cast("Sessions", self)))

    @property
    def master_keys(self) -> MasterKeys:
        """Master-key rotation (:class:`.MasterKeys`)."""
        from .keys import MasterKeys

        return self._part("master_keys", lambda: MasterKeys(self.core))
