"""Conversions between the engine's values and the wire messages (agentsessions/wire/convert).

An event survives dict -> proto (-> bytes -> proto) -> dict unchanged, and so does its
canonical content hash (the journal's Go-compatible hash), on the reference's golden
vectors, our extra vectors, the Go fixture journal and Hypothesis events; records keep their
hashes and a tampered one is caught; sessions keep every field, ours and the reference's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_canonical import SETTINGS, canonical_events, typed

import agentsessions
from agentsessions.errors import ChainBrokenError, FormatError, InvalidArgumentError
from agentsessions.journal.format import canonical
from agentsessions.journal.format.records import Record
from agentsessions.journal.tools import interchange
from agentsessions.sessions.values import Memory, Session
from agentsessions.v1 import construct, normalize
from agentsessions.v1.results import ApprovalRef, UnresolvedCall
from agentsessions.wire import convert
from agentsessions.wire.gen import common_pb2, session_pb2

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "canonical"
FIXTURE = Path(agentsessions.__file__).parent / "data" / "go-v0.1.2-completed.json"
REFERENCE = canonical.loads((GOLDEN / "vectors.json").read_bytes())
EXTRA = canonical.loads((GOLDEN / "extra_vectors.json").read_bytes())
VECTORS = REFERENCE["content_hash_vectors"] + EXTRA["content_hash_vectors"]


def _hash(event: dict[str, Any], prev: str = "", seq: int = 1) -> str:
    return canonical.content_hash(canonical.envelope(canonical.canonical_json(event), prev, seq))


def _over_the_wire(event: dict[str, Any]) -> dict[str, Any]:
    """dict -> Event -> bytes -> Event -> dict: what a peer decodes."""
    sent = convert.event_to_proto(event).SerializeToString()
    return convert.event_from_proto(common_pb2.Event.FromString(sent))


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v["name"])
def test_golden_events_survive_the_wire_with_their_hash(vector: dict[str, Any]) -> None:
    event = vector["event_proto3_json"]
    back = _over_the_wire(event)
    assert typed(back) == typed(event)
    assert _hash(back, vector["prev_hash"], int(vector["seq"])) == vector["content_hash"]


def test_reference_canonical_bytes_vectors_survive_the_wire() -> None:
    for vector in REFERENCE["canonical_record_bytes_vectors"]:
        expected = vector["canonical_record_bytes"].encode()
        body, prev, seq = canonical.split_envelope(expected)
        back = _over_the_wire(canonical.loads(body))
        assert canonical.envelope(canonical.canonical_json(back), prev, seq) == expected


def test_the_go_fixture_records_survive_the_wire_with_their_hashes() -> None:
    records = interchange.parse_go_records(FIXTURE.read_bytes())
    for record in records:
        wire = convert.record_to_proto(_as_record(record))
        back = convert.record_from_proto(common_pb2.LogRecord.FromString(wire.SerializeToString()))
        assert (back.seq, back.prev_hash, back.content_hash) == (
            record.seq, record.prev_hash, record.content_hash,
        )  # fmt: skip
        assert back.payload == record.payload()
        assert back.event == record.event


def _as_record(go: Any) -> Record:
    return Record(go.seq, go.prev_hash, go.content_hash, 1, go.payload())


@SETTINGS
@given(canonical_events)
def test_any_event_survives_the_wire_with_its_hash(event: dict[str, Any]) -> None:
    back = _over_the_wire(event)
    # the canonical form: Struct numbers as decoding JCS text gives them (2.0 is 2)
    assert typed(back) == typed(normalize.normalize_event(event))
    assert canonical.canonical_json(back) == canonical.canonical_json(event)
    assert _hash(back) == _hash(event)


@SETTINGS
@given(canonical_events, st.integers(1, 2**63 - 1), st.integers(0, 2**63 - 1))
def test_any_record_survives_the_wire(event: dict[str, Any], seq: int, fence: int) -> None:
    record = Record.seal(canonical.canonical_json(event), seq=seq, prev_hash="a" * 64, fence=fence)
    back = convert.record_from_proto(convert.record_to_proto(record))
    assert back == record


def test_a_record_whose_hash_does_not_match_its_event_is_refused() -> None:
    event = construct.output_event(construct.text_message("assistant", "hello"))
    record = Record.seal(canonical.canonical_json(event), seq=3, prev_hash="", fence=1)
    wire = convert.record_to_proto(record)
    wire.event.message.parts[0].text.text = "hellO"
    with pytest.raises(ChainBrokenError, match=r"^record 3: content_hash does not match"):
        convert.record_from_proto(wire)
    wire = convert.record_to_proto(record)
    wire.prev_hash = "b" * 64  # the hash covers prev_hash too
    with pytest.raises(ChainBrokenError):
        convert.record_from_proto(wire)
    wire = convert.record_to_proto(record)
    wire.fence = 99  # fence is not hashed
    assert convert.record_from_proto(wire).fence == 99


def _with_unknown_field(data: bytes) -> bytes:
    return data + bytes([(999 << 3 | 0) & 0x7F | 0x80, 999 >> 4, 1])  # field 999 varint 1


def test_an_event_with_fields_this_schema_does_not_know_is_refused() -> None:
    event = construct.output_event(construct.text_message("assistant", "hi"))
    data = convert.event_to_proto(event).SerializeToString()
    with pytest.raises(FormatError, match=r"fields this agentsessions\.v1 schema does not know"):
        convert.event_from_proto(common_pb2.Event.FromString(_with_unknown_field(data)))
    # nested: an unknown field inside the Message body
    msg = common_pb2.Message.FromString(
        _with_unknown_field(convert.message_to_proto(event["message"]).SerializeToString())
    )
    nested = common_pb2.Event(kind=common_pb2.EVENT_OUTPUT)
    nested.message.CopyFrom(msg)
    with pytest.raises(FormatError):
        convert.event_from_proto(nested)
    assert convert.event_from_proto(common_pb2.Event.FromString(data)) == event


@pytest.mark.parametrize(
    "bad",
    [
        {"kind": "EVENT_NOPE"},
        {"unknown_field": 1},
        {"ts": "yesterday"},
        {"execution_start": {"input_count": "x"}},
        {"message": {"parts": "not a list"}},
    ],
)
def test_a_dict_that_is_not_proto3_json_is_invalid_argument(bad: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgumentError, match=r"^event is not valid proto3-JSON: "):
        convert.event_to_proto(bad)


def test_a_message_survives_the_wire() -> None:
    msg = construct.text_message("user", "héllo \U0001f600")
    assert convert.message_from_proto(convert.message_to_proto(msg)) == msg


# --------------------------------------------------------------------------- sessions

FULL = Session(
    uid="sess-0123456789abcdef01234567",
    project="p",
    name="n",
    harness="echo",
    model="echo",
    labels={"a": "1"},
    annotations={"b": "2"},
    origin={"source": "s", "uri": "u", "attributes": {"k": "v"}},
    identity={"principal": "agent://a", "issuer": "entra"},
    parent_uid="sess-ffffffffffffffffffffffff",
    fork_seq=3,
    create_time_ns=1_700_000_000_123_456_789,
    last_seq=9,
    last_hash="c" * 64,
    compute_state="COMPUTE_COLD",
    exec_state="EXEC_AWAITING",
    update_time_ns=1_700_000_001_000_000_000,
    fence=4,
    deleted=True,
    damaged="segment 2 is torn",
    memory=Memory("live", "live (pid 7)", {"where": "live", "pid": 7, "idle_until": None}),
    pending_approval=ApprovalRef("exec-1", "call-1", 8),
    unresolved_call=UnresolvedCall("exec-1", "call-2", "append_line", "key-1", 6),
)


@pytest.mark.parametrize("session", [FULL, Session(uid="sess-0")], ids=["full", "minimal"])
def test_a_session_survives_the_wire(session: Session) -> None:
    wire = convert.session_to_proto(session)
    back = convert.session_from_proto(session_pb2.Session.FromString(wire.SerializeToString()))
    assert back == session
    assert back.to_json() == session.to_json()


def test_a_session_carries_the_reference_fields_a_reference_client_reads() -> None:
    wire = convert.session_to_proto(FULL)
    meta = wire.metadata
    assert (meta.uid, meta.project, meta.name) == (FULL.uid, "p", "n")
    assert wire.metadata.create_time.ToNanoseconds() == FULL.create_time_ns
    assert wire.exec_state == session_pb2.EXEC_AWAITING
    assert wire.compute_state == session_pb2.COMPUTE_COLD
    assert (wire.pending_approval.tool_call_id, wire.pending_approval.request_seq) == ("call-1", 8)
    assert wire.identity.principal == "agent://a" and wire.origin.attributes["k"] == "v"
    # a reference client decodes our additions as unknown fields and ignores them
    assert wire.fence == 4 and wire.last_hash == "c" * 64


def test_sessions_of_a_real_engine_survive_the_wire(tmp_path: Path) -> None:
    with agentsessions.open(tmp_path / "home", runtime="auto") as engine:
        created = engine.create(name="one", harness="echo", labels={"x": "y"})
        engine.run(created.uid, ["hello"])
        for session in (created, engine.get(created.uid), *engine.list().sessions):
            back = convert.session_from_proto(convert.session_to_proto(session))
            assert back == session
        for record in engine.replay(created.uid):
            assert convert.record_from_proto(convert.record_to_proto(record)) == record


def test_a_state_this_schema_does_not_name_comes_back_as_its_number() -> None:
    wire = convert.session_to_proto(Session(uid="sess-0"))
    wire.exec_state = 42  # proto3 enums are open: a newer server may send one
    assert convert.session_from_proto(wire).exec_state == "42"
