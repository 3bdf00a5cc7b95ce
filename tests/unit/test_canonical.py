"""canonical.py: JCS equals the rfc8785 oracle, the pure path equals the msgspec path.

Also home of the schema-driven strategy for canonical Events (``canonical_events``), which
test_schema.py imports from here.
"""

from __future__ import annotations

import base64
import json
import math
import re
from functools import cache
from typing import Any

import pytest
import rfc8785
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentsessions.errors import FormatError, InvalidArgumentError
from agentsessions.journal.format import canonical
from agentsessions.journal.format.records import Record
from agentsessions.v1 import numbers, schema, timestamps

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --------------------------------------------------------------------------- strategies

SAFE = numbers.MAX_SAFE_INT
texts = st.text(max_size=12)  # every code point but lone surrogates, astral included
keys = st.one_of(
    texts, st.sampled_from(["\uffff", "\U0001f600", "\ue000", "a\uffff", "a\U0001f600"])
)
finite = st.floats(allow_nan=False, allow_infinity=False)
scalars = st.one_of(
    st.none(), st.booleans(), texts, st.integers(-SAFE, SAFE), finite,
    st.sampled_from([0.1, 1e21, 1e-7, -0.0, 2.0, 5e-324, 1.7976931348623157e308, 1e16, 1e-6]),
)  # fmt: skip
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)),
    max_leaves=12,
)
structs = st.dictionaries(keys, json_values, max_size=4)


def _nonzero_int64() -> st.SearchStrategy[str]:
    ints = st.one_of(
        st.integers(-(2**63), 2**63 - 1),
        st.sampled_from([2**53 + 1, 2**63 - 1, -(2**63), 9007199254740993]),
    )
    return ints.filter(bool).map(str)


def _timestamps() -> st.SearchStrategy[str]:
    nanos = st.one_of(
        st.just(0),
        st.integers(0, 999).map(lambda n: n * 1_000_000),
        st.integers(0, 999_999).map(lambda n: n * 1000),
        st.integers(0, 10**9 - 1),
    )
    secs = st.integers(timestamps.MIN_TIMESTAMP_SECONDS, timestamps.MAX_TIMESTAMP_SECONDS)
    return st.builds(timestamps.timestamp_from_parts, secs, nanos)


def _scalar(f: schema.Field) -> st.SearchStrategy[Any]:
    presence = f.has_presence
    if f.type == schema.STRING:
        return texts if presence else texts.filter(bool)
    if f.type == schema.BYTES:
        data = st.binary(max_size=10) if presence else st.binary(min_size=1, max_size=10)
        return data.map(lambda b: base64.b64encode(b).decode())
    if f.type == schema.INT64:
        return st.one_of(st.just("0"), _nonzero_int64()) if presence else _nonzero_int64()
    if f.type == schema.INT32:
        return st.integers(-(2**31), 2**31 - 1).filter(lambda n: n != 0 or presence)
    if f.type == schema.BOOL:
        return st.booleans() if presence else st.just(True)
    if f.type == schema.ENUM:
        names = schema.ENUMS[f.ref]
        unknown = st.integers(len(names), 2**31 - 1)
        return st.one_of(st.sampled_from(names if presence else names[1:]), unknown)
    if f.type == schema.TIMESTAMP:
        return _timestamps()
    return structs


def _field(f: schema.Field, depth: int) -> st.SearchStrategy[Any] | None:
    if f.label == schema.MAP:
        return st.dictionaries(keys, texts, min_size=1, max_size=3)
    if f.type == schema.MESSAGE:
        if depth <= 0:
            return None
        item = message_strategy(f.ref, depth - 1)
    else:
        item = _scalar(f)
    if f.label == schema.REPEATED:
        return st.lists(item, min_size=1, max_size=3)
    return item


