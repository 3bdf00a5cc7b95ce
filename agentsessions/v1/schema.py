"""The ``agentsessions.v1`` schema as a table, and validation of canonical proto3-JSON.

``MESSAGES`` and ``ENUMS`` hold every message and enum of ``common.proto`` (digest 1.1) plus
``LogRecord``, with the reference's field numbers. Two views of proto3-JSON are built on them:
validation here and normalisation in :mod:`.normalize`.

- :func:`validate_event` accepts exactly the canonical form Go ``protojson`` emits (proto names,
  defaults omitted, int64 as strings, enum names, UTC timestamps with 0/3/6/9 digits, padded
  standard base64). Anything else raises FormatError naming the JSON path. A valid event hashes
  the same here and in the reference. It is the strict-verify hot path, hence compiled checkers.
- :func:`.normalize.normalize_event` accepts what a proto3-JSON *parser* accepts
  (lowerCamelCase names, int64 as numbers, enum numbers, offsets and any fraction length,
  URL-safe or unpadded base64, ``null`` for unset) and returns the canonical form, or raises
  FormatError as a parser would.

Canonical Struct numbers are what decoding JCS text gives back: ints for integral values below
1e21 (spelled as JCS prints the double), floats otherwise (``numbers.json_number``).
Unknown enum numbers are canonical as numbers (protojson writes open-enum values that way).

Measured (one core, msgspec present, shared machine, best of 3 runs): validate_event then
canonical_json ~140,000 small (180 B) events/s, ~100,000 1 KB text events/s, ~30,000 1 KB
tool-call events with a 60-key Struct/s; with ``loads`` first (strict verify) ~95,000 small/s.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from datetime import date
from typing import Any

from agentsessions.errors import FormatError
from agentsessions.v1 import model
from agentsessions.v1.gen.schemafast import checkers
from agentsessions.v1.numbers import MAX_SAFE_INT, format_number
from agentsessions.valueclass import value

STRING, BYTES, BOOL, INT32, INT64 = "string", "bytes", "bool", "int32", "int64"
ENUM, MESSAGE, TIMESTAMP, STRUCT = "enum", "message", "timestamp", "struct"
REPEATED, MAP, OPTIONAL = "repeated", "map", "optional"


@value(frozen=True, slots=True)
class Field:
    """One field: proto name, number, type, label ("", repeated, map, optional), oneof, ref."""

    name: str
    number: int
    type: str
    label: str = ""
    oneof: str = ""
    ref: str = ""  # enum or message name for ENUM / MESSAGE fields

    @property
    def json_name(self) -> str:
        """The lowerCamelCase JSON name a proto3-JSON parser also accepts."""
        head, *rest = self.name.split("_")
        return head + "".join(w[:1].upper() + w[1:] for w in rest)

    @property
    def has_presence(self) -> bool:
        """True when a default value is still emitted (oneof member, optional, message)."""
        if self.oneof or self.label == OPTIONAL:
            return True
        return self.label == "" and self.type in (MESSAGE, TIMESTAMP, STRUCT)


def _f(
    name: str, number: int, type_: str, ref: str = "", *, label: str = "", oneof: str = ""
) -> Field:
    return Field(name, number, type_, label, oneof, ref)


def _s(name: str, number: int, **kw: str) -> Field:
    return _f(name, number, STRING, **kw)


ENUMS: Mapping[str, tuple[str, ...]] = {
    "Mediation": model.MEDIATIONS,
    "EventKind": model.EVENT_KINDS,
    "Lifecycle.Kind": model.LIFECYCLE_KINDS,
    "ToolChoice.Mode": model.TOOL_CHOICE_MODES,
    "ToolResult.Code": model.TOOL_RESULT_CODES,
}
"""Enum name -> value names indexed by number."""

_BODY = "body"
MESSAGES: Mapping[str, tuple[Field, ...]] = {
    "ResourceMetadata": (
        _s("project", 1), _s("name", 2), _s("uid", 3), _f("version", 4, INT64),
        _f("create_time", 5, TIMESTAMP), _f("update_time", 6, TIMESTAMP),
    ),
    "Part": tuple(
        _f(n, i, MESSAGE, ref, oneof="part")
        for i, (n, ref) in enumerate(
            [("text", "TextPart"), ("file", "FilePart"), ("data", "DataPart"),
             ("reasoning", "ReasoningPart"), ("tool_call", "ToolCall"),
             ("tool_result", "ToolResult")], start=1)
    ),
    "TextPart": (_s("text", 1),),
    "FilePart": (
        _s("mime", 1), _f("bytes", 2, BYTES, oneof="source"), _s("uri", 3, oneof="source"),
        _s("name", 4), _s("digest", 5),
    ),
    "DataPart": (_f("data", 1, STRUCT),),
    "ReasoningPart": (
        _s("provider", 1), _s("model_id", 2), _f("opaque_bytes", 3, BYTES, oneof="opaque"),
        _s("opaque_uri", 4, oneof="opaque"), _f("summary", 5, MESSAGE, "Part", label=REPEATED),
        _s("item_id", 6), _f("ordinal", 7, INT32), _s("validity_scope", 8),
        _s("opaque_digest", 9),
    ),
    "Message": (_s("role", 1), _f("parts", 2, MESSAGE, "Part", label=REPEATED)),
    "IdentityRef": (_s("principal", 1), _s("issuer", 2), _s("subject", 3)),
    "Origin": (_s("source", 1), _s("subject", 2), _s("uri", 3), _s("attributes", 4, label=MAP)),
    "ModelCall": (
        _s("model", 1), _s("params", 2, label=MAP), _s("input_hash", 3), _s("id", 4),
        _f("messages", 5, MESSAGE, "Message", label=REPEATED),
        _f("tools", 6, MESSAGE, "ToolDefinition", label=REPEATED),
        _f("tool_choice", 7, MESSAGE, "ToolChoice"),
    ),
    "ToolDefinition": (_s("name", 1), _s("description", 2), _f("input_schema", 3, STRUCT)),
    "ToolChoice": (_f("mode", 1, ENUM, "ToolChoice.Mode"), _s("name", 2)),
    "Usage": (
        _s("model", 1), _f("input_tokens", 2, INT64), _f("output_tokens", 3, INT64),
        _f("reasoning_tokens", 4, INT64),
    ),
    "ToolCall": (
        _s("id", 1), _s("tool", 2), _f("args", 3, STRUCT), _f("mediation", 4, ENUM, "Mediation"),
        _s("idempotency_key", 5),
    ),
    "ToolResult": (
        _s("id", 1), _f("output", 2, STRUCT), _s("output_uri", 3), _f("is_error", 4, BOOL),
        _s("error", 5), _s("output_digest", 6), _f("content", 7, MESSAGE, "Part", label=REPEATED),
        _f("code", 8, ENUM, "ToolResult.Code"), _f("approval_request_seq", 9, INT64),
        _f("approval_decision_seq", 10, INT64),
    ),
    "ApprovalRequest": (_s("tool_call_id", 1), _s("reason", 2)),
    "ApprovalResult": (
        _s("tool_call_id", 1), _f("approved", 2, BOOL), _s("reason", 3),
        _f("request_seq", 4, INT64),
    ),
    "ApprovalRef": (_s("execution_id", 1), _s("tool_call_id", 2), _f("request_seq", 3, INT64)),
    "Error": (_f("code", 1, INT32), _s("description", 2)),
    "HarnessEnd": (_s("state", 1), _f("error", 2, MESSAGE, "Error")),
    "Lifecycle": (
        _f("kind", 1, ENUM, "Lifecycle.Kind"), _s("detail", 2), _s("snapshot_local", 3),
        _s("snapshot_external_uri", 4), _f("snapshot_memory", 5, BOOL),
        _f("snapshot_sealed", 6, BOOL),
    ),
    "ExecutionStart": (
        _f("config", 1, BYTES), _f("resume_from_seq", 2, INT64),
        _f("input_count", 3, INT64, label=OPTIONAL), _s("harness", 4), _s("harness_version", 5),
    ),
    "Event": (
        _s("execution_id", 2), _f("ts", 3, TIMESTAMP), _f("schema_version", 4, INT32),
        _f("kind", 7, ENUM, "EventKind"),
        _f("message", 8, MESSAGE, "Message", oneof=_BODY),
        _f("model", 9, MESSAGE, "ModelCall", oneof=_BODY),
        _f("tool", 10, MESSAGE, "ToolCall", oneof=_BODY),
        _f("result", 11, MESSAGE, "ToolResult", oneof=_BODY),
        _f("approval", 12, MESSAGE, "ApprovalRequest", oneof=_BODY),
        _f("approval_result", 13, MESSAGE, "ApprovalResult", oneof=_BODY),
        _f("usage", 14, MESSAGE, "Usage", oneof=_BODY),
        _f("lifecycle", 15, MESSAGE, "Lifecycle", oneof=_BODY),
        _f("end", 16, MESSAGE, "HarnessEnd", oneof=_BODY),
        _f("error", 17, MESSAGE, "Error", oneof=_BODY),
        _f("actor", 18, MESSAGE, "IdentityRef"),
        _f("execution_start", 19, MESSAGE, "ExecutionStart", oneof=_BODY),
        _f("parked", 20, MESSAGE, "ApprovalRef", oneof=_BODY),
    ),
    "LogRecord": (
        _f("seq", 1, INT64), _s("prev_hash", 2), _s("content_hash", 3), _f("fence", 4, INT64),
        _f("event", 5, MESSAGE, "Event"),
    ),
}  # fmt: skip
"""Message name -> its fields (reserved Event numbers 1, 5, 6 are absent)."""

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
_JS_EXP_LIMIT = 10**21


class Invalid(Exception):
    """A value that breaks the schema (validation and normalisation raise it internally);
    ``path`` collects segments innermost-first, :func:`path_error` turns it into FormatError."""

    def __init__(self, msg: str) -> None:
        super().__init__(msg)
        self.msg = msg
        self.path: list[str] = []


def path_error(root: str, bad: Invalid) -> FormatError:
    """The FormatError for ``bad``, naming its JSON path below ``root``."""
    path = root + "".join(reversed(bad.path))
    return FormatError(f"{path}: {bad.msg}", path=path)


def kind_of(v: Any) -> str:
    """The JSON-ish name of ``v``'s type for an error message (``null`` for None)."""
    return "null" if v is None else type(v).__name__


