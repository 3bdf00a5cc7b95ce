"""proto3-JSON normalisation of ``agentsessions.v1`` messages: parser forms to canonical form.

:func:`normalize_event` accepts what a proto3-JSON *parser* accepts (lowerCamelCase names,
int64 as numbers, enum numbers, offsets and any fraction length, URL-safe or unpadded base64,
``null`` for unset) and returns the canonical form :func:`.schema.validate_event` accepts, or
raises FormatError as a parser would. It reads the same table (:mod:`.schema`) as validation;
it is the import path, not the hot path, so it is plain code rather than compiled checkers.
"""

from __future__ import annotations

import binascii
import re
from decimal import Decimal, InvalidOperation
from typing import Any

from agentsessions.errors import InvalidArgumentError
from agentsessions.v1 import timestamps
from agentsessions.v1.numbers import json_number
from agentsessions.v1.schema import (
    BOOL,
    BYTES,
    ENUM,
    ENUMS,
    INT32,
    INT32_MAX,
    INT32_MIN,
    INT64,
    INT64_MAX,
    INT64_MIN,
    MAP,
    MESSAGE,
    MESSAGES,
    REPEATED,
    STRING,
    TIMESTAMP,
    Field,
    Invalid,
    check_text,
    is_canonical_base64,
    kind_of,
    path_error,
)

_NAMES: dict[str, dict[str, Field]] = {
    name: {**{f.json_name: f for f in fields}, **{f.name: f for f in fields}}
    for name, fields in MESSAGES.items()
}
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_DEFAULTS: dict[str, Any] = {STRING: "", BYTES: "", BOOL: False, INT32: 0, INT64: 0}


def _parse_int(v: Any, lo: int, hi: int) -> int:
    """An integer as proto3-JSON parsers accept it: a JSON number or a string holding one,
    with an integral value (``1``, ``1.0``, ``"1e2"``)."""
    t = type(v)
    n: int
    if t is int:
        n = v
    elif t is float:
        if not v.is_integer():
            raise Invalid(f"not an integer: {v!r}")
        n = int(v)
    elif t is str:
        if not _JSON_NUMBER.fullmatch(v):
            raise Invalid(f"not an integer: {v!r}")
        try:
            d = Decimal(v)
            if d.adjusted() > 20 or d != d.to_integral_value():
                raise Invalid(f"not an integer in range: {v!r}")
            n = int(d)
        except InvalidOperation:
            raise Invalid(f"not an integer: {v!r}") from None
    else:
        raise Invalid(f"expected an integer, got {kind_of(v)}")
    if not lo <= n <= hi:
        raise Invalid(f"integer out of range: {v!r}")
    return n


def _parse_bytes(v: Any) -> str:
    if type(v) is not str:
        raise Invalid(f"bytes must be a base64 string, got {kind_of(v)}")
    if is_canonical_base64(v):
        return v
    text = v
    if "-" in text or "_" in text:
        if "+" in text or "/" in text:
            raise Invalid("base64 mixes the standard and URL-safe alphabets")
        text = text.replace("-", "+").replace("_", "/")
    if len(text) % 4:
        if "=" in text:
            raise Invalid("base64 has partial padding")
        text += "=" * (-len(text) % 4)
    try:
        raw = binascii.a2b_base64(text, strict_mode=True)
    except ValueError as exc:  # binascii.Error, or non-ASCII text
        raise Invalid(f"invalid base64: {exc}") from None
    return binascii.b2a_base64(raw, newline=False).decode()


def _parse_enum(v: Any, names: tuple[str, ...]) -> str | int:
    if type(v) is str:
        if v in names:
            return v
        raise Invalid(f"unknown enum value {v!r}")
    if type(v) is int and INT32_MIN <= v <= INT32_MAX:
        return names[v] if 0 <= v < len(names) else v
    raise Invalid(f"expected an enum name or number, got {v!r}")


def _norm_value(v: Any) -> Any:
    t = type(v)
    if t is str:
        check_text(v)
        return v
    if t is bool or v is None:
        return v
    if t is int or t is float:
        try:
            return json_number(v)
        except InvalidArgumentError as exc:
            raise Invalid(str(exc)) from None
    if t is dict:
        return _norm_struct(v)
    if t is list:
        out = []
        for i, x in enumerate(v):
            try:
                out.append(_norm_value(x))
            except Invalid as e:
                e.path.append(f"[{i}]")
                raise
        return out
    raise Invalid(f"{kind_of(v)} is not a JSON value")