@cache
def message_strategy(name: str, depth: int = 3) -> st.SearchStrategy[dict[str, Any]]:
    """Canonical proto3-JSON of message ``name`` (nesting at most ``depth`` messages deep)."""
    plain: dict[str, st.SearchStrategy[Any]] = {}
    oneof: dict[str, st.SearchStrategy[Any]] = {}
    for f in schema.MESSAGES[name]:
        strategy = _field(f, depth)
        if strategy is not None:
            (oneof if f.oneof else plain)[f.name] = strategy
    base = st.fixed_dictionaries({}, optional=plain)
    if not oneof:
        return base
    members = [st.just({})] + [s.map(lambda v, n=n: {n: v}) for n, s in oneof.items()]
    return st.builds(lambda a, b: {**a, **b}, base, st.one_of(members))


canonical_events = message_strategy("Event")


def typed(v: Any) -> Any:
    """A comparable form that tells 1 from 1.0 and 0.0 from -0.0."""
    if isinstance(v, dict):
        return ("dict", sorted((k, typed(x)) for k, x in v.items()))
    if isinstance(v, list):
        return ("list", [typed(x) for x in v])
    return (type(v).__name__, repr(v))


@pytest.fixture
def pure(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the test as the pure-Python zipapp would: msgspec not importable."""
    for name in _ACCELERATORS:
        monkeypatch.setattr(canonical, name, None)


_ACCELERATORS = ("msgspec", "_SORTED_ENCODER", "_DECODER", "EVENT_DECODER")


def _pure_call(fn: Any, *args: Any) -> Any:
    saved = {name: getattr(canonical, name) for name in _ACCELERATORS}
    for name in _ACCELERATORS:
        setattr(canonical, name, None)
    try:
        return fn(*args)
    finally:
        for name, value in saved.items():
            setattr(canonical, name, value)


def _outcome(fn: Any, *args: Any) -> Any:
    try:
        return typed(fn(*args))
    except (FormatError, InvalidArgumentError) as exc:
        return ("error", type(exc).__name__)


# --------------------------------------------------------------------------- properties


@SETTINGS
@given(json_values)
def test_canonical_json_equals_rfc8785(value: Any) -> None:
    assert canonical.canonical_json(value) == rfc8785.dumps(value)


@SETTINGS
@given(canonical_events)
def test_canonical_events_equal_rfc8785(event: dict[str, Any]) -> None:
    assert canonical.canonical_json(event) == rfc8785.dumps(event)


@SETTINGS
@given(st.one_of(json_values, canonical_events))
def test_pure_path_equals_msgspec_path(value: Any) -> None:
    expected = canonical.canonical_json(value)
    assert _pure_call(canonical.canonical_json, value) == expected
    assert _pure_call(canonical.dumps, value) == canonical.dumps(value)
    assert typed(canonical.loads(canonical.dumps(value))) == typed(canonical.loads(expected))


@SETTINGS
@given(
    canonical_events,
    st.one_of(st.just(""), st.text("0123456789abcdef", min_size=64, max_size=64)),
    st.integers(0, 2**63 - 1),
)
def test_split_envelope_inverts_envelope(event: dict[str, Any], prev: str, seq: int) -> None:
    body = canonical.canonical_json(event)
    payload = canonical.envelope(body, prev, seq)
    assert canonical.split_envelope(payload) == (body, prev, seq)
    wrapped = {"event": event, "prev_hash": prev, "seq": str(seq)}
    assert payload == rfc8785.dumps(wrapped) == canonical.canonical_json(wrapped)


@SETTINGS
@given(json_values)
def test_decode_of_canonical_bytes_reencodes_identically(value: Any) -> None:
    data = canonical.canonical_json(value)
    assert canonical.canonical_json(canonical.loads(data)) == data
    assert canonical.canonical_json(_pure_call(canonical.loads, data)) == data


def _json_texts() -> st.SearchStrategy[bytes]:
    def render(value: Any, indent: int | None, mutate: int, junk: bytes) -> bytes:
        text = json.dumps(value, indent=indent, ensure_ascii=indent is None).encode()
        if mutate and text:
            i = mutate % len(text)
            text = text[:i] + junk + text[i + 1 :]
        return text

    mutations = st.one_of(st.just(0), st.integers(1, 10**6))
    junk = st.sampled_from([b"", b",", b"\xff", b"NaN", b"\\ud800", b'"', b"1e999", b"-", b"0"])
    return st.builds(render, json_values, st.sampled_from([None, 1]), mutations, junk)


@SETTINGS
@given(st.one_of(_json_texts(), st.binary(max_size=20)))
def test_loads_pure_equals_msgspec(data: bytes) -> None:
    assert _outcome(canonical.loads, data) == _outcome(_pure_call, canonical.loads, data)


def _event_outcome(fn: Any, payload: bytes) -> Any:
    try:
        return typed(fn(payload))
    except (FormatError, KeyError, TypeError, AssertionError) as exc:
        return ("error", type(exc).__name__)


def _whole_envelope_event(payload: bytes) -> Any:
    return canonical.loads_bytes(payload)["event"]


def _whole_envelope_record_event(payload: bytes) -> Any:
    event = _whole_envelope_event(payload)
    if not isinstance(event, dict):  # Record.event names it in our tree
        raise FormatError("envelope event is not a JSON object")
    return event


def _record_event(payload: bytes) -> Any:
    return Record(1, "", "", 0, payload).event


@SETTINGS
@given(
    st.dictionaries(keys, json_values, max_size=4),
    st.sampled_from(["", "ab" * 32]),
    st.integers(1, 10**12),
    st.one_of(st.just(b""), st.binary(max_size=3)),
    st.integers(0, 200),
)
def test_loads_event_equals_the_whole_envelope_decoded(
    event: dict[str, Any], prev: str, seq: int, junk: bytes, at: int
) -> None:
    """The event-only decoder gives what decoding the whole envelope gives, on either path,
    for intact envelopes and damaged bytes alike."""
    payload = canonical.envelope(canonical.canonical_json(event), prev, seq)
    if junk:
        at = min(at, len(payload))
        payload = payload[:at] + junk + payload[at + len(junk) :]
    want = _event_outcome(_whole_envelope_event, payload)
    assert _event_outcome(canonical.loads_event, payload) == want
    assert _event_outcome(lambda p: _pure_call(canonical.loads_event, p), payload) == want
    want = _event_outcome(_whole_envelope_record_event, payload)  # Record.event: a dict
    assert _event_outcome(_record_event, payload) == want
    assert _event_outcome(lambda p: _pure_call(_record_event, p), payload) == want


@pytest.mark.parametrize(
    "payload",
    [
        b"[1,2]",
        b'{"prev_hash":"","seq":"1"}',
        b'{"event":[1]}',
        b'{"event":{"a":1}',
        b'{"event":{},"prev_hash":"","seq":"1","x":"\x80"}',
        b'{"event":{},"prev_hash":"\xff","seq":"1"}',
    ],
)
def test_loads_event_on_odd_envelopes_gives_what_the_whole_envelope_gives(payload: bytes) -> None:
    want = _event_outcome(_whole_envelope_event, payload)
    assert _event_outcome(canonical.loads_event, payload) == want
    want = _event_outcome(_whole_envelope_record_event, payload)
    assert _event_outcome(_record_event, payload) == want


def test_loads_event_takes_the_last_of_repeated_keys_as_the_whole_envelope_does() -> None:
    payload = b'{"event":{"a":1},"event":{"b":2},"prev_hash":"","seq":"1"}'
    assert canonical.loads_event(payload) == _whole_envelope_event(payload)


@SETTINGS
@given(finite)
def test_format_number_equals_rfc8785(x: float) -> None:
    assert numbers.format_number(x).encode() == rfc8785.dumps(x)


# --------------------------------------------------------------------------- examples


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"b": 1, "a": [True, None, "x"]}, b'{"a":[true,null,"x"],"b":1}'),
        ({"\U0001f600": 1, "\uffff": 2}, '{"\U0001f600":1,"\uffff":2}'.encode()),
        ([0.1, 1e21, 1e-7, -0.0, 2.0, 5e-324], b"[0.1,1e+21,1e-7,0,2,5e-324]"),
        (1.7976931348623157e308, b"1.7976931348623157e+308"),
        ("\u2028\x7f\x00\x1f\b", b'"\xe2\x80\xa8\x7f\\u0000\\u001f\\b"'),
        (2**60 + 24, b"1152921504606847000"),  # the digits JCS prints for the double 2**60
        (9007199254740992, b"9007199254740992"),
        ((1, "a"), b'[1,"a"]'),
    ],
)
@pytest.mark.parametrize("path", ["msgspec", "pure"])
def test_known_bytes(
    value: Any, expected: bytes, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if path == "pure":
        monkeypatch.setattr(canonical, "msgspec", None)
    assert canonical.canonical_json(value) == expected


def test_big_ints_match_the_double_they_stand_for() -> None:
    for n in (2**60 + 24, -(2**60 + 24), 10**20, 123456789012345680000):
        assert canonical.canonical_json(n) == rfc8785.dumps(float(n))


@pytest.mark.parametrize(
    "value",
    [
        math.nan,
        math.inf,
        -math.inf,
        {"a": [1, {"b": math.nan}]},
        SAFE + 2,
        2**60,  # exact, but JCS would print the double as ...847000: refuse rather than round
        -(2**64),
        10**21,
        "\ud800",
        {"k": "x\udfff"},
        {"\ud800": 1},
        {1: "a"},
        {"a": b"bytes"},
        {"a": {1, 2}},
        object(),
    ],
)
@pytest.mark.parametrize("path", ["msgspec", "pure"])
def test_unrepresentable_values_raise(
    value: Any, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if path == "pure":
        monkeypatch.setattr(canonical, "msgspec", None)
    with pytest.raises(InvalidArgumentError):
        canonical.canonical_json(value)


@pytest.mark.parametrize("path", ["msgspec", "pure"])
def test_dumps_is_compact_and_strict(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if path == "pure":
        monkeypatch.setattr(canonical, "msgspec", None)
    assert canonical.dumps({"b": 2**70, "a": [1.0, 1e21, "é"]}) == (
        '{"b":1180591620717411303424,"a":[1,1e+21,"é"]}'.encode()
    )
    for bad in (math.nan, {"a": math.inf}, {2: 1}, "\ud800"):
        with pytest.raises(InvalidArgumentError):
            canonical.dumps(bad)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"{",
        b"NaN",
        b"[Infinity]",
        b"-Infinity",
        b"1e400",
        b'"\xff"',
        b'"\xed\xa0\x80"',
        b'"\\ud800"',
        b'{"a":"\\udc00x"}',
        b"\xef\xbb\xbf{}",
        b"{} x",
        b"[1,]",
        b"01",
        b"1" * 4301,
        b"[" * 5000 + b"]" * 5000,
        "\ud800",
        '"\ud800"',
    ],
)
@pytest.mark.parametrize("path", ["msgspec", "pure"])
def test_loads_rejects(data: bytes | str, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if path == "pure":
        monkeypatch.setattr(canonical, "msgspec", None)
    with pytest.raises(FormatError) as info:
        canonical.loads(data)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("path", ["msgspec", "pure"])
def test_loads_values(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if path == "pure":
        monkeypatch.setattr(canonical, "msgspec", None)
    got = canonical.loads(
        b'{"a":[1,1.0,-0,-0.0,1e2,123456789012345678901234567890],"\\ud83d\\ude00":1}'
    )
    assert typed(got) == typed(
        {"a": [1, 1.0, 0, -0.0, 100.0, 123456789012345678901234567890], "\U0001f600": 1}
    )
    assert canonical.loads("[1]") == [1] == canonical.loads(memoryview(b"[1]"))


def test_envelope_validates_its_arguments() -> None:
    body = b'{"kind":"EVENT_INPUT"}'
    assert (
        canonical.envelope(body, "", 1)
        == b'{"event":{"kind":"EVENT_INPUT"},"prev_hash":"","seq":"1"}'
    )
    for prev, seq in [("AB" * 32, 1), ("ab" * 31, 1), ("", -1), ("", 2**63), ("", True), ("", "1")]:
        with pytest.raises(InvalidArgumentError):
            canonical.envelope(body, prev, seq)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        canonical.envelope(b"[]", "", 1)


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b'{"event":{},"prev_hash":"","seq":"01"}',
        b'{"event":{},"prev_hash":"","seq":"1"} ',
        b'{"event":{},"prev_hash":"ab","seq":"1"}',
        b'{"event":{},"prev_hash":"","seq":"-1"}',
        b'{"event":{},"prev_hash":"","seq":1}',
        b'{"event":{},"prev_hash":"","seq":"99999999999999999999"}',
        b'{"event":{},"prev_hash":"","seq":"9223372036854775808"}',
        b'{"event":[],"prev_hash":"","seq":"1"}',
        b'{"event":,"prev_hash":"","seq":"1"}',
        b'{"events":{},"prev_hash":"","seq":"1"}',
        b'{"event":{},"seq":"1","prev_hash":""}',
    ],
)
def test_split_envelope_rejects_other_shapes(payload: bytes) -> None:
    with pytest.raises(FormatError):
        canonical.split_envelope(payload)


def test_split_envelope_finds_the_real_tail() -> None:
    inner = {"data": {"x": ',"prev_hash":"', "prev_hash": "", "seq": "5"}}
    body = canonical.canonical_json(inner)
    payload = canonical.envelope(body, "cd" * 32, 7)
    assert canonical.split_envelope(payload) == (body, "cd" * 32, 7)


@SETTINGS
@given(
    canonical_events,
    st.one_of(st.just(""), st.text("0123456789abcdef", min_size=64, max_size=64)),
    st.integers(0, 2**63 - 1),
)
def test_event_bytes_slices_as_split_envelope(event: dict[str, Any], prev: str, seq: int) -> None:
    payload = canonical.envelope(canonical.canonical_json(event), prev, seq)
    assert canonical.event_bytes(payload, prev, seq) == canonical.split_envelope(payload)[0]
    record = Record.seal(canonical.canonical_json(event), seq=seq, prev_hash=prev, fence=1)
    assert record.event_json == canonical.canonical_json(event)


def test_event_bytes_of_a_record_its_payload_disagrees_with() -> None:
    body = canonical.canonical_json({"kind": "EVENT_END"})
    payload = canonical.envelope(body, "ab" * 32, 7)
    assert canonical.event_bytes(payload, "ab" * 32, 8) == body  # sliced as split_envelope
    assert canonical.event_bytes(payload, "", 7) == body
    with pytest.raises(FormatError):
        canonical.event_bytes(b'{"event":[],"prev_hash":"","seq":"1"}', "", 1)
    with pytest.raises(FormatError):
        canonical.event_bytes(b'{"event":{},"prev_hash":"","seq":"1"} ', "", 1)


def test_content_hash() -> None:
    assert canonical.content_hash(b"") == (
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )


def test_json_number_and_ijson() -> None:
    assert typed(numbers.json_number(2.0)) == typed(2)
    assert typed(numbers.json_number(-0.0)) == typed(0)
    assert numbers.json_number(2**60) == 1152921504606847000
    assert typed(numbers.json_number(1e21)) == typed(1e21)
    assert typed(numbers.json_number(0.5)) == typed(0.5)
    with pytest.raises(InvalidArgumentError):
        numbers.json_number(10**400)
    with pytest.raises(FormatError, match=r"x\.y\[1\]"):
        numbers.ijson({"y": [1, math.nan]}, error=FormatError, path="x")
    assert numbers.ijson((1, {"a": 2**53 + 1})) == [1, {"a": 9007199254740992}]


def test_have_msgspec_flag() -> None:
    assert canonical.HAVE_MSGSPEC is (canonical.msgspec is not None)


def test_modules_work_without_msgspec() -> None:
    """The pure-Python zipapp has no msgspec: every journal module must import and agree."""
    import subprocess
    import sys
    from pathlib import Path

    script = """
import sys
sys.modules["msgspec"] = None  # makes `import msgspec` raise ImportError
from agentsessions.journal.format import canonical
from agentsessions.journal.tools import interchange
from agentsessions.v1 import construct, normalize, schema
assert not canonical.HAVE_MSGSPEC
ev = construct.execution_start(input_count=0, execution_id="exec-default")
schema.validate_event(normalize.normalize_event(ev))
print(canonical.content_hash(canonical.envelope(canonical.canonical_json(ev), "", 1)))
print(canonical.canonical_json({"f": [0.1, 1e21], "\\U0001f600": 1, "\\uffff": 2}).decode())
"""
    root = Path(canonical.__file__).resolve().parents[3]  # the checkout (journal/format/..)
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == [
        "b09cbff45d5a30990c3b72be8b06af6bc509d5a29a849aab5fd42153ef10ec65",
        '{"f":[0.1,1e+21],"\U0001f600":1,"\uffff":2}',
    ]


@pytest.mark.parametrize(
    "payload",
    [
        b'{"event":{"kind":"EVENT_END"},"prev_hash":"","seq":"1"}',
        b'{"event":{"kind":"EVENT_END"},"prev_hash":"' + b"a" * 64 + b'","seq":"42"}',
        b'{"event":[],"prev_hash":"","seq":"1"}',
        b'{"event":{},"prev_hash":"","seq":"x"}',
        b'{"evt":{},"prev_hash":"","seq":"1"}',
    ],
)
def test_envelope_link_checks_as_split_envelope_does(payload: bytes) -> None:
    """envelope_link is split_envelope without the copy of the event (import, verify)."""
    try:
        _body, prev, seq = canonical.split_envelope(payload)
    except FormatError as exc:
        with pytest.raises(FormatError, match=re.escape(exc.message)):
            canonical.envelope_link(payload)
    else:
        assert canonical.envelope_link(payload) == (prev, seq)


@pytest.mark.parametrize(
    "event",
    [
        {"kind": "EVENT_END"},
        {"kind": "EVENT_OUTPUT", "message": {"parts": [{"text": {"text": 'é "q" \U0001f600'}}]}},
        {"data": {"f": [0.1, 1e21, -0.0], "\U0001f600": 1, "\uffff": {"b": 2, "a": 1}}},
    ],
)
@pytest.mark.parametrize("link", [("", 1), ("a" * 64, 2**63 - 1)])
def test_envelope_of_is_the_envelope_of_the_canonical_json(
    event: dict[str, Any], link: tuple[str, int]
) -> None:
    """envelope_of builds the same bytes in one pass (import holds one copy of a wide record)."""
    prev, seq = link
    expected = canonical.envelope(canonical.canonical_json(event), prev, seq)
    assert canonical.envelope_of(event, prev, seq) == expected


@pytest.mark.parametrize(("prev", "seq"), [("x", 1), ("", -1), ("", 2**63)])
def test_envelope_of_checks_the_link_as_envelope_does(prev: str, seq: int) -> None:
    with pytest.raises(InvalidArgumentError):
        canonical.envelope(b"{}", prev, seq)
    with pytest.raises(InvalidArgumentError):
        canonical.envelope_of({}, prev, seq)
