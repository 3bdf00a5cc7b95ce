"""Portable journal files: our export format, and the foreign formats ``import`` reads.

Our export is one self-verifying file, zstd-compressed unless asked otherwise::

    {"agentsessions_export":1,"session":{...metadata...},"records":N,"last_seq":S,"last_hash":H}
    <fence> <canonical envelope bytes>        one line per record, seq 1..S in order
    ...
    {"end":{"records":N,"last_seq":S,"last_hash":H}}

Each record line carries the exact bytes that were hashed, so checking an export is hashing
at disk speed and an import keeps every hash. A missing end line means a truncated file; a
record whose bytes, link or count disagree means a tampered one. The header is judged by
:func:`check_header` alone (its head fields present and counts, its ``session`` object of
``session.json``'s types), so ``verify FILE`` and ``import`` refuse the same files.
Besides our own format, :func:`parse` reads JSON lines of ``agentsessions.v1.LogRecord``
(the gRPC ``Replay`` wire form) and the Go reference's record-array JSON, detected from the
content.

A *sealed* export of an encrypted session (``export --ciphertext``, docs/FORMAT.md 15) has
``"sealed": {"scope", "key"}`` in its header (the session uid its records are bound to, and
its wrapped ``KEY``), and each record line is ``<fence> <base64 of the sealed record>``: the
chain is in each record's clear head and the end marker's ``sealed_sha256`` covers every
sealed byte, so the file verifies without the key (damage, not a forger: the tags, checked
by a key holder, find that); reading its records needs the master key that wrapped ``key``.

:func:`stream` reads a file in bounded memory whatever it holds: zstd is decompressed in
pieces with a size and ratio cap (a bomb is refused early), lines are capped at
:data:`MAX_LINE_BYTES`, records are yielded one by one, and only a Go record array (one
JSON document) is read whole, capped at :data:`MAX_GO_BYTES`.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from agentsessions.errors import (
    AgentSessionsError,
    FormatError,
    InvalidArgumentError,
    StorageError,
)
from agentsessions.journal.format import canonical, sealedhead, zstdcodec
from agentsessions.journal.format.records import Record
from agentsessions.journal.tools import interchange
from agentsessions.v1.ids import check_project

MAGIC_KEY = b'{"agentsessions_export":'
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
MAX_IMPORT_BYTES = 4 << 30
MAX_RATIO = 10_000
"""Most raw bytes a compressed export may hold per compressed byte (zstd's own output of a
real journal stays far below; a bomb of zeros is at ~30 000)."""
MAX_LINE_BYTES = 24 << 20
"""Longest line of an export or LogRecord file: a record (at most 16 MiB) plus escaping."""
MAX_GO_BYTES = 16 << 20
"""Largest Go record array: it is one JSON document, parsed whole."""
MAX_DECODED_BYTES = 32 << 20
"""Most memory the text of one LogRecord line or Go record array may take once decoded to
Python strings (1, 2 or 4 bytes a character, set by the widest one). A line of ASCII text
with one emoji decodes to four times its size; with the line itself that would pass the
100 MB bound import and verify keep. Our export format is never decoded to text."""
MAX_BLANK_LINES = 10_000
_READ = 1 << 20

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


class Writable(Protocol):
    """Where :func:`write` puts an export: a binary file, or a streaming sink."""

    def write(self, data: bytes, /) -> Any:
        """Take the next bytes of the export."""


def write(
    out: Writable,
    meta: dict[str, Any],
    records: Iterable[Record],
    head: tuple[int, str],
    sealed: dict[str, Any] | None = None,
) -> int:
    """Write an uncompressed export of ``records`` (which must end at ``head``) to ``out``,
    a line at a time (nothing here holds more than one record). ``sealed``: a sealed
    export's ``{"scope", "key"}``; each record's payload is then its sealed bytes."""
    last_seq, last_hash = head
    header = {
        "agentsessions_export": 1,
        "session": meta,
        "records": last_seq,
        "last_seq": last_seq,
        "last_hash": last_hash,
        **({"sealed": sealed} if sealed is not None else {}),
    }
    out.write(canonical.dumps(header) + b"\n")
    count, digest = 0, hashlib.sha256()
    for record in records:
        body = record.payload
        if sealed is not None:  # the ciphertext is no hash's input: the trailer's digest is
            digest.update(body)
            body = base64.b64encode(body)
        out.write(b"%d " % record.fence + body + b"\n")
        count += 1
    if count != last_seq:
        raise StorageError(f"export read {count} records but the journal head is {last_seq}")
    end: dict[str, Any] = {"records": count, "last_seq": last_seq, "last_hash": last_hash}
    if sealed is not None:
        end["sealed_sha256"] = digest.hexdigest()
    out.write(canonical.dumps({"end": end}) + b"\n")
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


@dataclass
class Stream:
    """A journal file being read: its format, our header's metadata and declared head, and
    its records one at a time (:func:`stream`)."""

    format: str
    records: Iterator[Record]
    meta: dict[str, Any] | None = None
    declared: dict[str, Any] | None = field(default=None)
    sealed: dict[str, Any] | None = None  # a sealed export's {"scope", "key"}: records sealed


def stream(path: Path) -> Stream:
    """Open a journal file for one pass over its records, in bounded memory.

    FormatError (from here or from the iterator) names what is wrong; the end marker and
    record count of our export are checked when the iterator ends.
    """
    source = str(path)
    lines = _lines(_pieces(path), source)
    first, number = b"", 0
    for number, first in lines:  # noqa: B007 - the first non-blank line picks the format
        if first.strip():
            break
    stripped = first.lstrip()
    if stripped.startswith(MAGIC_KEY):
        header = _json_line(stripped, source, number)
        meta, declared = check_header(header, source)
        sealed = header.get("sealed")
        if sealed is not None and not (
            isinstance(sealed, dict)
            and isinstance(sealed.get("scope"), str)
            and isinstance(sealed.get("key"), dict)
        ):
            raise FormatError(f"{source}: the sealed export header is malformed")
        records = _stream_export(lines, header, source, sealed is not None)
        return Stream(FORMAT_EXPORT, records, meta, declared, sealed)
    if stripped.startswith(b"["):
        return Stream(FORMAT_GO, _stream_go(first, lines, source))
    if stripped.startswith(b"{"):
        return Stream(FORMAT_LOGRECORD, _stream_logrecords(number, first, lines, source))
    raise _not_a_journal(source)


_HEAD_COUNTS = ("records", "last_seq")
_META_TEXTS = ("uid", "project", "name", "harness", "model", "parent_uid")
_META_COUNTS = ("fork_seq", "create_time_ns")
_META_PAIRS = ("labels", "annotations")
_META_OBJECTS = ("origin", "identity")


def check_header(header: Any, source: str) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The session metadata and declared head (``records``, ``last_seq``, ``last_hash``) of
    an export ``header``, checked: FormatError (exit 10) names the first field that is
    missing or of the wrong type. The one judge of a header: ``verify FILE`` and ``import``
    both ask it, so neither accepts a file the other refuses."""
    if not isinstance(header, dict) or header.get("agentsessions_export") != 1:
        raise FormatError(f"{source}: unsupported export header")
    for key in (*_HEAD_COUNTS, "last_hash"):
        if key not in header:
            raise FormatError(f"{source}: the export header has no {key}")
    for key in _HEAD_COUNTS:
        if not _is_count(header[key]):
            raise FormatError(f"{source}: the export header's {key} is not a count")
    if not isinstance(header["last_hash"], str):
        raise FormatError(f"{source}: the export header's last_hash is not a string")
    meta = header.get("session")
    if meta is not None:
        _check_session(meta, source)
    return meta, {k: header[k] for k in (*_HEAD_COUNTS, "last_hash")}


