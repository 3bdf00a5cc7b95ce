"""The LangGraph saver's threads: their indexes, caught up with the journal, and the group
commit of their records.

A record (a checkpoint, a task's writes, a deletion) is durable when the call that made it
returns, and LangGraph makes several at once: with its default ``async`` durability a step's
checkpoint is saved in a background thread while the next task's writes are saved in
another. Each write waits for its record's commit; records of one thread that arrive while
a commit of that thread is in flight are committed together by the next one, as one turn
(one INPUT holding the records, puts first, else in arrival order), and task writes
alone wait up to :data:`LINGER` for the checkpoint LangGraph saves next (a caller writing
one record at a time pays that wait). So a graph step costs about three turns, not five,
and no call returns before its own record is durable.

Invariants kept here:

- One leader at a time per thread builds and commits a batch; a record is built against
  the thread's index with the batch's earlier records folded in (a checkpoint's list tail on
  its parent put in the same batch, a retried write already in it), so the records of a
  batch read back exactly as if each had been a turn of its own.
- Records folded before their commit is durable are never read: the thread is marked busy
  meanwhile and readers wait for it. A failed commit throws the index away; the next read
  folds it again from the journal, so nothing that was not written is ever seen.
- A deletion, a prune and a run's removal are committed alone (never batched): what the
  records after them build on is the index they leave.
"""

from __future__ import annotations

import builtins
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentsessions.errors import SessionDeletedError

from .common import find_named, named, run_named
from .langgraph_index import Thread
from .recording import LANGGRAPH as HARNESS

if TYPE_CHECKING:
    from langgraph.checkpoint.serde.base import SerializerProtocol

    from agentsessions.sessions.api import Sessions

Body = dict[str, Any]
Build = Callable[[Thread | None], Body | None]
"""Makes a record from the thread's index (None: no thread yet); None: nothing to write."""
KEY = "langgraph"
"""The DataPart key of the saver's records."""
LINGER = 0.002
"""Seconds a batch of task writes alone waits for the checkpoint LangGraph saves next."""


@dataclass
class _Request:
    """One call's record, waiting for its commit."""

    build: Build
    kind: str  # "put", "writes" or "solo"
    after: Callable[[Thread], None] | None
    done: bool = False
    thread: Thread | None = None
    error: BaseException | None = None


@dataclass
class _Queue:
    """The records of one thread waiting for a leader."""

    cond: threading.Condition = field(default_factory=threading.Condition)
    pending: builtins.list[_Request] = field(default_factory=list)
    leading: bool = False

    def take(self) -> builtins.list[_Request]:
        """The next batch: a solo request alone, else the requests up to the next solo,
        once a batch of writes alone has waited up to :data:`LINGER` for a checkpoint."""
        deadline = time.monotonic() + LINGER
        while all(r.kind == "writes" for r in self.pending):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self.cond.wait(left)
        solo = [i for i, r in enumerate(self.pending) if r.kind == "solo"]
        count = 1 if solo and solo[0] == 0 else solo[0] if solo else len(self.pending)
        batch, self.pending = self.pending[:count], self.pending[count:]
        return batch


