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
- Every ``put``, every ``put_writes`` and every deletion is a record in a turn of the
  ``langgraph`` recording harness, whose one INPUT holds it (:mod:`.langgraph_index` lists
  them): a turn is the engine's unit of atomic, serialised, durable writing, so a
  checkpoint is all or nothing, durable when ``put`` returns, and two processes on one
  thread never interleave (the engine's fencing makes the second wait, then
  LockHeldError). Records of one thread that LangGraph makes at once (its default
  ``async`` durability saves a checkpoint while the next task's writes are saved) share
  one turn (:mod:`.langgraph_threads`): a graph step costs one turn, not one per call.
  Everything is serialised before anything is written: an unserialisable value writes
  nothing.
- Channel values are stored by version, only those in ``new_versions``; a read rebuilds
  ``channel_values`` from the stored version of each channel the checkpoint names. A list
  value that extends the list of its parent checkpoint's version (a ``MessagesState``'s
  messages) is stored as the new tail only, so the journal grows with what changed, not
  with the whole state at every step. A read decodes only what it has not decoded before.
  Under LangGraph's default serializer a value's long strings (a message's text) and the
  framing of each message class are stored once per thread (:mod:`.langgraph_codec`),
  though LangGraph hands the saver each message three times (as input, as a task's
  write, in the checkpoint), and a checkpoint and its metadata are a JSON merge patch on
  their parent's: a ``MessagesState`` chat takes about 1.9x the bytes of the ``chat``
  harness's journal of the same conversation.
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
  under LangGraph's default serializer (``agentsessions log`` shows them, and a message's
  text); everything else, and everything under a serializer of the user's own
  (``EncryptedSerializer``), is the serializer's bytes (base64).
- Versions (``get_next_version``) are ``"<counter>.<7 random base-36 digits>"``, the
  counter in base 36 after a letter that gives its length (``b1``, ``c10``): they sort as
  the counter does, and two branches from one checkpoint never give one channel the same
  version (values are stored by version).

Errors: LangGraph's own where it raises them (its serializer's TypeError for an
unserialisable value, before anything is written); ours otherwise (InvalidArgumentError for
a config without ``thread_id``, NotFoundError for ``copy_thread`` of an unknown thread,
UnavailableError when the store is down, LockHeldError when another writer keeps the
thread busy beyond the wait). A closed saver raises RuntimeError, as the OpenAI Agents SDK
adapter does. LangGraph stays optional: nothing outside this module and its
``langgraph_*`` helpers imports it.
"""

from __future__ import annotations

import asyncio
import builtins
import copy
import os
from collections.abc import AsyncIterator, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager, contextmanager
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

from agentsessions.errors import InvalidArgumentError, NotFoundError
from agentsessions.sessions.wiring import HARNESSES

from . import recording
from .common import claim_named, engine_of, settled
from .langgraph_codec import decode, encode, patched, shared_version, version_after
from .langgraph_index import MISSING, Entry, Thread
from .langgraph_threads import Body, Threads

if TYPE_CHECKING:
    from agentsessions.sessions.api import Sessions

__all__ = ["HARNESS", "PROJECT", "AgentSessionsSaver"]

HARNESS = recording.LANGGRAPH
"""The recording harness of the saver's turns: it records the inputs and calls nothing."""
PROJECT = "langgraph"
"""The default project of the saver's sessions (one per thread)."""
_STRATEGIES = ("keep_latest", "delete")

