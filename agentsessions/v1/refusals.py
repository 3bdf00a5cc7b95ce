"""A model call the model refused as over its context window, as the journal records it.

(Vocabulary: the controller, its executions reader and the CLI read it.)

The call's MODEL_CALL stays (the call was made); instead of an OUTPUT it is followed by an
ERROR of the same execution whose code is :data:`CODE` (gRPC RESOURCE_EXHAUSTED: the
context window is the resource) and whose description begins with :data:`PREFIX`. That
ERROR is not the turn failing: it is an effect the harness observed (it raised
ContextOverflowError to the harness, which may compact and retry), so replay and resume
serve it in order and raise the same error again, with no model call. An ERROR that fails a
turn is written by the controller with code INTERNAL and is audit only, as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .construct import error_event
from .model import Event

CODE = 8
"""``google.rpc.Code.RESOURCE_EXHAUSTED``."""
PREFIX = "context overflow: "
MAX_DESCRIPTION = 4000


def refusal_event(description: str, *, execution_id: str) -> Event:
    """The ERROR recording that the model refused the call before it (see the docstring)."""
    text = (PREFIX + description)[:MAX_DESCRIPTION]
    return error_event(CODE, text, execution_id=execution_id)


def is_refusal(event: Mapping[str, Any]) -> bool:
    """Whether ``event`` is such a refusal (an effect), not a turn's ERROR (audit)."""
    if event.get("kind") != "EVENT_ERROR":
        return False
    body = event.get("error") or {}
    try:
        code = int(body.get("code", 0) or 0)
    except (TypeError, ValueError):
        return False
    return code == CODE and str(body.get("description", "")).startswith(PREFIX)


def description(event: Mapping[str, Any]) -> str:
    """What the refusal said (the model's message), without :data:`PREFIX`."""
    return str((event.get("error") or {}).get("description", "")).removeprefix(PREFIX)