# --------------------------------------------------------------------------- validation

# A checker raises Invalid, or returns a truthy value when the value is valid but not "plain":
# it holds a float or a key at/above U+D800, so sorted msgspec output is not its JCS form.
Checker = Callable[[Any], Any]
_SLOW = 1
_SURROGATE = re.compile("[\ud800-\udfff]")
_INT64_TEXT = re.compile(r"-?[1-9][0-9]{0,18}")
# canonical base64 is (quad)* then a full, or a zero-pad-bit padded, last quad; checked as a
# flat character run plus the last quad, since ``(?:[...]{4})*`` makes re keep state per
# repetition (about 40 bytes a character: 800 MB for an 18 MiB file part)
_B64_RUN = re.compile(r"[A-Za-z0-9+/]*")
_B64_LAST = re.compile(
    r"[A-Za-z0-9+/]{4}|[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]="
)
_TS = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{3}|\d{6}|\d{9}))?Z", re.ASCII)
_DEFAULT = "a field at its default value must be omitted"


def is_canonical_base64(text: str) -> bool:
    """True if ``text`` is standard, padded base64 with zero pad bits: exactly what
    re-encoding its bytes would give, so a reader may keep it without decoding (a field may
    be tens of megabytes; decoding and re-encoding would hold three more copies)."""
    n = len(text)
    if n % 4:
        return False
    if not n:
        return True
    return bool(_B64_RUN.fullmatch(text, 0, n - 4) and _B64_LAST.fullmatch(text, n - 4))


