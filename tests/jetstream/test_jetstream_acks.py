"""jetstream/acks.py against a real durable server: each answer a commit's publish can get,
read from the one reply subscription (the parse itself: tests/unit/test_jetstream_acks.py)."""

from __future__ import annotations

from typing import Any

from agentsessions.journal.stores.jetstream.acks import Acks
from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
from agentsessions.journal.stores.jetstream.outcome import WRONG_LAST_SEQUENCE
from agentsessions.journal.stores.jetstream.store import JetStreamStore
from agentsessions.journal.stores.store import new_uid


def test_every_answer_a_publish_gets(nats_server: Any) -> None:
    token = new_uid()[5:17]
    url = nats_server.store_url(stream=f"AK{token}", prefix=f"ak{token}")
    store = JetStreamStore(JetStreamOptions.parse(url))  # creates the stream
    try:
        client = store._client
        acks = Acks(client._nc)
        client._loop.call(acks.start(), 10)
        subject = f"ak{token}.j.one"

        def publish(subject: str, msg_id: str, expect: int | None) -> Any:
            headers = {"Nats-Msg-Id": msg_id}
            if expect is not None:
                headers["Nats-Expected-Last-Subject-Sequence"] = str(expect)
            return client._loop.call(acks.publish(subject, b"x", headers), 10)

        first = publish(subject, f"{token}-1", 0)
        assert first.seq > 0 and not first.code
        # a duplicate is answered with the first's sequence (one still carrying its stale
        # CAS gets 10071 on one node instead: FACTS.md; Client.publish resolves both)
        assert publish(subject, f"{token}-1", None).seq == first.seq
        lost = publish(subject, f"{token}-2", 0)  # the subject is past 0: the CAS is lost
        assert (lost.seq, lost.err_code) == (0, WRONG_LAST_SEQUENCE)
        assert publish(subject, f"{token}-2", first.seq).seq > first.seq
        assert publish("no.stream.here", f"{token}-3", 0).no_responders
        assert not acks._waiting  # every answered publish let go of its reply
    finally:
        store.close()