def _check_session(meta: Any, source: str) -> None:
    """The header's ``session`` object: each known field, when present, of its type (the
    types ``session.json`` holds); unknown keys are allowed so the header can grow."""
    where = f"{source}: the export header's session"
    if not isinstance(meta, dict):
        raise FormatError(f"{where} is not an object")
    for key in _META_TEXTS:
        if not isinstance(meta.get(key, ""), str):
            raise FormatError(f"{where}.{key} is not a string")
    if meta.get("project"):
        try:
            check_project(meta["project"])
        except InvalidArgumentError as exc:
            raise FormatError(f"{where}.project: {exc}") from None
    for key in _META_COUNTS:
        if not _is_count(meta.get(key, 0)):
            raise FormatError(f"{where}.{key} is not a count")
    for key in _META_PAIRS:
        pairs = meta.get(key)
        if pairs is not None and not (
            isinstance(pairs, dict) and all(isinstance(v, str) for v in pairs.values())
        ):
            raise FormatError(f"{where}.{key} is not an object of strings")
    for key in _META_OBJECTS:
        if not isinstance(meta.get(key), dict | None):
            raise FormatError(f"{where}.{key} is not an object")
    if not isinstance(meta.get("encrypted", False), bool):
        raise FormatError(f"{where}.encrypted is not true or false")