def check_text(v: str) -> None:
    """Raise Invalid if ``v`` holds a lone surrogate (JSON text cannot carry it)."""
    if not v.isascii() and _SURROGATE.search(v):
        raise Invalid("string contains a lone surrogate")


def _string(presence: bool) -> Checker:
    def chk(v: Any) -> None:
        if type(v) is not str:
            raise Invalid(f"expected a string, got {kind_of(v)}")
        if not v:
            if not presence:
                raise Invalid(_DEFAULT)
        elif not v.isascii() and _SURROGATE.search(v):
            raise Invalid("string contains a lone surrogate")

    return chk


def _int64(presence: bool) -> Checker:
    def chk(v: Any) -> None:
        if type(v) is not str:
            raise Invalid(f"int64 must be a decimal string, got {kind_of(v)}")
        if v == "0":
            if not presence:
                raise Invalid(_DEFAULT)
        elif not _INT64_TEXT.fullmatch(v):
            raise Invalid(f"not a canonical int64 decimal string: {v!r}")
        elif len(v) >= 19 and not INT64_MIN <= int(v) <= INT64_MAX:
            raise Invalid(f"int64 out of range: {v}")

    return chk


def _int32(presence: bool) -> Checker:
    def chk(v: Any) -> None:
        if type(v) is not int:
            raise Invalid(f"int32 must be a JSON integer, got {kind_of(v)}")
        if not INT32_MIN <= v <= INT32_MAX:
            raise Invalid(f"int32 out of range: {v}")
        if v == 0 and not presence:
            raise Invalid(_DEFAULT)

    return chk


