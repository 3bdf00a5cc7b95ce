"""Python tool functions for the executor contract suite and the ``python:`` tests."""

from __future__ import annotations

from typing import Any

from agentsessions.controller.spi import ToolOutcome, ToolRequest
from agentsessions.tools import AppendLine


def append(request: ToolRequest) -> Any:
    """append_line's effect, returned as a mapping (the ``python:`` mapping form)."""
    outcome = AppendLine().call(request)
    return {"error": outcome.error} if outcome.error else dict(outcome.output or {})


def greet(request: ToolRequest) -> str:
    """A string result: one text part for the model."""
    return f"hello {request.args.get('name', '')}"


def outcome(request: ToolRequest) -> ToolOutcome:
    """A ToolOutcome returned as is."""
    return ToolOutcome(output={"key": request.idempotency_key})


def bad(request: ToolRequest) -> int:
    """An unusable return type: the executor raises, the host records an error result."""
    return 42
