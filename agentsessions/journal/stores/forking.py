"""What every store needs to fork a session: the fork point's hash, the tail a child starts
from, and the marker it ends with.

The child's starting tail is the parent's projection *at* the fork point. At the head (the
common case) it is the parent's current tail, so a fork costs the same for a 10-event and a
1,000,000-event parent. At an earlier seq it is computed from a backward window that doubles
until the state there is settled (the latest execution's start, or its END/ERROR, is in the
window), so the cost follows the length of one execution, not of the session.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from agentsessions.errors import InvalidArgumentError
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.projection import Projection
from agentsessions.journal.stores.tail import Tail
from agentsessions.v1 import construct

Reader = Callable[[int, int], Iterator[Record]]
_WINDOW = 64
_CLOSED = frozenset({"EXEC_COMPLETED", "EXEC_FAILED", "EXEC_CANCELED"})


def check_fork(parent: str, at_seq: int, last_seq: int, count: int) -> None:
    if not 0 <= at_seq <= last_seq:
        raise InvalidArgumentError(
            f"session {parent} ends at seq {last_seq}; cannot fork at seq {at_seq}"
        )
    if count < 1:
        raise InvalidArgumentError("a fork needs at least one child")


def base_tail(read: Reader, at_seq: int, head: Tail | None = None) -> Tail:
    """The tail of the parent's journal as it stood at ``at_seq``.

    ``head`` is the parent's current tail: when the fork is at the head it is the answer.
    """
    if head is not None and head.last_seq == at_seq:
        return Tail(last_seq=head.last_seq, last_hash=head.last_hash, projection=head.projection)
    if at_seq == 0:
        return Tail()
    window = _WINDOW
    while True:
        first = max(1, at_seq - window + 1)
        records = list(read(first, at_seq))
        projection = Projection()
        for record in records:
            projection.apply(record.event, record.seq)
        settled = projection.exec_seq > first or projection.exec_state in _CLOSED
        if first == 1 or settled:
            break
        window *= 2
    last = records[-1]
    return Tail(last_seq=last.seq, last_hash=last.content_hash, projection=projection)


def fork_marker(parent: str, at_seq: int) -> dict[str, Any]:
    """The LIFECYCLE_FORK event that ends a child's inherited prefix (``parent@N``)."""
    del parent  # the reference records only the seq; the parent is in the metadata
    return dict(construct.lifecycle_event("LIFECYCLE_FORK", detail=f"parent@{at_seq}"))
