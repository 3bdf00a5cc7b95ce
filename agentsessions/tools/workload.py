"""The workload: a session's tools, from a TOML file (``--tools FILE``).

One ``[tools.NAME]`` table per tool::

    [tools.log]
    mediation = "mediated"          # reported | mediated | approval
    executor = "append_line"        # python:module:function | a built-in name
    description = "Append a line to the log"
    parameters = { type = "object", properties = { line = { type = "string" } } }
    config = { path = "/tmp/log.txt" }

An optional ``[session]`` table names which components may use the session, and how
(``spec/seeds/host-sessions.txt``, "Tools get stores of their own")::

    [session]
    components = ["chat"]         # the harnesses that work in the conversation
    tool_components = ["notes"]   # the tools that get a store of their own

A tool named in ``tool_components`` gets its own store in the session (``ToolRequest.store``,
:mod:`.toolstore`), bound by the host to that session and tool: it cannot read the
conversation. A tool in neither list gets no session access (its ``store`` is None). A
harness not in ``components`` (when the list is given) is refused before any write of a turn
(:meth:`Workload.check_harness`). Without a ``[session]`` table every harness works in the
conversation and no tool gets a store, except that a built-in that needs one (``notes``) must
be named in ``tool_components``.

Validation is strict and happens before anything is written: a file that does not parse, a
key or table that is not one of these, a tier that does not exist, a tool name that is not a
plain name, an executor spec the registry refuses, a ``config`` its executor does not take
(an unknown key, a missing required one, a wrong type: :mod:`.configschema`), a component
named in both lists, a tool component the workload has no tool for, or a store-needing
built-in left out of ``tool_components`` is a WorkloadError (exit 2) with one line naming
the file, the table and the key. A ``reported`` tool (run by the harness itself) needs no
executor; ``mediated`` and ``approval`` tools do. A table whose executor is a built-in
(``append_line``, ``notes``) offers the built-in's own description and JSON Schema where it
gives no ``description`` or no ``parameters`` of its own, so a real model knows what
arguments to send. A generated ``[listed."NAME"]`` table (``description``, and
``parameters`` as JSON text) holds what tool NAME's server listed when a turn began
(:mod:`.listing`); it fills the fields the tool's own table leaves out, under them.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentsessions.controller.spi import BoundTool, ToolExecutor
from agentsessions.errors import UnknownToolError, WorkloadError
from agentsessions.v1 import model

from . import builtin_schema, create_executor
from .configschema import ConfigSchema

MEDIATIONS = {
    "reported": "MEDIATION_IN_HARNESS_REPORTED",
    "mediated": "MEDIATION_CONTROLLER_MEDIATED",
    "approval": "MEDIATION_REQUIRES_APPROVAL",
}
KEYS = ("mediation", "executor", "description", "parameters", "config")
SESSION_KEYS = ("components", "tool_components")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")


@dataclass(frozen=True)
class Tool:
    """One ``[tools.NAME]`` table, validated."""

    name: str
    mediation: str  # the v1 enum name (MEDIATION_...)
    executor: str = ""
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    config: Mapping[str, Any] = field(default_factory=dict)
    needs_store: bool = False  # its executor keeps its state in a tool store (notes)


@dataclass(frozen=True)
class Workload:
    """A session's tools, by name; ``source`` is the TOML text it was read from.

    ``components``: the harnesses that may work in the conversation (None: any, no
    ``[session] components`` given); ``tool_components``: the tools with a store of their own.
    """

    tools: Mapping[str, Tool]
    source: str = ""
    path: str = ""
    components: tuple[str, ...] | None = None
    tool_components: tuple[str, ...] = ()
    listed: tuple[str, ...] = ()  # the tools with a [listed.NAME] table (:mod:`.listing`)
    # executors by spec, made on first bind and kept: one mcp server per spec for the
    # life of whoever holds this workload (the engine's resolver), not one per call
    _executors: dict[str, ToolExecutor] = field(default_factory=dict, compare=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, compare=False, repr=False)

    def definitions(self) -> tuple[model.ToolDefinition, ...]:
        """What a harness offers the model: one ToolDefinition per tool, by name."""
        out: list[model.ToolDefinition] = []
        for name in sorted(self.tools):
            tool = self.tools[name]
            definition: model.ToolDefinition = {"name": name}
            if tool.description:
                definition["description"] = tool.description
            if tool.parameters:
                definition["input_schema"] = dict(tool.parameters)
            out.append(definition)
        return tuple(out)

    def bind(self, uid: str, name: str) -> BoundTool:
        """The tool ``name`` with its executor, or UnknownToolError; an executor with a
        ``prepare`` (a unix or mcp server) is checked now, before any intent is recorded,
        so a server that is down or answers garbage raises here and nothing is written."""
        tool = self.tools.get(name)
        if tool is None or not tool.executor:
            known = ", ".join(n for n in sorted(self.tools) if self.tools[n].executor) or "none"
            raise UnknownToolError(
                f"session {uid}: its workload has no host-run tool {name!r} (host-run: "
                f"{known}); nothing was recorded"
            )
        executor = self.executor(tool.executor)
        prepare = getattr(executor, "prepare", None)
        if callable(prepare):
            prepare(name, tool.config)
        return BoundTool(name, executor, dict(tool.config))

    def executor(self, spec: str) -> ToolExecutor:
        """The executor of ``spec``, made on first use and kept (one server per spec)."""
        with self._lock:
            executor = self._executors.get(spec)
            if executor is None:
                executor = self._executors[spec] = create_executor(spec)
            return executor

    def check_harness(self, uid: str, harness: str) -> None:
        """WorkloadError unless harness ``harness`` may work in the conversation of session
        ``uid`` (any may, when ``[session] components`` is not given)."""
        if self.components is None or harness in self.components:
            return
        named = ", ".join(self.components) or "none"
        raise WorkloadError(
            f"session {uid}: its workload does not let harness {harness!r} work in the "
            f"conversation ([session] components: {named}); nothing was written",
            hint=f"add {harness!r} to [session] components and give the session the workload again",
            path=self.path,
            table="session",
            key="components",
        )

    def close(self) -> None:
        """Close the executors bound so far that hold a resource (an mcp server process)."""
        with self._lock:
            executors = list(self._executors.values())
            self._executors.clear()
        for executor in executors:
            close = getattr(executor, "close", None)
            if callable(close):
                close()


def load_workload(path: str | Path) -> Workload:
    """Read and validate the workload file at ``path`` (see the module docstring)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkloadError(f"workload {path}: cannot read it: {exc}", path=str(path)) from None
    return parse_workload(text, str(path))


