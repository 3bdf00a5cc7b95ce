"""inputhash.py: the I0 model-input hash equals Go's ``json.Marshal(api.ModelRequest)`` hash.

Ground truth: the reference's vector, the Go-written fixture journal, and Go's documented
encoding rules (struct field order, nil as null, omitempty, HTML-safe escaping, float64
formatting), pinned here as exact preimage bytes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentsessions
from agentsessions.controller.inputhash import (
    go_float,
    go_string,
    model_input_bytes,
    model_input_hash,
)
from agentsessions.controller.spi import ModelRequest
from agentsessions.errors import InvalidArgumentError
from agentsessions.models import create_model
from agentsessions.v1 import numbers
from agentsessions.v1.construct import data_part, message, text_message, text_part

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "canonical" / "vectors.json"
FIXTURE = Path(agentsessions.__file__).parent / "data" / "go-v0.1.2-completed.json"
NULLS = '"File":null,"Data":null,"Reasoning":null'


def _msg(role: str, text: str) -> dict[str, Any]:
    """A text message as the SPI's plain dict."""
    return dict(text_message(role, text))


def _request(*messages: dict[str, Any], **kw: Any) -> ModelRequest:
    return ModelRequest(model=kw.pop("model", "m"), messages=messages, **kw)


def _text_preimage(role: str, text_json: str) -> str:
    return f'{{"Role":"{role}","Parts":[{{"Text":{{"Text":{text_json}}},{NULLS}}}]}}'


# --------------------------------------------------------------------------- reference data


@pytest.mark.parametrize(
    "vector", json.loads(GOLDEN.read_text())["model_input_hash_vectors"], ids=lambda v: v["name"]
)
def test_reference_vector(vector: dict[str, str]) -> None:
    request = ModelRequest(model="echo", messages=(_msg("user", "hello"),), params=None)
    assert model_input_bytes(request) == vector["go_json_preimage_derived"].encode()
    assert model_input_hash(request) == vector["input_hash"]
    assert model_input_hash(request).startswith("2611c24a")


def _go_message(go: dict[str, Any]) -> dict[str, Any]:
    """A Go ``api.Message`` from a fixture as proto3-JSON (the fixture has text parts only)."""
    return dict(message(go["Role"], *(text_part(p["Text"]["Text"]) for p in go["Parts"])))


def test_go_fixture_model_call_hash() -> None:
    records = json.loads(FIXTURE.read_text())
    calls = 0
    last_input: dict[str, Any] | None = None
    for record in records:
        event = record["Event"]
        if event["Kind"] == "INPUT":
            last_input = _go_message(event["Message"])
        elif event["Kind"] == "MODEL_CALL":
            assert last_input is not None
            request = ModelRequest(model=event["ModelCall"]["Model"], messages=(last_input,))
            assert model_input_hash(request) == event["ModelCall"]["InputHash"]
            calls += 1
    assert calls == 1


# --------------------------------------------------------------------------- struct shape

FULL_REQUEST = ModelRequest(
    model="gpt-x",
    params={"temperature": "0.2", "a": "<b>"},
    messages=(
        _msg("system", "be <nice> & kind"),
        {
            "role": "user",
            "parts": [
                {"text": {"text": "hi"}},
                {"file": {"mime": "image/png", "bytes": "AAEC", "name": "x.png"}},
                data_part({"b": 1, "a": [1.5, True, None, "é"]}),
            ],
        },
        {
            "role": "assistant",
            "parts": [
                {
                    "reasoning": {
                        "provider": "anthropic",
                        "model_id": "m",
                        "opaque_bytes": "/w==",
                        "summary": [{"text": {"text": "s"}}],
                        "item_id": "r1",
                        "ordinal": 2,
                        "validity_scope": "e1",
                    }
                },
                {
                    "tool_call": {
                        "id": "c1",
                        "tool": "search",
                        "args": {"q": "x"},
                        "mediation": "MEDIATION_CONTROLLER_MEDIATED",
                        "idempotency_key": "k1",
                    }
                },
            ],
        },
        {
            "role": "tool",
            "parts": [
                {
                    "tool_result": {
                        "id": "c1",
                        "output": {"n": 3},
                        "content": [{"text": {"text": "ok"}}],
                    }
                }
            ],
        },
    ),
    tools=({"name": "search", "description": "find", "input_schema": {"type": "object"}},),
    tool_choice={"mode": "MODE_REQUIRED", "name": "search"},
)

