"""One LangGraph thread as the saver knows it: an index folded from its session's records.

The records (:mod:`.langgraph` writes them, one INPUT per turn of the ``langgraph``
recording harness, a DataPart ``{"langgraph": BODY}``) and what folding them does:

- ``{"put": {"ns", "id", "parent", "cp", "meta", "blobs"}}``: checkpoint ``id`` of namespace
  ``ns`` with its parent id (or null), the checkpoint without ``channel_values`` and its
  metadata; ``blobs`` holds only the channels of ``new_versions``, each
  ``[version, value]``, ``[version, suffix, base_version]`` (a list that extends the list
  stored at ``base_version`` of the same channel: only the new tail is stored) or
  ``[version]`` (the channel is empty at that version). A value is ``[json]`` (plain JSON
  that round-trips exactly: no float, no tuple, integers within 2**53) or
  ``[type, base64]`` (the saver's ``serde.dumps_typed``).
- ``{"writes": {"ns", "id", "task", "path", "w": [[idx, channel, value], ...]}}``: a task's
  writes for checkpoint ``id``; a regular write (idx >= 0) already folded is kept (the first
  one wins: put_writes is idempotent per task and index), a special one (idx < 0: error,
  interrupt, resume, scheduled) replaces the earlier.
- ``{"prune": [[ns, id], ...]}``: every checkpoint folded so far is hidden but these;
  ``{"drop_runs": [run_id, ...]}``: every checkpoint folded so far whose metadata
  ``run_id`` is one of them is hidden; ``{"delete": 1}``: the thread is gone (the session is
  soft-deleted right after). Nothing is ever removed from the journal; a hidden
  checkpoint's writes go with it, while stored channel values stay (later checkpoints may
  hold the same versions).

Invariant: folding the same records in journal order yields the same index in every process,
so two processes agree, and a read folds only the records after the last one it folded.
Decoded list values are cached per channel (the last one built), so reading the latest
checkpoint of a long conversation decodes only what changed since the previous read. Lists
handed out are fresh, their elements shared with the cache: LangGraph never mutates a
checkpoint's values in place (its own ``MemorySaverAssertImmutable`` checks that).
"""

from __future__ import annotations

import base64
import bisect
import heapq
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec
from langgraph.checkpoint.base import PendingWrite, writes_sort_key
from langgraph.checkpoint.serde.base import SerializerProtocol

Version = str | int | float
Key = tuple[str, str, Version]  # (ns, channel, version)
_MAX_INT = 2**53 - 1
_MISSING = object()


def encode(serde: SerializerProtocol, value: Any, *, plain: bool = False) -> list[Any]:
    """A value as a record holds it: ``[json]`` when ``plain`` and it round-trips exactly
    as JSON, else ``[type, base64]`` of ``serde`` (whose errors propagate: nothing is written)."""
    if plain and _is_plain(value):
        return [value]
    kind, data = serde.dumps_typed(value)
    return [kind, base64.b64encode(data).decode("ascii")]


def decode(serde: SerializerProtocol, stored: list[Any]) -> Any:
    """The value of :func:`encode`'s form (a fresh copy of a plain one)."""
    if len(stored) == 1:
        return msgspec.json.decode(msgspec.json.encode(stored[0]))
    return serde.loads_typed((stored[0], base64.b64decode(stored[1])))


def _is_plain(value: Any) -> bool:
    kind = type(value)
    if kind is str:
        return value.isascii() or _utf8(value)
    if kind is bool or value is None:
        return True
    if kind is int:
        return bool(-_MAX_INT <= value <= _MAX_INT)
    if kind is list:
        return all(_is_plain(v) for v in value)
    if kind is dict:
        return all(type(k) is str and _is_plain(k) and _is_plain(v) for k, v in value.items())
    return False  # floats (1.0 would read back as 1), tuples, bytes, objects


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return False
    return True


@dataclass
class Entry:
    """One checkpoint: its record's parts, still encoded, and the seq that put it."""

    ns: str
    id: str
    parent: str | None
    cp: list[Any]
    meta: list[Any]
    seq: int
    hidden: bool = False
    decoded_meta: Any = _MISSING


@dataclass
class Blob:
    """A channel's value at one version: whole, a tail on ``base``, or empty (None)."""

    value: list[Any] | None
    base: Version | None = None


@dataclass
class Thread:
    """The folded index of one thread's session (``uid``) up to journal seq ``seq``."""

    uid: str
    seq: int = 0
    deleted: bool = False
    entries: dict[tuple[str, str], Entry] = field(default_factory=dict)
    ids: dict[str, list[str]] = field(default_factory=dict)  # ns -> ids, ascending
    blobs: dict[Key, Blob] = field(default_factory=dict)
    writes: dict[tuple[str, str], dict[tuple[str, int], tuple[str, str, list[Any], str]]] = field(
        default_factory=dict
    )
    built: dict[tuple[str, str], tuple[Version, list[Any]]] = field(default_factory=dict)
    """The last decoded list per (ns, channel) and its version: a read builds on it."""
    live: dict[tuple[str, str], tuple[Version, list[Any]]] = field(default_factory=dict)
    """The last list this process put per (ns, channel) (a copy of the caller's list, its
    elements the caller's): the next put compares its prefix by identity, cheaply."""

    # --- folding -----------------------------------------------------------------------

    def fold(self, seq: int, body: Mapping[str, Any], serde: SerializerProtocol) -> None:
        """Apply one record's body (see the module docstring)."""
        if self.deleted:
            return
        if "put" in body:
            self._fold_put(seq, body["put"])
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

    def _fold_put(self, seq: int, put: Mapping[str, Any]) -> None:
        ns, cid = put["ns"], put["id"]
        if (ns, cid) not in self.entries:
            ids = self.ids.setdefault(ns, [])
            if not ids or ids[-1] < cid:
                ids.append(cid)
            else:
                bisect.insort(ids, cid)
        self.entries[ns, cid] = Entry(ns, cid, put["parent"], put["cp"], put["meta"], seq)
        for channel, blob in put["blobs"].items():
            version = blob[0]
            if len(blob) == 1:
                self.blobs[ns, channel, version] = Blob(None)
            else:
                self.blobs[ns, channel, version] = Blob(blob[1], blob[2] if len(blob) > 2 else None)

    def _fold_writes(self, body: Mapping[str, Any]) -> None:
        stored = self.writes.setdefault((body["ns"], body["id"]), {})
        for idx, channel, value in body["w"]:
            key = (body["task"], idx)
            if idx >= 0 and key in stored:
                continue
            stored[key] = (body["task"], channel, value, body["path"])

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
        chain: list[list[Any]] = []
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


MISSING = _MISSING
"""What :meth:`Thread.value` returns for a channel with no stored value."""
