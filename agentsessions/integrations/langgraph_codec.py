"""How the LangGraph saver's records hold a value: plain JSON, a patch on the parent's, the
serializer's bytes, or those bytes cut into pieces that are each stored once per thread;
and the saver's channel versions (:func:`version_after`), which records hold too.

Forms (:func:`encode` makes them, :func:`resolve` and :func:`decode` read them back):

- ``[json]``: plain JSON that round-trips exactly (no float, no tuple, integers within
  2**53), for checkpoints and metadata under LangGraph's default serializer;
- ``{...}`` (a JSON object): a checkpoint or its metadata as a JSON merge patch (RFC 7386)
  on its parent's (:mod:`.langgraph_index` says which base), when both are plain JSON;
- ``[type, base64]``: the serializer's ``dumps_typed`` whole (a serializer of the user's
  own, an ``EncryptedSerializer``: its bytes are opaque, so nothing else is done to them);
- ``[type, [piece, ...]]``: LangGraph's default serializer's bytes as pieces whose
  concatenation is those bytes exactly. A piece is text (a JSON string: a msgpack string
  of at least :data:`MIN_TEXT` bytes, its header implied, readable in ``agentsessions
  log``), ``{"b64": ...}`` (the bytes between such strings, cut after each msgpack ext
  header, so the framing of a message class is one piece whatever its content's length),
  or an integer ``n``: the thread's n-th piece (numbered from 0 in journal order over every
  text and b64 piece of at least :data:`MIN_PIECE` bytes its records hold: in each record,
  in the order of its parts, a put's ``cp``, ``meta``, then ``blobs`` by channel name, a
  writes record's values in order, each value's pieces in order). So a message's text,
  and the framing every message of its class shares, is stored once per thread, though
  LangGraph hands the saver the same message several times (the input, the task's writes,
  the checkpoint's channel value).

Invariants: joining the pieces gives back the serializer's bytes, whatever the cutting
chose (the cutting looks for msgpack headers, but a wrong guess only costs bytes, never
correctness; :func:`encode` checks the join), and the serializer alone decodes them (its
allowlist applies). A number names a piece of an earlier record of the same thread, never
one of its own record; a writer's index is a prefix of the journal, so the numbers it
knows mean the same pieces to every reader, however many records other writers added.
"""

from __future__ import annotations

import base64
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec
from langgraph.checkpoint.serde.base import SerializerProtocol

MIN_TEXT = 32
"""Bytes from which a msgpack string is a text piece."""
MIN_PIECE = 8
"""Bytes from which a piece is numbered (stored once per thread; a number costs ~5)."""
_MAX_INT = 2**53 - 1
_HEADERS = re.compile(rb"[\xc7-\xc9\xd9-\xdb]")  # msgpack ext8-32, str8-32
_WIDTH = {0xC7: 1, 0xC8: 2, 0xC9: 4, 0xD9: 1, 0xDA: 2, 0xDB: 4}
_EXT = (0xC7, 0xC8, 0xC9)


@dataclass(frozen=True)
class Piece:
    """A run of a serialized value's bytes: a msgpack string's ``text`` (its header
    implied), or ``data`` as it is."""

    data: bytes
    text: str | None = None

    @property
    def key(self) -> tuple[bool, bytes]:
        """What names it in a :class:`Table`: whether it is text, and its bytes."""
        return (self.text is not None, self.data)

    def joined(self) -> bytes:
        """Its bytes in the value (a text piece's header restored)."""
        return self.data if self.text is None else str_header(len(self.data)) + self.data


@dataclass
class Table:
    """A thread's numbered pieces (see the module docstring)."""

    pieces: list[Piece] = field(default_factory=list)
    numbers: dict[tuple[bool, bytes], int] = field(default_factory=dict)

    def add(self, piece: Piece) -> None:
        """Number ``piece`` (the next number) if it is long enough; the first number of a
        piece stored twice is the one refs use."""
        if len(piece.data) >= MIN_PIECE:
            self.numbers.setdefault(piece.key, len(self.pieces))
            self.pieces.append(piece)


