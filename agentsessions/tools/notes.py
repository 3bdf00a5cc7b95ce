"""The built-in ``notes`` executor: a list of notes kept in the tool's own store.

Arguments (one JSON object per call)::

    {"op": "add", "text": "buy milk"}   one entry {"op": "add", "text": ...}; the note's seq
    {"op": "list"}                      the notes since the last clear, oldest first
    {"op": "clear"}                     one entry {"op": "clear"}: the list starts again

Nothing is ever deleted: a clear is an entry like any other, so the store's history (and
``agentsessions store SESSION TOOL``) keeps every note. The store is the tool's own
(``ToolRequest.store``), which the host binds only to a tool the workload names in
``[session] tool_components``; without one every call is an error outcome, no effect.

At most once on its own: the call's idempotency key becomes the commit id of its entry, so
a call re-driven after a crash (same key) finds its first commit and appends nothing; it
says so with ``idempotent = True`` and the host may re-drive it (``controller/sinks.py``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, ClassVar

from agentsessions.controller.spi import ToolOutcome, ToolRequest
from agentsessions.journal.stores.store import MAX_COMMIT_ID_LEN
from agentsessions.v1.results import ToolStoreEntry

from .configschema import ConfigSchema

OPS = ("add", "list", "clear")


class Notes:
    """Adds, lists and clears notes in the tool's own store."""

    idempotent = True
    needs_store = True  # the workload refuses it unless it is named in tool_components
    config_schema = ConfigSchema()  # no config: its state is in its store
    DESCRIPTION = "Keep notes: add one, list those since the last clear, or clear the list."
    PARAMETERS: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "op": {"type": "string", "enum": ["add", "list", "clear"]},
            "text": {"type": "string", "description": "The note to add (op add only)."},
        },
        "required": ["op"],
        "additionalProperties": False,
    }
    """What a model is offered when the workload gives no description or parameters."""

    def call(self, request: ToolRequest) -> ToolOutcome:
        """Run one op; a missing store or bad arguments are an error outcome, no effect."""
        store = request.store
        if store is None:
            return ToolOutcome(
                error=f"{request.tool} keeps its notes in a store of its own: name it in the "
                "workload's [session] tool_components"
            )
        op = request.args.get("op")
        if op not in OPS:
            return ToolOutcome(error=f"notes: 'op' must be one of {', '.join(OPS)}; got {op!r}")
        if op == "list":
            return ToolOutcome(output={"notes": current(store.read())})
        entry: dict[str, Any] = {"op": op}
        if op == "add":
            text = request.args.get("text")
            if not isinstance(text, str) or not text:
                return ToolOutcome(error="notes: 'add' needs a non-empty string 'text'")
            entry["text"] = text
        result = store.commit([entry], commit_id=commit_id(request.idempotency_key))
        return ToolOutcome(output={**entry, "seq": result.last_seq})


def current(entries: Sequence[ToolStoreEntry]) -> list[str]:
    """The notes since the last clear, oldest first."""
    notes: list[str] = []
    for entry in entries:
        if entry.data.get("op") == "clear":
            notes = []
        elif entry.data.get("op") == "add":
            notes.append(str(entry.data.get("text", "")))
    return notes


def commit_id(key: str) -> str:
    """The store commit id of the call with idempotency key ``key``: the key itself when it
    is a usable commit id, else a digest of it (same key, same id)."""
    if key and len(key) <= MAX_COMMIT_ID_LEN and key.isprintable():
        return key
    return "key-sha256-" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
