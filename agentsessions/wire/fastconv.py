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
from typing import Any

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
    fields = desc.fields_by_name
    out: dict[str, Any] = {}
    oneofs: set[str] = set()
    for key, value in obj.items():
        f = fields.get(key) if type(key) is str else None
        if f is None or value is None:
            raise _Slow
        if f.containing_oneof is not None:
            if f.containing_oneof.name in oneofs:
                raise _Slow  # the exact path refuses two members
            oneofs.add(f.containing_oneof.name)
        if f.is_repeated:
            if type(value) is not list or _is_map(f):
                raise _Slow
            out[key] = [_in(f, v) for v in value]
        else:
            out[key] = _in(f, value)
    return out


def _in(f: FieldDescriptor, v: Any) -> Any:
    t = f.type
    kind = type(v)
    if t == _F.TYPE_MESSAGE:
        if f.message_type is None or _well_known(f):
            raise _Slow
        return _kwargs(f.message_type, v)
    if t == _F.TYPE_STRING and kind is str:
        return v
    if t == _F.TYPE_ENUM and kind is str:
        return v  # the constructor refuses a name the enum lacks (ValueError)
    if t == _F.TYPE_BOOL and kind is bool:
        return v
    if t in _INT32 and kind is int:
        return v
    if t in _INT64:
        if kind is int:
            return v
        if kind is str and _INTEGER.fullmatch(v):
            return int(v)
    raise _Slow


def _dict(msg: ProtoMessage) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f, value in msg.ListFields():
        if f.is_repeated:
            if _is_map(f):
                raise _Slow
            out[f.name] = [_out(f, v) for v in value]
        else:
            out[f.name] = _out(f, value)
    return out


def _out(f: FieldDescriptor, v: Any) -> Any:
    t = f.type
    if t == _F.TYPE_MESSAGE:
        if _well_known(f):
            raise _Slow
        return _dict(v)
    if t == _F.TYPE_STRING or t == _F.TYPE_BOOL or t in _INT32:
        return v
    if t in _INT64:
        return str(v)
    if t == _F.TYPE_ENUM and f.enum_type is not None:
        named = f.enum_type.values_by_number.get(v)
        if named is None:
            raise _Slow
        return named.name
    raise _Slow  # bytes, floats


def _well_known(f: FieldDescriptor) -> bool:
    return f.message_type is not None and f.message_type.full_name.startswith("google.protobuf.")


def _is_map(f: FieldDescriptor) -> bool:
    return f.message_type is not None and f.message_type.GetOptions().map_entry