@dataclass(frozen=True)
class Encoded:
    """A value serialized outside any lock; :meth:`stored` is its record form."""

    form: list[Any]
    pieces: tuple[Piece, ...] = ()

    def stored(self, table: Table | None) -> list[Any]:
        """The record form, each piece ``table`` already numbers as its number."""
        if not self.pieces:
            return self.form
        numbers = table.numbers if table is not None else {}
        out: list[Any] = []
        for piece in self.pieces:
            number = numbers.get(piece.key)
            if number is not None:
                out.append(number)
            elif piece.text is not None:
                out.append(piece.text)
            else:
                out.append({"b64": base64.b64encode(piece.data).decode("ascii")})
        return [self.form[0], out]


def encode(
    serde: SerializerProtocol, value: Any, *, plain: bool = False, pieces: bool = False
) -> Encoded:
    """A value as a record holds it (the module docstring's forms): with ``plain``, plain
    JSON as such; with ``pieces``, the serializer's bytes in pieces; else those bytes
    whole. Both only under LangGraph's default serializer (the saver decides). The
    serializer's errors propagate: nothing is written."""
    if plain and _is_plain(value):
        return Encoded([value])
    kind, data = serde.dumps_typed(value)
    if pieces and len(data) >= MIN_TEXT:
        cut = tuple(split(data))
        if len(cut) > 1 and b"".join(p.joined() for p in cut) == data:
            return Encoded([kind], cut)
    return Encoded([kind, base64.b64encode(data).decode("ascii")])


def split(data: bytes) -> Iterator[Piece]:
    """``data`` cut into pieces: its long msgpack strings as text, the bytes between them
    cut after each ext header."""
    start = pos = 0
    while (m := _HEADERS.search(data, pos)) is not None:
        head = m.start()
        code = data[head]
        width = _WIDTH[code]
        begin = head + 1 + width + (code in _EXT)  # an ext header ends with its type byte
        size = int.from_bytes(data[head + 1 : head + 1 + width], "big")
        pos = head + 1
        if begin + size > len(data):
            continue
        if code in _EXT:
            if size:
                yield Piece(data[start:begin])
                start = pos = begin
            continue
        text = _text(data[begin : begin + size])
        if text is None or size < MIN_TEXT or str_header(size) != data[head:begin]:
            continue
        if head > start:
            yield Piece(data[start:head])
        yield Piece(data[begin : begin + size], text)
        start = pos = begin + size
    if start < len(data):
        yield Piece(data[start:])


def _text(data: bytes) -> str | None:
    """``data`` as text, unless it is not UTF-8 or base64 would be smaller (control
    characters escaped in JSON)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(msgspec.json.encode(text)) > len(data) * 4 // 3 + 12:
        return None
    return text


def str_header(size: int) -> bytes:
    """The msgpack header of a string of ``size`` bytes (at least 32)."""
    if size < 256:
        return bytes((0xD9, size))
    if size < 65536:
        return b"\xda" + size.to_bytes(2, "big")
    return b"\xdb" + size.to_bytes(4, "big")


def resolve(stored: list[Any], table: Table) -> list[Any] | tuple[str, bytes]:
    """A record's value form as the index keeps it: pieces joined (each long one numbered
    in ``table``, each number looked up there) into ``(type, bytes)``; other forms as they
    are. LookupError for a number the thread has not stored."""
    if len(stored) != 2 or not isinstance(stored[1], list):
        return stored
    parts: list[bytes] = []
    for item in stored[1]:
        if type(item) is int:
            if not 0 <= item < len(table.pieces):
                raise LookupError(f"a value names piece {item}, never stored")
            parts.append(table.pieces[item].joined())
            continue
        if isinstance(item, str):
            piece = Piece(item.encode("utf-8"), item)
        else:
            piece = Piece(base64.b64decode(item["b64"]))
        table.add(piece)
        parts.append(piece.joined())
    return (stored[0], b"".join(parts))


def decode(serde: SerializerProtocol, stored: list[Any] | tuple[str, bytes]) -> Any:
    """The value of a resolved form (a fresh copy of a plain one)."""
    if isinstance(stored, tuple):
        return serde.loads_typed(stored)
    if len(stored) == 1:
        return msgspec.json.decode(msgspec.json.encode(stored[0]))
    return serde.loads_typed((stored[0], base64.b64decode(stored[1])))


def delta(base: Any, value: Any) -> dict[str, Any] | None:
    """``value`` as a JSON merge patch (RFC 7386) on ``base``, when the
    patch rebuilds it exactly (compared as JSON, so ``1`` is not ``true``); else None (a
    null inside ``value`` cannot be patched in)."""
    patch = _diff(base, value)
    if not isinstance(patch, dict) or _json(merge(base, patch)) != _json(value):
        return None
    return patch


def merge(target: Any, patch: Any) -> Any:
    """``target`` with the JSON merge patch ``patch`` applied (RFC 7386); a new value."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