def _bool(presence: bool) -> Checker:
    def chk(v: Any) -> None:
        if type(v) is not bool:
            raise Invalid(f"expected true or false, got {kind_of(v)}")
        if not v and not presence:
            raise Invalid(_DEFAULT)

    return chk


def _bytes(presence: bool) -> Checker:
    def chk(v: Any) -> None:
        if type(v) is not str:
            raise Invalid(f"bytes must be a base64 string, got {kind_of(v)}")
        if not v:
            if not presence:
                raise Invalid(_DEFAULT)
        elif not is_canonical_base64(v):
            raise Invalid("bytes are not canonical padded standard base64")

    return chk


def _enum(names: tuple[str, ...], presence: bool) -> Checker:
    known = frozenset(names[1:])

    def chk(v: Any) -> None:
        if type(v) is str:
            if v in known:
                return
            if v == names[0]:
                if presence:
                    return
                raise Invalid(_DEFAULT)
            raise Invalid(f"unknown enum value {v!r}")
        if type(v) is int:
            if 0 <= v < len(names):
                raise Invalid(f"enum value {v} must be written by name ({names[v]})")
            if INT32_MIN <= v <= INT32_MAX:
                return  # an open-enum value the schema does not name: protojson writes a number
        raise Invalid(f"expected an enum name, got {v!r}")

    return chk


