"""The span of a turn: :func:`turn_span` wraps :meth:`Controller.exec` and
:meth:`Controller.resume` whole, so the turn's first commit (START and its INPUTs), its model
and tool calls and its END all happen inside it (agentsessions/telemetry.py).

The session and execution are known only once the turn has begun (``exec`` may create the
session), so they are set on the span when the turn returns; a turn that raises tells the
telemetry the exception's class (the telemetry decides what parked or failed means).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, Protocol, TypeVar

import agentsessions.telemetry as telemetry

P = ParamSpec("P")


class _Turn(Protocol):
    uid: str
    execution_id: str
    canceled: bool


R = TypeVar("R", bound="_Turn | None")


def turn_span(resumed: bool) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Run the decorated turn method inside the installed telemetry's turn span."""

    def decorate(method: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(method)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            with telemetry.current().turn("", "", resumed=resumed) as span:
                result = method(*args, **kwargs)
                if result is None:  # resume found no open turn: nothing ran
                    span.set("agentsessions.turn.outcome", "none")
                    return result
                outcome = "canceled" if result.canceled else "completed"
                span.set("agentsessions.session", result.uid)
                span.set("agentsessions.execution_id", result.execution_id)
                span.set("agentsessions.turn.outcome", outcome)
                return result

        return run

    return decorate
