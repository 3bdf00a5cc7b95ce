"""One publish through a leader election and unknown outcomes (``Client.publish``), on one
real durable server with the faults injected at the one-try seam (``Client._try_once``):
the same Msg-Id and CAS until answered, an ambiguous outcome resolved by reading the
message after the expected sequence, never appended twice. Each test runs on both
publishers (the lean one, and nats-py, which TLS or credentials get). The real election
is in ``test_jetstream_failover.py``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest

from agentsessions.errors import ConflictError, UnavailableError
from agentsessions.journal.stores.jetstream import client as jetstream_client
from agentsessions.journal.stores.jetstream import outcome, wire
from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
from agentsessions.journal.stores.jetstream.loop import OutcomeUnknown
from agentsessions.journal.stores.jetstream.store import JetStreamStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.v1 import construct

Try = outcome.Try
Publish = Callable[[str, bytes, dict[str, str]], "int | Try"]


@pytest.fixture(params=["lean", "nats-py"])
def store(nats_server: Any, request: pytest.FixtureRequest) -> Iterator[JetStreamStore]:
    token = new_uid()[5:17]
    url = nats_server.store_url(stream=f"R{token}", prefix=f"r{token}", commit_timeout="5")
    s = JetStreamStore(JetStreamOptions.parse(url))
    assert s._client._lean is not None  # a plain server: the lean publisher
    if request.param == "nats-py":
        s._client._lean.close()
        s._client._lean = None
    yield s
    s.close()


def _faults(client: Any, script: list[str], *, blind: bool = False) -> list[str]:
    """Make the next tries of ``client`` go as ``script`` says, then normally: ``landed-
        unanswered`` (stored, the answer lost), ``no-leader`` (an election: nothing stored),
        ``spurious-cas`` (10164 with nothing stored, as R3 did once); ``blind``: the reads that
    resolve an outcome get no answer either. Returns the log of tries."""
    real: Publish = type(client)._try_once.__get__(client)
    log: list[str] = []

    def one(subject: str, body: bytes, headers: dict[str, str]) -> int | Try:
        step = script.pop(0) if script else "normal"
        log.append(step)
        if step == "no-leader":
            return Try.NO_LEADER
        if step == "spurious-cas":
            return Try.UNKNOWN
        got = real(subject, body, headers)
        if step == "landed-unanswered":
            raise OutcomeUnknown("the ack was lost")  # what a try's deadline passing raises
        return got

    async def unresolved(subject: str, expect: int, mid: str) -> int | Try:
        return Try.UNKNOWN

    client._try_once = one
    if blind:
        client._landed = unresolved
    else:
        client.__dict__.pop("_landed", None)
    return log


def _subject(store: JetStreamStore) -> str:
    return wire.journal_subject(store._opts.prefix, new_uid())


def test_an_unanswered_publish_that_landed_is_found_not_repeated(store: JetStreamStore) -> None:
    client, subject = store._client, _subject(store)
    log = _faults(client, ["landed-unanswered"])
    seq = client.publish(subject, b'{"k":"x"}\n', expect=0, token="t1")
    # the try landed unanswered; the message after seq 0 carries our Msg-Id: landed, once
    assert log == ["landed-unanswered"]
    last = client.last(subject)
    assert seq is not None and last is not None and last.stream_seq == seq
    assert client.subjects(subject) == {subject: 1}
    # a retry with the same Msg-Id and its stale CAS (as after a lost read): still once
    _faults(client, ["spurious-cas"])
    assert client.publish(subject, b'{"k":"x"}\n', expect=0, token="t1") == seq
    assert client.subjects(subject) == {subject: 1}


def test_an_election_is_retried_until_a_leader_takes_the_commit(store: JetStreamStore) -> None:
    client, subject = store._client, _subject(store)
    log = _faults(client, ["no-leader", "no-leader", "spurious-cas", "no-leader"])
    seq = client.publish(subject, b'{"k":"x"}\n', expect=0, token="t2")
    assert log == ["no-leader", "no-leader", "spurious-cas", "no-leader", "normal"]
    assert seq is not None and client.subjects(subject) == {subject: 1}


def test_another_writers_message_after_the_expected_one_is_a_lost_cas(
    store: JetStreamStore,
) -> None:
    client, subject = store._client, _subject(store)
    assert client.publish(subject, b'{"k":"x"}\n', expect=0, token="theirs") is not None
    _faults(client, ["spurious-cas"])  # ambiguous: read, and the message there is not ours
    assert client.publish(subject, b'{"k":"x"}\n', expect=0, token="ours") is None
    assert client.subjects(subject) == {subject: 1}


def test_an_election_longer_than_the_commit_timeout_is_unavailable(
    store: JetStreamStore,
) -> None:
    client, subject = store._client, _subject(store)
    client.options = replace(client.options, commit_timeout=0.3)
    _faults(client, ["no-leader"] * 1000)
    with pytest.raises(UnavailableError, match=r"no stream leader.*nothing was written"):
        client.publish(subject, b'{"k":"x"}\n', expect=0, token="t3")
    assert client.subjects(subject) == {}


def _say(text: str) -> dict[str, Any]:
    return construct.input_event(construct.text_message("user", text), execution_id="e1")


def test_a_writer_that_gave_up_finds_its_landed_commit_on_retry(store: JetStreamStore) -> None:
    """Unanswered past commit_timeout, yet landed: the same commit id again is answered as
    the duplicate, not appended a second time (and a different one goes on after it)."""
    client = store._client
    uid = new_uid()
    store.create(SessionMeta(uid=uid))
    with store.writer(uid) as w:
        w.append([_say("one")], commit_id="c1")
        client.options = replace(client.options, commit_timeout=0.3)
        _faults(client, ["landed-unanswered"] * 1000, blind=True)
        with pytest.raises(UnavailableError, match="may or may not have landed"):
            w.append([_say("two")], commit_id="c2")
        _faults(client, [])
        again = w.append([_say("two")], commit_id="c2")
        assert again.duplicate and again.last_seq == 2
        w.append([_say("three")], commit_id="c3")
        with pytest.raises(ConflictError):  # the tail is current again: seq 2 is taken
            w.append([_say("late")], expected_last_seq=1)
    assert [r.seq for r in store.read(uid)] == [1, 2, 3]


def test_a_batched_read_nobody_answers_is_an_election_to_wait_out(store: JetStreamStore) -> None:
    # during an election a direct get has no responders: the server answers status 503,
    # which must reach _call as NoRespondersError (asked again), not as a refusal; a stream
    # nobody serves gives the same answer (the failover test met it mid-election)
    import nats.errors

    client = store._client
    client.options = replace(client.options, stream="NOSUCHSTREAM")
    for read in (
        lambda: jetstream_client._batch(client, "r.j.x", 1, 8, 1 << 20),
        lambda: jetstream_client._batched_last(client, "NOSUCHSTREAM", ["r.m.*"]),
    ):
        with pytest.raises(nats.errors.NoRespondersError):
            client._loop.call(read(), client.options.timeout + 1)