@functools.lru_cache(maxsize=4096)
def _date_ok(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return text[:4] != "0000"


def _chk_timestamp(v: Any) -> None:
    if type(v) is not str:
        raise Invalid(f"timestamp must be a string, got {kind_of(v)}")
    m = _TS.fullmatch(v)
    if m is None:
        raise Invalid(f"not a canonical RFC 3339 UTC timestamp: {v!r}")
    hh, mi, ss, frac = m.group(4, 5, 6, 7)
    if frac and frac.endswith("000"):
        raise Invalid(f"timestamp fraction is not in shortest 3/6/9-digit form: {v!r}")
    if not _date_ok(v[:10]):
        raise Invalid(f"not a calendar date in 0001..9999: {v!r}")
    if hh > "23" or mi > "59" or ss > "59":  # two-digit strings compare like numbers
        raise Invalid(f"time of day out of range: {v!r}")


def _value_ok_int(v: int) -> bool:
    if -MAX_SAFE_INT <= v <= MAX_SAFE_INT:
        return True
    return -_JS_EXP_LIMIT < v < _JS_EXP_LIMIT and format_number(float(v)) == str(v)


def _chk_value(v: Any) -> int:
    """A google.protobuf.Value: any JSON, numbers as doubles. Returns _SLOW if not plain."""
    t = type(v)
    slow = 0
    if t is dict:
        slow = _chk_struct(v)
    elif t is list:
        for i, x in enumerate(v):
            tx = type(x)
            if (tx is str and x.isascii()) or tx is bool or x is None:
                continue
            try:
                slow |= _chk_value(x)
            except Invalid as e:
                e.path.append(f"[{i}]")
                raise
    elif t is str:
        check_text(v)
    elif t is int:
        if not _value_ok_int(v):
            raise Invalid(f"integer {v} is not a float64 value as JCS prints it")
    elif t is float:
        if v - v:
            raise Invalid(f"{v!r} is not a JSON number")
        slow = _SLOW
    elif not (t is bool or v is None):
        raise Invalid(f"{kind_of(v)} is not a JSON value")
    return slow


def _high(k: str) -> int:
    """_SLOW when a key sorts differently by UTF-16 code units than by code points."""
    return _SLOW if not k.isascii() and max(k) >= "\ud800" else 0


def _chk_struct(v: Any) -> int:
    if type(v) is not dict:
        raise Invalid(f"expected a JSON object, got {kind_of(v)}")
    slow = 0
    for k, x in v.items():
        if type(k) is not str:
            raise Invalid(f"object keys must be strings, got {kind_of(k)}")
        t = type(x)
        if k.isascii():
            if (t is str and x.isascii()) or t is bool or x is None:
                continue
            if t is int and -MAX_SAFE_INT <= x <= MAX_SAFE_INT:
                continue
        try:
            check_text(k)
            slow |= _high(k) | _chk_value(x)
        except Invalid as e:
            e.path.append(f"[{k!r}]" if not k.isidentifier() else f".{k}")
            raise
    return slow


def _map(v: Any) -> int:
    if type(v) is not dict:
        raise Invalid(f"expected a JSON object (map), got {kind_of(v)}")
    if not v:
        raise Invalid(_DEFAULT)
    slow = 0
    for k, x in v.items():
        if type(x) is not str:
            raise Invalid(f"map value for {k!r} must be a string, got {kind_of(x)}")
        check_text(k)
        check_text(x)
        slow |= _high(k)
    return slow


def _repeated(item: Checker) -> Checker:
    def chk(v: Any) -> int:
        if type(v) is not list:
            raise Invalid(f"expected a JSON array, got {kind_of(v)}")
        if not v:
            raise Invalid(_DEFAULT)
        slow = 0
        for i, x in enumerate(v):
            try:
                if item(x):
                    slow = _SLOW
            except Invalid as e:
                e.path.append(f"[{i}]")
                raise
        return slow

    return chk


Spec = dict[str, tuple[Checker, str]]
_SPECS: dict[str, Spec] = {name: {} for name in MESSAGES}


def _check_msg(obj: Any, spec: Spec) -> int:
    if type(obj) is not dict:
        raise Invalid(f"expected a JSON object, got {kind_of(obj)}")
    member = ""
    slow = 0
    for k, v in obj.items():
        entry = spec.get(k)
        if entry is None:
            raise Invalid(f"unknown field {k!r}")
        try:
            if entry[0](v):
                slow = _SLOW
        except Invalid as e:
            e.path.append("." + k)
            raise
        if entry[1]:
            if member:
                raise Invalid(f"oneof '{entry[1]}' has two members set: {member!r} and {k!r}")
            member = k
    return slow


def _checker(f: Field) -> Checker:
    if f.label == MAP:
        return _map
    presence = f.has_presence
    base: Checker
    if f.type == MESSAGE:
        base = functools.partial(_check_msg, spec=_SPECS[f.ref])
    elif f.type == ENUM:
        base = _enum(ENUMS[f.ref], presence)
    elif f.type == TIMESTAMP:
        base = _chk_timestamp
    elif f.type == STRUCT:
        base = _chk_struct
    else:
        base = {STRING: _string, INT64: _int64, INT32: _int32, BOOL: _bool, BYTES: _bytes}[f.type](
            presence
        )
    return _repeated(base) if f.label == REPEATED else base


def _compile() -> None:
    for name, fields in MESSAGES.items():
        groups = {f.oneof for f in fields if f.oneof}
        assert len(groups) <= 1, f"{name}: the checker tracks one oneof per message"
        _SPECS[name].update({f.name: (_checker(f), f.oneof) for f in fields})


_compile()


# Fast path: one function per message, inlining the scalar checks, generated from the table
# above by :mod:`.schemagen` into :mod:`.gen.schemafast` (compiling them here at import cost ~18 ms
# of every command that commits; a module has cached bytecode). It only ever *accepts*
# (returning the same "not plain" flag as _check_msg) or raises; on any exception the caller
# re-runs the generic checker above, which alone decides the error and its path.
class _Doubt(Exception):
    """Internal: the fast path declines; the generic checker decides."""


def _chk_int64(v: str) -> None:
    if v == "0" or not _INT64_TEXT.fullmatch(v) or len(v) >= 19:
        raise _Doubt


FAST_HELPERS: dict[str, Any] = {
    "_Doubt": _Doubt, "_SURROGATE": _SURROGATE, "_is_b64": is_canonical_base64,
    "_chk_int64": _chk_int64,
    "_chk_timestamp": _chk_timestamp, "_chk_struct": _chk_struct, "_map": _map,
}  # fmt: skip
"""The names the generated checkers call, handed to :func:`.gen.schemafast.checkers`."""

_FAST: dict[str, Checker] = checkers(**FAST_HELPERS)
_FAST_EVENT = _FAST["Event"]


def validate_message(obj: Any, message: str = "Event", root: str = "event") -> None:
    """Raise FormatError (naming the JSON path under ``root``) unless ``obj`` is exactly the
    canonical proto3-JSON of ``message``."""
    try:
        _FAST[message](obj)
        return
    except Exception:  # any doubt: the generic checker decides
        pass
    try:
        _check_msg(obj, _SPECS[message])
    except Invalid as bad:
        raise path_error(root, bad) from None


def plain_event(obj: Any) -> bool:
    """True when ``obj`` is a valid, plain ``Event`` by the fast checker alone; False means
    "not known" (invalid, not plain, or unusual): ask :func:`validate_event`. Never raises."""
    try:
        return not _FAST_EVENT(obj)
    except Exception:
        return False


def validate_event(obj: Any) -> bool:
    """Raise FormatError unless ``obj`` is exactly canonical proto3-JSON of an ``Event``.

    Returns True when the event is *plain* (no float and no key at or above U+D800 in its
    Struct and map values), so that sorted-key JSON of it already is its RFC 8785 form and
    :func:`agentsessions.journal.format.canonical.canonical_plain` may encode it without a second
    walk; False when it needs :func:`~agentsessions.journal.format.canonical.canonical_json`.

    Canonical means what Go protojson emits with proto names: no unknown keys, defaults
    omitted (except optional fields, oneof members and set messages), int64 as canonical
    decimal strings, known enum values by name, padded standard base64, UTC timestamps with
    0/3/6/9 fraction digits, at most one member per oneof, Struct numbers as doubles.
    """
    try:
        return not _FAST_EVENT(obj)
    except Exception:  # any doubt: the generic checker decides
        pass
    try:
        return not _check_msg(obj, _SPECS["Event"])
    except Invalid as bad:
        raise path_error("event", bad) from None
