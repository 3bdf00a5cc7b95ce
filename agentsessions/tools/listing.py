"""What a tool server lists for its tools, written into the workload a turn records.

An ``mcp:`` server lists each tool's description and input schema (``tools/list``). A turn
whose workload leaves a server tool without a ``description`` or ``parameters`` offers the
model what the server lists instead; the workload's own fields win. The offer is part of
each model request (and of its input hash), and replay re-derives the requests from the
recorded workload without starting any server, so the listing must be on the record: when
a live turn begins, :func:`with_listing` returns the workload's text with a generated
section appended, one table per such tool::

    # agentsessions: listed by the tool servers as a turn began ([tools.NAME] fields win)
    [listed."NAME"]
    description = "..."
    parameters = "{...JSON Schema as JSON text...}"

and that text is what the turn's EXECUTION_START names by digest (kept beside the journal,
:mod:`agentsessions.v1.workloadref`). ``parameters`` is JSON text because a JSON Schema may
hold ``null``, which TOML has no word for. Only the fields the tool lacks are written, so a
listing that changes between turns changes the recorded digest exactly when the offer
changes. A tool that already has a ``[listed]`` table (a recorded text given back with
``--tools``) is not listed again.

A server that does not start, or does not list the tool, adds nothing here: the tool is
offered as the workload gives it, and a call of it fails at its bind as before (the turn's
ERROR journaled, exit 12 or 2).
"""

from __future__ import annotations

import json
from typing import Any

from agentsessions.errors import AgentSessionsError, WorkloadError

from .tomltext import string as _string
from .workload import Workload, parse_workload

HEADER = "# agentsessions: listed by the tool servers as a turn began ([tools.NAME] fields win)"


def with_listing(workload: Workload) -> str:
    """``workload``'s source with the listing of each server tool it leaves undescribed
    appended (see the module docstring); the source itself when there is none to add."""
    tables: list[str] = []
    for name in sorted(workload.tools):
        tool = workload.tools[name]
        if not tool.executor or name in workload.listed:
            continue
        if tool.description and tool.parameters:
            continue
        found = _listed(workload, name)
        if found is None:
            continue
        description, schema = found
        lines = []
        if description and not tool.description:
            lines.append(f"description = {_string(description)}")
        if schema and not tool.parameters:
            text = json.dumps(schema, sort_keys=True, separators=(",", ":"))  # ASCII: escaped
            lines.append(f"parameters = {_string(text)}")
        if lines:
            tables.append(f"[listed.{_string(name)}]\n" + "\n".join(lines) + "\n")
    if not tables:
        return workload.source
    source = workload.source if workload.source.endswith("\n") else workload.source + "\n"
    text = source + "\n" + HEADER + "\n" + "".join(tables)
    try:
        parse_workload(text, workload.path)
    except WorkloadError:  # a hand-written inline `listed = {...}` cannot be extended
        return workload.source
    return text


def _listed(workload: Workload, name: str) -> tuple[str, dict[str, Any]] | None:
    """What tool ``name``'s executor lists for it, or None (no ``listed`` method, not
    listed, or a server that does not start: the bind reports that when it is called)."""
    tool = workload.tools[name]
    try:
        executor = workload.executor(tool.executor)
        listed = getattr(executor, "listed", None)
        if not callable(listed):
            return None
        found: Any = listed(name, tool.config)
    except AgentSessionsError:
        return None
    if not isinstance(found, tuple) or len(found) != 2:
        return None
    description, schema = found
    if not isinstance(description, str) or not isinstance(schema, dict):
        return None
    return description, schema
