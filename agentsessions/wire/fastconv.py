"""A fast path between proto3-JSON dicts and the messages Harness.Connect carries every turn.

``json_format.ParseDict`` and ``MessageToDict`` plus our normalisation cost ~75 µs an event
on this project's machines, and a remote turn converts about twenty (its new history events
both ways, the model call, its result, the end): over a millisecond a turn. Most of those
messages are plain: strings, enums, int32/int64, bools, nested messages, repeated fields.
For those, this module builds the message with the generated class's C constructor and reads
it back with ``ListFields``, some 20x faster.

Anything else makes it answer None and the caller takes the exact path: a bytes field, a
well-known type (Timestamp, Struct: a tool call's arguments), a float, a map, a null, a field
name it does not know (lowerCamelCase included), an int64 string that is not a plain
integer, an enum number the schema does not name, two members of one oneof. Where it answers,
it answers what the exact path would (``tests/unit/test_wire_fastconv.py`` compares both on
the golden vectors and on Hypothesis events), so its use changes no byte a peer or the
journal sees.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message as ProtoMessage

_F = FieldDescriptor
_INT64 = frozenset({_F.TYPE_INT64, _F.TYPE_UINT64, _F.TYPE_SINT64, _F.TYPE_FIXED64,
                    _F.TYPE_SFIXED64})  # fmt: skip
_INT32 = frozenset({_F.TYPE_INT32, _F.TYPE_UINT32, _F.TYPE_SINT32, _F.TYPE_FIXED32,
                    _F.TYPE_SFIXED32})  # fmt: skip
_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")


class _Slow(Exception):
    """This value needs the exact path."""


# What each field is, worked out once per field (a descriptor's attributes are slow to read)
_MSG, _STR, _ENUM, _BOOL, _I32, _I64, _SLOW = range(7)


class _Field(NamedTuple):
    name: str
    kind: int
    repeated: bool
    oneof: str  # "" when the field is in none
    sub: Descriptor | None  # a message field's type
    enum: dict[int, str]  # an enum field's names by number


_BY_NAME: dict[Descriptor, dict[str, _Field]] = {}
_BY_FIELD: dict[FieldDescriptor, _Field] = {}


def _field(f: FieldDescriptor) -> _Field:
    spec = _BY_FIELD.get(f)
    if spec is None:
        t, sub, enum = f.type, None, {}
        if t == _F.TYPE_MESSAGE:
            sub = f.message_type
            plain = sub is not None and not sub.full_name.startswith("google.protobuf.")
            kind = _MSG if plain and sub is not None and not sub.GetOptions().map_entry else _SLOW
        elif t == _F.TYPE_ENUM and f.enum_type is not None:
            kind, enum = _ENUM, {v.number: v.name for v in f.enum_type.values}
        else:
            kind = _KINDS.get(t, _SLOW)  # bytes and floats: the exact path
        oneof = f.containing_oneof.name if f.containing_oneof is not None else ""
        spec = _BY_FIELD[f] = _Field(f.name, kind, f.is_repeated, oneof, sub, enum)
    return spec


def _fields(desc: Descriptor) -> dict[str, _Field]:
    table = _BY_NAME.get(desc)
    if table is None:
        table = _BY_NAME[desc] = {f.name: _field(f) for f in desc.fields}
    return table


_KINDS = {_F.TYPE_STRING: _STR, _F.TYPE_BOOL: _BOOL}
_KINDS.update(dict.fromkeys(_INT32, _I32))
_KINDS.update(dict.fromkeys(_INT64, _I64))


def to_proto(cls: type[Any], obj: Any) -> Any | None:
    """``obj`` (a proto3-JSON dict) as a new ``cls``, or None: take the exact path."""
    try:
        kwargs = _kwargs(cls.DESCRIPTOR, obj)
        return cls(**kwargs)
    except (_Slow, TypeError, ValueError):
        return None


def to_dict(msg: ProtoMessage) -> dict[str, Any] | None:
    """The canonical proto3-JSON dict of ``msg``, or None: take the exact path."""
    try:
        return _dict(msg)
    except _Slow:
        return None


def _kwargs(desc: Descriptor, obj: Any) -> dict[str, Any]:
    if type(obj) is not dict:
        raise _Slow
    fields = _fields(desc)
    out: dict[str, Any] = {}
    oneofs: set[str] = set()
    for key, value in obj.items():
        f = fields.get(key) if type(key) is str else None
        if f is None or value is None:
            raise _Slow
        if f.oneof:
            if f.oneof in oneofs:
                raise _Slow  # the exact path refuses two members
            oneofs.add(f.oneof)
        if f.repeated:
            if type(value) is not list:
                raise _Slow
            out[key] = [_in(f, v) for v in value]
        else:
            out[key] = _in(f, value)
    return out


def _in(f: _Field, v: Any) -> Any:
    kind, t = f.kind, type(v)
    if kind == _MSG and f.sub is not None:
        return _kwargs(f.sub, v)
    if kind in (_STR, _ENUM) and t is str:
        return v  # the constructor refuses a name the enum lacks (ValueError)
    if (kind == _BOOL and t is bool) or (kind == _I32 and t is int):
        return v
    if kind == _I64:
        if t is int:
            return v
        if t is str and _INTEGER.fullmatch(v):
            return int(v)
    raise _Slow


def _dict(msg: ProtoMessage) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for fd, value in msg.ListFields():
        f = _field(fd)
        out[f.name] = [_out(f, v) for v in value] if f.repeated else _out(f, value)
    return out


def _out(f: _Field, v: Any) -> Any:
    kind = f.kind
    if kind == _MSG:
        return _dict(v)
    if kind in (_STR, _BOOL, _I32):
        return v
    if kind == _I64:
        return str(v)
    if kind == _ENUM:
        name = f.enum.get(v)
        if name is not None:
            return name
    raise _Slow  # bytes, floats, maps, well-known types, an enum number without a name
