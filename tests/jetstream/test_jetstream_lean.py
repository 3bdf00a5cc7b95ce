"""The commit path's lean publisher (``jetstream/lean.py``) against real durable servers:
the bytes and headers it publishes, every answer the server gives (a sequence, 10071, no
responders, ``-ERR``), a server that stops answering, dies and comes back, closes an idle
connection, or is not the first of a cluster's list; and that a server asking for
credentials gets nats-py instead, commits and all."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from natsserver import NatsServer, free_port
from needs import need_nats_server

from agentsessions.errors import UnavailableError
from agentsessions.journal.stores.jetstream import lean
from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
from agentsessions.journal.stores.jetstream.loop import OutcomeUnknown
from agentsessions.journal.stores.jetstream.store import JetStreamStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.v1 import construct


def _store(server: Any, **query: str) -> JetStreamStore:
    token = new_uid()[5:17]
    url = server.store_url(stream=f"LN{token}", prefix=f"ln{token}", **query)
    return JetStreamStore(JetStreamOptions.parse(url))


def _say(text: str) -> dict[str, Any]:
    return construct.input_event(construct.text_message("user", text), execution_id="e1")


def _raw(client: Any, subject: str) -> Any:
    stream = client.stream_for(subject)
    return client._loop.call(client._js.get_msg(stream, subject=subject), 10)


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[NatsServer]:
    """A server of this test's own, to pause, kill and restart."""
    server = NatsServer(need_nats_server(), tmp_path / "nats", max_payload="").start()
    yield server
    server.cleanup()


def test_a_commit_goes_out_with_its_bytes_and_headers_unchanged(nats_server: Any) -> None:
    store = _store(nats_server)
    try:
        client = store._client
        assert client._lean is not None  # a plain local server: the lean path
        subject = f"{client.options.prefix}.j.{new_uid()}"
        body = b'{"k":"x"}\n' + bytes(range(256))
        seq = client.publish(subject, body, expect=0, token="t1")
        raw = _raw(client, subject)
        assert seq == raw.seq and raw.data == body
        assert raw.headers["Nats-Expected-Last-Subject-Sequence"] == "0"
        assert raw.headers["Nats-Msg-Id"]
        # another commit at the same place lost its CAS (10071): None, nothing stored
        assert client.publish(subject, body, expect=0, token="t2") is None
        assert client.publish(subject, body, expect=seq, token="t3") == seq + 1
        assert client.subjects(subject) == {subject: 2}
    finally:
        store.close()


def test_a_session_through_the_lean_path_reads_back_and_verifies(nats_server: Any) -> None:
    store = _store(nats_server)
    try:
        uid = new_uid()
        store.create(SessionMeta(uid=uid))
        with store.writer(uid) as w:
            for i in range(70):  # past a checkpoint (every 64 messages)
                w.append([_say(f"m{i}")], commit_id=f"c{i}")
        url = nats_server.store_url(stream=store._opts.stream, prefix=store._opts.prefix)
        other = JetStreamStore(JetStreamOptions.parse(url))
        try:
            got = list(other.read(uid))
        finally:
            other.close()
        assert [r.seq for r in got] == list(range(1, 71))
        assert got[-1].payload == list(store.read(uid))[-1].payload
    finally:
        store.close()


def test_no_responders_and_a_refusal_are_reported_as_the_server_says(
    own_server: NatsServer,
) -> None:
    publisher = lean.LeanPublisher(JetStreamOptions.parse(own_server.url))
    try:
        ack = publisher.publish("nostream.here", b"x", {"Nats-Msg-Id": "a"}, 5)
        assert ack.no_responders and ack.seq == 0
        big = b"x" * (1024 * 1024 + 1)  # past the 1 MiB max_payload its INFO names: never sent
        with pytest.raises(UnavailableError, match=r"refused a commit on nostream\.here"):
            publisher.publish("nostream.here", big, {"Nats-Msg-Id": "b"}, 5)
        # the refused connection was dropped; the next publish opens another
        assert publisher.publish("nostream.here", b"x", {}, 5).no_responders
    finally:
        publisher.close()
    with pytest.raises(UnavailableError, match=r"connection .* closed"):  # none after close
        publisher.publish("nostream.here", b"x", {}, 5)


def test_a_server_that_stops_answering_is_an_unknown_outcome_then_recovers(
    own_server: NatsServer,
) -> None:
    store = _store(own_server, commit_timeout="20")
    try:
        uid = new_uid()
        store.create(SessionMeta(uid=uid))
        with store.writer(uid) as w:
            w.append([_say("one")], commit_id="c1")
            publisher = store._client._lean
            assert publisher is not None
            own_server.pause()
            try:  # on no stream's subject: it lands nowhere once the server goes on
                with pytest.raises(OutcomeUnknown):
                    publisher.publish("nostream.paused", b"x", {"Nats-Msg-Id": "p"}, 0.3)
            finally:
                own_server.resume()
            w.append([_say("two")], commit_id="c2")  # a fresh connection takes it
        assert [r.seq for r in store.read(uid)] == [1, 2]
    finally:
        store.close()


