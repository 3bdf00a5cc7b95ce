"""Sealed records: encryption changes no reference hash, and any tampering is refused.

The golden vectors are the Go reference's own (tests/golden/canonical/vectors.json): each is
sealed, opened and must come back with the reference's ``content_hash``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsessions.errors import ChainBrokenError, JournalCorruptError
from agentsessions.journal.crypto import sealed
from agentsessions.journal.format import canonical

VECTORS = canonical.loads(
    (Path(__file__).parents[1] / "golden" / "canonical" / "vectors.json").read_bytes()
)
UID = "sess-0123456789abcdef01234567"
OTHER = "sess-76543210fedcba9876543210"
KEY = bytes(range(32))


def _event(text: str) -> bytes:
    event = {"type": "EVENT_INPUT", "message": {"role": "user", "parts": [{"text": text}]}}
    return canonical.canonical_json(event)


def _chain(texts: list[str], scope: str = UID, key: bytes = KEY) -> list[tuple[int, bytes]]:
    out, prev = [], ""
    for i, text in enumerate(texts, start=1):
        blob, record = sealed.seal(key, scope, _event(text), seq=i, prev_hash=prev)
        out.append((i, blob))
        prev = record.content_hash
    return out


@pytest.mark.parametrize("vector", VECTORS["content_hash_vectors"], ids=lambda v: v["name"])
def test_reference_hashes_survive_encryption(vector: dict[str, Any]) -> None:
    event_json = canonical.canonical_json(vector["event_proto3_json"])
    seq = int(vector["seq"])
    blob, record = sealed.seal(KEY, UID, event_json, seq=seq, prev_hash=vector["prev_hash"])
    assert record.content_hash == vector["content_hash"]
    assert sealed.head_of(blob, seq=seq).content_hash == vector["content_hash"]
    assert event_json not in blob  # the event is not stored in the clear
    opened = sealed.open_record(KEY, UID, blob, seq=seq)
    assert opened.content_hash == vector["content_hash"]
    assert opened.event_json == event_json
    assert opened.prev_hash == vector["prev_hash"]


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=200), st.integers(min_value=1, max_value=2**62))
def test_decrypt_gives_the_plaintext_hash(text: str, seq: int) -> None:
    event_json = _event(text)
    prev = "ab" * 32
    blob, record = sealed.seal(KEY, UID, event_json, seq=seq, prev_hash=prev)
    plain = canonical.envelope(event_json, prev, seq)
    assert record.content_hash == canonical.content_hash(plain)
    assert sealed.open_record(KEY, UID, blob, seq=seq).payload == plain


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_any_flipped_byte_is_detected(data: st.DataObject) -> None:
    blob = bytearray(_chain(["hello, secret"])[0][1])
    at = data.draw(st.integers(min_value=0, max_value=len(blob) - 1))
    blob[at] ^= 1 << data.draw(st.integers(min_value=0, max_value=7))
    with pytest.raises((JournalCorruptError, ChainBrokenError)):
        sealed.open_record(KEY, UID, bytes(blob), seq=1)


def test_ciphertext_moved_between_seqs_is_refused() -> None:
    (_, first), (_, second) = _chain(["one", "two"])
    with pytest.raises(JournalCorruptError, match="does not authenticate"):
        sealed.open_record(KEY, UID, first, seq=2)
    with pytest.raises(JournalCorruptError, match="does not authenticate"):
        sealed.open_record(KEY, UID, second, seq=1)


def test_ciphertext_moved_between_sessions_or_stores_is_refused() -> None:
    ((_, blob),) = _chain(["one"])
    for scope in (OTHER, sealed.scope_of(UID, "notes")):
        with pytest.raises(JournalCorruptError, match="does not authenticate"):
            sealed.open_record(KEY, scope, blob, seq=1)


def test_a_ciphertext_spliced_under_another_head_is_refused() -> None:
    (_, one), (_, two) = _chain(["one", "two"])
    spliced = two[: sealed.HEAD_SIZE] + one[sealed.HEAD_SIZE :]
    with pytest.raises(JournalCorruptError):
        sealed.open_record(KEY, UID, spliced, seq=2)


def test_another_data_key_is_refused() -> None:
    ((_, blob),) = _chain(["one"])
    with pytest.raises(JournalCorruptError):
        sealed.open_record(os.urandom(32), UID, blob, seq=1)


def test_keyless_links_verify_and_a_break_is_found() -> None:
    chain = _chain(["a", "b", "c"])
    last_seq, last_hash = sealed.check_links(chain)
    assert last_seq == 3
    assert last_hash == sealed.open_record(KEY, UID, chain[2][1], seq=3).content_hash
    with pytest.raises(ChainBrokenError, match="prev_hash mismatch at seq 2"):
        sealed.check_links([chain[0], (2, chain[2][1])])
    with pytest.raises(ChainBrokenError, match="expected seq 2"):
        sealed.check_links([chain[0], (3, chain[2][1])])


def test_a_plaintext_payload_is_not_a_sealed_record() -> None:
    payload = canonical.envelope(_event("x"), "", 1)
    with pytest.raises(JournalCorruptError, match="not a sealed record"):
        sealed.head_of(payload, seq=1)


def test_nonces_differ_so_equal_events_do_not_look_equal() -> None:
    a, _ = sealed.seal(KEY, UID, _event("same"), seq=1, prev_hash="")
    b, _ = sealed.seal(KEY, UID, _event("same"), seq=1, prev_hash="")
    assert a[: sealed.HEAD_SIZE - 12] == b[: sealed.HEAD_SIZE - 12]  # same clear hash
    assert a[sealed.HEAD_SIZE :] != b[sealed.HEAD_SIZE :]


def test_seal_record_is_seal_for_a_record_the_store_built() -> None:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    from agentsessions.journal.format.records import Record

    key = os.urandom(32)
    record = Record.seal(b'{"type":"x"}', seq=3, prev_hash="ab" * 32, fence=2)
    blob = sealed.seal_record(AESGCM(key), "sess-x", record)
    assert sealed.open_record(key, "sess-x", blob, seq=3, fence=2) == record
    assert sealed.head_of(blob, seq=3).content_hash == record.content_hash
    lying = record._replace(content_hash="cd" * 32)  # a hash that is not its envelope's
    with pytest.raises(ChainBrokenError):
        sealed.open_record(key, "sess-x", sealed.seal_record(AESGCM(key), "sess-x", lying), seq=3)
