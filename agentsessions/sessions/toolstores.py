"""``Sessions.tool_store``: read a tool's own store in a session (``agentsessions store``).

A read only: no lock, no write. The store is found by the session and the tool's name, as
the host binds it for the tool (:mod:`agentsessions.tools.toolstore`); a session that does
not exist is NotFoundError (exit 3), and so is a tool that has no store in it, neither named
in the session's workload ``[session] tool_components`` nor ever written. A tool component
that has not committed yet has an empty store.
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

from agentsessions.errors import InvalidArgumentError, NotFoundError
from agentsessions.journal.stores.capabilities import WORKLOADS
from agentsessions.journal.stores.store import Store, check_component
from agentsessions.v1.ids import check_uid

if TYPE_CHECKING:
    from agentsessions.v1.results import ToolStoreEntry


def tool_store(
    store: Store, uid: str, tool: str, *, from_seq: int = 1
) -> builtins.list[ToolStoreEntry]:
    """The entries of tool ``tool``'s own store in session ``uid`` from ``from_seq``, in
    order: seq, the author and time the host stamped, and the entry object."""
    from agentsessions.tools.toolstore import ToolStore
    from agentsessions.tools.workload import parse_workload

    check_uid(uid)
    if type(from_seq) is not int or from_seq < 1:
        raise InvalidArgumentError(f"from_seq must be an integer >= 1, got {from_seq!r}")
    store.get(uid)  # NotFoundError first for an unknown session
    check_component(tool)
    workloads = WORKLOADS.of(store)
    text = workloads.workload(uid) if workloads is not None else None
    named = parse_workload(text, f"(recorded for {uid})").tool_components if text else ()
    have = store.components(uid)
    if tool not in have and tool not in named:
        known = ", ".join(sorted({*have, *named})) or "none"
        raise NotFoundError(
            f"session {uid} has no tool store {tool!r} (its tool stores: {known})",
            hint="a tool gets one when the workload names it in [session] tool_components",
            session=uid,
        )
    return ToolStore(store.component(uid, tool)).read(from_seq)
