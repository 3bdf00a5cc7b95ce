"""A session's records packed for the page: fixed-size chunks and an execution index.

The page must show a 100,000-record session's first screen at once and stay within twice
the size of the journal's text, so the records are never turned into markup here: each
chunk is one JSON array ``[[seq, content_hash, event], ...]`` whose events are the stored
canonical bytes spliced in as they are (no re-encoding, no prev_hash: it is the previous
record's hash), escaped once for a script element. The page's script parses a chunk only
when a record in it is shown.

The index has one entry per *group*: a run of consecutive records of one execution (or of
none: a fork's or a suspend's LIFECYCLE record), with what a timeline row needs without
opening the chunks: its seqs, its end state, its first time, the first input's text, model
calls, tool calls, tokens and flags (approval, denied, error, cancel, compaction, fork).

Cost: one pass over the records, holding one chunk; each event is decoded once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentsessions.cli.viewpage.embed import escape_json

CHUNK_RECORDS = 500
"""Records per chunk: small enough that opening one execution parses little."""

PREVIEW_CHARS = 160
USAGE_FIELDS = ("input_tokens", "output_tokens", "reasoning_tokens")


class PackedRecord(Protocol):
    """What the packer reads of a record (the journal's Record, local or from a server)."""

    @property
    def seq(self) -> int: ...

    @property
    def content_hash(self) -> str: ...

    @property
    def event_json(self) -> bytes: ...

    def to_wire_json(self) -> bytes: ...


@dataclass
class Group:
    """One timeline row: consecutive records of one execution (``""``: of none)."""

    execution_id: str
    first_seq: int
    last_seq: int = 0
    records: int = 0
    state: str = ""  # END's state; "" while the execution has no END in this group
    time: str = ""
    harness: str = ""
    preview: str = ""
    model_calls: int = 0
    tool_calls: int = 0
    usage: list[int] = field(default_factory=lambda: [0, 0, 0])
    flags: set[str] = field(default_factory=set)

    def to_json(self) -> dict[str, Any]:
        """The index entry (short keys: one per group of a large session)."""
        out: dict[str, Any] = {"x": self.execution_id, "a": self.first_seq, "b": self.last_seq}
        out["n"], out["s"], out["t"] = self.records, self.state, self.time
        if self.harness:
            out["h"] = self.harness
        if self.preview:
            out["p"] = self.preview
        if self.model_calls or self.tool_calls:
            out["m"], out["k"] = self.model_calls, self.tool_calls
        if any(self.usage):
            out["u"] = self.usage
        if self.flags:
            out["f"] = sorted(self.flags)
        return out


@dataclass
class Packed:
    """What packing produced besides the chunks: the index and the session's totals."""

    groups: list[dict[str, Any]] = field(default_factory=list)
    chunks: list[list[int]] = field(default_factory=list)  # [first_seq, records] per chunk
    records: int = 0
    usage: dict[str, int] = field(default_factory=lambda: dict.fromkeys(USAGE_FIELDS, 0))
    usage_records: int = 0
    text_bytes: int = 0  # the records' LogRecord JSON lines, as ``log --json`` prints them


class Packer:
    """Feeds records in seq order; hands each full chunk to ``emit(index, body)``."""

    def __init__(self, emit: Callable[[int, bytes], None], chunk_records: int = CHUNK_RECORDS):
        self._emit = emit
        self._size = chunk_records
        self._pending: list[bytes] = []
        self._first = 0
        self._group: Group | None = None
        self.packed = Packed()

    def feed(self, records: Iterable[PackedRecord]) -> None:
        """Pack ``records`` (may be called again with the next ones)."""
        for record in records:
            self.add(record)

    def add(self, record: PackedRecord) -> None:
        """Pack one record."""
        body = record.event_json
        if not self._pending:
            self._first = record.seq
        head = b'[%d,"%s",' % (record.seq, record.content_hash.encode())
        self._pending.append(head + body + b"]")
        self.packed.records += 1
        self.packed.text_bytes += len(record.to_wire_json()) + 1  # a line of log --json
        self._index(record.seq, json.loads(body))
        if len(self._pending) >= self._size:
            self._flush()

    def finish(self) -> Packed:
        """Flush the last chunk and close the last group; the index and totals."""
        self._flush()
        if self._group is not None:
            self.packed.groups.append(self._group.to_json())
            self._group = None
        return self.packed

    def _flush(self) -> None:
        if not self._pending:
            return
        body = escape_json(b"[" + b",".join(self._pending) + b"]")
        self._emit(len(self.packed.chunks), body)
        self.packed.chunks.append([self._first, len(self._pending)])
        self._pending = []

    def _index(self, seq: int, event: dict[str, Any]) -> None:
        execution = str(event.get("execution_id", ""))
        group = self._group
        if group is None or group.execution_id != execution or not execution:
            if group is not None:
                self.packed.groups.append(group.to_json())
            group = self._group = Group(execution, seq, time=str(event.get("ts", "")))
        group.last_seq, group.records = seq, group.records + 1
        note(group, event)
        if event.get("kind") == "EVENT_USAGE":
            usage = event.get("usage") or {}
            self.packed.usage_records += 1
            for i, name in enumerate(USAGE_FIELDS):
                count = _int(usage.get(name))
                group.usage[i] += count
                self.packed.usage[name] += count


def note(group: Group, event: dict[str, Any]) -> None:
    """Fold one event into its group's row: counts, flags, end state, the first input."""
    kind = event.get("kind")
    if kind == "EVENT_EXECUTION_START":
        group.harness = str((event.get("execution_start") or {}).get("harness", ""))
    elif kind == "EVENT_INPUT" and not group.preview:
        group.preview = message_text(event.get("message") or {})[:PREVIEW_CHARS]
    elif kind == "EVENT_MODEL_CALL":
        group.model_calls += 1
    elif kind == "EVENT_TOOL_CALL":
        group.tool_calls += 1
    elif kind == "EVENT_APPROVAL_REQUEST":
        group.flags.add("approval")
    elif kind == "EVENT_APPROVAL_RESULT":
        if not (event.get("approval_result") or {}).get("approved"):
            group.flags.add("denied")
    elif kind == "EVENT_ERROR":
        group.flags.add("error")
    elif kind == "EVENT_END":
        group.state = str((event.get("end") or {}).get("state", "")) or "ENDED"
    elif kind == "EVENT_LIFECYCLE":
        lifecycle = str((event.get("lifecycle") or {}).get("kind", "LIFECYCLE"))
        group.flags.add(lifecycle.removeprefix("LIFECYCLE_").lower())
    elif kind == "EVENT_OUTPUT" and _is_compaction(event):
        group.flags.add("compaction")


def message_text(message: dict[str, Any]) -> str:
    """A message's text parts joined, or ``""`` (tool calls and data are shown elsewhere)."""
    parts = message.get("parts") or ()
    texts = (p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), dict))
    return " ".join(str(t.get("text", "")) for t in texts)


def _is_compaction(event: dict[str, Any]) -> bool:
    from agentsessions.v1.compaction import marker_data

    return marker_data(event) is not None


def _int(value: Any) -> int:
    """A proto3-JSON int64 (a string) as an int; 0 for anything else."""
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0
