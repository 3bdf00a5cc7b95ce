"""What an engine's checks of a turn found, handed to the turn: :class:`Checked`.

A light module (no harness, model or journal code is imported with it), so that the engine
can name it without loading the controller before its first turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentsessions.journal.stores.store import SessionInfo
from agentsessions.valueclass import value

if TYPE_CHECKING:
    from .spi import Harness, HarnessDescriptor


@value(frozen=True)
class Checked:
    """What an engine's checks of a turn found while holding the session's lock, before
    anything was written: the session's state and its harness, made, described and placed
    (:meth:`~agentsessions.controller.controller.Controller.placed`). The turn takes them
    as they are: holding the lock, nothing can have changed them in between."""

    info: SessionInfo
    harness: tuple[Harness, HarnessDescriptor]