# Written by hand from the Go struct declarations (spec/reference-digest.md section 3).
FULL_PREIMAGE = (
    '{"Model":"gpt-x","Messages":['
    + _text_preimage("system", '"be \\u003cnice\\u003e \\u0026 kind"')
    + ',{"Role":"user","Parts":['
    + f'{{"Text":{{"Text":"hi"}},{NULLS}}},'
    + '{"Text":null,"File":{"MIME":"image/png","Bytes":"AAEC","URI":"","Digest":"","Name":"x.png"},'
    + '"Data":null,"Reasoning":null},'
    + '{"Text":null,"File":null,"Data":{"a":[1.5,true,null,"é"],"b":1},"Reasoning":null}]}'
    + ',{"Role":"assistant","Parts":['
    + '{"Text":null,"File":null,"Data":null,"Reasoning":{"Provider":"anthropic","ModelID":"m",'
    + '"Opaque":"/w==","OpaqueURI":"","OpaqueDigest":"",'
    + f'"Summary":[{{"Text":{{"Text":"s"}},{NULLS}}}],'
    + '"ItemID":"r1","Ordinal":2,"ValidityScope":"e1"}},'
    + '{"Text":null,"File":null,"Data":null,"Reasoning":null,"ToolCall":{"ID":"c1","Tool":"search",'
    + '"Args":{"q":"x"},"Mediation":"CONTROLLER_MEDIATED","IdempotencyKey":"k1"}}]}'
    + ',{"Role":"tool","Parts":['
    + '{"Text":null,"File":null,"Data":null,"Reasoning":null,"ToolResult":{"ID":"c1",'
    + '"Output":{"n":3},"OutputURI":"","OutputDigest":"","IsError":false,"Error":"",'
    + f'"Content":[{{"Text":{{"Text":"ok"}},{NULLS}}}]}}}}]}}'
    + '],"Params":{"a":"\\u003cb\\u003e","temperature":"0.2"},'
    + '"Tools":[{"Name":"search","Description":"find","InputSchema":{"type":"object"}}],'
    + '"ToolChoice":{"Mode":"REQUIRED","Name":"search"}}'
)


def test_every_part_kind_in_go_field_order() -> None:
    assert model_input_bytes(FULL_REQUEST).decode() == FULL_PREIMAGE
    assert model_input_hash(FULL_REQUEST) == hashlib.sha256(FULL_PREIMAGE.encode()).hexdigest()


def test_hash_is_stable() -> None:
    """Pinned: a change here breaks I0 for every journal recorded before it."""
    assert model_input_hash(FULL_REQUEST) == (
        "cb6e3c71a1a66a9da134e454d313c70fcfb34bb44d4fca663ca8ff357db0987b"
    )


def test_key_order_of_inputs_does_not_matter() -> None:
    def shuffled(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: shuffled(value[k]) for k in reversed(list(value))}
        if isinstance(value, list):
            return [shuffled(v) for v in value]
        return value

    again = ModelRequest(
        model=FULL_REQUEST.model,
        params=dict(reversed(list((FULL_REQUEST.params or {}).items()))),
        messages=tuple(shuffled(m) for m in FULL_REQUEST.messages),
        tools=tuple(shuffled(t) for t in FULL_REQUEST.tools),
        tool_choice=shuffled(FULL_REQUEST.tool_choice),
    )
    assert model_input_hash(again) == model_input_hash(FULL_REQUEST)


