"""The model-input hash (the I0 check): SHA-256 of Go's ``json.Marshal(api.ModelRequest)``.

The Go reference stores ``hex(sha256(encoding/json.Marshal(req)))`` as ``MODEL_CALL.input_hash``
and recomputes it on replay. It is not canonical JSON but Go's struct encoding, reproduced here
byte for byte (spec/reference-digest.md section 3) so a journal written by either host replays
on the other:

- objects are Go structs: keys are the Go field names in declaration order, compact;
- a nil slice, map or pointer is ``null``; ``omitempty`` fields (``ModelRequest.Tools`` and
  ``.ToolChoice``, ``Part.ToolCall`` and ``.ToolResult``, ``ToolResult.Content``) are left out
  when empty; a message with no parts has ``"Parts":null`` (Go's nil slice);
- strings escape ``"``, ``\\``, control characters (``\\b \\f \\n \\r \\t`` short, the rest
  ``\\u00XX``), and, as Go's HTML-safe default does, ``< > &`` and U+2028/U+2029 as
  ``\\u003c \\u003e \\u0026 \\u2028 \\u2029``; everything else is raw UTF-8;
- ``map[string]any`` values (DataPart, tool args and outputs, input schemas) hold float64
  numbers printed by Go's float encoder (``-0`` included) with keys sorted bytewise;
- ``[]byte`` is padded standard base64.

Input is the proto3-JSON of :mod:`agentsessions.v1.model` (the same dicts the journal
holds). A key the mapping does not know, a wrong type, a lone surrogate, NaN or an infinity
raises InvalidArgumentError instead of hashing something Go would not (Go's Marshal fails on
NaN, and the reference then hashes empty input). Not verified against Go: the approval-era
``ToolResult`` fields ``Code``, ``ApprovalRequestSeq`` and ``ApprovalDecisionSeq``, which are
emitted here only when set (the digest's gap list, section 11).
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from json.encoder import encode_basestring
from typing import Any

from agentsessions.controller.spi import ModelRequest
from agentsessions.errors import InvalidArgumentError

__all__ = ["go_float", "go_string", "model_input_bytes", "model_input_hash"]

_GO_HTML_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)
_SURROGATE = re.compile("[\ud800-\udfff]")
_NULL = "null"

_MESSAGE_KEYS = frozenset({"role", "parts"})
_PART_KEYS = frozenset({"text", "file", "data", "reasoning", "tool_call", "tool_result"})
_MEDIATIONS = (
    "MEDIATION_UNSPECIFIED",
    "MEDIATION_IN_HARNESS_REPORTED",
    "MEDIATION_CONTROLLER_MEDIATED",
    "MEDIATION_REQUIRES_APPROVAL",
)
_MODES = ("MODE_UNSPECIFIED", "MODE_AUTO", "MODE_NONE", "MODE_REQUIRED")
_CODES = ("CODE_UNSPECIFIED", "APPROVAL_DENIED", "EXECUTOR_ERROR")


def model_input_hash(request: ModelRequest) -> str:
    """Lowercase hex SHA-256 of :func:`model_input_bytes`: ``MODEL_CALL.input_hash``."""
    return hashlib.sha256(model_input_bytes(request)).hexdigest()


def model_input_bytes(request: ModelRequest) -> bytes:
    """Exactly what Go's ``json.Marshal(api.ModelRequest)`` writes for ``request``."""
    fields = [
        ("Model", go_string(request.model, "model")),
        ("Messages", _messages(request.messages)),
        ("Params", _NULL if request.params is None else _params(request.params)),
    ]
    if request.tools:
        fields.append(("Tools", _slice(request.tools, _tool_definition, "tools")))
    if request.tool_choice is not None:
        fields.append(("ToolChoice", _tool_choice(request.tool_choice)))
    return _struct(fields).encode("utf-8")


# --------------------------------------------------------------------------- scalars


