"""docs/FORMAT.md is held against the code: byte tables, record types, flags, constants."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import pytest

from agentsessions.journal.crypto import sealed
from agentsessions.journal.format import fencefile, segmentlog, staterecord, zstdcodec, zstdseek
from agentsessions.journal.format import segment as sg

DOC = Path(__file__).resolve().parents[2] / "docs" / "FORMAT.md"
TYPES = {"u8": "B", "u16": "H", "u32": "I", "u64": "Q", "i64": "q"}


def _table(marker: str) -> list[list[str]]:
    """Rows (cells stripped of backticks) of the table right after ``<!-- marker -->``."""
    text = DOC.read_text()
    at = text.index(f"<!-- {marker} -->")
    rows = []
    for line in text[at:].splitlines()[1:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if set("".join(cells)) <= set("-: "):
            continue
        rows.append(cells)
    return rows[1:]  # drop the heading row


def _layout(marker: str) -> tuple[str, list[str], list[int]]:
    """(struct format, field names, offsets) rebuilt from a layout table."""
    fmt, names, offsets, pos = "<", [], [], 0
    for off, size, typ, name, *_ in _table(f"layout: {marker}"):
        assert int(off) == pos, f"{marker}.{name}: offset {off}, expected {pos}"
        m = re.fullmatch(r"bytes\[(\d+)\]", typ)
        code = f"{m.group(1)}s" if m else TYPES[typ]
        assert struct.calcsize("<" + code) == int(size), f"{marker}.{name}: size"
        fmt += code
        names.append(name)
        offsets.append(pos)
        pos += int(size)
    return fmt, names, offsets


@pytest.mark.parametrize(
    ("marker", "code"),
    [
        ("segment-header", sg.HEADER_STRUCT),
        ("frame-header", sg.FRAME_STRUCT),
        ("seek-entry", zstdseek.SEEK_ENTRY_STRUCT),
        ("seek-footer", zstdseek.SEEK_FOOTER_STRUCT),
        ("state-head", staterecord.STATE_HEAD),
        ("sealed-head", sealed.HEAD),
        ("fence-slot", fencefile.FENCE_SLOT),
    ],
)
def test_layout_tables_match_struct_formats(marker: str, code: struct.Struct) -> None:
    fmt, _, _ = _layout(marker)
    assert fmt == code.format
    assert struct.calcsize(fmt) == code.size


def test_named_offsets_match_the_code() -> None:
    _, names, offs = _layout("segment-header")
    header = dict(zip(names, offs, strict=True))
    assert sg.HEADER_SIZE == sg.HEADER_STRUCT.size == 128
    assert header["header_crc"] == sg.HEADER_CRC_OFFSET
    assert header["session_id"] == 16 and header["prev_hash"] == 56
    _, names, offs = _layout("frame-header")
    frame = dict(zip(names, offs, strict=True))
    assert sg.FRAME_HEADER_SIZE == sg.FRAME_STRUCT.size == frame["frame_crc"] + 4
    raw = sg.encode_frame(sg.RTYPE_COMMIT, 0x1122, 0x3344, sg.FLAG_GROUP_START, b"abc")
    assert raw[frame["seq"]] == 0x22 and raw[frame["fence"]] == 0x44
    assert raw[frame["rtype"]] == sg.RTYPE_COMMIT and raw[frame["rflags"]] == 2
    _, names, offs = _layout("seek-footer")
    footer = dict(zip(names, offs, strict=True))
    assert footer["footer_crc"] == zstdseek.SEEK_FOOTER_CRC_OFFSET
    assert zstdseek.SEEK_FOOTER_STRUCT.size == zstdseek.SEEK_FOOTER_SIZE


@pytest.mark.parametrize("marker", ["values: rtype", "values: rflags"])
def test_value_tables_match_constants(marker: str) -> None:
    rows = _table(marker)
    assert rows
    for value, name, *_ in rows:
        assert getattr(sg, name) == int(value), name
    if marker.endswith("rflags"):
        assert sg.KNOWN_FLAGS == sg.FLAG_GROUP_START | sg.FLAG_GROUP_END | sg.FLAG_ENCRYPTED


def test_constants_table() -> None:
    for name, value in _table("values: constants"):
        owner = next((m for m in (sg, zstdcodec, zstdseek, segmentlog) if hasattr(m, name)), None)
        code = getattr(owner, name, None)
        if isinstance(code, bytes):
            assert code == value.encode().decode("unicode_escape").encode("latin-1"), name
        else:
            assert code == int(value, 0), name
    assert sg.FRAME_MAGIC.to_bytes(4, "little") == sg.FRAME_MAGIC_BYTES


def test_seal_keys_match_the_encoder() -> None:
    keys = {row[0] for row in _table("values: seal")}
    info = sg.SealInfo(1, "", 1, 128, 0, {})
    assert set(json.loads(sg.encode_seal(info))) == keys


def test_state_meta_keys_match_the_encoder() -> None:
    keys = {row[0] for row in _table("values: state-meta")}
    record = staterecord.StateRecord(1, b"x", 1, 1, "h", 1, 0, "", None)
    assert set(record.meta()) == keys
