"""The ``python:module:function`` executor: a Python function runs each call.

``function(request)`` gets the :class:`~agentsessions.controller.spi.ToolRequest` and returns
a ToolOutcome, a mapping (the output object) or a string (one text part for the model).
Whatever it raises, the host records as an is_error result (EXECUTOR_ERROR). A function
that dedups on (session uid, idempotency key) itself sets ``function.idempotent = True``; the
executor then says so, and the host may re-drive a call whose outcome a crash left unknown.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from agentsessions.controller.spi import ToolOutcome, ToolRequest
from agentsessions.errors import UnknownToolError

from .configschema import OPEN, ConfigSchema


class PythonExecutor:
    """Calls one Python function per tool call."""

    def __init__(self, function: Callable[[ToolRequest], Any], name: str = "") -> None:
        self.function = function
        self.name = name or getattr(function, "__qualname__", "function")
        self.idempotent = getattr(function, "idempotent", False) is True
        # the function's config is its own: checked only if it declares a schema
        declared = getattr(function, "config_schema", None)
        self.config_schema = declared if isinstance(declared, ConfigSchema) else OPEN

    @classmethod
    def from_spec(cls, spec: str) -> PythonExecutor:
        """``python:module:function`` imported now (an import error is refused here)."""
        _, _, rest = spec.partition(":")
        module_name, _, function_name = rest.rpartition(":")
        if not module_name or not function_name:
            raise UnknownToolError(
                f"tool executor {spec!r}: expected python:module:function",
                hint="for example python:mytools:search",
            )
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # any import failure: the spec is unusable
            raise UnknownToolError(
                f"tool executor {spec!r}: cannot import {module_name!r}: "
                f"{type(exc).__name__}: {exc}"
            ) from None
        function = getattr(module, function_name, None)
        if not callable(function):
            raise UnknownToolError(
                f"tool executor {spec!r}: module {module_name!r} has no function {function_name!r}"
            )
        return cls(function, f"{module_name}:{function_name}")

    def call(self, request: ToolRequest) -> ToolOutcome:
        """Run the function and turn what it returned into a ToolOutcome."""
        returned = self.function(request)
        if isinstance(returned, ToolOutcome):
            return returned
        if isinstance(returned, str):
            return ToolOutcome(content=({"text": {"text": returned}},))
        if isinstance(returned, Mapping):
            return ToolOutcome(output=dict(returned))
        raise TypeError(
            f"tool function {self.name} returned {type(returned).__name__}; expected a "
            "ToolOutcome, a mapping or a string"
        )
