"""How the LangGraph saver's records hold values (``langgraph_codec``): pieces that join back
to the serializer's bytes exactly, stored once per thread and named by number; patches that
rebuild a checkpoint exactly or are not used; versions that sort as their counters."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from needs import need

need("langgraph.checkpoint.base", "langgraph")

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from agentsessions.integrations.langgraph import AgentSessionsSaver
from agentsessions.integrations.langgraph_codec import (
    MIN_PIECE,
    Table,
    counter,
    decode,
    delta,
    encode,
    merge,
    resolve,
    split,
    str_header,
)

SERDE = JsonPlusSerializer()


def _message_list(i: int) -> list[Any]:
    text = f"message {i}: " + "lorem ipsum dolor sit amet " * 20
    return [HumanMessage(text, id=f"h-{i:04d}-{'x' * 30}"), AIMessage(text.upper())]


@given(st.binary(max_size=600))
def test_any_bytes_cut_into_pieces_join_back_exactly(data: bytes) -> None:
    assert b"".join(p.joined() for p in split(data)) == data


@given(st.text(min_size=32, max_size=300), st.binary(max_size=40), st.binary(max_size=40))
def test_a_long_msgpack_string_is_a_text_piece(text: str, before: bytes, after: bytes) -> None:
    raw = text.encode("utf-8")
    data = before + str_header(len(raw)) + raw + after
    pieces = list(split(data))
    assert b"".join(p.joined() for p in pieces) == data
    if len(text) == len(raw) and text.isprintable():  # plain text: never worth base64
        assert text in [p.text for p in pieces]


def test_values_round_trip_and_repeated_pieces_are_stored_once() -> None:
    writer, reader = Table(), Table()
    sizes = []
    for i in range(3):
        for value in (_message_list(i), _message_list(i), {"k": _message_list(i)}):
            stored = encode(SERDE, value, pieces=True).stored(writer)
            resolve(stored, writer)  # the writer folds what it wrote
            again = resolve(stored, reader)  # a reader folds the journal
            assert decode(SERDE, again) == value
            sizes.append(len(str(stored)))
    assert sizes[1] < sizes[0] / 4  # the same messages again: numbers only
    assert [p.key for p in reader.pieces] == [p.key for p in writer.pieces]
    assert all(len(p.data) >= MIN_PIECE for p in reader.pieces)


def test_a_number_the_thread_never_stored_is_refused() -> None:
    with pytest.raises(LookupError, match="piece 7"):
        resolve(["msgpack", [{"b64": "kQ=="}, 7]], Table())


def test_a_user_serializer_gets_its_bytes_whole() -> None:
    stored = encode(SERDE, _message_list(0)).stored(Table())
    assert len(stored) == 2 and isinstance(stored[1], str)  # [type, base64]
    assert decode(SERDE, resolve(stored, Table())) == _message_list(0)


@pytest.mark.parametrize(
    ("base", "value", "patched"),
    [
        ({"a": 1, "b": {"c": "x"}}, {"a": 2, "b": {"c": "x", "d": [1]}}, True),
        ({"a": 1, "b": 2}, {"a": 1}, True),  # a key removed: null in the patch
        ({"a": 1}, {"a": True}, True),  # 1 is not true: patched, not skipped
        ({"a": 1}, {"a": 1, "n": None}, False),  # a null cannot be patched in
        ({"a": {"b": 1}}, {"a": {"b": None}}, False),
    ],
)
def test_a_patch_rebuilds_the_value_exactly_or_is_not_used(
    base: dict[str, Any], value: dict[str, Any], patched: bool
) -> None:
    patch = delta(base, value)
    assert (patch is not None) is patched
    if patch is not None:
        rebuilt = merge(base, patch)
        assert rebuilt == value and [type(v) for v in rebuilt.values()] == [
            type(v) for v in value.values()
        ]


def test_versions_sort_as_their_counters_after_the_earlier_format() -> None:
    saver = AgentSessionsSaver.__new__(AgentSessionsSaver)  # get_next_version reads no state
    versions = []
    current: Any = "0000000000000017.52535300ca"  # a version of an earlier release
    for _ in range(3000):
        current = saver.get_next_version(current, None)
        versions.append(current)
    assert versions == sorted(versions) and versions[0] > "0000000000000017.52535300ca"
    assert [counter(v) for v in versions] == list(range(18, 3018))
    assert len(versions[-1]) <= 12 and len(set(versions)) == len(versions)
    assert saver.get_next_version(None, None).startswith("b1.")
    assert counter(saver.get_next_version(7, None)) == 8
