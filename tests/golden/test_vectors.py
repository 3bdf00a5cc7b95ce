"""Golden hashes: the reference's vectors, our own (rfc8785 + Node.js checked), the Go fixture.

``canonical/vectors.json`` is a copy of the reference's vectors (spec/vectors.json);
``canonical/extra_vectors.json`` covers what those do not: bytes fields, int64 above 2**53,
optional zero versus absent, non-ASCII and astral text, keys whose UTF-16 order differs from
code-point order, floats in Struct values and timestamps with 3/6/9 digits. Every case runs
with msgspec and without it (the pure-Python zipapp path).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

import agentsessions
from agentsessions.journal.format import canonical
from agentsessions.journal.tools import interchange
from agentsessions.v1 import construct, normalize, schema

HERE = Path(__file__).parent / "canonical"
FIXTURE = Path(agentsessions.__file__).parent / "data" / "go-v0.1.2-completed.json"


def _load(name: str) -> Any:
    return canonical.loads((HERE / name).read_bytes())


REFERENCE = _load("vectors.json")
EXTRA = _load("extra_vectors.json")


@pytest.fixture(params=["msgspec", "pure"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run each golden test with msgspec and again as the pure-Python build."""
    if request.param == "pure":
        for name in ("msgspec", "_SORTED_ENCODER", "_DECODER", "EVENT_DECODER"):
            monkeypatch.setattr(canonical, name, None)
    return str(request.param)


def _hash(event: dict[str, Any], prev: str, seq: str) -> tuple[bytes, str]:
    payload = canonical.envelope(canonical.canonical_json(event), prev, int(seq))
    return payload, canonical.content_hash(payload)


@pytest.mark.parametrize("vector", REFERENCE["content_hash_vectors"], ids=lambda v: v["name"])
def test_reference_content_hashes(vector: dict[str, Any], path: str) -> None:
    event = vector["event_proto3_json"]
    schema.validate_event(event)
    assert _hash(event, vector["prev_hash"], vector["seq"])[1] == vector["content_hash"]


@pytest.mark.parametrize(
    ("vector", "input_count"),
    list(zip(REFERENCE["canonical_record_bytes_vectors"], [None, 0], strict=True)),
    ids=lambda v: v["name"] if isinstance(v, dict) else str(v),
)
def test_reference_canonical_bytes(
    vector: dict[str, Any], input_count: int | None, path: str
) -> None:
    expected = vector["canonical_record_bytes"].encode()
    body, prev, seq = canonical.split_envelope(expected)
    assert (prev, seq) == ("", 1)
    event = canonical.loads(body)
    schema.validate_event(event)
    assert canonical.canonical_json(canonical.loads(expected)) == expected
    built = construct.execution_start(input_count=input_count)
    assert canonical.envelope(canonical.canonical_json(built), "", 1) == expected


def test_reference_golden_event_from_helpers(path: str) -> None:
    from datetime import UTC, datetime

    event = construct.output_event(
        construct.text_message("assistant", "hello"),
        execution_id="exec-1",
        schema_version=1,
        ts=datetime.fromtimestamp(1700000000, UTC),
        actor={"principal": "agent://a", "issuer": "entra", "subject": "sub-1"},
    )
    vector = REFERENCE["content_hash_vectors"][0]
    assert event == vector["event_proto3_json"]
    start = construct.execution_start(input_count=0, execution_id="exec-default")
    assert _hash(start, "", "1")[1] == REFERENCE["content_hash_vectors"][1]["content_hash"]


def test_model_input_hash_vector_matches_the_fixture() -> None:
    vector = REFERENCE["model_input_hash_vectors"][0]
    digest = hashlib.sha256(vector["go_json_preimage_derived"].encode()).hexdigest()
    assert digest == vector["input_hash"]
    records = interchange.parse_go_records(FIXTURE.read_bytes())
    assert records[1].event["model"]["input_hash"] == vector["input_hash"]


@pytest.mark.parametrize("vector", EXTRA["content_hash_vectors"], ids=lambda v: v["name"])
def test_extra_vectors(vector: dict[str, Any], path: str) -> None:
    event = vector["event_proto3_json"]
    schema.validate_event(event)
    payload, digest = _hash(event, vector["prev_hash"], vector["seq"])
    assert payload == vector["canonical_record_bytes"].encode()
    assert digest == vector["content_hash"]
    assert normalize.normalize_event(event) == event
    assert canonical.canonical_json(canonical.loads(payload)) == payload


def test_extra_vectors_form_a_chain() -> None:
    prev = ""
    for seq, vector in enumerate(EXTRA["content_hash_vectors"], start=1):
        assert (vector["prev_hash"], vector["seq"]) == (prev, str(seq))
        prev = vector["content_hash"]


def test_go_fixture_rehashes_to_every_stored_hash(path: str) -> None:
    records = interchange.parse_go_records(FIXTURE.read_bytes())
    assert [r.seq for r in records] == [1, 2, 3, 4]
    prev = ""
    for record in records:
        schema.validate_event(record.event)
        assert record.prev_hash == prev
        assert canonical.content_hash(record.payload()) == record.content_hash
        assert _hash(record.event, prev, str(record.seq))[1] == record.content_hash
        prev = record.content_hash
    assert [r.event["kind"] for r in records] == [
        "EVENT_INPUT",
        "EVENT_MODEL_CALL",
        "EVENT_OUTPUT",
        "EVENT_END",
    ]
    assert all("ts" not in r.event and "actor" not in r.event for r in records)