def _norm_struct(v: Any) -> dict[str, Any]:
    if type(v) is not dict:
        raise Invalid(f"expected a JSON object, got {kind_of(v)}")
    out = {}
    for k, x in v.items():
        try:
            check_text(k)
            out[k] = _norm_value(x)
        except Invalid as e:
            e.path.append(f"[{k!r}]" if not k.isidentifier() else f".{k}")
            raise
    return out


def _norm_single(f: Field, v: Any) -> Any:
    t = f.type
    if t == MESSAGE:
        return _norm_msg(v, f.ref)
    if t == STRING:
        if type(v) is not str:
            raise Invalid(f"expected a string, got {kind_of(v)}")
        check_text(v)
        return v
    if t == INT64:
        return _parse_int(v, INT64_MIN, INT64_MAX)
    if t == INT32:
        return _parse_int(v, INT32_MIN, INT32_MAX)
    if t == BOOL:
        if type(v) is not bool:
            raise Invalid(f"expected true or false, got {kind_of(v)}")
        return v
    if t == BYTES:
        return _parse_bytes(v)
    if t == ENUM:
        return _parse_enum(v, ENUMS[f.ref])
    if t == TIMESTAMP:
        try:
            return timestamps.normalize_timestamp(v)
        except InvalidArgumentError as exc:
            raise Invalid(str(exc)) from None
    return _norm_struct(v)


def _norm_field(f: Field, v: Any) -> tuple[Any, bool]:
    """The canonical value of one present field and whether it is emitted."""
    if f.label == REPEATED:
        if type(v) is not list:
            raise Invalid(f"expected a JSON array, got {kind_of(v)}")
        items = []
        for i, x in enumerate(v):
            try:
                if x is None:
                    raise Invalid("null is not allowed in a repeated field")
                items.append(_canonical_scalar(f, _norm_single(f, x)))
            except Invalid as e:
                e.path.append(f"[{i}]")
                raise
        return items, bool(items)
    if f.label == MAP:
        if type(v) is not dict:
            raise Invalid(f"expected a JSON object (map), got {kind_of(v)}")
        for k, x in v.items():
            if type(x) is not str:
                raise Invalid(f"map value for {k!r} must be a string, got {kind_of(x)}")
            check_text(k)
            check_text(x)
        return dict(v), bool(v)
    value = _norm_single(f, v)
    default = ENUMS[f.ref][0] if f.type == ENUM else _DEFAULTS.get(f.type)
    return _canonical_scalar(f, value), f.has_presence or value != default


def _canonical_scalar(f: Field, value: Any) -> Any:
    return str(value) if f.type == INT64 else value


def _norm_msg(obj: Any, message: str) -> dict[str, Any]:
    if type(obj) is not dict:
        raise Invalid(f"expected a JSON object, got {kind_of(obj)}")
    names = _NAMES[message]
    got: dict[str, Any] = {}
    seen: set[str] = set()
    member = ""
    for k, v in obj.items():
        f = names.get(k) if type(k) is str else None
        if f is None:
            raise Invalid(f"unknown field {k!r}")
        if f.name in seen:
            raise Invalid(f"field {f.name!r} is given twice")
        seen.add(f.name)
        if v is None:
            continue  # proto3-JSON: null means unset (Struct values are handled below them)
        if f.oneof:
            if member:
                raise Invalid(f"oneof '{f.oneof}' has two members set: {member!r} and {k!r}")
            member = k
        try:
            value, keep = _norm_field(f, v)
        except Invalid as e:
            e.path.append("." + k)
            raise
        if keep:
            got[f.name] = value
    return {f.name: got[f.name] for f in MESSAGES[message] if f.name in got}


def normalize_message(obj: Any, message: str = "Event", root: str = "event") -> dict[str, Any]:
    """Parse proto3-JSON of ``message`` as a proto3-JSON parser would; return canonical form."""
    try:
        return _norm_msg(obj, message)
    except Invalid as bad:
        raise path_error(root, bad) from None


def normalize_event(obj: Any) -> dict[str, Any]:
    """The canonical proto3-JSON dict of an ``Event`` given in any form a parser accepts.

    Accepts lowerCamelCase names, int64 as numbers or strings, enum numbers, timestamps with
    offsets and any fraction length, URL-safe or unpadded base64, ``null`` for unset; returns
    what Go protojson would emit. Raises FormatError for what a parser refuses.
    """
    return normalize_message(obj, "Event", "event")
