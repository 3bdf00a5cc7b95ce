"""A tool's own store as its executor sees it: bound by the host to one (session, tool).

The host makes one :class:`ToolStore` over the session's component store of that tool
(``Store.component(uid, name)``) for a tool the workload names in ``[session]
tool_components``, and hands it to the executor as ``ToolRequest.store``. The handle has no
method that takes a session, a uid or a path: what it can reach is fixed when the host binds
it, so a tool never reads the conversation, another tool's store or another session.

Each entry is journaled as an ordinary event, so the store's hash chain, limits and verify
are the session journal's: kind EVENT_OUTPUT, a message of role ``tool`` with one DataPart
holding the entry (a JSON object), ``actor.principal`` the tool's name and ``ts`` the host's
clock. Both stamps are the host's: an entry is data only, the tool cannot set its author or
time. A commit opens the store's writer and closes it again, so the LOCK is held only for
the commit; ``expected_end`` is its compare-and-swap, ``commit_id`` makes a retry a no-op.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from agentsessions.errors import InvalidArgumentError
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.store import (
    CommitResult,
    ComponentStore,
    StateUpdate,
    WorkingState,
)
from agentsessions.v1 import construct, timestamps
from agentsessions.v1.results import ToolStoreEntry

ROLE = "tool"


class ToolStore:
    """The host-bound store of one tool in one session (see the module docstring)."""

    def __init__(self, component: ComponentStore, *, clock: Callable[[], int] = time.time_ns):
        """``clock``: the host's time in ns since the epoch (stamped on every entry)."""
        self._component = component
        self._clock = clock

    @property
    def name(self) -> str:
        """The tool whose store this is (the author stamped on its entries)."""
        return self._component.name

    def commit(
        self,
        entries: Sequence[Mapping[str, Any]],
        *,
        state: bytes | None = None,
        expected_end: int | None = None,
        expected_state_version: int | None = None,
        commit_id: str | None = None,
    ) -> CommitResult:
        """Append ``entries`` (JSON objects) as one atomic, durable commit.

        ``expected_end``: the seq the store must end at (ConflictError, nothing written,
        otherwise; None: wherever it ends). ``commit_id``: a retry with the same id returns
        the first result (``duplicate``) and appends nothing. A commit over the store's
        ``max_commit_bytes`` is refused whole (CommitTooLargeError). ``state`` replaces the
        tool's working state in the same commit (the host stamps its author);
        ``expected_state_version``: the state version the tool last saw (StateConflictError
        with the current snapshot, nothing written, otherwise). A state-only commit (no
        entries) is allowed."""
        if isinstance(entries, Mapping) or not isinstance(entries, Sequence):
            raise InvalidArgumentError(f"tool store {self.name}: entries must be a list of objects")
        if not entries and state is None:
            raise InvalidArgumentError(f"tool store {self.name}: a commit needs an entry")
        ts = timestamps.format_timestamp_ns(self._clock())
        events = [self._event(entry, ts) for entry in entries]
        update = None if state is None else StateUpdate(data=bytes(state), author=self.name)
        with self._component.writer() as writer:
            return writer.append(
                events,
                expected_last_seq=expected_end,
                commit_id=commit_id,
                state=update,
                expected_state_version=expected_state_version,
            )

    def read(self, from_seq: int = 1) -> list[ToolStoreEntry]:
        """Every entry from ``from_seq`` on, in order."""
        return [entry_of(record) for record in self._component.read(from_seq)]

    def follow(
        self, from_seq: int = 1, *, idle_timeout: float | None = None
    ) -> Iterator[ToolStoreEntry]:
        """The entries from ``from_seq`` on, then each new one as it commits; stops after
        ``idle_timeout`` seconds without one (None: never)."""
        for record in self._component.follow(from_seq, idle_timeout=idle_timeout):
            yield entry_of(record)

    def state(self) -> WorkingState:
        """The tool's working state (version 0 when it has none)."""
        return self._component.state()

    def _event(self, entry: Mapping[str, Any], ts: str) -> dict[str, Any]:
        if not isinstance(entry, Mapping):
            raise InvalidArgumentError(
                f"tool store {self.name}: an entry is a JSON object, not {type(entry).__name__}"
            )
        message = construct.message(ROLE, construct.data_part(entry))
        return dict(construct.output_event(message, ts=ts, actor={"principal": self.name}))


def entry_of(record: Record) -> ToolStoreEntry:
    """The entry a tool store's record holds: seq, the host's stamps and the object."""
    event = record.event
    actor = event.get("actor") or {}
    ts = event.get("ts")
    time_ns = 0
    if isinstance(ts, str) and ts:
        seconds, nanos = timestamps.parse_timestamp(ts)
        time_ns = seconds * 1_000_000_000 + nanos
    parts = (event.get("message") or {}).get("parts") or [{}]
    data = (parts[0].get("data") or {}).get("data") or {}
    return ToolStoreEntry(record.seq, str(actor.get("principal", "")), time_ns, data)
