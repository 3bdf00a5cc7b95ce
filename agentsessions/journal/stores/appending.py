"""``Writer.append`` written once: the steps every backend's writer takes, in order, around
the one step that is its own (landing a commit where it keeps its journal).

1. the commit id is checked (``check_commit_id``);
2. what the backend holds while a commit is made is taken (``_held``: the memory store's
   lock and its opened working state; nothing for the file and JetStream writers, whose
   session lock or fence is held as long as the writer is), and the writer is open
   (:meth:`ChainWriter._open_tail`: a held LOCK, a writer not closed, what landed of its
   own after a publish that gave up folded in first);
3. a commit id already applied returns its first result, marked duplicate: nothing lands;
4. the tail prepares the commit (``Tail.prepare``: the CAS on the head, the fence, the
   state version, the size limit; the records chained and hashed);
5. the backend lands the records and the new state (:meth:`ChainWriter._land`: frames
   appended to a segment, a message published with CAS, a list extended), and the tail
   advances past them.

``append_records`` (import) checks that records continue the chain instead of building them.
A backend implements the hooks and nothing of the orchestration; the base allocates nothing
per append (``_held`` is made once per writer).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Final

from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.store import (
    CommitResult,
    StateUpdate,
    WorkingState,
    check_commit_id,
)
from agentsessions.journal.stores.tail import Tail


class _NothingHeld:
    """The ``_held`` of a writer that holds nothing more while it commits."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


NOTHING_HELD: Final = _NothingHeld()


class ChainWriter(ABC):
    """The append steps of :class:`~agentsessions.journal.stores.store.Writer`, shared by
    the file, JetStream and memory writers; a subclass provides ``uid``, ``_fence`` (the
    fence it minted when it opened), ``_held`` (made once, taken for each commit),
    ``_max_commit_bytes`` and the two hooks."""

    _fence: int
    _held: AbstractContextManager[None]

    @property
    def fence(self) -> int:
        """The fence this writer minted when it opened."""
        return self._fence

    @property
    @abstractmethod
    def uid(self) -> str: ...

    @property
    @abstractmethod
    def _max_commit_bytes(self) -> int:
        """The largest commit the store accepts, in bytes."""

    @abstractmethod
    def _open_tail(self) -> Tail:
        """The tail to append to, once this writer may append (else the backend's refusal:
        InvalidArgumentError for a closed writer). Called with ``_held`` taken."""

    @abstractmethod
    def _land(
        self,
        records: list[Record],
        events: Sequence[Mapping[str, Any]] | None,
        cid: str | None,
        state: WorkingState | None,
        fence: int,
        sync: bool,
    ) -> CommitResult:
        """Store one prepared commit (``records``, the new ``state``, by ``fence``) and
        advance the tail past it; ``sync`` False may defer durability (see Writer.append).
        Positional values, not one object: an append allocates nothing for the handover."""

    def append(
        self,
        events: Sequence[Mapping[str, Any]],
        *,
        expected_last_seq: int | None = None,
        fence: int | None = None,
        commit_id: str | None = None,
        sync: bool = True,
        state: StateUpdate | None = None,
        expected_state_version: int | None = None,
    ) -> CommitResult:
        """Append ``events`` (and ``state``) as one commit: see the module docstring for the
        steps and :meth:`~agentsessions.journal.stores.store.Writer.append` for the contract."""
        check_commit_id(commit_id)
        with self._held:
            tail = self._open_tail()
            first = tail.duplicate(commit_id)
            if first is not None:
                return first
            use = self._fence if fence is None else fence
            records, new = tail.prepare(
                self.uid, events, expected_last_seq=expected_last_seq, fence=use,
                current=self._fence, state=state, expected_state_version=expected_state_version,
                max_bytes=self._max_commit_bytes,
            )  # fmt: skip
            return self._land(records, events, commit_id, new, use, sync)

    def landed(self, commit_id: str) -> CommitResult | None:
        """The first result of ``commit_id`` if it landed (see Writer.landed)."""
        check_commit_id(commit_id)
        with self._held:
            return self._open_tail().duplicate(commit_id)

    def append_records(self, records: Sequence[Record]) -> CommitResult:
        """Append already-hashed records verbatim (import); each must link and verify."""
        with self._held:
            tail = self._open_tail()
            tail.check_records(self.uid, records, max_bytes=self._max_commit_bytes)
            return self._land(list(records), None, None, None, self._fence, True)
