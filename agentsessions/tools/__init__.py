"""Tool executors by spec: how the host finds what runs a session's mediated tool calls.

On the layer map (:mod:`agentsessions`) beside ``models`` and ``runtimes``: over the
controller (whose ToolExecutor seam they implement), under ``sessions``.

Spec grammar (the ``executor`` key of a workload's ``[tools.NAME]`` table)::

    spec = "python:" module ":" function | "unix://" abspath | "mcp:" command args | builtin
    builtin = "append_line" | "notes" | a name given to :func:`register_executor`

- ``python:module:function``: imports ``module`` and calls ``function(request)``, which
  returns a :class:`~agentsessions.controller.spi.ToolOutcome`, a mapping (the output object)
  or a string (a text part for the model); see :mod:`.python`. A function with a true
  ``idempotent`` attribute dedups on (session uid, idempotency key) itself.
- ``append_line``: appends ``args["line"]`` and a newline to the file named by
  ``config["path"]``, durably (:mod:`.appendline`): an effect anyone can count.
- ``notes``: adds, lists and clears notes in the tool's own store (:mod:`.notes`); the
  workload must name the tool in ``[session] tool_components``.

- ``unix:///path.sock``: each call goes to an operator-run process listening on that
  socket, one JSON line each way (:mod:`.unixsock`; a reference server: :mod:`.unixserver`).
- ``mcp:COMMAND ARGS``: the tool of that name (or ``config["tool"]``) of the stdio MCP
  server ``COMMAND ARGS`` starts (:mod:`.mcpexec`; needs the ``mcp`` extra).

A built-in ships the description and JSON Schema of its arguments
(:func:`builtin_schema`), offered to the model when the workload's table gives neither.

Any other spec is refused with UnknownToolError naming it and the known forms. Creating an
executor checks the spec and imports a ``python:`` module (or checks the ``mcp`` extra is
installed), and touches nothing else: no socket is connected, no server started. An
executor may have ``prepare(tool, config)``, which the workload's bind calls before a
call's intent is recorded, so that a server that is down is refused with nothing written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from agentsessions.controller.spi import BoundTool, ToolExecutor, ToolResolver
from agentsessions.errors import UnknownToolError

if TYPE_CHECKING:  # at run time each executor's module loads when first named (__getattr__)
    from .appendline import AppendLine
    from .notes import Notes
    from .python import PythonExecutor
    from .unixsock import UnixExecutor

__all__ = [
    "AppendLine",
    "Notes",
    "PythonExecutor",
    "UnixExecutor",
    "builtin_schema",
    "create_executor",
    "known_executors",
    "register_executor",
    "static_resolver",
]

_MODULES = {
    "AppendLine": "appendline",
    "Notes": "notes",
    "PythonExecutor": "python",
    "UnixExecutor": "unixsock",
}
"""The executors' classes by the module each lives in: a session without tools (most turns)
imports none of them, nor the socket module the unix one needs."""


def __getattr__(name: str) -> Any:
    """An executor class, its module imported on first use (see ``_MODULES``)."""
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def _append_line() -> ToolExecutor:
    from .appendline import AppendLine

    return AppendLine()


def _notes() -> ToolExecutor:
    from .notes import Notes

    return Notes()


_BUILTINS: dict[str, Callable[[], ToolExecutor]] = {"append_line": _append_line, "notes": _notes}
_SCHEMA_OF = {"append_line": "AppendLine", "notes": "Notes"}
"""The built-ins that ship a description and argument schema: the class that holds them."""
SCHEMES = ("python:", "unix://", "mcp:")


def register_executor(name: str, factory: Callable[[], ToolExecutor]) -> None:
    """Make the built-in name ``name`` create executors with ``factory``."""
    if not name or ":" in name or name != name.strip():
        raise UnknownToolError(f"invalid executor name {name!r}: a plain name without ':'")
    _BUILTINS[name] = factory


def known_executors() -> list[str]:
    """The accepted forms, for errors and help."""
    return [*sorted(_BUILTINS), "python:module:function", "unix:///path.sock", "mcp:COMMAND ARGS"]


def create_executor(spec: str) -> ToolExecutor:
    """The executor ``spec`` names (see the module docstring), or UnknownToolError."""
    spec = spec.strip()
    if spec.startswith("python:"):
        from .python import PythonExecutor

        return PythonExecutor.from_spec(spec)
    if spec.startswith("unix:"):
        from .unixsock import UnixExecutor

        return UnixExecutor.from_spec(spec)
    if spec.startswith("mcp:"):
        from .mcpexec import McpExecutor  # the optional extra stays unimported until used

        return McpExecutor.from_spec(spec)
    factory = _BUILTINS.get(spec)
    if factory is None:
        raise UnknownToolError(
            f"unknown tool executor {spec!r} (known: {', '.join(known_executors())})"
        )
    return factory()


def builtin_schema(spec: str) -> tuple[str, dict[str, Any]]:
    """The description and JSON Schema of the built-in executor ``spec`` offers a model
    (``("", {})`` for any other spec: a ``python:``/``unix://`` tool's workload says them,
    and an ``mcp:`` server lists its own)."""
    holder = _SCHEMA_OF.get(spec.strip())
    if holder is None:
        return "", {}
    cls = __getattr__(holder)
    return cls.DESCRIPTION, dict(cls.PARAMETERS)


def static_resolver(tools: Mapping[str, BoundTool]) -> ToolResolver:
    """A resolver serving the same ``tools`` to every session (tests, embedding code)."""
    table = dict(tools)

    def resolve(uid: str, name: str) -> BoundTool:
        bound = table.get(name)
        if bound is None:
            known = ", ".join(sorted(table)) or "none"
            raise UnknownToolError(
                f"session {uid} has no tool {name!r} (its tools: {known}); nothing was recorded"
            )
        return bound

    return resolve