def test_omitempty_and_nil() -> None:
    msg = _msg("user", "x")
    base = '{"Model":"m","Messages":[' + _text_preimage("user", '"x"') + "]"
    assert model_input_bytes(_request(msg)).decode() == base + ',"Params":null}'
    assert model_input_bytes(_request(msg, params={})).decode() == base + ',"Params":{}}'
    assert model_input_bytes(_request(msg, tools=())).decode() == base + ',"Params":null}'
    assert (
        model_input_bytes(_request(msg, tool_choice={})).decode()
        == base + ',"Params":null,"ToolChoice":{"Mode":"","Name":""}}'
    )
    empty = model_input_bytes(ModelRequest(model="", messages=())).decode()
    assert empty == '{"Model":"","Messages":null,"Params":null}'
    no_parts = model_input_bytes(_request({"role": "user"})).decode()
    assert no_parts == '{"Model":"m","Messages":[{"Role":"user","Parts":null}],"Params":null}'


def test_empty_members_keep_their_go_zero_values() -> None:
    parts = [{}, {"text": {}}, {"data": {}}, {"file": {}}, {"tool_result": {"id": "c"}}]
    got = model_input_bytes(_request({"role": "user", "parts": parts})).decode()
    assert got == (
        '{"Model":"m","Messages":[{"Role":"user","Parts":['
        '{"Text":null,"File":null,"Data":null,"Reasoning":null},'
        '{"Text":{"Text":""},"File":null,"Data":null,"Reasoning":null},'
        '{"Text":null,"File":null,"Data":{},"Reasoning":null},'
        '{"Text":null,"File":{"MIME":"","Bytes":null,"URI":"","Digest":"","Name":""},'
        '"Data":null,"Reasoning":null},'
        '{"Text":null,"File":null,"Data":null,"Reasoning":null,"ToolResult":{"ID":"c",'
        '"Output":null,"OutputURI":"","OutputDigest":"","IsError":false,"Error":""}}'
        ']}],"Params":null}'
    )


def test_approval_era_result_fields_only_when_set() -> None:
    result = {
        "id": "c",
        "is_error": True,
        "code": "APPROVAL_DENIED",
        "approval_request_seq": "7",
        "approval_decision_seq": "9",
    }
    got = model_input_bytes(_request({"role": "tool", "parts": [{"tool_result": result}]}))
    assert b'"IsError":true,"Error":"","Code":"APPROVAL_DENIED"' in got
    assert got.endswith(b'"ApprovalRequestSeq":7,"ApprovalDecisionSeq":9}}]}],"Params":null}')


def test_enums_by_number_equal_enums_by_name() -> None:
    by_name = {"tool_call": {"id": "c", "mediation": "MEDIATION_REQUIRES_APPROVAL"}}
    by_number = {"tool_call": {"id": "c", "mediation": 3}}
    assert model_input_hash(_request({"parts": [by_name]})) == model_input_hash(
        _request({"parts": [by_number]})
    )
    unspecified = model_input_bytes(_request({"parts": [{"tool_call": {}}]}))
    assert b'"Mediation":""' in unspecified


def test_bytes_are_standard_padded_base64() -> None:
    def file_bytes(text: str) -> bytes:
        request = _request({"parts": [{"file": {"bytes": text}}]})
        return model_input_bytes(request).split(b'"Bytes":')[1].split(b",")[0]

    assert file_bytes("-_8") == b'"+/8="'  # URL-safe, unpadded proto3-JSON input
    assert file_bytes("+/8=") == b'"+/8="'
    assert file_bytes("") == b'""'  # set but empty: Go's non-nil empty slice


# --------------------------------------------------------------------------- Go strings


@pytest.mark.parametrize(
    ("text", "go"),
    [
        ("<script>&</script>", '"\\u003cscript\\u003e\\u0026\\u003c/script\\u003e"'),
        ("line\u2028para\u2029", '"line\\u2028para\\u2029"'),
        ('q"b\\s/', '"q\\"b\\\\s/"'),
        ("\n\r\t\b\f", '"\\n\\r\\t\\b\\f"'),
        ("\x00\x01\x1f\x7f", '"\\u0000\\u0001\\u001f\x7f"'),
        ("héllo 世界 😀", '"héllo 世界 😀"'),
        ("\u0085\ufeff", '"\u0085\ufeff"'),
    ],
)
def test_go_string_escaping(text: str, go: str) -> None:
    assert go_string(text) == go
    preimage = model_input_bytes(_request(_msg("user", text)))
    assert preimage.decode() == (
        '{"Model":"m","Messages":[' + _text_preimage("user", go) + '],"Params":null}'
    )


