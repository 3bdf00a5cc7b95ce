"""LangGraph's checkpointer on agentsessions (extra ``[langgraph]``).

:class:`AgentSessionsSaver` is a ``BaseCheckpointSaver``: a drop-in for ``InMemorySaver``,
``SqliteSaver`` or ``PostgresSaver`` (``graph.compile(checkpointer=...)``), sync and async.
It is a thin layer over the :class:`Sessions` engine (``agentsessions.open()``), so the file
store, JetStream and encryption at rest all work, and what it writes is an ordinary session:
``agentsessions log/verify/export/fork UID``.

How LangGraph's model maps onto the journal (and why):

- A thread is one session in project ``langgraph`` (configurable) whose *name* is the
  ``thread_id`` (:mod:`.common`). Its namespaces (subgraphs) live inside the records, not in
  sessions of their own: LangGraph lists, deletes, copies and prunes a thread with all its
  namespaces, and a run writes the parent's and the subgraphs' checkpoints together, so one
  session keeps one thread one hash chain (``verify``, ``export`` and ``fork`` cover it all).
- Every ``put``, every ``put_writes`` and every deletion is one turn of the ``langgraph``
  recording harness whose one INPUT holds the record (:mod:`.langgraph_index` lists them):
  a turn is the engine's unit of atomic, serialised, durable writing, so a checkpoint is
  all or nothing, durable when ``put`` returns, and two processes on one thread never
  interleave (the engine's fencing makes the second wait, then LockHeldError). Everything
  is serialised before anything is written: an unserialisable value writes nothing.
- Channel values are stored by version, only those in ``new_versions``; a read rebuilds
  ``channel_values`` from the stored version of each channel the checkpoint names. A list
  value that extends the list of its parent checkpoint's version (a ``MessagesState``'s
  messages) is stored as the new tail only, so the journal grows with what changed, not
  with the whole state at every step. A read decodes only what it has not decoded before.
- Time travel and forks: ``checkpoint_id`` in the config selects a checkpoint; a ``put``
  whose parent is not the latest starts a branch *within the thread*, as LangGraph's own
  savers keep it (``list`` shows every branch, ``get_tuple`` without an id reads the newest
  checkpoint of any branch). A branch costs one record that names its parent: the values it
  shares are versions already stored, nothing is copied, so it is O(1) without a session of
  its own. ``copy_thread`` is the engine's O(1) fork: the new thread's session shares the
  source's journal as its prefix.
- ``delete_thread``, ``prune`` and ``delete_for_runs`` delete nothing: each is a record that
  reads then reflect (``delete_thread`` also soft-deletes the session, hidden from
  ``agentsessions list``, still verifiable); the hash chain verifies offline.
- Checkpoints (without their values) and metadata that are plain JSON are stored as JSON
  under LangGraph's default serializer (``agentsessions log`` shows them); everything else,
  and everything under a serializer of the user's own (``EncryptedSerializer``), is the
  serializer's bytes (base64).
- Versions (``get_next_version``) are ``"<16-digit counter>.<10 hex random>"``: they sort
  as the counter does, and two branches from one checkpoint never give one channel the same
  version (values are stored by version).

Errors: LangGraph's own where it raises them (its serializer's TypeError for an
unserialisable value, before anything is written); ours otherwise (InvalidArgumentError for
a config without ``thread_id``, NotFoundError for ``copy_thread`` of an unknown thread,
UnavailableError when the store is down, LockHeldError when another writer keeps the
thread busy beyond the wait). A closed saver raises RuntimeError, as the OpenAI Agents SDK
adapter does. LangGraph stays optional: nothing outside this module and
:mod:`.langgraph_index` imports it.
"""

from __future__ import annotations

import asyncio
import builtins
import copy
import os
import random
import threading
from collections.abc import AsyncIterator, Callable, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import TYPE_CHECKING, Any

from agentsessions.integrations import missing_framework

try:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import (
        WRITES_IDX_MAP,
        BaseCheckpointSaver,
        ChannelVersions,
        Checkpoint,
        CheckpointMetadata,
        CheckpointTuple,
        DeltaChannelHistory,
        PendingWrite,
        get_checkpoint_metadata,
    )
    from langgraph.checkpoint.serde.base import SerializerProtocol
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
except ImportError as exc:  # the extra is not installed
    raise missing_framework(__name__, exc) from exc

