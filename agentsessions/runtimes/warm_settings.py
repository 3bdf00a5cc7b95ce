"""What the warm runtime promises and how long its hosts idle, known without loading it.

The default ``auto`` runtime answers ``capabilities()`` with the warm runtime's and checks
its idle timeout when it is made, on every turn, while most turns (a STATELESS_REPLAY
harness) never start a host. Both answers live here, beside nothing else, so that such a
turn does not import the warm runtime (sockets, signals, the host protocol: ~0.2x of a
bare interpreter's start) only to ask them; :mod:`.warm` reads the same values.
"""

from __future__ import annotations

import _socket  # the C module `socket` re-exports: the same AF_UNIX, without its enums
import math
import os

from agentsessions.controller.spi import RuntimeCapabilities
from agentsessions.errors import InvalidArgumentError

IDLE_ENV = "AGENTSESSIONS_WARM_IDLE_SECONDS"
DEFAULT_IDLE_SECONDS = 3600.0


def warm_capabilities() -> RuntimeCapabilities:
    """Warm memory snapshots and copy-on-write forks, where ``fork`` exists."""
    forks = hasattr(os, "fork") and hasattr(_socket, "AF_UNIX")
    return RuntimeCapabilities(
        memory_snapshot=forks,
        cow_fork=forks,
        snapshot_survives_reboot=False,
        snapshot_survives_host_process=forks,
    )


def idle_seconds(value: float | None) -> float:
    """``value``, else ``AGENTSESSIONS_WARM_IDLE_SECONDS``, else one hour: positive seconds
    (InvalidArgumentError otherwise)."""
    if value is None:
        raw = os.environ.get(IDLE_ENV, "")
        if not raw:
            return DEFAULT_IDLE_SECONDS
        try:
            value = float(raw)
        except ValueError:
            raise InvalidArgumentError(f"{IDLE_ENV}={raw!r} is not a number of seconds") from None
    if not (value > 0 and math.isfinite(value)):
        raise InvalidArgumentError(f"the warm idle timeout must be positive seconds, not {value}")
    return value
