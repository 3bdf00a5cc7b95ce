"""The store-free request checks of :mod:`agentsessions.sessions.checks`."""

from __future__ import annotations

import math
import threading

import pytest

from agentsessions.errors import InvalidArgumentError
from agentsessions.sessions import checks
from agentsessions.v1.turn import TurnRequest


@pytest.mark.parametrize("wait", [math.inf, -math.inf, math.nan, 1e300, -0.5])
def test_a_wait_no_lock_can_take_is_refused(wait: float) -> None:
    with pytest.raises(InvalidArgumentError, match="wait must be a finite number"):
        checks.check_wait(wait)
    with pytest.raises(InvalidArgumentError, match="wait must be a finite number"):
        checks.check_request(TurnRequest.of(None, ["hi"], wait=wait))


@pytest.mark.parametrize("wait", [0.0, 0.25, 30.0, checks.MAX_WAIT_SECONDS])
def test_a_wait_a_lock_can_take_passes(wait: float) -> None:
    assert checks.check_wait(wait) == wait
    lock = threading.Lock()  # the bound is one the platform's timed lock accepts
    assert lock.acquire(timeout=wait or -1)