def parse_workload(text: str, path: str = "(workload)") -> Workload:
    """Validate workload TOML ``text``; ``path`` names it in errors."""
    import tomllib  # only a turn with a workload parses one: an echo turn never loads it

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise WorkloadError(f"workload {path}: not valid TOML: {exc}", path=path) from None
    extra = sorted(set(data) - {"tools", "session", "listed"})
    if extra:
        raise _bad(
            path, "", extra[0], "unknown table or key (a workload has [tools.NAME] and [session])"
        )
    tables = data.get("tools", {})
    if not isinstance(tables, dict):
        raise _bad(path, "", "tools", "must be a table of [tools.NAME] tables")
    listed = _listed(path, data.get("listed", {}), tables)
    tools = {name: _tool(path, name, body, listed.get(name)) for name, body in tables.items()}
    components, tool_components = _session(path, data.get("session", {}), tools)
    return Workload(tools, text, path, components, tool_components, tuple(sorted(listed)))


def _listed(
    path: str, body: Any, tables: Mapping[str, Any]
) -> dict[str, tuple[str, dict[str, Any]]]:
    """The generated ``[listed.NAME]`` tables (:mod:`.listing`): what a tool server listed
    for a tool, by name: ``(description, parameters)``."""
    if not isinstance(body, dict):
        raise _bad(path, "", "listed", "must be a table of [listed.NAME] tables")
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for name, entry in body.items():
        table = f"listed.{name}"
        if name not in tables:
            raise _bad(path, table, "", "names no [tools.NAME]")
        if not isinstance(entry, dict):
            raise _bad(path, table, "", "must be a table")
        extra = sorted(set(entry) - {"description", "parameters"})
        if extra:
            raise _bad(path, table, extra[0], "unknown key (known: description, parameters)")
        description, text = entry.get("description", ""), entry.get("parameters", "{}")
        if not isinstance(description, str):
            raise _bad(path, table, "description", "must be a string")
        try:
            parameters = json.loads(text) if isinstance(text, str) else None
        except ValueError:
            parameters = None
        if not isinstance(parameters, dict):
            raise _bad(path, table, "parameters", "must be a JSON object, as a string")
        out[name] = (description, parameters)
    return out


