"""One LangGraph thread as the saver knows it: an index folded from its session's records.

The records (:mod:`.langgraph` builds them, :mod:`.langgraph_threads` writes them: each turn
of the ``langgraph`` recording harness has one INPUT with a DataPart ``{"langgraph": BODY}``
or ``{"langgraph": [BODY, ...]}``, folded in order), and what folding them does. A value is
one of :mod:`.langgraph_codec`'s forms; a checkpoint is named by its id, or by its number
(``n``: the n-th checkpoint first put in the thread, from 0, in journal order) once put:

- ``{"put": {"ns"?, "id", "parent", "cp", "meta"?, "v"?, "blobs"}}``: checkpoint ``id`` of
  namespace ``ns`` (absent: ``""``) with its parent (or null), the checkpoint without
  ``channel_values`` and its metadata, each whole or as a patch (a JSON object; ``meta``
  absent: an empty one) on its parent's: the parent's checkpoint with this ``id`` and its
  ``channel_versions`` updated by the blobs' versions, the parent's metadata with the next
  ``step``; ``blobs`` holds only the channels of ``new_versions``, each ``[version,
  value]``, ``[version, suffix, base_version]`` (a list that extends the list stored at
  ``base_version`` of the same channel: only the new tail is stored; null: the parent's
  version of the channel) or ``[version]`` (the channel is empty at that version), the
  version left out where it is the put's ``v``.
- ``{"writes": {"ns"?, "id", "task", "path", "w": [[idx, channel, value], ...]}}``: a
  task's writes for checkpoint ``id``; a regular write (idx >= 0) already folded is kept
  (the first one wins: put_writes is idempotent per task and index), a special one (idx <
  0: error, interrupt, resume, scheduled) replaces the earlier.
- ``{"prune": [[ns, id], ...]}``: every checkpoint folded so far is hidden but these;
  ``{"drop_runs": [run_id, ...]}``: every checkpoint folded so far whose metadata
  ``run_id`` is one of them is hidden; ``{"delete": 1}``: the thread is gone (the session is
  soft-deleted right after). Nothing is ever removed from the journal; a hidden
  checkpoint's writes go with it, while stored channel values stay (later checkpoints may
  hold the same versions).

Invariant: folding the same records in journal order yields the same index in every process
(checkpoint and piece numbers included), so two processes agree, a writer's index is a
prefix of every later reader's, and a read folds only the records after the last one it
folded. Decoded list values are cached per channel (the last one built), so reading the
latest checkpoint of a long conversation decodes only what changed since the previous read.
Lists handed out are fresh, their elements shared with the cache: LangGraph never mutates a
checkpoint's values in place (its own ``MemorySaverAssertImmutable`` checks that).
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.base import PendingWrite, writes_sort_key
from langgraph.checkpoint.serde.base import SerializerProtocol

from .langgraph_codec import Table, decode, merge, resolve

Version = str | int | float
Key = tuple[str, str, Version]  # (ns, channel, version)
Stored = list[Any] | tuple[str, bytes]
"""A value as the index keeps it: its record's form, pieces joined (:mod:`.langgraph_codec`)."""
_MISSING = object()


@dataclass
class Entry:
    """One checkpoint: its record's parts, still serialized."""

    ns: str
    id: str
    parent: str | None
    cp: Stored
    meta: Stored
    hidden: bool = False
    decoded_meta: Any = _MISSING


@dataclass
class Blob:
    """A channel's value at one version: whole, a tail on ``base``, or empty (None)."""

    value: Stored | None
    base: Version | None = None