HARNESSES.register(HARNESS, recording.create_langgraph)  # also before an install adds it


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
        self._threads = Threads(self._engine, project, self.serde)

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
        clone._threads = Threads(clone._engine, clone.project, clone.serde)
        return clone

    def uid(self, thread_id: str) -> str:
        """The agentsessions uid of the thread's session (``agentsessions log/verify UID``);
        "" if nothing has been written to it."""
        with self._reading(str(thread_id)) as thread:
            return thread.uid if thread is not None else ""

    # --- reads ---------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Checkpoint ``checkpoint_id`` of the config's thread and namespace, else the
        newest one; None when there is none."""
        thread_id, ns, cid = _ids(config)
        with self._reading(str(thread_id)) as thread:
            entry = thread.get(ns, cid) if thread is not None else None
            if thread is None or entry is None:
                return None
            return self._tuple(thread_id, thread, entry)

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
        names = [configurable["thread_id"]] if config else self._threads.names()
        ns = configurable.get("checkpoint_ns")
        only = configurable.get("checkpoint_id")
        below = (before or {}).get("configurable", {}).get("checkpoint_id")
        out: builtins.list[CheckpointTuple] = []
        for thread_id in names:
            with self._reading(str(thread_id)) as thread:
                if thread is None:
                    continue
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
        found: dict[str, builtins.list[PendingWrite]] = {c: [] for c in channels}
        seeds: dict[str, Any] = {}
        with self._reading(str(thread_id)) as thread:
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
        cp_form = encode(self.serde, bare, plain=self._plain, pieces=self._plain)
        meta_form = encode(self.serde, meta, plain=self._plain, pieces=self._plain)

        def body(thread: Thread | None) -> Body:
            known = thread.pieces if thread is not None else None
            blobs: dict[str, builtins.list[Any]] = {}
            lists = {}
            base_versions = self._parent_versions(thread, ns, parent)
            for ch, version in new_versions.items():
                if ch not in values:
                    blobs[ch] = [version]
                    continue
                value = values[ch]
                base = base_versions.get(ch)
                blobs[ch] = [version, *self._blob(thread, ns, parent, ch, value, base, version)]
                if type(value) is list:
                    lists[ns, ch] = (version, list(value))
            cp: Any = cp_form.stored(known)
            meta: Any = meta_form.stored(known)
            if thread is not None:
                thread.live.update(lists)
                cp_base, meta_base = thread.bases(ns, parent, checkpoint["id"], new_versions)
                cp = patched(cp_base, cp_form, cp)
                meta = patched(meta_base, meta_form, meta)
            ref = thread.reference(ns, parent) if thread is not None else parent
            put = {"id": checkpoint["id"], "parent": ref, "cp": cp, "meta": meta}
            if meta == {}:
                del put["meta"]  # an empty patch: the parent's, next step
            put.update(shared_version(blobs))
            if ns:
                put["ns"] = ns
            return {"put": put}

        self._check_open()
        self._threads.commit(str(thread_id), body, kind="put")
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
        """Store a task's writes for the config's checkpoint, durably: a regular write
        already stored for (task, index) is kept, a special one (error, interrupt, resume,
        scheduled) replaces it."""
        thread_id, ns, cid = _ids(config)
        if cid is None:
            raise InvalidArgumentError("put_writes needs a checkpoint_id in the config")
        keyed = [(WRITES_IDX_MAP.get(ch, idx), ch, v) for idx, (ch, v) in enumerate(writes)]
        pieces = self._plain
        encoded = [(i, ch, encode(self.serde, v, pieces=pieces)) for i, ch, v in keyed]

        def body(thread: Thread | None) -> Body | None:
            stored = thread.writes.get((ns, cid), {}) if thread is not None else {}
            known = thread.pieces if thread is not None else None
            new = [
                [i, c, v.stored(known)]
                for i, c, v in encoded
                if i < 0 or (task_id, i) not in stored
            ]
            if not new:
                return None  # a retry of writes already stored
            ref = thread.reference(ns, cid) if thread is not None else cid
            record = {"id": ref, "task": task_id, "path": task_path, "w": new}
            if ns:
                record["ns"] = ns
            return {"writes": record}

        self._check_open()
        self._threads.commit(str(thread_id), body, kind="writes")

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's checkpoints and writes: a record, then the session is
        soft-deleted (hidden from list, still verifiable). An unknown thread: nothing."""
        name = str(thread_id)

        def deleted(thread: Thread) -> None:
            self._engine.delete(thread.uid)
            self._threads.forget(name)

        if self.uid(name):
            build = lambda t: {"delete": 1} if t is not None else None  # noqa: E731
            self._threads.commit(name, build, kind="solo", after=deleted)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Make thread ``target`` a copy of thread ``source`` (every checkpoint, namespace
        and write): the engine's O(1) fork, whose new session shares the source's journal.
        NotFoundError for an unknown source; InvalidArgumentError when the target exists."""
        source, target = str(source_thread_id), str(target_thread_id)
        uid = self.uid(source)
        if not uid:
            raise NotFoundError(f"thread {source!r} has no checkpoints to copy")
        with self._threads.writing(target):
            if self.uid(target):
                raise InvalidArgumentError(f"thread {target!r} exists; copy to a new thread")
            [child] = self._engine.fork(uid, names=[target])
            claim_named(self._engine, self.project, target, child.uid)  # exists: refused
        self.uid(target)

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

            if self.uid(str(thread_id)):
                self._threads.commit(str(thread_id), body, kind="solo")

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) whose metadata ``run_id`` is one of
        ``run_ids``, in every thread of the project: a record per thread that has any."""
        runs = set(run_ids)
        if not runs:
            return
        self._check_open()
        for name in self._threads.names():

            def body(thread: Thread | None) -> Body | None:
                if thread is None:
                    return None
                hit = {thread.metadata(self.serde, e).get("run_id") for e in thread.newest()}
                present = sorted(r for r in runs & hit if isinstance(r, str))
                return {"drop_runs": present} if present else None

            if self.uid(name):
                self._threads.commit(name, body, kind="solo")

    def get_next_version(self, current: str | int | float | None, channel: None) -> str:
        """The version after ``current``: the counter + 1 in base 36 after a letter giving
        its digits (``b1``, ``c10``, ...: they sort as the counter does, and after the
        16-digit decimal versions of earlier releases), a dot and 7 random base-36 digits
        (two branches from one checkpoint never give one channel the same version)."""
        return version_after(current)

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

    @contextmanager
    def _reading(self, name: str) -> Iterator[Thread | None]:
        """The thread's index, caught up with its journal and held still (None: none)."""
        self._check_open()
        with self._threads.reading(name) as thread:
            yield thread

    def _parent_versions(self, thread: Thread | None, ns: str, parent: str | None) -> Any:
        """The channel versions of the parent checkpoint, where a list may continue."""
        entry = thread.entries.get((ns, parent)) if thread is not None and parent else None
        return decode(self.serde, entry.cp).get("channel_versions", {}) if entry else {}

    def _blob(
        self,
        thread: Thread | None,
        ns: str,
        parent: str | None,
        ch: str,
        value: Any,
        base: Any,
        version: Any,
    ) -> builtins.list[Any]:
        """A channel value as stored: the tail after the parent's list at version ``base``
        when it extends that list (``[tail, base]``), else the whole value (``[value]``)."""
        if type(value) is list and thread is not None and base is not None and base != version:
            stored = thread.base_list(self.serde, ns, ch, base)
            if stored and len(value) >= len(stored) and value[: len(stored)] == stored:
                tail = encode(self.serde, value[len(stored) :], pieces=self._plain)
                implied = thread.has_plain_versions(ns, parent)  # base: the parent's
                return [tail.stored(thread.pieces), None if implied else base]
        known = thread.pieces if thread is not None else None
        return [encode(self.serde, value, pieces=self._plain).stored(known)]

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