def test_map_keys_sorted_bytewise_and_escaped() -> None:
    data = {"b": 1, "a&": 2, "\U0001f600": 3, "\uffff": 4, "Z": 5, "é": 6}
    got = model_input_bytes(_request({"parts": [{"data": {"data": data}}]})).decode()
    assert '"Data":{"Z":5,"a\\u0026":2,"b":1,"é":6,"\uffff":4,"\U0001f600":3}' in got


# --------------------------------------------------------------------------- Go floats


@pytest.mark.parametrize(
    ("value", "go"),
    [
        (0.0, "0"),
        (-0.0, "-0"),
        (2.0, "2"),
        (1.5, "1.5"),
        (-3.0, "-3"),
        (0.1, "0.1"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (1.2345e22, "1.2345e+22"),
        (1e-6, "0.000001"),
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (-2.5e-9, "-2.5e-9"),
        (1e-10, "1e-10"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (123456789.125, "123456789.125"),
        (2.0**60, "1152921504606847000"),
    ],
)
def test_go_float(value: float, go: str) -> None:
    assert go_float(value) == go


@settings(max_examples=500, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_go_float_round_trips_and_agrees_with_ecmascript(x: float) -> None:
    """Go's thresholds (1e-6, 1e21) and shortest digits coincide with ES Number#toString."""
    text = go_float(x)
    assert float(text) == x
    assert math.copysign(1.0, float(text)) == math.copysign(1.0, x)
    if x != 0:
        assert text == numbers.format_number(x)


def test_ints_in_maps_are_float64() -> None:
    big = {"parts": [{"data": {"data": {"n": 2**60 + 1, "i": 3, "f": 3.0}}}]}
    assert b'"Data":{"f":3,"i":3,"n":1152921504606847000}' in model_input_bytes(_request(big))


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("msg", "where"),
    [
        ({"role": "user", "content": "x"}, "unknown field"),
        ({"role": 3}, "expected a string"),
        ({"parts": [{"text": {"text": "\ud800"}}]}, "surrogate"),
        ({"parts": [{"data": {"data": {"x": math.nan}}}]}, "cannot encode"),
        ({"parts": [{"data": {"data": {"x": math.inf}}}]}, "cannot encode"),
        ({"parts": [{"data": {"data": {"x": 10**400}}}]}, "float64"),
        ({"parts": [{"data": {"data": {1: "x"}}}]}, "keys must be strings"),
        ({"parts": [{"file": {"bytes": "%%%"}}]}, "not base64"),
        ({"parts": [{"tool_call": {"mediation": "LOUD"}}]}, "expected one of"),
        ({"parts": [{"reasoning": {"ordinal": "x"}}]}, "expected an integer"),
        ({"parts": "x"}, "expected a list"),
    ],
)
def test_refuses_what_go_would_not_hash(msg: dict[str, Any], where: str) -> None:
    with pytest.raises(InvalidArgumentError, match=where):
        model_input_hash(_request(msg))


def test_refuses_non_string_params() -> None:
    with pytest.raises(InvalidArgumentError, match="params"):
        model_input_hash(_request(params={"t": 0.2}))  # type: ignore[dict-item,unused-ignore]


_TEXTS = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=40) | st.sampled_from(
    ["<b>&amp;</b>", "\u2028\u2029", '\x00\x1f"\\', "日本語 🙂"]
)


@given(st.sampled_from(["user", "assistant", "system", "", "<r&>"]), st.lists(_TEXTS, max_size=4))
@settings(max_examples=300)
def test_memoised_text_messages_encode_as_the_general_path(role: str, texts: list[str]) -> None:
    """The fast path for text-only messages writes exactly what the field-by-field path does."""
    from agentsessions.controller.inputhash import _general_message, _message

    msg = {"role": role, "parts": [{"text": {"text": t}} for t in texts]}
    assert _message(msg, "m") == _general_message(msg, "m")
    assert _message(msg, "m") == _message(json.loads(json.dumps(msg)), "m")  # memo hit


_NEAR_MISSES: list[Any] = [
    {"role": "user", "parts": [{"text": {"text": "a"}, "data": None}]},  # a second part key
    {"role": "user", "parts": [{"text": {"text": "a"}}], "x": 1},  # a key Go has no field for
    {"role": "user", "parts": ({"text": {"text": "a"}},)},  # a tuple of parts
    {"role": "user", "parts": [{"text": {"text": "a", "y": 2}}]},  # an unknown text field
    {"role": "user", "parts": [{"text": {}}]},  # no text: Go's zero value ""
    {"parts": [{"text": {"text": "a"}}]},  # no role
    {"role": 1, "parts": [{"text": {"text": "a"}}]},  # a role that is not a string
]


@given(st.sampled_from(["user", "assistant", ""]), _TEXTS, st.sampled_from(_NEAR_MISSES))
@settings(max_examples=200)
def test_the_one_text_fast_path_writes_or_refuses_as_the_general_path(
    role: str, text: str, near: dict[str, Any]
) -> None:
    """A window of one-text messages (the fast path) and of shapes that only look like one
    (the general path) hashes, or is refused, exactly as field by field."""
    from agentsessions.controller.inputhash import _general_message, _messages

    one = {"role": role, "parts": [{"text": {"text": text}}]}
    for messages in ([one], [one, near], [near]):
        try:
            want: str | None = (
                "["
                + ",".join(_general_message(m, f"messages[{i}]") for i, m in enumerate(messages))
                + "]"
            )
        except InvalidArgumentError:
            want = None
        if want is None:
            with pytest.raises(InvalidArgumentError):
                _messages(messages)
        else:
            assert _messages(messages) == want


def test_memoised_path_still_refuses_a_lone_surrogate_naming_the_field() -> None:
    msg = {"role": "user", "parts": [{"text": {"text": "a\ud800"}}]}
    with pytest.raises(InvalidArgumentError, match=r"messages\[0\]\.parts\[0\]\.text\.text"):
        model_input_bytes(ModelRequest(model="m", messages=[msg]))


# --------------------------------------------------------------------------- the tool loop

# A follow-up request as the tool loop builds it: the tools offered (tool choice auto), the
# assistant's recorded completion (text and a tool_call part with no mediation or key, as a
# provider returns it) and each result in its own ``tool`` message, one of them an error.
TOOL_LOOP_REQUEST = ModelRequest(
    model="gpt-4o-mini",
    messages=(
        _msg("user", "write <b> & go"),
        {
            "role": "assistant",
            "parts": [
                {"text": {"text": "ok"}},
                {
                    "tool_call": {
                        "id": "call-0-0",
                        "tool": "append_line",
                        "args": {
                            "line": "héllo <x>",
                            "n": 2,
                            "ratio": 0.5,
                            "big": 1e21,
                            "tags": ["a"],
                            "opt": None,
                        },
                    }
                },
            ],
        },
        {
            "role": "tool",
            "parts": [{"tool_result": {"id": "call-0-0", "output": {"written": True, "bytes": 6}}}],
        },
        {
            "role": "tool",
            "parts": [{"tool_result": {"id": "call-0-1", "is_error": True, "error": "disk full"}}],
        },
    ),
    tools=(
        {
            "name": "append_line",
            "description": "append a line",
            "input_schema": {
                "type": "object",
                "properties": {"line": {"type": "string", "maxLength": 200}},
                "required": ["line"],
            },
        },
        {"name": "notes"},
    ),
    tool_choice={"mode": "MODE_AUTO"},
)

# By hand from the digest's section 3: Go field order, nil pointers and maps as null, the
# omitempty Tools/ToolChoice/ToolCall/ToolResult present, map keys sorted, float64 numbers
# (2 for the integer, 1e+21 from 1e21), HTML-safe escaping, raw UTF-8.
_EMPTY = '"Text":null,"File":null,"Data":null,"Reasoning":null'
TOOL_LOOP_PREIMAGE = (
    '{"Model":"gpt-4o-mini","Messages":['
    + _text_preimage("user", '"write \\u003cb\\u003e \\u0026 go"')
    + ',{"Role":"assistant","Parts":['
    + f'{{"Text":{{"Text":"ok"}},{NULLS}}},'
    + f'{{{_EMPTY},"ToolCall":{{"ID":"call-0-0","Tool":"append_line","Args":'
    + '{"big":1e+21,"line":"héllo \\u003cx\\u003e","n":2,"opt":null,"ratio":0.5,"tags":["a"]},'
    + '"Mediation":"","IdempotencyKey":""}}]}'
    + f',{{"Role":"tool","Parts":[{{{_EMPTY},"ToolResult":{{"ID":"call-0-0",'
    + '"Output":{"bytes":6,"written":true},"OutputURI":"","OutputDigest":"","IsError":false,'
    + '"Error":""}}]}'
    + f',{{"Role":"tool","Parts":[{{{_EMPTY},"ToolResult":{{"ID":"call-0-1","Output":null,'
    + '"OutputURI":"","OutputDigest":"","IsError":true,"Error":"disk full"}}]}'
    + '],"Params":null,"Tools":['
    + '{"Name":"append_line","Description":"append a line","InputSchema":'
    + '{"properties":{"line":{"maxLength":200,"type":"string"}},"required":["line"],'
    + '"type":"object"}},'
    + '{"Name":"notes","Description":"","InputSchema":null}],'
    + '"ToolChoice":{"Mode":"AUTO","Name":""}}'
)


def test_a_tool_loop_follow_up_hashes_as_go_marshals_it() -> None:
    assert model_input_bytes(TOOL_LOOP_REQUEST).decode() == TOOL_LOOP_PREIMAGE
    assert (
        model_input_hash(TOOL_LOOP_REQUEST)
        == hashlib.sha256(TOOL_LOOP_PREIMAGE.encode()).hexdigest()
    )


def test_tools_tool_choice_and_tool_parts_all_change_the_hash() -> None:
    """I0 covers every tool field: a replay that offered other tools must diverge."""
    base = model_input_hash(TOOL_LOOP_REQUEST)
    tweaks = [
        dict(tools=TOOL_LOOP_REQUEST.tools[:1]),
        dict(tool_choice={"mode": "MODE_REQUIRED", "name": "notes"}),
        dict(tool_choice=None),
        dict(messages=TOOL_LOOP_REQUEST.messages[:3]),
        dict(
            messages=(
                *TOOL_LOOP_REQUEST.messages[:3],
                {"role": "tool", "parts": [{"tool_result": {"id": "call-0-1", "error": "x"}}]},
            )
        ),
    ]
    hashes = {model_input_hash(dataclasses.replace(TOOL_LOOP_REQUEST, **t)) for t in tweaks}
    assert base not in hashes and len(hashes) == len(tweaks)


def test_a_provider_completion_with_a_tool_call_hashes_like_the_journal(tmp_path: Path) -> None:
    """The scripted model's tool_call part, sent back as history, is a plain Go ToolCall."""
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"tool_calls": [{"name": "notes", "arguments": {"k": 1}}]}]))
    done = create_model(f"scripted:file={script}").complete(ModelRequest("m", ()))
    got = model_input_bytes(ModelRequest("m", (done.message,))).decode()
    assert got == (
        f'{{"Model":"m","Messages":[{{"Role":"assistant","Parts":[{{{_EMPTY},"ToolCall":'
        '{"ID":"call-0-0","Tool":"notes","Args":{"k":1},"Mediation":"","IdempotencyKey":""}}]}]'
        ',"Params":null}'
    )