def test_a_server_killed_and_restarted_takes_the_next_commit(own_server: NatsServer) -> None:
    store = _store(own_server, commit_timeout="30")
    try:
        uid = new_uid()
        store.create(SessionMeta(uid=uid))
        with store.writer(uid) as w:
            w.append([_say("one")], commit_id="c1")
            publisher = store._client._lean
            assert publisher is not None
            own_server.kill()
            with pytest.raises(lean.Unreached):
                publisher.publish("x.y", b"x", {}, 1)
            client = store._client
            client.options = replace(client.options, commit_timeout=0.3)
            with pytest.raises(UnavailableError, match=r"cannot reach.*nothing was written"):
                client.publish(f"{store._opts.prefix}.j.{uid}", b"x", expect=1, token="down")
            client.options = replace(client.options, commit_timeout=30)
            own_server.launch()  # same port, same store directory
            assert own_server.wait_ready("/healthz?js-enabled-only=true")
            w.append([_say("two")], commit_id="c2")  # the idle connection is found dead
        assert [r.seq for r in store.read(uid)] == [1, 2]
        assert store._client._lean is publisher  # still the lean path
    finally:
        store.close()


def test_an_idle_connection_the_server_closed_is_not_used(tmp_path: Path) -> None:
    class Pinging(NatsServer):
        def _config(self, ports_dir: Path) -> str:  # unanswered pings close it fast
            return super()._config(ports_dir) + 'ping_interval: "100ms"\nping_max: 1\n'

    server = Pinging(need_nats_server(), tmp_path / "nats").start()
    try:
        publisher = lean.LeanPublisher(JetStreamOptions.parse(server.url))
        try:
            assert publisher.publish("nostream.a", b"x", {}, 5).no_responders
            (idle,) = publisher._idle
            time.sleep(1.0)  # pinged, unanswered: the server closed it as stale
            assert publisher.publish("nostream.a", b"x", {}, 5).no_responders
            assert publisher._idle and publisher._idle[0] is not idle
        finally:
            publisher.close()
    finally:
        server.cleanup()


def test_a_cluster_list_whose_first_server_is_down_uses_the_next(nats_server: Any) -> None:
    dead = f"127.0.0.1:{free_port()}"
    url = nats_server.url.replace("nats://", f"nats://{dead},")
    publisher = lean.LeanPublisher(JetStreamOptions.parse(url))
    try:
        assert publisher.publish("nostream.b", b"x", {}, 5).no_responders
        assert publisher._next == 1  # and the next publish starts there
    finally:
        publisher.close()
    with pytest.raises(lean.Unreached, match=dead):
        lean.LeanPublisher(JetStreamOptions.parse(f"nats://{dead}")).publish("a.b", b"", {}, 1)


def test_credentials_or_tls_get_nats_py(tmp_path: Path) -> None:
    class Guarded(NatsServer):
        def _config(self, ports_dir: Path) -> str:
            return super()._config(ports_dir) + "authorization { user: u, password: p }\n"

    server = Guarded(need_nats_server(), tmp_path / "nats").start()
    try:
        plain = JetStreamOptions.parse(server.url)
        assert not lean.usable(plain, {"auth_required": True, "headers": True})
        assert not lean.usable(JetStreamOptions.parse("tls://h:1"), {"headers": True})
        with pytest.raises(lean.NotLean):  # the server's INFO asks for credentials
            lean.LeanPublisher(plain).publish("a.b", b"", {}, 5)
        token = new_uid()[5:17]
        url = server.url.replace("nats://", "nats://u:p@")
        store = JetStreamStore(JetStreamOptions.parse(
            f"{url}?monitor={server.monitor}&stream=G{token}&prefix=g{token}"
        ))  # fmt: skip
        try:
            assert store._client._lean is None  # credentials in the URL: nats-py
            # a lean publisher that meets a server asking for credentials hands over
            store._client._lean = lean.LeanPublisher(plain)
            uid = new_uid()
            store.create(SessionMeta(uid=uid))
            with store.writer(uid) as w:
                w.append([_say("one")], commit_id="c1")
                w.append([_say("two")], commit_id="c2")
            assert store._client._lean is None
            assert [r.seq for r in store.read(uid)] == [1, 2]
        finally:
            store.close()
    finally:
        server.cleanup()