@dataclass
class Thread:
    """The folded index of one thread's session (``uid``) up to journal seq ``seq``."""

    uid: str
    seq: int = 0
    deleted: bool = False
    busy: bool = False
    """Records are folded in that are not durable yet (a commit in flight): readers wait."""
    checkpoints: list[tuple[str, str]] = field(default_factory=list)
    """Each checkpoint put, (ns, id), in the order of its first put: records name it by its
    place here."""
    numbers: dict[tuple[str, str], int] = field(default_factory=dict)
    pieces: Table = field(default_factory=Table)
    """The numbered pieces of the values stored so far (:mod:`.langgraph_codec`)."""
    entries: dict[tuple[str, str], Entry] = field(default_factory=dict)
    ids: dict[str, list[str]] = field(default_factory=dict)  # ns -> ids, ascending
    blobs: dict[Key, Blob] = field(default_factory=dict)
    writes: dict[tuple[str, str], dict[tuple[str, int], tuple[str, str, Stored, str]]] = field(
        default_factory=dict
    )
    built: dict[tuple[str, str], tuple[Version, list[Any]]] = field(default_factory=dict)
    """The last decoded list per (ns, channel) and its version: a read builds on it."""
    live: dict[tuple[str, str], tuple[Version, list[Any]]] = field(default_factory=dict)
    """The last list this process put per (ns, channel) (a copy of the caller's list, its
    elements the caller's): the next put compares its prefix by identity, cheaply."""

    # --- folding -----------------------------------------------------------------------

    def fold(self, body: Mapping[str, Any], serde: SerializerProtocol) -> None:
        """Apply one record's body (see the module docstring)."""
        if self.deleted:
            return
        if "put" in body:
            self._fold_put(body["put"])
        elif "writes" in body:
            self._fold_writes(body["writes"])
        elif "prune" in body:
            keep = {(ns, cid) for ns, cid in body["prune"]}
            for key, entry in self.entries.items():
                if key not in keep:
                    entry.hidden = True
        elif "drop_runs" in body:
            runs = set(body["drop_runs"])
            for entry in self.entries.values():
                if not entry.hidden and self.metadata(serde, entry).get("run_id") in runs:
                    entry.hidden = True
        elif "delete" in body:
            self.deleted = True

    def _fold_put(self, put: Mapping[str, Any]) -> None:
        ns, cid = put.get("ns", ""), put["id"]
        parent = self.checkpoint_id(ns, put["parent"])
        if (ns, cid) not in self.entries:
            self.numbers[ns, cid] = len(self.checkpoints)
            self.checkpoints.append((ns, cid))
            ids = self.ids.setdefault(ns, [])
            if not ids or ids[-1] < cid:
                ids.append(cid)
            else:
                bisect.insort(ids, cid)
        blobs = {ch: _blob_parts(blob, put.get("v")) for ch, blob in put["blobs"].items()}
        versions = {channel: blob[0] for channel, blob in blobs.items()}
        cp_base, meta_base = self.bases(ns, parent, cid, versions)
        cp = self._whole(put["cp"], cp_base)
        meta = self._whole(put.get("meta", {}), meta_base)  # absent: the base as it is
        self.entries[ns, cid] = Entry(ns, cid, parent, cp, meta)
        for channel in sorted(blobs):  # the order pieces are numbered in
            version, rest = blobs[channel]
            if not rest:
                self.blobs[ns, channel, version] = Blob(None)
                continue
            base = rest[1] if len(rest) > 1 else None
            if len(rest) > 1 and base is None:  # a tail on the parent's version
                base = self._parent_version(ns, parent, channel)
            self.blobs[ns, channel, version] = Blob(resolve(rest[0], self.pieces), base)

    def _parent_version(self, ns: str, parent: str | None, channel: str) -> Any:
        if not self.has_plain_versions(ns, parent):
            raise LookupError(f"a tail of {channel!r} names a parent that has no versions")
        return self.entries[ns, parent].cp[0]["channel_versions"][channel]  # type: ignore[index]

    def has_plain_versions(self, ns: str, parent: str | None) -> bool:
        """Whether checkpoint ``parent`` is stored with its channel versions as plain JSON
        (a tail on its version of a channel can then leave that version out)."""
        entry = self.entries.get((ns, parent)) if parent else None
        return entry is not None and _plain(entry.cp) and isinstance(entry.cp[0], dict)

    def bases(
        self, ns: str, parent: str | None, cid: str, versions: Mapping[str, Any]
    ) -> tuple[Any, Any]:
        """What a put of checkpoint ``cid`` with channel ``versions`` on ``parent`` patches
        (a JSON object): the parent's checkpoint with this id and the parent's channel
        versions updated by these, and the parent's metadata with the next ``step``; None
        each that is not plain JSON (no parent: neither)."""
        entry = self.entries.get((ns, parent)) if parent else None
        if entry is None:
            return None, None
        cp = entry.cp[0] if _plain(entry.cp) else None
        if isinstance(cp, dict):
            cp = {**cp, "id": cid}
            cp["channel_versions"] = {**cp.get("channel_versions", {}), **versions}
        meta = entry.meta[0] if _plain(entry.meta) else None
        if isinstance(meta, dict) and type(meta.get("step")) is int:
            meta = {**meta, "step": meta["step"] + 1}
        return cp, meta

    def _whole(self, form: Any, base: Any) -> Stored:
        """A checkpoint's or metadata's form as the index keeps it (a patch applied)."""
        if not isinstance(form, dict):
            return resolve(form, self.pieces)
        if base is None:
            raise LookupError("a checkpoint is stored as a patch on a parent that has none")
        return [merge(base, form)]

    def checkpoint_id(self, ns: str, ref: Any) -> Any:
        """A checkpoint as a record names it: its id, or the number of its first put in
        this thread (from 0, in journal order) in namespace ``ns``."""
        if type(ref) is not int:
            return ref
        if not 0 <= ref < len(self.checkpoints) or self.checkpoints[ref][0] != ns:
            raise LookupError(f"a record names checkpoint number {ref}, never put in {ns!r}")
        return self.checkpoints[ref][1]

    def reference(self, ns: str, cid: str | None) -> Any:
        """How a record names checkpoint ``cid`` of ``ns``: its number once it was put, else
        its id (see :meth:`checkpoint_id`)."""
        return self.numbers.get((ns, cid), cid) if cid is not None else None

    def _fold_writes(self, body: Mapping[str, Any]) -> None:
        ns = body.get("ns", "")
        stored = self.writes.setdefault((ns, self.checkpoint_id(ns, body["id"])), {})
        for idx, channel, value in body["w"]:
            key = (body["task"], idx)
            resolved = resolve(value, self.pieces)  # its pieces are stored, kept or not
            if idx >= 0 and key in stored:
                continue
            stored[key] = (body["task"], channel, resolved, body["path"])

    # --- reading -----------------------------------------------------------------------

    def get(self, ns: str, cid: str | None) -> Entry | None:
        """Checkpoint ``cid`` of ``ns`` (None: the latest), unless hidden."""
        if cid is None:
            return next(self.newest((ns,)), None)
        entry = self.entries.get((ns, cid))
        return entry if entry is not None and not entry.hidden else None

    def newest(self, namespaces: tuple[str, ...] | None = None) -> Iterator[Entry]:
        """The visible checkpoints of ``namespaces`` (None: all), newest id first."""
        chosen = self.ids if namespaces is None else {ns: self.ids.get(ns, []) for ns in namespaces}
        streams = [_descending(ns, ids) for ns, ids in chosen.items()]
        for cid, ns in heapq.merge(*streams, reverse=True):
            entry = self.entries[ns, cid]
            if not entry.hidden:
                yield entry

    def metadata(self, serde: SerializerProtocol, entry: Entry) -> Any:
        """The checkpoint's metadata (decoded once; a fresh copy is the caller's)."""
        if entry.decoded_meta is _MISSING:
            entry.decoded_meta = decode(serde, entry.meta)
        return entry.decoded_meta

    def value(self, serde: SerializerProtocol, ns: str, channel: str, version: Version) -> Any:
        """The channel's value at ``version``, or ``_MISSING`` (unknown or empty)."""
        blob = self.blobs.get((ns, channel, version))
        if blob is None or blob.value is None:
            return _MISSING
        if blob.base is None and not self._cached(ns, channel, version):
            return decode(serde, blob.value)
        return list(self._build(serde, ns, channel, version))

    def _cached(self, ns: str, channel: str, version: Version) -> bool:
        built = self.built.get((ns, channel))
        return built is not None and built[0] == version

    def _build(self, serde: SerializerProtocol, ns: str, channel: str, version: Version) -> Any:
        """A list value: the chain of tails back to a whole value (or the cached build)."""
        chain: list[Stored] = []
        at: Version | None = version
        root: Any = _MISSING
        built = self.built.get((ns, channel))
        while at is not None:
            if len(chain) > len(self.blobs):
                raise LookupError(f"channel {channel!r} version {version!r}: a cycle of tails")
            if built is not None and built[0] == at:
                root = built[1]
                break
            blob = self.blobs.get((ns, channel, at))
            if blob is None or blob.value is None:
                raise LookupError(f"channel {channel!r} version {at!r} is not stored")
            if blob.base is None:
                root = decode(serde, blob.value)
                break
            chain.append(blob.value)
            at = blob.base
        if not chain:
            value = root
        else:
            value = list(root)
            for tail in reversed(chain):
                value.extend(decode(serde, tail))
        if type(value) is list:
            self.built[ns, channel] = (version, value)
        return value

    def base_list(
        self, serde: SerializerProtocol, ns: str, channel: str, version: Version
    ) -> list[Any] | None:
        """The list stored at ``version`` to compare a new value's prefix with (the copy this
        process put, else the decoded one), or None when it is not a stored list."""
        live = self.live.get((ns, channel))
        if live is not None and live[0] == version and (ns, channel, version) in self.blobs:
            return live[1]
        blob = self.blobs.get((ns, channel, version))
        if blob is None or blob.value is None:
            return None
        if blob.base is None and not self._cached(ns, channel, version):
            value = decode(serde, blob.value)
            if type(value) is not list:
                return None
            self.built[ns, channel] = (version, value)
            return value
        built = self._build(serde, ns, channel, version)
        return built if type(built) is list else None

    def pending_writes(self, serde: SerializerProtocol, ns: str, cid: str) -> list[PendingWrite]:
        """The writes stored for checkpoint ``cid``, in ``writes_sort_key`` order."""
        stored = self.writes.get((ns, cid), {})
        order = sorted(stored, key=lambda k: writes_sort_key(stored[k][3], k[0], k[1]))
        return [(stored[k][0], stored[k][1], decode(serde, stored[k][2])) for k in order]


def _descending(ns: str, ids: list[str]) -> Iterator[tuple[str, str]]:
    for cid in reversed(ids):
        yield cid, ns


def _blob_parts(blob: list[Any], shared: Any) -> tuple[Any, list[Any]]:
    """(version, [value, base?]) of a put's blob: its own version first (a scalar), else
    the put's shared ``v``."""
    if blob and not isinstance(blob[0], (list, dict)):
        return blob[0], blob[1:]
    return shared, blob


def _plain(stored: Stored) -> bool:
    return isinstance(stored, list) and len(stored) == 1


MISSING = _MISSING
"""What :meth:`Thread.value` returns for a channel with no stored value."""
