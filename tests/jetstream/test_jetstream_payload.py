"""A server on NATS's default ``max_payload`` (1 MiB) works out of the box: the store fits
its commit limit to what one message holds (commits past it refused whole, as any
too-large commit), while an explicit ``max_commit_bytes=`` the server cannot carry is one
clear error naming both numbers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from needs import need, need_nats_server

from agentsessions.errors import CommitTooLargeError, InvalidArgumentError, UnavailableError
from agentsessions.journal.stores.store import DEFAULT_MAX_COMMIT_BYTES, SessionMeta, new_uid
from agentsessions.v1 import construct

need("nats", "nats")

from agentsessions.journal.stores.jetstream.conn import (
    MIN_COMMIT_BYTES,
    JetStreamOptions,
    fit_commit_limit,
)
from agentsessions.journal.stores.jetstream.store import JetStreamStore

MIB = 1024 * 1024


def test_the_limit_is_fitted_to_the_server_unless_asked() -> None:
    assert fit_commit_limit(0, 8 * MIB, "nats://h:1") == DEFAULT_MAX_COMMIT_BYTES
    assert fit_commit_limit(0, MIB, "nats://h:1") == MIB - 64 * 1024
    assert fit_commit_limit(500_000, MIB, "nats://h:1") == 500_000
    with pytest.raises(UnavailableError, match=r"a commit of 4194304 bytes \(max_commit_bytes=\)"):
        fit_commit_limit(DEFAULT_MAX_COMMIT_BYTES, MIB, "nats://h:1")
    with pytest.raises(UnavailableError, match="too small for journal commits"):
        fit_commit_limit(0, MIN_COMMIT_BYTES, "nats://h:1")


def test_a_negative_limit_in_the_url_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="max_commit_bytes=-1 is negative"):
        JetStreamOptions.parse("nats://h:1?max_commit_bytes=-1")
    assert JetStreamOptions.parse("nats://h:1?max_commit_bytes=9000").max_commit_bytes == 9000


@pytest.fixture(scope="module")
def default_server() -> Iterator[Any]:
    from natsserver import NatsServer

    binary = need_nats_server()
    server = NatsServer(binary, max_payload="").start()
    yield server
    server.cleanup()


def _say(text: str) -> dict[str, Any]:
    return construct.input_event(construct.text_message("user", text), execution_id="e1")


def test_a_server_on_its_default_payload_takes_commits_up_to_what_fits(
    default_server: Any,
) -> None:
    store = JetStreamStore(JetStreamOptions.parse(default_server.store_url()))
    try:
        assert store.max_commit_bytes == MIB - 64 * 1024
        uid = new_uid()
        store.create(SessionMeta(uid=uid))
        with store.writer(uid) as w:
            w.append([_say("small")])
            with pytest.raises(CommitTooLargeError):
                w.append([_say("x" * MIB)])  # refused whole, nothing written
            w.append([_say("after")])
        assert [r.seq for r in store.read(uid)] == [1, 2]
    finally:
        store.close()
    asked = default_server.store_url(max_commit_bytes=str(DEFAULT_MAX_COMMIT_BYTES))
    with pytest.raises(UnavailableError, match="would not fit") as caught:
        JetStreamStore(JetStreamOptions.parse(asked))
    assert "or ask for at most max_commit_bytes=983040" in (caught.value.hint or "")
