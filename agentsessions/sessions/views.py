"""Views of the engine's results: the typed values of :mod:`.values` made from the store's
and the controller's own records, and turn inputs made into ``agentsessions.v1`` Messages."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .session import Memory, Session

if TYPE_CHECKING:
    from agentsessions.controller.controller import TurnResult
    from agentsessions.journal.stores.store import SessionInfo
    from agentsessions.sessions.values import Turn
    from agentsessions.v1.results import ApprovalRef, UnresolvedCall


def view(
    info: SessionInfo,
    memory: Memory | None = None,
    pending: ApprovalRef | None = None,
    unresolved: UnresolvedCall | None = None,
) -> Session:
    """The :class:`Session` of a store's SessionInfo (``pending``: its pending approval;
    ``unresolved``: its unresolved tool call)."""
    meta = info.meta
    return Session(
        uid=meta.uid,
        project=meta.project,
        name=meta.name,
        harness=meta.harness,
        model=meta.model,
        labels=dict(meta.labels),
        annotations=dict(meta.annotations),
        origin=meta.origin,
        identity=meta.identity,
        parent_uid=meta.parent_uid,
        fork_seq=meta.fork_seq,
        create_time_ns=meta.create_time_ns,
        last_seq=info.last_seq,
        last_hash=info.last_hash,
        compute_state=info.compute_state,
        exec_state=info.exec_state,
        update_time_ns=info.update_time_ns,
        fence=info.fence,
        deleted=info.deleted,
        damaged=info.damaged,
        memory=memory,
        pending_approval=pending,
        unresolved_call=unresolved,
        state_version=info.state_version,
        state_covers=info.state_covers,
        state_size=info.state_size,
    )


def turn_view(result: TurnResult, created: bool = False) -> Turn:
    """The :class:`Turn` of a controller's TurnResult."""
    from .values import Turn  # a turn's value: list and get never import it

    return Turn(
        uid=result.uid,
        execution_id=result.execution_id,
        first_seq=result.first_seq,
        last_seq=result.last_seq,
        outputs=tuple(result.outputs),
        model_calls=result.model_calls,
        created=created or result.created,
        resumed=result.resumed,
        canceled=result.canceled,
        duplicate=result.duplicate,
    )
