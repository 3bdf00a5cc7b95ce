"""Sealed blobs: round trip, and every move or flip refused by the tag."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsessions.errors import InvalidArgumentError, JournalCorruptError
from agentsessions.journal.crypto.blobs import BLOB_OVERHEAD, is_blob, open_blob, seal_blob

KEY = bytes(range(32))


@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=2048), binding=st.binary(max_size=40))
def test_round_trip(data: bytes, binding: bytes) -> None:
    blob = seal_blob(KEY, "s1", "state", data, binding=binding)
    assert len(blob) == len(data) + BLOB_OVERHEAD and is_blob(blob)
    assert open_blob(KEY, "s1", "state", blob, binding=binding) == data


@settings(max_examples=40, deadline=None)
@given(data=st.binary(min_size=1, max_size=300), at=st.integers(min_value=0))
def test_a_flipped_byte_is_refused(data: bytes, at: int) -> None:
    blob = bytearray(seal_blob(KEY, "s1", "state", data))
    blob[at % len(blob)] ^= 0x01
    with pytest.raises(JournalCorruptError):
        open_blob(KEY, "s1", "state", bytes(blob))


@pytest.mark.parametrize(
    "scope, kind, binding, key",
    [
        ("s2", "state", b"v1", KEY),  # another session
        ("s1/notes", "state", b"v1", KEY),  # a tool store of the same session
        ("s1", "receipt", b"v1", KEY),  # another kind
        ("s1", "state", b"v2", KEY),  # another position
        ("s1", "state", b"v1", bytes(range(1, 33))),  # another key
    ],
)
def test_a_moved_blob_is_refused(scope: str, kind: str, binding: bytes, key: bytes) -> None:
    blob = seal_blob(KEY, "s1", "state", b"facts", binding=b"v1")
    with pytest.raises(JournalCorruptError):
        open_blob(key, scope, kind, blob, binding=binding)


def test_not_a_blob_and_bad_keys() -> None:
    with pytest.raises(JournalCorruptError):
        open_blob(KEY, "s1", "state", b"plain text that is long enough to look like one")
    with pytest.raises(InvalidArgumentError):
        seal_blob(b"short", "s1", "state", b"x")
    with pytest.raises(InvalidArgumentError):
        seal_blob(KEY, "s\x001", "state", b"x")
