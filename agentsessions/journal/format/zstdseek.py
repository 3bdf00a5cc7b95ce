"""The seekable zstd container of a sealed segment: independently compressed chunks and a
seek table in a trailing skippable frame, so a reader decompresses only the chunks it needs.

Layout (``docs/FORMAT.md``, "Sealed segments"): the chunks, each one zstd frame with a
content checksum, then a skippable frame holding one :data:`SEEK_ENTRY_STRUCT` per chunk
(key, raw offset, compressed offset, compressed length) and the :data:`SEEK_FOOTER_STRUCT`
footer. A damaged or hostile table is refused (FormatError) before a reader holds more than
:data:`MAX_CHUNK` bytes of a chunk.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterator, Sequence

from agentsessions.errors import FormatError
from agentsessions.journal.format.zstdcodec import (
    SKIPPABLE_MAGIC_BASE,
    compress,
    decompress,
    one_checksummed_frame,
    skippable_frame,
)
from agentsessions.valueclass import value

SEEK_SKIPPABLE_MAGIC = SKIPPABLE_MAGIC_BASE | 0xE
SEEK_ENTRY_STRUCT = struct.Struct("<QQQQ")  # key, raw_offset, comp_offset, comp_len
SEEK_FOOTER_STRUCT = struct.Struct("<HHIIIQQII8s")
SEEK_FOOTER_SIZE = 48
SEEK_FOOTER_MAGIC = b"AGSJSEEK"
SEEK_FOOTER_VERSION = 1
SEEK_FOOTER_CRC_OFFSET = 36


@value(frozen=True, slots=True)
class SeekEntry:
    """One independently compressed chunk of a seekable file."""

    key: int  # the caller's key for the chunk (the journal: seq of its first frame)
    raw_offset: int  # where the chunk starts in the uncompressed data
    comp_offset: int  # where its zstd frame starts in the file
    comp_len: int  # length of that zstd frame


@value(frozen=True)
class SeekTable:
    """The trailer of a seekable file: chunk list, caller metadata, sizes."""

    entries: tuple[SeekEntry, ...]
    meta: bytes
    raw_size: int
    skip_offset: int  # where the trailer's skippable frame starts (== compressed bytes)

    def raw_len(self, i: int) -> int:
        """Uncompressed length of chunk ``i``."""
        nxt = self.entries[i + 1].raw_offset if i + 1 < len(self.entries) else self.raw_size
        return nxt - self.entries[i].raw_offset

    def chunk_for(self, key: int) -> int:
        """Index of the last chunk whose key is <= ``key`` (0 if none)."""
        lo, hi = 0, len(self.entries)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.entries[mid].key <= key:
                lo = mid
            else:
                hi = mid
        return lo


def encode_seekable(
    raw: bytes, cuts: Sequence[tuple[int, int]], meta: bytes, level: int = 3
) -> bytes:
    """Compress ``raw`` as independent frames cut at ``(key, raw_offset)`` points, then the
    seek-table trailer holding ``meta``. The first cut must be at offset 0."""
    if not cuts or cuts[0][1] != 0:
        raise ValueError("the first cut must be at offset 0")
    bounds = [off for _, off in cuts] + [len(raw)]
    table, frames, comp = bytearray(), [], 0
    for (key, off), end in zip(cuts, bounds[1:], strict=True):
        frame = compress(raw[off:end], level)
        table += SEEK_ENTRY_STRUCT.pack(key, off, comp, len(frame))
        frames.append(frame)
        comp += len(frame)
    body = bytes(table) + meta
    footer = SEEK_FOOTER_STRUCT.pack(
        SEEK_FOOTER_VERSION, SEEK_FOOTER_SIZE, len(cuts), len(meta), zlib.crc32(body),
        len(raw), comp, 0, 0, SEEK_FOOTER_MAGIC,
    )  # fmt: skip
    crc = zlib.crc32(footer[:SEEK_FOOTER_CRC_OFFSET]).to_bytes(4, "little")
    footer = footer[:SEEK_FOOTER_CRC_OFFSET] + crc + footer[SEEK_FOOTER_CRC_OFFSET + 4 :]
    return b"".join((*frames, skippable_frame(body + footer, 0xE)))


def decode_seekable_footer(footer: bytes, file_size: int) -> int:
    """Check the last 48 bytes of a seekable file; return the trailer's size (from its magic)."""
    if len(footer) != SEEK_FOOTER_SIZE:
        raise FormatError("seekable zstd file too short for its footer")
    version, size, count, meta_len, _, _, skip, _, fcrc, magic = SEEK_FOOTER_STRUCT.unpack(footer)
    if magic != SEEK_FOOTER_MAGIC or zlib.crc32(footer[:SEEK_FOOTER_CRC_OFFSET]) != fcrc:
        raise FormatError("seekable zstd footer is damaged (magic or CRC)")
    if version != SEEK_FOOTER_VERSION or size != SEEK_FOOTER_SIZE:
        raise FormatError(f"unsupported seekable zstd footer version {version}")
    trailer: int = 8 + count * SEEK_ENTRY_STRUCT.size + meta_len + SEEK_FOOTER_SIZE
    if count < 1 or skip + trailer != file_size:
        raise FormatError("seekable zstd footer sizes do not add up")
    return trailer


