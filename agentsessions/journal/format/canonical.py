"""RFC 8785 (JCS) canonical JSON, the hashed envelope, and strict JSON decoding.

This is the hash hot path. Invariants:

- ``canonical_json(v)`` is byte-identical to RFC 8785 JCS of ``v`` (the ``rfc8785`` package is
  the test oracle), whether or not msgspec is importable, or it raises
  :class:`~agentsessions.errors.InvalidArgumentError`. It never silently changes a value:
  NaN, infinities, lone surrogates, non-string keys and unsupported types are refused.
- JSON numbers are IEEE doubles (I-JSON). An ``int`` beyond +-(2**53-1) is accepted only when
  its decimal digits are exactly what JCS prints for the nearest double (which is what decoding
  stored JCS text yields, e.g. ``1152921504606847000`` for ``2**60``), so decode-then-encode of
  canonical bytes is the identity; any other large int is refused rather than rounded.
  :func:`json_number` maps any number onto that form.
- ``envelope(e, p, s)`` is valid JCS for canonical ``e``: its keys sort event < prev_hash < seq.
- ``loads`` accepts exactly RFC 8259 JSON in strict UTF-8 (no NaN/Infinity literals, no
  numbers that overflow a double, no lone surrogates) and gives identical values with and
  without msgspec; anything else is a :class:`~agentsessions.errors.FormatError`.

How ``canonical_json`` stays fast: a value is "plain" when it has no floats, its ints are
spelled as JCS spells them, and its keys are below U+D800 (where UTF-16 and code-point order
agree). Plain values go to a C encoder with sorted keys (msgspec, else the stdlib json
encoder; both escape strings exactly as JCS does and raise on lone surrogates). With msgspec,
one Python pass (:func:`_prep`) both checks the value and copies-on-write what is not plain:
floats become ``msgspec.Raw`` ECMAScript numbers, objects with high keys become ``Raw`` objects
in UTF-16 key order. Without msgspec, :func:`_scan` checks and a pure encoder takes the rest.

Measured on the project machine (Python 3.11, 2 shared cores, best of 3 runs; ratios are
what matters, absolute numbers move ~2x with load), events/s:

    event                                  msgspec path   pure path   rfc8785
    ~1.1 KB OUTPUT (long text)                 ~215,000      ~72,000    ~20,000
    ~1.2 KB TOOL_CALL (60-key args)             ~60,000      ~25,000     ~5,000
    same plus 10 floats (exact path)            ~27,000      ~13,000     ~6,000
    ~180 B INPUT                               ~390,000     ~155,000    ~35,000

Variants measured and dropped: a separate scan followed by a copy for floats cost a second
walk (float events -30%); building the copy in the scan costs plain values ~5% (kept: one
pass); a C-level ``set(map(type, values))`` pre-check was 2x slower on small objects.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from json.encoder import encode_basestring as _json_str
from typing import Any

from agentsessions.errors import FormatError, InvalidArgumentError
from agentsessions.journal.format import strictjson
from agentsessions.v1.numbers import JS_EXP_LIMIT, MAX_SAFE_INT, format_number

try:
    import msgspec
except ImportError:  # pragma: no cover - exercised by the pure-path tests via monkeypatch
    msgspec = None  # type: ignore[assignment]

HAVE_MSGSPEC: bool = msgspec is not None
"""Whether the msgspec accelerator is importable (False in the pure-Python zipapp)."""
# reusable codec objects: a third cheaper per call than msgspec.json.encode/decode
_SORTED_ENCODER = msgspec.json.Encoder(order="sorted") if msgspec is not None else None
_DECODER = msgspec.json.Decoder() if msgspec is not None else None

_INT64_MAX = 2**63 - 1
_PLAIN, _SLOW = 0, 1
_HEX64 = re.compile(r"[0-9a-f]{64}")
_ENVELOPE_TAIL = re.compile(rb',"prev_hash":"((?:[0-9a-f]{64})?)","seq":"(0|[1-9][0-9]{0,18})"\}')
_EVENT_PREFIX = b'{"event":'
_TAIL_KEY = b',"prev_hash":"'
_JSON_SORTED = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)
_JSON_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _big_int_ok(x: int) -> bool:
    """True when a large int's digits are exactly JCS's spelling of its nearest double."""
    if not -JS_EXP_LIMIT < x < JS_EXP_LIMIT:
        return False
    return format_number(float(x)) == str(x)


# --------------------------------------------------------------------------- the scan


def _high_key(k: str) -> bool:
    return not k.isascii() and max(k) >= "\ud800"


def _scan(v: Any) -> int:
    """Return _PLAIN if ``v`` encodes as JCS with sorted keys as is, _SLOW if it needs the
    exact path (floats, keys at or above U+D800); raise InvalidArgumentError if it cannot be
    encoded at all."""
    t = type(v)
    if t is dict:
        r = _PLAIN
        for k, x in v.items():
            if type(k) is not str:
                raise InvalidArgumentError(f"object keys must be strings, got {type(k).__name__}")
            if not k.isascii() and max(k) >= "\ud800":
                r = _SLOW
            tx = type(x)
            if tx is str or tx is bool or x is None:
                continue
            if tx is int:
                if (x > MAX_SAFE_INT or x < -MAX_SAFE_INT) and not _big_int_ok(x):
                    raise _bad_int(x)
                continue
            r |= _scan(x)
        return r
    if t is list or t is tuple:
        r = _PLAIN
        for x in v:
            tx = type(x)
            if tx is str or tx is bool or x is None:
                continue
            r |= _scan(x)
        return r
    if t is str or t is bool or v is None:
        return _PLAIN
    if t is int:
        if (v > MAX_SAFE_INT or v < -MAX_SAFE_INT) and not _big_int_ok(v):
            raise _bad_int(v)
        return _PLAIN
    if t is float:
        if v != v or v in (math.inf, -math.inf):
            raise InvalidArgumentError(f"JSON cannot represent the number {v!r}")
        return _SLOW
    raise InvalidArgumentError(f"cannot encode a value of type {t.__name__} as JSON")


def _bad_int(x: int) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"integer {x} is beyond +-(2**53-1) and not a JSON double; "
        "pass it as a string (int64) or a float (Struct number)"
    )


# --------------------------------------------------------------------------- encoders


def _utf16_key(k: str) -> bytes:
    return k.encode("utf-16-be")


def _sorted_keys(d: dict[str, Any]) -> list[str]:
    keys = list(d)
    if any(_high_key(k) for k in keys):
        keys.sort(key=_utf16_key)
    else:
        keys.sort()
    return keys


def _pure(v: Any, out: list[str], sort: bool) -> None:
    """Append the JCS text of an already scanned value (the no-msgspec exact path)."""
    t = type(v)
    if t is str:
        out.append(_json_str(v))
    elif t is dict:
        out.append("{")
        for i, k in enumerate(_sorted_keys(v) if sort else v):
            if i:
                out.append(",")
            out.append(_json_str(k))
            out.append(":")
            _pure(v[k], out, sort)
        out.append("}")
    elif t is list or t is tuple:
        out.append("[")
        for i, x in enumerate(v):
            if i:
                out.append(",")
            _pure(x, out, sort)
        out.append("]")
    elif v is None:
        out.append("null")
    elif t is bool:
        out.append("true" if v else "false")
    elif t is int:
        out.append(int.__repr__(v))
    else:
        out.append(format_number(v))


def _prep(v: Any) -> Any:
    """The msgspec path's single pass: check ``v`` like :func:`_scan` and copy-on-write it so
    that msgspec's sorted output is JCS: floats become ``Raw`` ECMAScript numbers, objects with
    keys at or above U+D800 become ``Raw`` objects in UTF-16 key order. Returns ``v`` itself
    (no copy) when it is plain."""
    t = type(v)
    if t is dict:
        new = None
        high = False
        for k, x in v.items():
            if type(k) is not str:
                raise InvalidArgumentError(f"object keys must be strings, got {type(k).__name__}")
            if not k.isascii() and max(k) >= "\ud800":
                high = True
            tx = type(x)
            if tx is str or tx is bool or x is None:
                continue
            if tx is int:
                if (x > MAX_SAFE_INT or x < -MAX_SAFE_INT) and not _big_int_ok(x):
                    raise _bad_int(x)
                continue
            y = _prep(x)
            if y is not x:
                if new is None:
                    new = dict(v)
                new[k] = y
        d = v if new is None else new
        return _raw_object(d) if high else d
    if t is list or t is tuple:
        items = None
        for i, x in enumerate(v):
            tx = type(x)
            if tx is str or tx is bool or x is None:
                continue
            y = _prep(x)
            if y is not x:
                if items is None:
                    items = list(v)
                items[i] = y
        return v if items is None else items
    if t is float:
        return msgspec.Raw(format_number(v).encode())
    _scan(v)  # scalars: same checks, same errors
    return v


def _raw_object(d: dict[str, Any]) -> Any:
    enc = msgspec.json.encode
    items = [enc(k) + b":" + enc(d[k], order="sorted") for k in sorted(d, key=_utf16_key)]
    return msgspec.Raw(b"{" + b",".join(items) + b"}")


def _raw_floats(v: Any) -> Any:
    """Copy-on-write for :func:`dumps`: floats become ``Raw`` ECMAScript numbers."""
    t = type(v)
    if t is float:
        return msgspec.Raw(format_number(v).encode())
    if t is dict:
        return {k: _raw_floats(x) for k, x in v.items()}
    if t is list or t is tuple:
        return [_raw_floats(x) for x in v]
    return v


def _encode(value: Any) -> bytes:
    if msgspec is not None:
        return msgspec.json.encode(_prep(value), order="sorted")
    if _scan(value) == _PLAIN:
        return _JSON_SORTED.encode(value).encode()
    out: list[str] = []
    _pure(value, out, True)
    return "".join(out).encode()


def canonical_plain(value: Any) -> bytes:
    """JCS bytes of a value already proven *plain* (see ``schema.validate_event``).

    Plain values (no floats, no keys at or above U+D800, ints JCS prints as digits) encode
    as JCS with sorted keys as they are, so this skips :func:`canonical_json`'s own walk.
    """
    try:
        if _SORTED_ENCODER is not None:
            return _SORTED_ENCODER.encode(value)
        return _JSON_SORTED.encode(value).encode()
    except UnicodeEncodeError:
        raise InvalidArgumentError("a string contains a lone UTF-16 surrogate") from None
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidArgumentError(f"cannot encode as JSON: {exc}") from None


def canonical_json(value: Any) -> bytes:
    """RFC 8785 (JCS) bytes of a JSON-shaped value (dict/list/tuple/str/int/float/bool/None).

    Raises InvalidArgumentError for anything JCS cannot represent exactly.
    """
    try:
        return _encode(value)
    except UnicodeEncodeError:
        raise InvalidArgumentError("a string contains a lone UTF-16 surrogate") from None
    except RecursionError:
        raise InvalidArgumentError("value is nested too deeply to encode") from None


def dumps(value: Any) -> bytes:
    """Compact JSON for side files (insertion key order, not canonical, not hashed).

    Same bytes with and without msgspec: numbers are written as ECMAScript prints them; any
    int is allowed; NaN, infinities and lone surrogates raise InvalidArgumentError.
    """
    try:
        plain = _scan_loose(value)
        if msgspec is not None:
            return msgspec.json.encode(value if plain else _raw_floats(value))
        if plain:
            return _JSON_COMPACT.encode(value).encode()
        out: list[str] = []
        _pure(value, out, False)
        return "".join(out).encode()
    except UnicodeEncodeError:
        raise InvalidArgumentError("a string contains a lone UTF-16 surrogate") from None
    except RecursionError:
        raise InvalidArgumentError("value is nested too deeply to encode") from None


def _scan_loose(v: Any) -> bool:
    """Like _scan, but any int is fine and key order does not matter; True if float-free."""
    t = type(v)
    if t is str or t is int or t is bool or v is None:
        return True
    if t is float:
        if v != v or v in (math.inf, -math.inf):
            raise InvalidArgumentError(f"JSON cannot represent the number {v!r}")
        return False
    if t is dict:
        for k in v:
            if type(k) is not str:
                raise InvalidArgumentError(f"object keys must be strings, got {type(k).__name__}")
        return all([_scan_loose(x) for x in v.values()])
    if t is list or t is tuple:
        return all([_scan_loose(x) for x in v])
    raise InvalidArgumentError(f"cannot encode a value of type {t.__name__} as JSON")


# --------------------------------------------------------------------------- envelope


def envelope(event_json: bytes, prev_hash: str, seq: int) -> bytes:
    """The canonical hashed envelope ``{"event":E,"prev_hash":P,"seq":"N"}`` for canonical E.

    ``prev_hash`` must be "" (genesis) or 64 lowercase hex digits; ``seq`` a non-negative int64.
    """
    if prev_hash and not (len(prev_hash) == 64 and _HEX64.fullmatch(prev_hash)):
        raise InvalidArgumentError(
            f"prev_hash must be empty or 64 lowercase hex digits: {prev_hash!r}"
        )
    if type(seq) is not int or not 0 <= seq <= _INT64_MAX:
        raise InvalidArgumentError(f"seq must be a non-negative int64, got {seq!r}")
    if not (event_json[:1] == b"{" and event_json[-1:] == b"}"):
        raise InvalidArgumentError("event_json must be the canonical bytes of a JSON object")
    return envelope_unchecked(event_json, prev_hash, seq)


def envelope_of(event: Any, prev_hash: str, seq: int) -> bytes:
    """``envelope(canonical_json(event), prev_hash, seq)``, encoded in one pass with msgspec.

    The same bytes without the intermediate copy of the event's JSON: a foreign record may be
    tens of megabytes, and import and verify must stay memory-bounded (one copy, not two).
    """
    if msgspec is None:
        return envelope(canonical_json(event), prev_hash, seq)
    if type(event) is not dict:
        raise InvalidArgumentError("event_json must be the canonical bytes of a JSON object")
    if prev_hash and not (len(prev_hash) == 64 and _HEX64.fullmatch(prev_hash)):
        raise InvalidArgumentError(
            f"prev_hash must be empty or 64 lowercase hex digits: {prev_hash!r}"
        )
    if type(seq) is not int or not 0 <= seq <= _INT64_MAX:
        raise InvalidArgumentError(f"seq must be a non-negative int64, got {seq!r}")
    # the three envelope keys sort as JCS orders them; _prep makes the event's sorted output JCS
    wrapper = {"event": None, "prev_hash": prev_hash, "seq": str(seq)}
    try:
        wrapper["event"] = _prep(event)
        return _SORTED_ENCODER.encode(wrapper)
    except UnicodeEncodeError:
        raise InvalidArgumentError("a string contains a lone UTF-16 surrogate") from None
    except RecursionError:
        raise InvalidArgumentError("value is nested too deeply to encode") from None


def envelope_unchecked(event_json: bytes, prev_hash: str, seq: int) -> bytes:
    """:func:`envelope` without its argument checks, for the append path, which made every
    argument itself (bytes it just canonicalised, the previous digest, its own seq)."""
    return b"".join(
        (_EVENT_PREFIX, event_json, b',"prev_hash":"', prev_hash.encode(), b'","seq":"',
         b"%d" % seq, b'"}')
    )  # fmt: skip


def content_hash(payload: bytes) -> str:
    """Lowercase hex SHA-256 of the stored (canonical) payload."""
    return hashlib.sha256(payload).hexdigest()


def split_envelope(payload: bytes) -> tuple[bytes, str, int]:
    """Split a stored canonical envelope into ``(event_json, prev_hash, seq)`` without parsing.

    Matches the fixed prefix and the fixed tail; raises FormatError for any other shape. The
    event bytes are not checked (a strict verify re-canonicalises them).
    """
    prev_hash, seq, cut = _envelope_tail(payload)
    return payload[len(_EVENT_PREFIX) : cut], prev_hash, seq


def event_bytes(payload: bytes, prev_hash: str, seq: int) -> bytes:
    """The event's bytes in the envelope of the record at ``seq`` after ``prev_hash``: sliced
    off by the tail those two make, checked whole (no search, no pattern: ~0.2 us, where
    :func:`split_envelope` takes ~1.6 us and a remote harness's Start slices every event it
    sends), else as :func:`split_envelope` slices it (which says what is wrong)."""
    tail = b'%s%s","seq":"%d"}' % (_TAIL_KEY, prev_hash.encode(), seq)
    start, end = len(_EVENT_PREFIX), len(payload) - len(tail)
    if (
        0 <= seq <= _INT64_MAX
        and payload.endswith(tail)
        and payload.startswith(_EVENT_PREFIX)
        and end > start
        and payload[start : start + 1] == b"{"
        and payload[end - 1 : end] == b"}"
    ):
        return payload[start:end]
    return split_envelope(payload)[0]


def envelope_link(payload: bytes) -> tuple[str, int]:
    """``(prev_hash, seq)`` of a stored envelope, checked as :func:`split_envelope` checks it,
    without copying the event out (a payload may be megabytes)."""
    prev_hash, seq, _cut = _envelope_tail(payload)
    return prev_hash, seq


def _envelope_tail(payload: bytes) -> tuple[str, int, int]:
    if not payload.startswith(_EVENT_PREFIX):
        raise FormatError('payload does not start with {"event":')
    cut = payload.rfind(_TAIL_KEY)
    m = _ENVELOPE_TAIL.fullmatch(payload, cut) if cut > len(_EVENT_PREFIX) else None
    if m is None:
        raise FormatError('payload does not end with ,"prev_hash":"<hex>","seq":"<n>"}')
    seq = int(m.group(2))
    if seq > _INT64_MAX:
        raise FormatError(f"envelope seq {seq} is beyond int64")
    start = len(_EVENT_PREFIX)
    if not (payload[start : start + 1] == b"{" and payload[cut - 1 : cut] == b"}"):
        raise FormatError("envelope event is not a JSON object")
    return m.group(1).decode(), seq, cut


# --------------------------------------------------------------------------- decoding


def loads_bytes(data: bytes) -> Any:
    """Decode JSON bytes on the fastest path there is; on ANY failure call :func:`loads`,
    which raises the FormatError that names it (the same verdict, one call less per good
    document: readers decode one per record)."""
    try:
        return _DECODER.decode(data) if _DECODER is not None else loads(data)
    except (ValueError, UnicodeError, RecursionError):
        return loads(data)


def _event_decoder() -> Any:
    """A decoder of a stored envelope into a Struct, not a dict: one dict fewer per record,
    which a reader of a whole conversation pays for each of its events. Every field is
    declared and no other allowed, so that each byte is still checked (msgspec skips an
    unknown field's string without checking its UTF-8)."""
    assert msgspec is not None

    # gc=False: an Envelope lives only until its event is taken, and holds nothing that could
    # point back at it, so the collector need not count it (one object fewer per record)
    class Envelope(msgspec.Struct, forbid_unknown_fields=True, gc=False):
        event: dict[str, Any]
        prev_hash: str
        seq: str

    return msgspec.json.Decoder(Envelope)


EVENT_DECODER: Any = _event_decoder() if msgspec is not None else None
"""Decodes a stored envelope into a value whose ``event`` is the event (None without
msgspec); any failure: :func:`loads_event` names it. Public for :attr:`.Record.event`,
which calls it without a function of its own between (one per record read)."""


def loads_event(payload: bytes) -> Any:
    """The event of a stored envelope, decoded; on ANY failure the whole envelope is decoded
    by :func:`loads_bytes`, which names what is wrong (the same verdict as before)."""
    if EVENT_DECODER is not None:
        try:
            return EVENT_DECODER.decode(payload).event
        except (ValueError, UnicodeError, RecursionError):
            pass
    return loads_bytes(payload)["event"]


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Decode one JSON document from strict UTF-8 bytes (or str); FormatError if invalid
    (:func:`.strictjson.loads`, with msgspec's decoder when it is installed)."""
    return strictjson.loads(data, _DECODER.decode if _DECODER is not None else None)


__all__ = [
    "EVENT_DECODER",
    "HAVE_MSGSPEC",
    "canonical_json",
    "content_hash",
    "dumps",
    "envelope",
    "envelope_link",
    "envelope_of",
    "loads",
    "loads_bytes",
    "loads_event",
    "split_envelope",
]