def _session(
    path: str, body: Any, tools: Mapping[str, Tool]
) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
    """The ``[session]`` table's two lists, checked against each other and the tools."""
    if not isinstance(body, dict):
        raise _bad(path, "", "session", "must be a table")
    extra = sorted(set(body) - set(SESSION_KEYS))
    if extra:
        raise _bad(path, "session", extra[0], f"unknown key (known: {', '.join(SESSION_KEYS)})")
    lists = {key: _names(path, key, body[key]) for key in SESSION_KEYS if key in body}
    components, stores = lists.get("components"), lists.get("tool_components", ())
    both = sorted(set(components or ()) & set(stores))
    if both:
        raise _bad(
            path, "session", "", f"{both[0]!r} is named in both components and tool_components "
            "(a component works in the conversation or keeps a store of its own, not both)",
        )  # fmt: skip
    for name in stores:
        if name not in tools:
            raise _bad(path, "session", "tool_components", f"{name!r} is not a [tools.NAME]")
    for name, tool in sorted(tools.items()):
        if tool.needs_store and name not in stores:
            raise WorkloadError(
                f"workload {path}: [tools.{name}] executor {tool.executor!r} keeps its state "
                "in a tool store of its own, and [session] tool_components does not name it",
                hint=f'add: [session] tool_components = ["{name}"]',
                path=path, table=f"tools.{name}", key="executor",
            )  # fmt: skip
    return components, stores


def _names(path: str, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _bad(path, "session", key, "must be a list of names")
    for name in value:
        if not _NAME.fullmatch(name):
            raise _bad(path, "session", key, f"{name!r}: a name is letters, digits, '_', '.', '-'")
    return tuple(dict.fromkeys(value))


def _tool(
    path: str, name: str, body: Any, listed: tuple[str, dict[str, Any]] | None = None
) -> Tool:
    table = f"tools.{name}"
    if not _NAME.fullmatch(name):
        raise _bad(path, table, "", "a tool name is letters, digits, '_', '.', '-' (1-64)")
    if not isinstance(body, dict):
        raise _bad(path, table, "", "must be a table")
    extra = sorted(set(body) - set(KEYS))
    if extra:
        raise _bad(path, table, extra[0], f"unknown key (known: {', '.join(KEYS)})")
    tier = body.get("mediation")
    if tier not in MEDIATIONS:
        raise _bad(
            path, table, "mediation", f"must be one of {', '.join(MEDIATIONS)}; got {tier!r}"
        )
    executor = body.get("executor", "")
    if not isinstance(executor, str):
        raise _bad(path, table, "executor", "must be a string")
    if tier != "reported" and not executor:
        raise _bad(path, table, "executor", f"a {tier} tool needs an executor")
    needs_store = False
    config = body.get("config", {})
    if executor:
        try:
            made = create_executor(executor)
        except UnknownToolError as exc:
            raise _bad(path, table, "executor", str(exc)) from None
        needs_store = getattr(made, "needs_store", False) is True
        schema = getattr(made, "config_schema", None)  # a plugin may declare none: unchecked
        if isinstance(schema, ConfigSchema) and isinstance(config, dict):
            schema.check(path, name, executor, config)
    description = body.get("description", "")
    if not isinstance(description, str):
        raise _bad(path, table, "description", "must be a string")
    for key in ("parameters", "config"):
        if not isinstance(body.get(key, {}), dict):
            raise _bad(path, table, key, "must be a table")
    parameters = dict(body.get("parameters", {}))
    own_description, own_parameters = builtin_schema(executor)  # the workload's fields win
    description, parameters = description or own_description, parameters or own_parameters
    if listed is not None:  # what its server listed, under the table's own fields
        description, parameters = description or listed[0], parameters or listed[1]
    return Tool(
        name,
        MEDIATIONS[tier],
        executor,
        description,
        parameters,
        dict(body.get("config", {})),
        needs_store,
    )


def _bad(path: str, table: str, key: str, why: str) -> WorkloadError:
    where = f"[{table}] " if table else ""
    where += f"{key}: " if key else ""
    return WorkloadError(f"workload {path}: {where}{why}", path=path, table=table, key=key)
