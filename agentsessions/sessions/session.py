"""A session as the ``Sessions`` API hands it out: :class:`Session` (with its
:class:`Memory`) and a :class:`SessionPage` of them, what ``list`` and ``get`` return.

A module of their own, apart from the rest of :mod:`.values` (turns, frames, approvals and
the ``agentsessions.v1`` vocabularies they name), so that a ``list`` imports these and
nothing of a turn's; :mod:`.values` names them too, as every other value of the API.
Plain frozen values, as every value there is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentsessions.valueclass import field, value

if TYPE_CHECKING:
    from agentsessions.v1.results import ApprovalRef, UnresolvedCall


@value(frozen=True)
class Memory:
    """Where a session's harness memory lives and until when (warm compute, issue 7)."""

    where: str  # "none", "unknown", "not started", "live", "snapshot" or "gone"
    text: str
    detail: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The ``memory`` object of ``get --json``."""
        return dict(self.detail)


@value(frozen=True)
class Session:
    """A session as the engine knows it: metadata plus the projections kept at append time.

    ``exec_state`` is the reference's ExecState name: EXEC_PENDING (no turn yet),
    EXEC_RUNNING / EXEC_AWAITING (a turn is open: running now, or interrupted and waiting
    for resume), EXEC_COMPLETED, EXEC_FAILED (the last turn ended in ERROR). ``memory`` is
    filled in by :meth:`Sessions.get` only (it costs a bounded probe of warm hosts), and so
    is ``pending_approval`` (and by :meth:`Sessions.approve`): the approval request an
    EXEC_AWAITING session waits for (execution id, tool call id, request seq), and
    ``unresolved_call``: the tool call a resume found with an unknown outcome, waiting for
    :meth:`Sessions.resolve` (execution id, tool call id, tool, key, TOOL_CALL seq).
    """

    uid: str
    project: str = "default"
    name: str = ""
    harness: str = ""
    model: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    origin: Mapping[str, Any] | None = None
    identity: Mapping[str, str] | None = None
    parent_uid: str = ""
    fork_seq: int = 0
    create_time_ns: int = 0
    last_seq: int = 0
    last_hash: str = ""
    compute_state: str = "COMPUTE_NONE"
    exec_state: str = "EXEC_PENDING"
    update_time_ns: int = 0
    fence: int = 0
    deleted: bool = False
    damaged: str = ""  # why a listed session cannot be read; list only
    memory: Memory | None = None
    pending_approval: ApprovalRef | None = None
    unresolved_call: UnresolvedCall | None = None
    state_version: int = 0
    """The harness's working state: its version (0: none), the journal range it covers and
    its size in bytes (``working_state`` in ``--json``; its bytes are the harness's own)."""
    state_covers: tuple[int, int] = (0, 0)
    state_size: int = 0

    @property
    def busy(self) -> bool:
        """A turn is open (running, or cut off and waiting for resume)."""
        return self.exec_state in ("EXEC_RUNNING", "EXEC_AWAITING")

    def to_json(self) -> dict[str, Any]:
        """The session as the CLI's ``--json`` object (a contract: keys only grow)."""
        out: dict[str, Any] = {
            "uid": self.uid,
            "project": self.project,
            "name": self.name,
            "harness": self.harness,
            "model": self.model,
            "labels": dict(self.labels),
            "annotations": dict(self.annotations),
            "origin": dict(self.origin) if self.origin is not None else None,
            "identity": dict(self.identity) if self.identity is not None else None,
            "parent_uid": self.parent_uid,
            "fork_seq": self.fork_seq,
            "create_time_ns": self.create_time_ns,
            "last_seq": self.last_seq,
            "last_hash": self.last_hash,
            "compute_state": self.compute_state,
            "exec_state": self.exec_state,
            "update_time_ns": self.update_time_ns,
            "fence": self.fence,
            "deleted": self.deleted,
            "working_state": {
                "version": self.state_version,
                "covers_from": self.state_covers[0],
                "covers_to": self.state_covers[1],
                "size": self.state_size,
            },
        }
        if self.pending_approval is not None:  # present only while a request waits
            out["pending_approval"] = self.pending_approval.to_json()
        if self.unresolved_call is not None:  # present only while a call is unresolved
            out["unresolved_call"] = self.unresolved_call.to_json()
        if self.damaged:  # only on a damaged listing row: the key's presence is the signal
            out["damaged"] = self.damaged
        return out


@value(frozen=True)
class SessionPage:
    """One page of :meth:`Sessions.list`; ``next_cursor`` is empty on the last page."""

    sessions: tuple[Session, ...]
    next_cursor: str = ""