def decode_seekable_trailer(trailer: bytes, file_size: int) -> SeekTable:
    """Parse a seekable file's trailer (its skippable frame, from the magic to EOF)."""
    size = decode_seekable_footer(trailer[-SEEK_FOOTER_SIZE:], file_size)
    _, _, count, _, tcrc, raw_size, skip, _, _, _ = SEEK_FOOTER_STRUCT.unpack(
        trailer[-SEEK_FOOTER_SIZE:]
    )
    magic, content_len = struct.unpack_from("<II", trailer, 0)
    if len(trailer) != size or magic != SEEK_SKIPPABLE_MAGIC or content_len != size - 8:
        raise FormatError("seekable zstd trailer frame is damaged")
    body = trailer[8:-SEEK_FOOTER_SIZE]
    if zlib.crc32(body) != tcrc:
        raise FormatError("seekable zstd seek table CRC mismatch")
    n = count * SEEK_ENTRY_STRUCT.size
    entries = tuple(SeekEntry(*SEEK_ENTRY_STRUCT.unpack_from(body, o)) for o in range(0, n, 32))
    table = SeekTable(entries, body[n:], raw_size, skip)
    comp, raw, key = 0, -1, -1
    for e in entries:
        if e.comp_offset != comp or e.raw_offset <= raw or e.key < key or e.comp_len < 1:
            raise FormatError("seekable zstd seek table is inconsistent")
        comp, raw, key = e.comp_offset + e.comp_len, e.raw_offset, e.key
    if comp != skip or entries[0].raw_offset != 0 or raw >= raw_size:
        raise FormatError("seekable zstd seek table does not cover the file")
    return table


ReadAt = Callable[[int, int], bytes]
"""``read_at(n, offset)``: up to ``n`` bytes of a file at ``offset``."""


def read_seek_table(read_at: ReadAt, file_size: int, guess: int = 64 << 10) -> SeekTable:
    """Read a seekable file's table from its end: one read of ``guess`` bytes, two at most."""
    n = min(file_size, guess)
    tail = read_at(n, file_size - n)
    trailer = decode_seekable_footer(tail[-SEEK_FOOTER_SIZE:], file_size)
    if trailer > n:
        tail = read_at(trailer, file_size - trailer)
    return decode_seekable_trailer(tail[-trailer:], file_size)


MAX_CHUNK = 32 << 20
"""Largest chunk, raw or compressed, a seek table may claim, so a hostile or damaged table
cannot make a reader hold more than this (chunks are cut at ~1 MiB; one group may be up to
the commit limit, 4 MiB by default)."""


def read_chunks(
    read_at: ReadAt, table: SeekTable, start: int = 0, *, checksummed: bool = False
) -> Iterator[bytes]:
    """Decompress chunks ``start..`` of a seekable file, each checked against its length.

    ``checksummed``: also require each chunk to be exactly one frame with a content
    checksum (:func:`one_checksummed_frame`), so every byte returned was verified against
    the XXH64 the compressor recorded (FormatError otherwise).
    """
    for i in range(start, len(table.entries)):
        e, size = table.entries[i], table.raw_len(i)
        if size > MAX_CHUNK or e.comp_len > MAX_CHUNK:
            raise FormatError(f"chunk {i} claims {size} bytes, over the {MAX_CHUNK} limit")
        blob = read_at(e.comp_len, e.comp_offset)
        if checksummed and not one_checksummed_frame(blob):
            raise FormatError(f"chunk {i} is not one zstd frame with a content checksum")
        raw = decompress(blob, size)
        if len(raw) != size:
            raise FormatError(f"chunk {i} decompresses to {len(raw)} bytes, expected {size}")
        yield raw
