"""The fast dict <-> proto path of Harness.Connect answers what the exact path answers.

Wherever :mod:`agentsessions.wire.fastconv` answers (not None), its message equals
``json_format.ParseDict``'s byte for byte and its dict equals ``MessageToDict`` plus our
normalisation (types told apart: 1 is not 1.0 nor True), on the golden vectors, the Go
fixture's events and Hypothesis events; it answers for the plain events a chat turn sends,
and declines what it must leave to the exact path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from hypothesis import given
from test_canonical import SETTINGS, canonical_events, typed

import agentsessions
from agentsessions.journal.format import canonical
from agentsessions.journal.tools import interchange
from agentsessions.v1.normalize import normalize_message
from agentsessions.wire import fastconv
from agentsessions.wire.gen import common_pb2

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "canonical"
FIXTURE = Path(agentsessions.__file__).parent / "data" / "go-v0.1.2-completed.json"
VECTORS = [
    v["event_proto3_json"]
    for name in ("vectors.json", "extra_vectors.json")
    for v in canonical.loads((GOLDEN / name).read_bytes())["content_hash_vectors"]
]


def _same_both_ways(obj: dict[str, Any], cls: type[Any] = common_pb2.Event) -> None:
    schema = cls.DESCRIPTOR.name
    exact = json_format.ParseDict(obj, cls())
    fast = fastconv.to_proto(cls, obj)
    if fast is not None:
        assert fast.SerializeToString(deterministic=True) == exact.SerializeToString(
            deterministic=True
        )
    back = normalize_message(
        json_format.MessageToDict(exact, preserving_proto_field_name=True), schema
    )
    quick = fastconv.to_dict(exact)
    if quick is not None:
        assert typed(quick) == typed(back)
    if cls is common_pb2.Event and isinstance(obj.get("message"), dict):
        _same_both_ways(obj["message"], common_pb2.Message)  # alone, as a ModelResult's


@pytest.mark.parametrize("event", VECTORS, ids=range(len(VECTORS)))
def test_golden_events_convert_as_the_exact_path_does(event: dict[str, Any]) -> None:
    _same_both_ways(event)


def test_the_go_fixture_s_events_convert_as_the_exact_path_does() -> None:
    for record in interchange.parse_go_records(FIXTURE.read_bytes()):
        _same_both_ways(record.event)


@SETTINGS
@given(canonical_events)
def test_any_event_converts_as_the_exact_path_does(event: dict[str, Any]) -> None:
    _same_both_ways(event)


CHAT_TURN = [
    {"execution_id": "e1", "kind": "EVENT_EXECUTION_START",
     "execution_start": {"harness": "chat", "harness_version": "1", "input_count": "1"}},
    {"execution_id": "e1", "kind": "EVENT_INPUT",
     "message": {"parts": [{"text": {"text": "hi"}}], "role": "user"}},
    {"execution_id": "e1", "kind": "EVENT_MODEL_CALL",
     "model": {"id": "c1", "input_hash": "ab" * 32, "model": "echo"}},
    {"execution_id": "e1", "kind": "EVENT_OUTPUT",
     "message": {"parts": [{"text": {"text": "echo:hi"}}], "role": "assistant"}},
    {"end": {"state": "COMPLETED"}, "execution_id": "e1", "kind": "EVENT_END"},
]  # fmt: skip


@pytest.mark.parametrize("event", CHAT_TURN, ids=lambda e: e["kind"])
def test_a_chat_turn_s_events_take_the_fast_path(event: dict[str, Any]) -> None:
    msg = fastconv.to_proto(common_pb2.Event, event)
    assert msg is not None and fastconv.to_dict(msg) == event
    _same_both_ways(event)


@pytest.mark.parametrize(
    "obj",
    [
        {"end": {"state": "COMPLETED"}, "parked": {"tool_call_id": "x"}},  # two oneof members
        {"executionId": "e1"},  # a lowerCamelCase name
        {"execution_id": None},  # null
        {"kind": 3},  # an enum number
        {"state_commit": {"data": "aGk="}},  # bytes
        {"ts": "2026-01-01T00:00:00Z"},  # a well-known type
        {"usage": {"input_tokens": "1e3"}},  # an int64 a parser reads, not plainly written
        {"kind": "EVENT_NOT_A_KIND"},  # refused by the constructor; the exact path says why
    ],
)
def test_what_the_fast_path_leaves_to_the_exact_one(obj: dict[str, Any]) -> None:
    assert fastconv.to_proto(common_pb2.Event, obj) is None


@pytest.mark.parametrize(
    ("obj", "cls"),
    [
        ({"role": "user", "parts": [{"text": {"text": "hello"}}]}, common_pb2.Message),
        ({"principal": "alice", "issuer": "idp", "subject": "u-1"}, common_pb2.IdentityRef),
        ({"source": "slack", "subject": "C042/1700000000.000100"}, common_pb2.Origin),
    ],
    ids=["message", "identity", "origin"],
)
def test_what_a_turn_request_carries_converts_as_the_exact_path_does(
    obj: dict[str, Any], cls: type[Any]
) -> None:
    """The wire's own conversions (a turn's inputs, a session's identity and origin) take
    the fast path too (wire/convert.py): it must answer what the exact one would."""
    _same_both_ways(obj, cls)
