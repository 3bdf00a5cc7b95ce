"""jetstream/acks.py: what the server's answer to a publish says, read from its bytes (the
answers a real server gives are exercised by tests/jetstream: retry, failover, CAS)."""

from __future__ import annotations

import pytest

from agentsessions.journal.stores.jetstream.acks import Ack, parse


def test_an_ack_gives_its_stream_sequence() -> None:
    assert parse(None, b'{"stream":"S","seq":42}') == Ack(seq=42)


def test_a_duplicate_gives_the_first_messages_sequence() -> None:
    assert parse({}, b'{"stream":"S","seq":7,"duplicate":true}') == Ack(seq=7)


def test_an_api_error_keeps_both_codes() -> None:
    body = b'{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 3"}}'
    assert parse(None, body) == Ack(code=400, err_code=10071, description="wrong last sequence: 3")


def test_no_responders_is_told_by_its_status_not_its_body() -> None:
    assert parse({"Status": "503"}, b"") == Ack(no_responders=True)


@pytest.mark.parametrize("body", [b"", b"[1]", b'{"stream":"S"}', b"not json"])
def test_anything_else_is_not_an_ack(body: bytes) -> None:
    with pytest.raises(ValueError):
        parse(None, body)
