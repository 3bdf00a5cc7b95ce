"""The ``Sessions`` API: the one way in to sessions for every front end.

:mod:`.api` holds the Protocol, :mod:`.values` the typed values it takes, returns and
streams, :mod:`.local` the engine over a store in this process, :mod:`.wiring` the harness
registry and how a controller is assembled, :mod:`.home` where sessions live. Importing
this package is cheap: the engine, the controller and the store load when first used. On
the layer map (:mod:`agentsessions`) it stands under the front ends and over everything
else.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: importing typing costs a bare --help ~3 ms

if TYPE_CHECKING:
    from typing import Any

    from .api import Sessions
    from .local import LocalSessions, open_local
    from .values import (
        DeltaFrame,
        Frame,
        Memory,
        RecordFrame,
        ReplayReport,
        Session,
        SessionFrame,
        SessionPage,
        Turn,
    )

__all__ = [
    "DeltaFrame",
    "Frame",
    "LocalSessions",
    "Memory",
    "RecordFrame",
    "ReplayReport",
    "Session",
    "SessionFrame",
    "SessionPage",
    "Sessions",
    "Turn",
    "open_local",
]

_LOCAL = ("LocalSessions", "open_local")


def __getattr__(name: str) -> Any:
    """The public names, imported on first use (so ``--help`` never pays for them)."""
    if name in _LOCAL:
        from . import local

        return getattr(local, name)
    if name == "Sessions":
        from . import api

        return api.Sessions
    if name in __all__:
        from . import values

        return getattr(values, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