from agentsessions.errors import (
    InvalidArgumentError,
    NotFoundError,
    SessionDeletedError,
)
from agentsessions.sessions.wiring import HARNESSES

from . import recording
from .common import claim_named, engine_of, find_named, message, named, run_named, settled
from .langgraph_index import MISSING, Entry, Thread, decode, encode

if TYPE_CHECKING:
    from agentsessions.sessions.api import Sessions

__all__ = ["HARNESS", "PROJECT", "AgentSessionsSaver"]

HARNESS = recording.LANGGRAPH
"""The recording harness of the saver's turns: it records the inputs and calls nothing."""
PROJECT = "langgraph"
"""The default project of the saver's sessions (one per thread)."""
_KEY = "langgraph"
_STRATEGIES = ("keep_latest", "delete")

HARNESSES.register(HARNESS, recording.create_langgraph)  # also before an install adds it

Body = dict[str, Any]


class AgentSessionsSaver(
    BaseCheckpointSaver[str], AbstractContextManager[Any], AbstractAsyncContextManager[Any]
):
    """LangGraph's ``BaseCheckpointSaver`` kept in agentsessions sessions, one per thread.

    ``where``: a home directory, a store URL (``nats://...``), or an open :class:`Sessions`
    engine (shared, not closed by :meth:`close`); None: the default home. ``key_file``
    encrypts new sessions at rest (a home or URL only). ``serde``: LangGraph's serializer
    of values (default ``JsonPlusSerializer``; an ``EncryptedSerializer`` works too).
    Thread-safe; a context manager (sync and async) that closes what it opened.
    """

    def __init__(
        self,
        where: str | os.PathLike[str] | Sessions | None = None,
        *,
        project: str = PROJECT,
        key_file: str | None = None,
        serde: SerializerProtocol | None = None,
    ) -> None:
        super().__init__(serde=serde)
        self.project = project
        self._engine, self._own = engine_of(where, key_file)
        self._closed = False
        self._threads: dict[str, Thread] = {}
        self._lock = threading.RLock()  # the index: folds and reads
        self._write_locks: dict[str, threading.Lock] = {}

    # --- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:
        """Close the engine this saver opened (a shared engine stays open); idempotent."""
        if not self._closed:
            self._closed = True
            if self._own:
                self._engine.close()

    def __enter__(self) -> AgentSessionsSaver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> AgentSessionsSaver:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def with_allowlist(self, extra_allowlist: Collection[tuple[str, ...]]) -> AgentSessionsSaver:
        """A shallow clone whose serializer also allows ``extra_allowlist`` (LangGraph's
        msgpack allowlist); it shares this saver's engine (close this one last) and keeps
        its own index, since values decode differently under another allowlist."""
        clone = super().with_allowlist(extra_allowlist)
        if clone is self:
            return self
        assert isinstance(clone, AgentSessionsSaver)
        clone._own = False
        clone._threads = {}
        clone._lock = threading.RLock()
        clone._write_locks = {}
        return clone

    def uid(self, thread_id: str) -> str:
        """The agentsessions uid of the thread's session (``agentsessions log/verify UID``);
        "" if nothing has been written to it."""
        thread = self._thread(str(thread_id))
        return thread.uid if thread is not None else ""

    # --- reads ---------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Checkpoint ``checkpoint_id`` of the config's thread and namespace, else the
        newest one; None when there is none."""
        thread_id, ns, cid = _ids(config)
        thread = self._thread(str(thread_id))
        if thread is None:
            return None
        with self._lock:
            entry = thread.get(ns, cid)
            return None if entry is None else self._tuple(thread_id, thread, entry)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """The checkpoints of the config's thread (None: every thread), newest first, of
        its namespace when it names one, matching ``filter`` (metadata equality), older
        than ``before``'s checkpoint, at most ``limit``."""
        self._check_open()
        configurable = (config or {}).get("configurable", {})
        names = [configurable["thread_id"]] if config else self._thread_names()
        ns = configurable.get("checkpoint_ns")
        only = configurable.get("checkpoint_id")
        below = (before or {}).get("configurable", {}).get("checkpoint_id")
        out: builtins.list[CheckpointTuple] = []
        for thread_id in names:
            thread = self._thread(str(thread_id))
            if thread is None:
                continue
            with self._lock:
                for entry in thread.newest(None if ns is None else (ns,)):
                    if limit is not None and len(out) >= limit:
                        return iter(out)
                    if (only and entry.id != only) or (below and entry.id >= below):
                        continue
                    if filter:
                        meta = thread.metadata(self.serde, entry)
                        if not all(meta.get(k) == v for k, v in filter.items()):
                            continue
                    out.append(self._tuple(thread_id, thread, entry))
        return iter(out)

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """For each channel: the writes stored at the checkpoint's ancestors back to the
        nearest one storing a value for it (the ``seed``), oldest first (LangGraph's
        ``DeltaChannel``); walked once over the index."""
        if not channels:
            return {}
        thread_id, ns, cid = _ids(config)
        thread = self._thread(str(thread_id))
        found: dict[str, builtins.list[PendingWrite]] = {c: [] for c in channels}
        seeds: dict[str, Any] = {}
        with self._lock:
            target = thread.get(ns, cid) if thread is not None else None
            at = target.parent if target is not None else None
            remaining = set(channels)
            while thread is not None and at is not None and remaining:
                entry = thread.get(ns, at)
                if entry is None:
                    break
                versions = decode(self.serde, entry.cp).get("channel_versions", {})
                here = {}
                for ch in remaining:
                    if ch in versions:
                        value = thread.value(self.serde, ns, ch, versions[ch])
                        if value is not MISSING:
                            here[ch] = value
                for write in reversed(thread.pending_writes(self.serde, ns, entry.id)):
                    if write[1] in remaining:
                        found[write[1]].append(write)
                seeds.update(here)
                remaining -= set(here)
                at = entry.parent
        result: dict[str, DeltaChannelHistory] = {}
        for ch in channels:
            history: DeltaChannelHistory = {"writes": found[ch][::-1]}
            if ch in seeds:
                history["seed"] = seeds[ch]
            result[ch] = history
        return result

    # --- writes --------------------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store the checkpoint (its values only for ``new_versions``) in one durable turn;
        the config that names it."""
        thread_id, ns, parent = _ids(config)
        values = checkpoint["channel_values"]
        bare = {k: v for k, v in checkpoint.items() if k != "channel_values"}
        meta = get_checkpoint_metadata(config, metadata)
        lists: dict[tuple[str, str], tuple[Any, builtins.list[Any]]] = {}

        def body(thread: Thread | None) -> Body:
            blobs: dict[str, builtins.list[Any]] = {}
            base_versions = self._parent_versions(thread, ns, parent)
            for ch, version in new_versions.items():
                if ch not in values:
                    blobs[ch] = [version]
                    continue
                value = values[ch]
                base = base_versions.get(ch)
                blobs[ch] = [version, *self._blob(thread, ns, ch, value, base, version)]
                if type(value) is list:
                    lists[ns, ch] = (version, list(value))
            put = {
                "ns": ns,
                "id": checkpoint["id"],
                "parent": parent,
                "cp": encode(self.serde, bare, plain=self._plain),
                "meta": encode(self.serde, meta, plain=self._plain),
                "blobs": blobs,
            }
            return {"put": put}

        thread = self._commit(str(thread_id), body)
        if thread is not None:
            with self._lock:
                thread.live.update(lists)
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": checkpoint["id"],
            }
        }

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes for the config's checkpoint in one durable turn: a regular
        write already stored for (task, index) is kept, a special one (error, interrupt,
        resume, scheduled) replaces it."""
        thread_id, ns, cid = _ids(config)
        if cid is None:
            raise InvalidArgumentError("put_writes needs a checkpoint_id in the config")
        keyed = [(WRITES_IDX_MAP.get(ch, idx), ch, v) for idx, (ch, v) in enumerate(writes)]
        encoded = [(idx, ch, encode(self.serde, v)) for idx, ch, v in keyed]  # before any write

        def body(thread: Thread | None) -> Body | None:
            stored = thread.writes.get((ns, cid), {}) if thread is not None else {}
            new = [[i, c, v] for i, c, v in encoded if i < 0 or (task_id, i) not in stored]
            if not new:
                return None  # a retry of writes already stored
            return {"writes": {"ns": ns, "id": cid, "task": task_id, "path": task_path, "w": new}}

        self._commit(str(thread_id), body)

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's checkpoints and writes: a record, then the session is
        soft-deleted (hidden from list, still verifiable). An unknown thread: nothing."""
        name = str(thread_id)
        thread = self._thread(name)
        if thread is None:
            return
        self._commit(name, lambda t: {"delete": 1} if t is not None else None)
        self._engine.delete(thread.uid)
        with self._lock:
            self._threads.pop(name, None)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Make thread ``target`` a copy of thread ``source`` (every checkpoint, namespace
        and write): the engine's O(1) fork, whose new session shares the source's journal.
        NotFoundError for an unknown source; InvalidArgumentError when the target exists."""
        source, target = str(source_thread_id), str(target_thread_id)
        thread = self._thread(source)
        if thread is None:
            raise NotFoundError(f"thread {source!r} has no checkpoints to copy")
        with self._write_lock(target):
            if self._thread(target) is not None:
                raise InvalidArgumentError(f"thread {target!r} exists; copy to a new thread")
            [child] = self._engine.fork(thread.uid, names=[target])
            claim_named(self._engine, self.project, target, child.uid)  # exists: refused
        self._thread(target)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep only the newest checkpoint of each namespace (``keep_latest``) or none
        (``delete``) of each thread: a record per thread that had more."""
        if strategy not in _STRATEGIES:
            raise InvalidArgumentError(f"prune strategy must be one of {_STRATEGIES}")
        for thread_id in thread_ids:

            def body(thread: Thread | None) -> Body | None:
                if thread is None:
                    return None
                keep = []
                if strategy == "keep_latest":
                    for ns in thread.ids:
                        entry = thread.get(ns, None)
                        if entry is not None:
                            keep.append([ns, entry.id])
                if sum(1 for _ in thread.newest()) == len(keep):
                    return None  # nothing to hide
                return {"prune": keep}

            if self._thread(str(thread_id)) is not None:
                self._commit(str(thread_id), body)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) whose metadata ``run_id`` is one of
        ``run_ids``, in every thread of the project: a record per thread that has any."""
        runs = set(run_ids)
        if not runs:
            return
        for name in self._thread_names():

            def body(thread: Thread | None) -> Body | None:
                if thread is None:
                    return None
                hit = {thread.metadata(self.serde, e).get("run_id") for e in thread.newest()}
                present = sorted(r for r in runs & hit if isinstance(r, str))
                return {"drop_runs": present} if present else None

            if self._thread(name) is not None:
                self._commit(name, body)

    def get_next_version(self, current: str | int | float | None, channel: None) -> str:
        """The version after ``current``: ``"<counter + 1, 16 digits>.<10 hex random>"``."""
        if current is None:
            counter = 0
        elif isinstance(current, (int, float)):
            counter = int(current)
        else:
            counter = int(str(current).split(".", 1)[0])
        return f"{counter + 1:016d}.{random.getrandbits(40):010x}"

    # --- async: the same work in a worker thread ------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        def run() -> builtins.list[CheckpointTuple]:
            return list(self.list(config, filter=filter, before=before, limit=limit))

        for item in await asyncio.to_thread(run):
            yield item

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return await asyncio.to_thread(
            lambda: self.get_delta_channel_history(config=config, channels=channels)
        )

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await settled(
            asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)
        )

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await settled(asyncio.to_thread(self.put_writes, config, writes, task_id, task_path))

    async def adelete_thread(self, thread_id: str) -> None:
        await settled(asyncio.to_thread(self.delete_thread, thread_id))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await settled(asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await settled(asyncio.to_thread(self.prune, thread_ids, strategy=strategy))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await settled(asyncio.to_thread(self.delete_for_runs, run_ids))

    # --- the index -------------------------------------------------------------------------

    @property
    def _plain(self) -> bool:
        """Whether checkpoints and metadata that are plain JSON are stored as such (readable
        in ``agentsessions log``): with LangGraph's default serializer only, so a serializer
        of the user's own (an ``EncryptedSerializer``) sees everything the saver stores."""
        return type(self.serde) is JsonPlusSerializer

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{type(self).__name__} is closed")

    def _thread_names(self) -> builtins.list[str]:
        """Every live thread of the project (its sessions' names), once each."""
        names = dict.fromkeys(name for name, _, _ in named(self._engine, self.project) if name)
        return list(names)

    def _thread(self, name: str, *, fresh: bool = True) -> Thread | None:
        """The thread's index, caught up with its journal (``fresh``), or None when it has
        no live session."""
        self._check_open()
        with self._lock:
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
            body = _body(record.event)
            if body is not None:
                thread.fold(record.seq, body, self.serde)
            thread.seq = record.seq

    def _commit(self, name: str, build: Callable[[Thread | None], Body | None]) -> Thread | None:
        """Write ``build(thread)``'s record as one turn (creating the thread's session on
        its first write) and fold it; the thread. A session deleted meanwhile by another
        process is looked up again once (the record is built again for the new one)."""
        with self._write_lock(name):
            for attempt in range(2):
                thread = self._thread(name, fresh=False)
                with self._lock:
                    body = build(thread)
                if body is None:
                    return thread
                uid = thread.uid if thread is not None else ""
                try:
                    frame = run_named(
                        self._engine, self.project, name, uid, [message(_KEY, body)], HARNESS
                    )
                except SessionDeletedError:
                    if attempt:
                        raise
                    with self._lock:
                        self._threads.pop(name, None)
                    continue
                return self._folded(name, thread, frame.session.uid, frame.turn, body)
        raise AssertionError("unreachable")

    def _folded(self, name: str, thread: Thread | None, uid: str, turn: Any, body: Body) -> Thread:
        """The thread with the turn just written folded in: directly when it follows what
        was folded (no read), else by reading the journal up to it."""
        with self._lock:
            if thread is None or thread.uid != uid or self._threads.get(name) is not thread:
                thread = self._threads[name] = Thread(uid)
            if turn is not None and thread.seq == turn.first_seq - 1:
                thread.fold(turn.first_seq + 1, body, self.serde)  # START, our INPUT, END
                thread.seq = turn.last_seq
            else:
                self._catch_up(thread)
            return thread

    def _write_lock(self, name: str) -> threading.Lock:
        with self._lock:
            return self._write_locks.setdefault(name, threading.Lock())

    def _parent_versions(self, thread: Thread | None, ns: str, parent: str | None) -> Any:
        """The channel versions of the parent checkpoint, where a list may continue."""
        entry = thread.entries.get((ns, parent)) if thread is not None and parent else None
        return decode(self.serde, entry.cp).get("channel_versions", {}) if entry else {}

    def _blob(
        self, thread: Thread | None, ns: str, ch: str, value: Any, base: Any, version: Any
    ) -> builtins.list[Any]:
        """A channel value as stored: the tail after the parent's list at version ``base``
        when it extends that list (``[tail, base]``), else the whole value (``[value]``)."""
        if type(value) is list and thread is not None and base is not None and base != version:
            stored = thread.base_list(self.serde, ns, ch, base)
            if stored and len(value) >= len(stored) and value[: len(stored)] == stored:
                return [encode(self.serde, value[len(stored) :]), base]
        return [encode(self.serde, value)]

    def _tuple(self, thread_id: Any, thread: Thread, entry: Entry) -> CheckpointTuple:
        checkpoint = decode(self.serde, entry.cp)
        values = {}
        for ch, version in checkpoint.get("channel_versions", {}).items():
            value = thread.value(self.serde, entry.ns, ch, version)
            if value is not MISSING:
                values[ch] = value
        checkpoint["channel_values"] = values
        meta = copy.deepcopy(thread.metadata(self.serde, entry))
        parent = None
        if entry.parent:
            parent = _config(thread_id, entry.ns, entry.parent)
        return CheckpointTuple(
            config=_config(thread_id, entry.ns, entry.id),
            checkpoint=checkpoint,
            metadata=meta,
            parent_config=parent,
            pending_writes=thread.pending_writes(self.serde, entry.ns, entry.id),
        )


def _ids(config: RunnableConfig) -> tuple[Any, str, str | None]:
    """(thread_id, checkpoint_ns, checkpoint_id or None) of a config."""
    configurable = config.get("configurable") or {}
    thread_id = configurable.get("thread_id")
    if thread_id is None or thread_id == "":
        raise InvalidArgumentError("the config names no thread_id (configurable.thread_id)")
    return thread_id, configurable.get("checkpoint_ns") or "", configurable.get("checkpoint_id")


def _config(thread_id: Any, ns: str, cid: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": cid}}


def _body(event: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The saver's record in a journal event, or None (another kind of event)."""
    if event.get("kind") != "EVENT_INPUT":
        return None
    for part in (event.get("message") or {}).get("parts", ()):
        body = (part.get("data") or {}).get("data", {}).get(_KEY)
        if isinstance(body, dict):
            return body
    return None