def _is_count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _pieces(path: Path) -> Iterator[bytes]:
    """The file's bytes in pieces, zstd decompressed (capped) when the content says so."""
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror}") from exc
    with fh:
        read = _reader(fh, path)
        head = read(len(ZSTD_MAGIC))
        if head == ZSTD_MAGIC:
            pending = [head]

            def again(n: int) -> bytes:
                return pending.pop() if pending else read(n)

            yield from zstdcodec.decompress_stream(again, MAX_IMPORT_BYTES, max_ratio=MAX_RATIO)
            return
        total = len(head)
        yield head
        while piece := read(_READ):
            total += len(piece)
            if total > MAX_IMPORT_BYTES:
                raise FormatError(f"{path} is larger than {MAX_IMPORT_BYTES} bytes")
            yield piece


def _reader(fh: IO[bytes], path: Path) -> zstdcodec.Read:
    def read(n: int) -> bytes:
        try:
            return fh.read(n)
        except OSError as exc:
            raise StorageError(f"cannot read {path}: {exc.strerror}") from exc

    return read


def _lines(pieces: Iterator[bytes], source: str) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` without its newline; a line over the cap is a FormatError."""
    buf, number, blanks = bytearray(), 0, 0
    for piece in pieces:
        start = 0
        while (end := piece.find(b"\n", start)) >= 0:
            buf += piece[start:end]
            start, number = end + 1, number + 1
            blanks = blanks + 1 if _blank(buf) else 0
            if blanks > MAX_BLANK_LINES:  # nothing real is ever that sparse; a bomb can be
                raise FormatError(f"{source}: more than {MAX_BLANK_LINES} blank lines in a row")
            # one copy of a line at a time: the buffer is emptied before the line is used, and
            # this frame keeps no reference while the consumer holds it (it may drop it early)
            yield number, _utf8(_take(buf), source, number)
        buf += piece[start:]
        if len(buf) > MAX_LINE_BYTES:
            raise FormatError(f"{source}: line {number + 1} is longer than {MAX_LINE_BYTES} bytes")
    if buf:
        yield number + 1, _utf8(bytes(buf), source, number + 1)


def _take(buf: bytearray) -> bytes:
    """The bytes of ``buf``, which is emptied (its memory released) before they are used."""
    line = bytes(buf)
    buf.clear()
    return line


def _blank(line: bytes | bytearray) -> bool:
    """``not line.strip()`` without copying the line (lines run to MAX_LINE_BYTES)."""
    return not line or line.isspace()


def _utf8(line: bytes, source: str, number: int) -> bytes:
    if len(line) > MAX_LINE_BYTES:
        raise FormatError(f"{source}: line {number} is longer than {MAX_LINE_BYTES} bytes")
    if line.isascii():  # checked in place; decoding would build a str as large as the line
        return line
    _text_size(line, source)
    return line


_CHECK_PIECE = 1 << 20


def _text_size(data: bytes, source: str) -> int:
    """Bytes a str of ``data`` would take (characters times the widest one's width); raises
    FormatError unless ``data`` is UTF-8. Decodes a piece at a time: one str of a whole wide
    line could take four times the line (ASCII with one emoji)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    view, chars, width = memoryview(data), 0, 1
    try:
        for at in range(0, len(view), _CHECK_PIECE):
            text = decoder.decode(view[at : at + _CHECK_PIECE], at + _CHECK_PIECE >= len(view))
            chars += len(text)
            if width < 4 and not text.isascii():
                top = max(text)
                width = max(width, 4 if top > "\uffff" else 2 if top > "\xff" else 1)
    except UnicodeDecodeError:
        raise FormatError(f"{source} is not UTF-8 text: not a journal file") from None
    return chars * width


def _check_decodable(data: bytes, source: str, number: int) -> None:
    """Refuse a JSON line whose strings would take more than MAX_DECODED_BYTES decoded."""
    size = len(data) if data.isascii() else _text_size(data, source)
    if size > MAX_DECODED_BYTES:
        raise FormatError(
            f"{source}: line {number} would take {size} bytes decoded, over the limit of "
            f"{MAX_DECODED_BYTES} (its text is too wide to check in bounded memory)"
        )


def _stream_export(
    lines: Iterator[tuple[int, bytes]], header: dict[str, Any], source: str, sealed: bool = False
) -> Iterator[Record]:
    count, blank, trailer, digest = 0, 0, None, hashlib.sha256()
    for number, line in lines:
        if _blank(line):
            blank = blank or number
            continue
        if trailer is not None or blank:
            raise FormatError(f"{source}: line {blank or number} is not a record line")
        if line.startswith(b"{"):
            trailer = _trailer(line)
            if not (isinstance(trailer, dict) and isinstance(trailer.get("end"), dict)):
                raise FormatError(f"{source}: line {number} is not a record line")
            continue
        count += 1
        record = (_sealed_record if sealed else _export_record)(line, count, source)
        if sealed:
            digest.update(record.payload)
        del line  # the record holds its payload; the line would be a second copy of it
        yield record
        del record  # nor is it kept while the next line is read
    if trailer is None:
        raise FormatError(f"{source} is truncated: the end marker is missing")
    declared = trailer["end"]
    for key in ("records", "last_seq", "last_hash"):
        if header.get(key) != declared.get(key):
            raise FormatError(f"{source}: header and end marker disagree on {key}")
    if declared.get("records") != count:
        raise FormatError(
            f"{source}: end marker declares {declared.get('records')} records, found {count}"
        )
    if sealed and declared.get("sealed_sha256") != digest.hexdigest():
        raise FormatError(f"{source}: the sealed records do not match the end marker's digest")


def _stream_go(first: bytes, lines: Iterator[tuple[int, bytes]], source: str) -> Iterator[Record]:
    doc, size = [first], len(first)
    del first
    for _, line in lines:
        size += len(line) + 1
        if size > MAX_GO_BYTES:
            raise FormatError(f"{source}: a Go record array over {MAX_GO_BYTES} bytes")
        doc.append(line)
        del line
    data = b"\n".join(doc)
    doc.clear()  # the joined document is the one copy of the text
    _check_decodable(data, source, 1)
    try:
        parsed = canonical.loads(data)
    finally:
        del data
    records = interchange.go_records_from_json(parsed)
    del parsed  # the records share its strings; the envelopes are built one at a time
    records.reverse()  # popped from the end, so each record is released once it is used
    while records:
        foreign = records.pop()
        record = _foreign(foreign, source)
        del foreign
        yield record
        del record


def _stream_logrecords(
    number: int, first: bytes, lines: Iterator[tuple[int, bytes]], source: str
) -> Iterator[Record]:
    """LogRecord lines, each held once: a line is dropped as soon as it is decoded (its
    strings live on, shared, in the decoded value and the normalised event), the value once
    its envelope is built, and a record once it is yielded. A line near the cap costs about
    twice its size, not four times."""
    obj = _decode_line(first, number, source)
    del first
    record = _logrecord(obj, number, source)
    del obj
    yield record
    del record
    for number, line in lines:
        if _blank(line):
            continue
        obj = _decode_line(line, number, source)
        del line
        record = _logrecord(obj, number, source)
        del obj
        yield record
        del record


def _decode_line(line: bytes, number: int, source: str) -> Any:
    _check_decodable(line, source, number)
    try:
        return canonical.loads(line)
    except FormatError as exc:
        raise FormatError(f"{source}: line {number}: {exc}") from None


def _logrecord(obj: Any, number: int, source: str) -> Record:
    try:
        foreign = interchange.logrecord_from_json(obj)
    except FormatError as exc:
        raise FormatError(f"{source}: line {number}: {exc}") from None
    return _foreign(foreign, source)


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
    raise _not_a_journal(source)


def _not_a_journal(source: str) -> FormatError:
    return FormatError(
        f"{source} is not a journal: expected an agentsessions export, LogRecord JSON lines "
        "or a Go record array"
    )


def _parse_export(data: bytes, source: str) -> Parsed:
    lines = data.split(b"\n")
    while lines and not lines[-1].strip():
        lines.pop()
    header = _json_line(lines[0], source, 1)
    meta, _declared = check_header(header, source)
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
    return Parsed(FORMAT_EXPORT, records, meta, declared)


def _export_record(line: bytes, index: int, source: str) -> Record:
    fence_text, sep, payload = line.partition(b" ")
    if not sep or not fence_text.isdigit():
        raise FormatError(f"{source}: line {index + 1} is not a record line")
    try:
        prev, seq = canonical.envelope_link(payload)
    except FormatError as exc:
        raise FormatError(f"{source}: line {index + 1}: {exc}") from None
    return Record(seq, prev, canonical.content_hash(payload), int(fence_text), payload)


def _sealed_record(line: bytes, index: int, source: str) -> Record:
    """A sealed export's record line: its seq is its place (from 1), its link the clear
    head's; the payload is the sealed record (opened by a key holder)."""
    fence_text, sep, body = line.partition(b" ")
    if not sep or not fence_text.isdigit():
        raise FormatError(f"{source}: line {index + 1} is not a record line")
    try:
        payload = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raise FormatError(f"{source}: line {index + 1} is not a sealed record") from None
    chain = sealedhead.chain_of(payload)
    if chain is None:
        raise FormatError(f"{source}: line {index + 1} is not a sealed record")
    return Record(index, chain[0], chain[1], int(fence_text), payload)


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
        payload = canonical.envelope_of(rec.event, rec.prev_hash, rec.seq)
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
    records: Iterable[Record], max_bytes: int, max_count: int = 4096
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
