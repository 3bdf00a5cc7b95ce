"""Portable journal files: our export format, and the foreign formats ``import`` reads.

Our export is one self-verifying file, zstd-compressed unless asked otherwise::

    {"agentsessions_export":1,"session":{...metadata...},"records":N,"last_seq":S,"last_hash":H}
    <fence> <canonical envelope bytes>        one line per record, seq 1..S in order
    ...
    {"end":{"records":N,"last_seq":S,"last_hash":H}}

Each record line carries the exact bytes that were hashed, so checking an export is hashing
at disk speed and an import keeps every hash. A missing end line means a truncated file; a
record whose bytes, link or count disagree means a tampered one. Besides our own format,
:func:`parse` reads JSON lines of ``agentsessions.v1.LogRecord`` (the gRPC ``Replay`` wire
form) and the Go reference's record-array JSON, detected from the content.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from agentsessions.errors import AgentSessionsError, FormatError, StorageError
from agentsessions.journal import canonical, interchange, zstdcodec
from agentsessions.journal.records import Record

MAGIC_KEY = b'{"agentsessions_export":'
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
MAX_IMPORT_BYTES = 4 << 30

FORMAT_EXPORT = "agentsessions-export"
FORMAT_LOGRECORD = "logrecord-jsonl"
FORMAT_GO = "go-record-array"


@dataclass
class Parsed:
    """A journal file read into memory: its format, metadata (ours only) and records."""

    format: str
    records: list[Record]
    meta: dict[str, Any] | None = None
    declared: dict[str, Any] | None = None


def write(
    out: IO[bytes], meta: dict[str, Any], records: Iterable[Record], head: tuple[int, str]
) -> int:
    """Write an uncompressed export of ``records`` (which must end at ``head``) to ``out``."""
    last_seq, last_hash = head
    header = {
        "agentsessions_export": 1,
        "session": meta,
        "records": last_seq,
        "last_seq": last_seq,
        "last_hash": last_hash,
    }
    out.write(canonical.dumps(header) + b"\n")
    count = 0
    for record in records:
        out.write(b"%d " % record.fence + record.payload + b"\n")
        count += 1
    if count != last_seq:
        raise StorageError(f"export read {count} records but the journal head is {last_seq}")
    trailer = {"end": {"records": count, "last_seq": last_seq, "last_hash": last_hash}}
    out.write(canonical.dumps(trailer) + b"\n")
    return count


def load(path: Path) -> bytes:
    """Read a journal file, decompressing zstd when the content says so."""
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_IMPORT_BYTES + 1)
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror}") from exc
    if len(data) > MAX_IMPORT_BYTES:
        raise FormatError(f"{path} is larger than {MAX_IMPORT_BYTES} bytes")
    if data.startswith(ZSTD_MAGIC):
        data = zstdcodec.decompress(data, MAX_IMPORT_BYTES)
    return data


def parse(data: bytes, *, source: str = "input") -> Parsed:
    """Detect the format of ``data`` and read its records (links are checked by the caller)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise FormatError(f"{source} is not UTF-8 text: not a journal file") from None
    stripped = data.lstrip()
    if stripped.startswith(MAGIC_KEY):
        return _parse_export(stripped, source)
    if stripped.startswith(b"["):
        return _parse_go(stripped, source)
    if stripped.startswith(b"{"):
        return _parse_logrecords(stripped, source)
    raise FormatError(
        f"{source} is not a journal: expected an agentsessions export, LogRecord JSON lines "
        "or a Go record array"
    )


def _parse_export(data: bytes, source: str) -> Parsed:
    lines = data.split(b"\n")
    while lines and not lines[-1].strip():
        lines.pop()
    header = _json_line(lines[0], source, 1)
    if not isinstance(header, dict) or header.get("agentsessions_export") != 1:
        raise FormatError(f"{source}: unsupported export header")
    trailer = _trailer(lines[-1]) if len(lines) > 1 else None
    if not (isinstance(trailer, dict) and isinstance(trailer.get("end"), dict)):
        raise FormatError(f"{source} is truncated: the end marker is missing")
    body = lines[1:-1]
    records = [_export_record(line, seq, source) for seq, line in enumerate(body, start=1)]
    declared = trailer["end"]
    for key in ("records", "last_seq", "last_hash"):
        if header.get(key) != declared.get(key):
            raise FormatError(f"{source}: header and end marker disagree on {key}")
    if declared.get("records") != len(records):
        raise FormatError(
            f"{source}: end marker declares {declared.get('records')} records, found {len(records)}"
        )
    meta = header.get("session")
    return Parsed(FORMAT_EXPORT, records, meta if isinstance(meta, dict) else None, declared)


def _export_record(line: bytes, index: int, source: str) -> Record:
    fence_text, sep, payload = line.partition(b" ")
    if not sep or not fence_text.isdigit():
        raise FormatError(f"{source}: line {index + 1} is not a record line")
    try:
        _body, prev, seq = canonical.split_envelope(payload)
    except FormatError as exc:
        raise FormatError(f"{source}: line {index + 1}: {exc}") from None
    return Record(seq, prev, canonical.content_hash(payload), int(fence_text), payload)


def _parse_go(data: bytes, source: str) -> Parsed:
    return Parsed(FORMAT_GO, [_foreign(r, source) for r in interchange.parse_go_records(data)])


def _parse_logrecords(data: bytes, source: str) -> Parsed:
    records = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        if line.strip():
            try:
                foreign = interchange.parse_logrecord_line(line)
            except FormatError as exc:
                raise FormatError(f"{source}: line {number}: {exc}") from None
            records.append(_foreign(foreign, source))
    return Parsed(FORMAT_LOGRECORD, records)


def _foreign(rec: interchange.ForeignRecord, source: str) -> Record:
    """Re-canonicalise a foreign record; its claimed hash is kept for the chain check."""
    try:
        payload = canonical.envelope(canonical.canonical_json(rec.event), rec.prev_hash, rec.seq)
    except AgentSessionsError as exc:
        raise FormatError(f"{source}: record seq {rec.seq}: {exc}") from None
    return Record(rec.seq, rec.prev_hash, rec.content_hash, rec.fence, payload)


def _trailer(line: bytes) -> Any:
    """The end marker, or None when the last line is not one (a truncated file)."""
    if not line.startswith(b"{"):
        return None
    try:
        return canonical.loads(line)
    except FormatError:
        return None


def _json_line(line: bytes, source: str, number: int) -> Any:
    try:
        return canonical.loads(line)
    except FormatError:
        raise FormatError(f"{source}: line {number} is not JSON") from None


def iter_batches(
    records: list[Record], max_bytes: int, max_count: int = 4096
) -> Iterator[list[Record]]:
    """Split records into commits that each stay under the store's size limit."""
    batch: list[Record] = []
    size = 0
    for record in records:
        if batch and (size + len(record.payload) > max_bytes or len(batch) >= max_count):
            yield batch
            batch, size = [], 0
        batch.append(record)
        size += len(record.payload)
    if batch:
        yield batch
