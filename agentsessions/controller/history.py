"""History handed to a harness: lazy over the store or a held writer, or a list in memory.

:class:`StoreHistory` and :class:`WriterHistory` read nothing until the harness asks, and
``tail(n)`` reads only the last ``n`` records, so a turn that needs recent context costs the
same at seq 10 and at seq 1,000,000. A :class:`WriterHistory` serves recent records from
the memory of the writer the controller holds, and older ones from the store. Both also
hand out the events' stored canonical bytes (``tail_json``) for a reader that only passes
them on (a remote harness's Start): nothing is decoded for it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.store import Store

Event = dict[str, Any]


class StoreHistory:
    """The events of session ``uid`` with ``seq <= end``, read on demand."""

    def __init__(self, store: Store, uid: str, end: int) -> None:
        self._store = store
        self._uid = uid
        self._end = end

    def __len__(self) -> int:
        return self._end

    def __iter__(self) -> Iterator[Event]:
        if self._end <= 0:
            return iter(())
        return (r.event for r in self._store.read(self._uid, 1, self._end))

    def tail(self, count: int) -> list[Event]:
        if count <= 0 or self._end <= 0:
            return []
        return self.tail_of(max(1, self._end - count + 1), self._end)

    def tail_of(self, first: int, end: int) -> list[Event]:
        """The events ``first..end`` (a history that serves its recent part elsewhere)."""
        return list(self.events(first, end))

    def tail_json(self, count: int) -> list[bytes]:
        """The last ``count`` events as the canonical bytes the journal stores, oldest first."""
        if count <= 0 or self._end <= 0:
            return []
        first = max(1, self._end - count + 1)
        return [r.event_json for r in self._store.read(self._uid, first, self._end)]

    def events(self, first: int, end: int) -> Iterator[Event]:
        """The events ``first..end``, read lazily."""
        return (r.event for r in self._store.read(self._uid, first, end))


class RecordSource(Protocol):
    """Reads one session's records (a held writer: recent ones from memory)."""

    def read(self, from_seq: int = 1, to_seq: int = 0) -> Iterator[Record]: ...

    def events(self, from_seq: int, to_seq: int = 0) -> list[Event]:
        """The events of records ``from_seq..to_seq`` (a held writer decodes each once)."""
        ...


class WriterHistory:
    """The events with ``seq <= end`` of the session ``source`` writes, read on demand."""

    def __init__(self, source: RecordSource, end: int) -> None:
        self._source = source
        self._end = end

    def __len__(self) -> int:
        return self._end

    def __iter__(self) -> Iterator[Event]:
        if self._end <= 0:
            return iter(())
        return (r.event for r in self._source.read(1, self._end))

    def tail(self, count: int) -> list[Event]:
        if count <= 0 or self._end <= 0:
            return []
        return self._source.events(max(1, self._end - count + 1), self._end)

    def tail_json(self, count: int) -> list[bytes]:
        """The last ``count`` events as the canonical bytes the journal stores, oldest first
        (sliced out of the records, never decoded)."""
        if count <= 0 or self._end <= 0:
            return []
        first = max(1, self._end - count + 1)
        return [r.event_json for r in self._source.read(first, self._end)]


class ListHistory:
    """The first ``end`` events of a list already in memory (replay reads the journal once
    and every execution shares it; nothing is copied)."""

    def __init__(self, events: Sequence[Event], end: int | None = None) -> None:
        self._events = events
        self._end = len(events) if end is None else max(0, min(end, len(events)))

    def __len__(self) -> int:
        return self._end

    def __iter__(self) -> Iterator[Event]:
        return (self._events[i] for i in range(self._end))

    def tail(self, count: int) -> list[Event]:
        if count <= 0:
            return []
        return list(self._events[max(0, self._end - count) : self._end])
