"""What a session's page shows besides its records, read through the ``Sessions`` API only.

The API is the one way in, so the page is the same from a local home and over
``--server``: ``get`` (metadata, working state), ``verify`` (the badge, and the names of the
session's tool stores: one report per store), ``tool_store`` (their entries), ``list``
(the project's sessions, for the fork tree's children) and ``get`` again up the parents.

The fork tree is the session's family: its oldest known ancestor and every listed
descendant of it (deleted sessions are not listed, so they are not in it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentsessions.errors import AgentSessionsError

if TYPE_CHECKING:
    from agentsessions.sessions.api import Sessions
    from agentsessions.sessions.values import Session

STORE_ENTRIES = 2000
"""Entries of one tool store shown on the page (the rest are counted, not embedded)."""

MAX_DEPTH = 1000
"""Parents followed up the fork tree (a guard against a cycle in damaged metadata)."""


@dataclass
class Gathered:
    """The session's metadata, verify report, family and tool stores, as page JSON."""

    session: dict[str, Any]
    verify: dict[str, Any]
    tree: list[dict[str, Any]] = field(default_factory=list)
    stores: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.verify.get("ok"))


def list_all(engine: Sessions, project: str) -> list[Session]:
    """Every listed session of ``project`` (all pages), newest first."""
    out: list[Session] = []
    cursor = ""
    while True:
        page = engine.list(project=project, page_size=500, cursor=cursor)
        out.extend(page.sessions)
        cursor = page.next_cursor
        if not cursor:
            return out


def gather(engine: Sessions, uid: str, listing: Iterable[Session] | None = None) -> Gathered:
    """Read what the page of session ``uid`` shows; ``listing`` is its project's sessions
    when the caller has them already (``view --all``)."""
    info = engine.get(uid)
    report = engine.verify(uid)
    sessions = list(listing) if listing is not None else list_all(engine, info.project)
    view = Gathered(session=info.to_json(), verify=report.to_json())
    view.tree = family(engine, info, sessions)
    view.stores = [store_json(engine, uid, n, part.to_json()) for n, part in report.components]
    return view


def family(engine: Sessions, info: Session, sessions: list[Session]) -> list[dict[str, Any]]:
    """The fork tree around ``info``: nodes (uid, name, parent, fork_seq, ...), root first."""
    known = {s.uid: s for s in sessions}
    known[info.uid] = info
    root = info
    for _ in range(MAX_DEPTH):
        if not root.parent_uid or root.parent_uid == root.uid:
            break
        parent = known.get(root.parent_uid) or _get(engine, root.parent_uid)
        if parent is None:  # a parent deleted for good or unreadable: the tree starts here
            break
        known[parent.uid] = root = parent
    children: dict[str, list[Session]] = {}
    for s in known.values():
        children.setdefault(s.parent_uid, []).append(s)
    out: list[dict[str, Any]] = []
    todo = [root]
    while todo and len(out) < len(known):
        node = todo.pop(0)
        out.append(_node(node, node.uid == info.uid, node is root))
        todo.extend(sorted(children.get(node.uid, ()), key=lambda s: (s.fork_seq, s.uid)))
    return out


def _get(engine: Sessions, uid: str) -> Session | None:
    try:
        return engine.get(uid)
    except AgentSessionsError:
        return None


def _node(s: Session, current: bool, root: bool) -> dict[str, Any]:
    return {
        "uid": s.uid,
        "name": s.name,
        "parent": "" if root else s.parent_uid,
        "fork_seq": s.fork_seq,
        "last_seq": s.last_seq,
        "exec_state": s.exec_state,
        "current": current,
    }


def store_json(engine: Sessions, uid: str, name: str, report: dict[str, Any]) -> dict[str, Any]:
    """One tool store: its verify report and its first entries (or why they cannot be read)."""
    out: dict[str, Any] = {"name": name, "ok": report.get("ok"), "records": report.get("records")}
    try:
        entries = engine.tool_store(uid, name)
    except AgentSessionsError as exc:  # unreadable (a key, damage): say why, show the rest
        out["error"], out["entries"] = exc.message, []
        return out
    out["entries"] = [e.to_json() for e in entries[:STORE_ENTRIES]]
    out["more"] = max(0, len(entries) - STORE_ENTRIES)
    return out