class Threads:
    """The threads of one project on one engine, as a saver with serializer ``serde`` sees
    them. Thread-safe."""

    def __init__(self, engine: Sessions, project: str, serde: SerializerProtocol) -> None:
        self._engine = engine
        self.project = project
        self.serde = serde
        self._threads: dict[str, Thread] = {}
        self._lock = threading.RLock()  # the indexes: folds and reads
        self._settled = threading.Condition(self._lock)  # a thread is no longer busy
        self._queues: dict[str, _Queue] = {}
        self._write_locks: dict[str, threading.Lock] = {}

    # --- reads ---------------------------------------------------------------------------

    def names(self) -> builtins.list[str]:
        """Every live thread of the project (its sessions' names), once each."""
        return list(dict.fromkeys(n for n, _, _ in named(self._engine, self.project) if n))

    @contextmanager
    def reading(self, name: str) -> Iterator[Thread | None]:
        """The thread's index caught up with its journal (None: no live session), held
        still while the caller reads it."""
        with self._lock:
            yield self._load(name, fresh=True)

    def _load(self, name: str, *, fresh: bool) -> Thread | None:
        """The thread's index (caller holds the lock), caught up with its journal when
        ``fresh`` or new; None when it has no live session."""
        thread = self._threads.get(name)
        while thread is not None and thread.busy:
            self._settled.wait()
            thread = self._threads.get(name)
        if thread is not None and not fresh and not thread.deleted:
            return thread
        for _ in range(2):  # a thread found deleted may have a new session already
            if thread is None or thread.deleted:
                uid = find_named(self._engine, self.project, name)
                if not uid:
                    self._threads.pop(name, None)
                    return None
                thread = self._threads[name] = Thread(uid)
            self._catch_up(thread)
            if not thread.deleted:
                return thread
        return None

    def _catch_up(self, thread: Thread) -> None:
        for record in self._engine.read(thread.uid, from_seq=thread.seq + 1):
            for body in bodies(record.event):
                thread.fold(body, self.serde)
            thread.seq = record.seq

    # --- writes --------------------------------------------------------------------------

    @contextmanager
    def writing(self, name: str) -> Iterator[None]:
        """No record of thread ``name`` is committed meanwhile (``copy_thread``'s target)."""
        with self._lock:
            lock = self._write_locks.setdefault(name, threading.Lock())
        with lock:
            yield

    def commit(
        self,
        name: str,
        build: Build,
        *,
        kind: str,
        after: Callable[[Thread], None] | None = None,
    ) -> Thread | None:
        """Write ``build``'s record durably (creating the thread's session on its first
        write): a ``put`` or ``writes`` record with whatever else of the thread is waiting,
        a ``solo`` one alone; ``after(thread)`` runs once it is durable, before any later
        record. The thread."""
        request = _Request(build, kind, after)
        with self._lock:
            queue = self._queues.setdefault(name, _Queue())
        with queue.cond:
            queue.pending.append(request)
            queue.cond.notify_all()  # a lingering leader may take it
            while not request.done:
                if queue.leading:
                    queue.cond.wait()
                    continue
                queue.leading = True
                batch = queue.take()
                queue.cond.release()
                try:
                    self._lead(name, batch)
                finally:
                    queue.cond.acquire()
                    queue.leading = False
                    queue.cond.notify_all()
        if request.error is not None:
            raise request.error
        return request.thread

    def _lead(self, name: str, batch: builtins.list[_Request]) -> None:
        """Commit a batch (once more if the session was deleted meanwhile by another
        process: its records are built again for the new one); every request settled."""
        try:
            with self.writing(name):
                for attempt in range(2):
                    try:
                        self._commit_batch(name, [r for r in batch if not r.done])
                        break
                    except SessionDeletedError:
                        if attempt:
                            raise
                        with self._lock:
                            self._threads.pop(name, None)
        except BaseException as exc:  # the commit's failure is each waiting call's
            for request in batch:
                if not request.done:
                    request.error, request.done = exc, True
            if not isinstance(exc, Exception):
                raise

    def _commit_batch(self, name: str, batch: builtins.list[_Request]) -> None:
        with self._lock:
            thread = self._load(name, fresh=False)
            try:
                view, records, written = self._build(thread, batch)
            except BaseException:
                self._release(name, thread, keep=False)
                raise
            if view is None or not records:
                _settle(batch, thread)
                return
        try:
            frame = run_named(
                self._engine, self.project, name, view.uid, [message(records)], HARNESS
            )
            with self._lock:
                view = self._adopt(name, thread, view, frame)
        except BaseException:
            with self._lock:
                self._release(name, thread, keep=False)
            raise
        with self._lock:
            self._release(name, thread, keep=True)
        for request in written:
            if request.after is not None:
                try:
                    request.after(view)
                except Exception as exc:
                    request.error = exc
        _settle(batch, view)

    def _adopt(self, name: str, thread: Thread | None, view: Thread, frame: Any) -> Thread:
        """The thread's index once the batch is durable: ``view`` (the batch folded in)
        when the turn directly follows what it had folded, else the journal folded again
        (another process wrote first, or our records joined a session it made)."""
        uid, turn = frame.session.uid, frame.turn
        follows = turn is not None and view.seq == turn.first_seq - 1
        if view.uid in ("", uid) and follows and self._threads.get(name) in (None, thread):
            view.uid, view.seq = uid, turn.last_seq
        else:
            view = Thread(uid)
            self._catch_up(view)
        self._threads[name] = view
        return view

    def _build(
        self, thread: Thread | None, batch: builtins.list[_Request]
    ) -> tuple[Thread | None, builtins.list[Body], builtins.list[_Request]]:
        """Each request's record, built on the index with the earlier ones folded in (a
        request whose build fails is settled with its error, writing nothing)."""
        view = thread
        records: builtins.list[Body] = []
        written: builtins.list[_Request] = []
        for request in sorted(batch, key=lambda r: r.kind != "put"):  # writes name their put
            try:
                record = request.build(view)
            except Exception as exc:
                request.error, request.done = exc, True
                continue
            if record is None:
                continue
            if view is None:
                view = Thread("")  # the session is made by the commit
            if thread is not None:
                thread.busy = True  # from the first fold on, until the commit settles
            view.fold(record, self.serde)
            records.append(record)
            written.append(request)
        return view, records, written

    def _release(self, name: str, thread: Thread | None, *, keep: bool) -> None:
        """The commit settled (caller holds the lock): readers may go on; without ``keep``
        the index, which holds records that were never written, is thrown away."""
        if thread is not None:
            thread.busy = False
            if not keep and self._threads.get(name) is thread:
                del self._threads[name]
        self._settled.notify_all()

    def forget(self, name: str) -> None:
        """Drop the thread's index (its session was deleted)."""
        with self._lock:
            self._threads.pop(name, None)


def _settle(batch: builtins.list[_Request], thread: Thread | None) -> None:
    for request in batch:
        if not request.done:
            request.thread, request.done = thread, True


def message(records: builtins.list[Body]) -> dict[str, Any]:
    """The turn input that carries records: a ``user`` message with one DataPart
    ``{"langgraph": record}``, or ``{"langgraph": [record, ...]}`` for several."""
    data = records[0] if len(records) == 1 else records
    return {"role": "user", "parts": [{"data": {"data": {KEY: data}}}]}


def bodies(event: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """The saver's records in a journal event, in order (none in another kind of event)."""
    if event.get("kind") != "EVENT_INPUT":
        return
    for part in (event.get("message") or {}).get("parts", ()):
        data = (part.get("data") or {}).get("data", {}).get(KEY)
        for body in data if isinstance(data, list) else (data,):
            if isinstance(body, dict):
                yield body