def _diff(old: Any, new: Any) -> Any:
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return new
    patch: dict[str, Any] = {k: None for k in old if k not in new}
    for key, value in new.items():
        if key not in old:
            patch[key] = value
        elif type(old[key]) is not type(value) or old[key] != value:
            patch[key] = _diff(old[key], value)
    return patch


def _json(value: Any) -> bytes:
    return msgspec.json.encode(value, order="sorted")


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


def shared_version(blobs: dict[str, list[Any]]) -> dict[str, Any]:
    """``{"v": version, "blobs": ...}``: the version most blobs have, left out of theirs
    (LangGraph gives every channel a step writes the same one)."""
    counts: dict[Any, int] = {}
    for blob in blobs.values():
        counts[blob[0]] = counts.get(blob[0], 0) + 1
    shared = max(counts, key=lambda v: counts[v]) if counts else None
    if shared is None or not isinstance(shared, str):
        return {"blobs": blobs}
    trimmed = {ch: blob[1:] if blob[0] == shared else blob for ch, blob in blobs.items()}
    return {"v": shared, "blobs": trimmed}


def patched(base: Any, form: Encoded, stored: Any) -> Any:
    """A plain checkpoint or metadata as a patch on ``base`` when it can be one, else as
    ``stored``."""
    if base is None or len(form.form) != 1 or form.pieces:
        return stored
    patch = delta(base, form.form[0])
    return stored if patch is None else patch


def counter(version: str | int | float | None) -> int:
    """The counter of a version (0 for None): ``b1``-style, or a decimal before a dot."""
    if version is None:
        return 0
    if isinstance(version, (int, float)):
        return int(version)
    text = str(version)
    if "b" <= text[:1] <= "z":
        return int(text[1 : 1 + ord(text[0]) - ord("a")], 36)
    return int(text.split(".", 1)[0])


def _counter_text(number: int) -> str:
    digits = _base36(number, 1)
    return chr(ord("a") + len(digits)) + digits


def _base36(number: int, width: int) -> str:
    out = ""
    while number or len(out) < width:
        number, digit = divmod(number, 36)
        out = "0123456789abcdefghijklmnopqrstuvwxyz"[digit] + out
    return out


def version_after(current: str | int | float | None) -> str:
    """The saver's next version (``get_next_version``): the counter + 1 in base 36 after a
    letter giving its digits (``b1``, ``c10``, ...: they sort as the counter does, and after
    the 16-digit decimal versions of earlier releases), a dot and 7 random base-36 digits
    (two branches from one checkpoint never give one channel the same version)."""
    return f"{_counter_text(counter(current) + 1)}.{_base36(random.getrandbits(36), 7)}"