def go_string(value: object, path: str = "string") -> str:
    """A Go JSON string literal with encoding/json's default (HTML-safe) escaping."""
    if type(value) is not str:
        raise InvalidArgumentError(f"{path}: expected a string, got {type(value).__name__}")
    out = encode_basestring(value)
    if value.isascii():  # O(1); no surrogate, and only the three ASCII escapes can apply
        # translate() looks each character up in a dict: for a long text, most of the cost
        return out.translate(_GO_HTML_ESCAPES) if "<" in out or ">" in out or "&" in out else out
    if _SURROGATE.search(value):
        raise InvalidArgumentError(f"{path}: a lone surrogate is not valid UTF-8")
    return out.translate(_GO_HTML_ESCAPES)


def go_float(x: float) -> str:
    """Go encoding/json's float64 text: shortest digits, ``%e`` below 1e-6 or from 1e21.

    Matches ``strconv.AppendFloat(f, fmt, -1, 64)`` with fmt 'e' or 'f' as encoding/json
    picks it, including its clean-up of ``e-07`` to ``e-7``; ``-0.0`` prints as ``-0``.
    """
    if not math.isfinite(x):
        raise InvalidArgumentError(f"Go's encoding/json cannot encode the number {x!r}")
    sign = "-" if math.copysign(1.0, x) < 0 else ""
    if x == 0:
        return sign + "0"
    mantissa, _, exp_text = repr(abs(x)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    # value = 0.<digits> * 10**point
    point = len(whole) + int(exp_text or "0") - (len(whole + frac) - len(digits))
    digits = digits.rstrip("0")
    if abs(x) < 1e-6 or abs(x) >= 1e21:
        exp = point - 1
        head = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{head}e{'-' if exp < 0 else '+'}{abs(exp):02d}".replace("e-0", "e-", 1)
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    if point > 0:
        return f"{sign}{digits[:point]}.{digits[point:]}"
    return f"{sign}0.{'0' * -point}{digits}"


def _int(value: object, path: str) -> str:
    """An int32/int64 proto3-JSON value (number or decimal string) as a Go integer."""
    if type(value) is str and re.fullmatch(r"-?\d+", value):
        return str(int(value))
    if type(value) is int:
        return str(value)
    raise InvalidArgumentError(f"{path}: expected an integer, got {value!r}")


def _bool(value: object, path: str) -> str:
    if type(value) is not bool:
        raise InvalidArgumentError(f"{path}: expected a bool, got {type(value).__name__}")
    return "true" if value else "false"


def _bytes(value: object, path: str) -> str:
    """proto3-JSON bytes (standard or URL-safe base64, padding optional) as Go's []byte."""
    if type(value) is not str:
        raise InvalidArgumentError(f"{path}: expected base64 text, got {type(value).__name__}")
    text = value.rstrip("=").replace("-", "+").replace("_", "/")
    try:
        raw = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise InvalidArgumentError(f"{path}: not base64: {value!r}") from None
    return '"' + base64.b64encode(raw).decode("ascii") + '"'


def _enum(value: object, names: Sequence[str], prefix: str, path: str) -> str:
    """A proto enum (name or number) as the Go string constant: the name less ``prefix``."""
    if type(value) is int and 0 <= value < len(names):
        value = names[value]
    if value not in names:
        raise InvalidArgumentError(f"{path}: expected one of {', '.join(names)}, got {value!r}")
    assert isinstance(value, str)
    return go_string("" if value == names[0] else value.removeprefix(prefix))


# --------------------------------------------------------------------------- composites


def _struct(fields: Sequence[tuple[str, str]]) -> str:
    return "{" + ",".join(f'"{name}":{value}' for name, value in fields) + "}"


def _object(value: object, path: str, keys: frozenset[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(f"{path}: expected an object, got {type(value).__name__}")
    unknown = set(value) - keys
    if unknown:
        raise InvalidArgumentError(
            f"{path}: unknown field(s) {', '.join(sorted(map(str, unknown)))}"
        )
    return value


def _slice(
    items: object,
    encode: Callable[[Any, str], str],
    path: str,
    *,
    nil_if_empty: bool = False,
) -> str:
    if not isinstance(items, list | tuple):
        raise InvalidArgumentError(f"{path}: expected a list, got {type(items).__name__}")
    if not items and nil_if_empty:
        return _NULL
    return "[" + ",".join(encode(item, f"{path}[{i}]") for i, item in enumerate(items)) + "]"


def _any(value: object, path: str) -> str:
    """A ``map[string]any`` member as Go prints it (numbers are float64)."""
    if value is None:
        return _NULL
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is str:
        return go_string(value, path)
    if type(value) is int or type(value) is float:
        try:
            return go_float(float(value))
        except OverflowError:
            raise InvalidArgumentError(f"{path}: {value} does not fit a float64") from None
    if isinstance(value, Mapping):
        return _map(value, path)
    if isinstance(value, list | tuple):
        return "[" + ",".join(_any(v, f"{path}[{i}]") for i, v in enumerate(value)) + "]"
    raise InvalidArgumentError(f"{path}: {type(value).__name__} is not a JSON value")


def _map(value: object, path: str) -> str:
    """A ``map[string]any`` (a proto Struct): keys sorted bytewise, as Go sorts them."""
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(f"{path}: expected an object, got {type(value).__name__}")
    for key in value:
        if type(key) is not str:
            raise InvalidArgumentError(f"{path}: object keys must be strings, got {key!r}")
    # Code-point order of str equals byte order of their UTF-8 (surrogates are refused).
    items = sorted(value.items())
    return "{" + ",".join(f"{go_string(k, path)}:{_any(v, f'{path}.{k}')}" for k, v in items) + "}"


def _params(params: Mapping[str, str]) -> str:
    for key, val in params.items():
        if type(key) is not str or type(val) is not str:
            raise InvalidArgumentError(f"params must map strings to strings: {key!r}: {val!r}")
    return _map(params, "params")


# --------------------------------------------------------------------------- messages


def _messages(items: object) -> str:
    """``Messages``: :func:`_slice` of :func:`_message`, written out because a turn hashes its
    whole window again: a field path is built only for a message that needs the general
    encoder (and names the field when it fails)."""
    if type(items) is not tuple and not isinstance(items, list | tuple):
        raise InvalidArgumentError(f"messages: expected a list, got {type(items).__name__}")
    if not items:
        return _NULL
    out = []
    for i, item in enumerate(items):
        one = _one_text(item)
        if one is not None:  # nearly every message of a conversation: one text part
            try:
                out.append(_one_text_message(*one))
                continue
            except InvalidArgumentError:
                pass  # the general path raises it again, naming the field
        texts = _plain_texts(item)
        if texts is not None:
            try:
                out.append(_text_message(*texts))
                continue
            except InvalidArgumentError:
                pass  # the general path raises it again, naming the field
        out.append(_general_message(item, f"messages[{i}]"))
    return "[" + ",".join(out) + "]"


def _message(value: object, path: str) -> str:
    texts = _plain_texts(value)
    if texts is not None:
        try:
            return _text_message(*texts)
        except InvalidArgumentError:
            pass  # the general path raises it again, naming the field
    return _general_message(value, path)


def _general_message(value: object, path: str) -> str:
    """Any message, field by field (:func:`_message` is this, memoised for text-only ones)."""
    msg = _object(value, path, frozenset({"role", "parts"}))
    return _struct(
        [
            ("Role", go_string(msg.get("role", ""), f"{path}.role")),
            ("Parts", _slice(msg.get("parts", []), _part, f"{path}.parts", nil_if_empty=True)),
        ]
    )


def _one_text(value: object) -> tuple[str, str] | None:
    """``(role, text)`` of a message made of exactly one text part, else None.

    :func:`_plain_texts` for the shape nearly every message of a conversation has, with no
    loop: each turn hashes its whole window again, so this check runs ~20 times a turn. A
    dict of exactly two keys whose ``role`` is a str and ``parts`` a list can only be
    ``{"role", "parts"}``; a one-key dict whose ``text`` is a dict can only be ``{"text"}``."""
    if type(value) is not dict or len(value) != 2:
        return None
    role, parts = value.get("role"), value.get("parts")
    if type(role) is not str or type(parts) is not list or len(parts) != 1:
        return None
    part = parts[0]
    if type(part) is not dict or len(part) != 1:
        return None
    inner = part.get("text")
    if type(inner) is not dict or len(inner) != 1:
        return None
    text = inner.get("text")
    return (role, text) if type(text) is str else None


def _plain_texts(value: object) -> tuple[str, tuple[str, ...]] | None:
    """``(role, texts)`` of a message made only of text parts, else None (the general path).

    Such messages are nearly all of a conversation, and each turn hashes its whole window of
    history again: recognising them is cheap, and their encoding is then memoised."""
    if type(value) is not dict or not value.keys() <= _MESSAGE_KEYS:
        return None
    role, parts = value.get("role", ""), value.get("parts", ())
    if type(role) is not str or (type(parts) is not list and parts != ()):
        return None
    texts = []
    for part in parts:
        if type(part) is not dict or len(part) != 1:
            return None
        inner = part.get("text")
        if type(inner) is not dict or len(inner) != 1:
            return None
        text = inner.get("text")
        if type(text) is not str:
            return None
        texts.append(text)
    return role, tuple(texts)


@functools.lru_cache(maxsize=4096)
def _text_message(role: str, texts: tuple[str, ...]) -> str:
    """What :func:`_message` writes for a message of text parts only (memoised)."""
    if not texts:
        return '{"Role":' + go_string(role) + ',"Parts":null}'
    parts = ",".join(
        '{"Text":{"Text":' + go_string(text) + '},"File":null,"Data":null,"Reasoning":null}'
        for text in texts
    )
    return '{"Role":' + go_string(role) + ',"Parts":[' + parts + "]}"


@functools.lru_cache(maxsize=4096)
def _one_text_message(role: str, text: str) -> str:
    """:func:`_text_message` of one text (memoised by the pair: no tuple to build per call)."""
    return _text_message(role, (text,))


def _part(value: object, path: str) -> str:
    part = _object(value, path, _PART_KEYS)
    text = part.get("text")
    data = part.get("data")
    fields = [
        ("Text", _NULL if text is None else _text_part(text, f"{path}.text")),
        ("File", _NULL if part.get("file") is None else _file_part(part["file"], f"{path}.file")),
        ("Data", _NULL if data is None else _data_part(data, f"{path}.data")),
        (
            "Reasoning",
            _NULL
            if part.get("reasoning") is None
            else _reasoning_part(part["reasoning"], f"{path}.reasoning"),
        ),
    ]
    if part.get("tool_call") is not None:
        fields.append(("ToolCall", _tool_call(part["tool_call"], f"{path}.tool_call")))
    if part.get("tool_result") is not None:
        fields.append(("ToolResult", _tool_result(part["tool_result"], f"{path}.tool_result")))
    return _struct(fields)


def _text_part(value: object, path: str) -> str:
    text = _object(value, path, frozenset({"text"}))
    return _struct([("Text", go_string(text.get("text", ""), f"{path}.text"))])


def _data_part(value: object, path: str) -> str:
    data = _object(value, path, frozenset({"data"}))
    return _map(data.get("data", {}), f"{path}.data")


def _file_part(value: object, path: str) -> str:
    f = _object(value, path, frozenset({"mime", "bytes", "uri", "name", "digest"}))
    return _struct(
        [
            ("MIME", go_string(f.get("mime", ""), f"{path}.mime")),
            ("Bytes", _NULL if f.get("bytes") is None else _bytes(f["bytes"], f"{path}.bytes")),
            ("URI", go_string(f.get("uri", ""), f"{path}.uri")),
            ("Digest", go_string(f.get("digest", ""), f"{path}.digest")),
            ("Name", go_string(f.get("name", ""), f"{path}.name")),
        ]
    )


_REASONING_KEYS = frozenset(
    {
        "provider",
        "model_id",
        "opaque_bytes",
        "opaque_uri",
        "summary",
        "item_id",
        "ordinal",
        "validity_scope",
        "opaque_digest",
    }
)


def _reasoning_part(value: object, path: str) -> str:
    r = _object(value, path, _REASONING_KEYS)
    opaque = r.get("opaque_bytes")
    return _struct(
        [
            ("Provider", go_string(r.get("provider", ""), f"{path}.provider")),
            ("ModelID", go_string(r.get("model_id", ""), f"{path}.model_id")),
            ("Opaque", _NULL if opaque is None else _bytes(opaque, f"{path}.opaque_bytes")),
            ("OpaqueURI", go_string(r.get("opaque_uri", ""), f"{path}.opaque_uri")),
            ("OpaqueDigest", go_string(r.get("opaque_digest", ""), f"{path}.opaque_digest")),
            ("Summary", _slice(r.get("summary", []), _part, f"{path}.summary", nil_if_empty=True)),
            ("ItemID", go_string(r.get("item_id", ""), f"{path}.item_id")),
            ("Ordinal", _int(r.get("ordinal", 0), f"{path}.ordinal")),
            ("ValidityScope", go_string(r.get("validity_scope", ""), f"{path}.validity_scope")),
        ]
    )


def _tool_call(value: object, path: str) -> str:
    c = _object(value, path, frozenset({"id", "tool", "args", "mediation", "idempotency_key"}))
    args = c.get("args")
    return _struct(
        [
            ("ID", go_string(c.get("id", ""), f"{path}.id")),
            ("Tool", go_string(c.get("tool", ""), f"{path}.tool")),
            ("Args", _NULL if args is None else _map(args, f"{path}.args")),
            (
                "Mediation",
                _enum(
                    c.get("mediation", _MEDIATIONS[0]),
                    _MEDIATIONS,
                    "MEDIATION_",
                    f"{path}.mediation",
                ),
            ),
            ("IdempotencyKey", go_string(c.get("idempotency_key", ""), f"{path}.idempotency_key")),
        ]
    )


_RESULT_KEYS = frozenset(
    {
        "id",
        "output",
        "output_uri",
        "is_error",
        "error",
        "output_digest",
        "content",
        "code",
        "approval_request_seq",
        "approval_decision_seq",
    }
)


def _tool_result(value: object, path: str) -> str:
    r = _object(value, path, _RESULT_KEYS)
    output = r.get("output")
    fields = [
        ("ID", go_string(r.get("id", ""), f"{path}.id")),
        ("Output", _NULL if output is None else _map(output, f"{path}.output")),
        ("OutputURI", go_string(r.get("output_uri", ""), f"{path}.output_uri")),
        ("OutputDigest", go_string(r.get("output_digest", ""), f"{path}.output_digest")),
        ("IsError", _bool(r.get("is_error", False), f"{path}.is_error")),
        ("Error", go_string(r.get("error", ""), f"{path}.error")),
    ]
    if r.get("content"):
        fields.append(("Content", _slice(r["content"], _part, f"{path}.content")))
    # Approval-era fields: exact Go tags unverified (digest section 11); emitted only when set.
    code = _enum(r.get("code", _CODES[0]), _CODES, "", f"{path}.code")
    if code != '""':
        fields.append(("Code", code))
    for name, key in (
        ("ApprovalRequestSeq", "approval_request_seq"),
        ("ApprovalDecisionSeq", "approval_decision_seq"),
    ):
        seq = _int(r.get(key, 0), f"{path}.{key}")
        if seq != "0":
            fields.append((name, seq))
    return _struct(fields)


def _tool_definition(value: object, path: str) -> str:
    d = _object(value, path, frozenset({"name", "description", "input_schema"}))
    schema = d.get("input_schema")
    return _struct(
        [
            ("Name", go_string(d.get("name", ""), f"{path}.name")),
            ("Description", go_string(d.get("description", ""), f"{path}.description")),
            ("InputSchema", _NULL if schema is None else _map(schema, f"{path}.input_schema")),
        ]
    )


def _tool_choice(value: object) -> str:
    c = _object(value, "tool_choice", frozenset({"mode", "name"}))
    return _struct(
        [
            ("Mode", _enum(c.get("mode", _MODES[0]), _MODES, "MODE_", "tool_choice.mode")),
            ("Name", go_string(c.get("name", ""), "tool_choice.name")),
        ]
    )
