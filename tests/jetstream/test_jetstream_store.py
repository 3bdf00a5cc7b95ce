"""The JetStream store's own promises, beyond the store contract suite: fencing across
hosts, durability checks at start, unknown publish outcomes, commit ids per session."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from needs import need_nats_server

from agentsessions.errors import (
    FencedError,
    LockHeldError,
    SessionDeletedError,
    UnavailableError,
)
from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
from agentsessions.journal.stores.jetstream.store import JetStreamStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.journal.tools.verify import check_chain
from agentsessions.v1 import construct
from agentsessions.v1.results import VerifyReport

ROOT = Path(__file__).resolve().parents[2]


def _say(text: str) -> dict[str, Any]:
    return construct.input_event(construct.text_message("user", text), execution_id="e1")


def _url(server: Any) -> str:
    token = new_uid()[5:17]
    return server.store_url(stream=f"F{token}", prefix=f"f{token}")


def _open(url: str, **kw: Any) -> JetStreamStore:
    return JetStreamStore(JetStreamOptions.parse(url, **kw))


def test_a_new_incarnation_fences_an_older_writer_whose_head_is_current(
    nats_server: Any,
) -> None:
    url = _url(nats_server)
    host_a, host_b = _open(url), _open(url)  # two stores: two hosts as far as they know
    try:
        uid = new_uid()
        host_a.create(SessionMeta(uid=uid))
        old = host_a.writer(uid)
        old.append([_say("a")])
        head = old.head
        with pytest.raises(LockHeldError, match="a turn is running on another host"):
            host_b.writer(uid)  # in use (busy from open): refused, as the file store's lock
        assert old.set_busy(False)  # parked between turns, as an engine's pool does
        new = host_b.writer(uid)  # takes over: a fence record, CAS at the head it read
        assert new.fence > old.fence and new.head == head
        with pytest.raises(FencedError) as err:
            old.append([_say("zombie")], expected_last_seq=head[0])  # its view is current
        assert err.value.fields["current_fence"] == new.fence
        new.append([_say("b")], expected_last_seq=head[0])
        old.close()
        new.close()
        records = list(host_a.read(uid))
        assert [r.seq for r in records] == [1, 2]
        assert [r.fence for r in records] == [old.fence, new.fence]
        assert check_chain(records, VerifyReport(source="t")).ok
    finally:
        host_a.close()
        host_b.close()


def test_a_paused_writer_process_is_fenced_when_it_resumes(nats_server: Any) -> None:
    url = _url(nats_server)
    store = _open(url)
    uid = new_uid()
    store.create(SessionMeta(uid=uid))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("zombie_writer.py")), url, uid],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True,
    ) as zombie:  # fmt: skip
        try:
            assert zombie.stdout is not None and zombie.stdin is not None
            assert zombie.stdout.readline().split() == ["ready", "1"]
            with pytest.raises(LockHeldError, match=r"a turn is running on another host \(pid"):
                store.writer(uid)  # live and mid-turn: refused, nothing written
            os.kill(zombie.pid, signal.SIGSTOP)  # the first host stalls (GC, VM, partition)
            with store.writer(uid) as w:  # its probe goes unanswered: take over and go on
                w.append([_say("taken over")], expected_last_seq=1)
            os.kill(zombie.pid, signal.SIGCONT)
            zombie.stdin.write("go\n")
            zombie.stdin.flush()
            assert zombie.stdout.readline().strip() == "fenced"
            assert zombie.wait(timeout=60) == 0
        finally:
            if zombie.poll() is None:
                zombie.kill()
    records = list(store.read(uid))
    assert [r.seq for r in records] == [1, 2]
    assert check_chain(records, VerifyReport(source="t")).ok
    store.close()


def test_delete_from_another_host_waits_for_a_running_turn(nats_server: Any) -> None:
    url = _url(nats_server)
    host_a, host_b = _open(url), _open(url)
    try:
        uid = new_uid()
        host_a.create(SessionMeta(uid=uid))
        w = host_a.writer(uid)
        w.append([_say("a")])
        with pytest.raises(LockHeldError, match="a turn is running on another host"):
            host_b.delete(uid)  # refused, as the file store's lock: nothing written
        assert not host_b.get(uid).deleted
        assert w.set_busy(False)  # parked between turns: the delete fences it
        assert host_b.delete(uid).deleted
        with pytest.raises(SessionDeletedError):
            w.append([_say("after the delete")])
        w.close()
    finally:
        host_a.close()
        host_b.close()


def test_commit_ids_are_scoped_to_the_session(nats_server: Any) -> None:
    store = _open(_url(nats_server))
    try:
        a, b = new_uid(), new_uid()
        for uid in (a, b):
            store.create(SessionMeta(uid=uid))
        with store.writer(a) as wa, store.writer(b) as wb:
            ra = wa.append([_say("a")], commit_id="same-id")
            rb = wb.append([_say("b")], commit_id="same-id")  # stream-wide window: not a dup
        assert not ra.duplicate and not rb.duplicate
        assert store.get(a).last_seq == store.get(b).last_seq == 1
    finally:
        store.close()


def test_a_server_that_does_not_fsync_is_refused(tmp_path: Path) -> None:
    from natsserver import NatsServer

    binary = need_nats_server()
    server = NatsServer(binary, tmp_path, sync_always=False).start()
    try:
        with pytest.raises(UnavailableError, match="does not fsync before it acknowledges"):
            _open(server.store_url())
        with pytest.raises(UnavailableError, match="monitor="):
            _open(server.url)
        _open(server.store_url(), allow_unsynced=True).close()  # an explicit override
    finally:
        server.stop()


def test_a_stream_with_the_wrong_settings_is_refused(nats_server: Any) -> None:
    import asyncio

    import nats
    from nats.js import api

    async def make() -> None:
        nc = await nats.connect(nats_server.url)
        await nc.jetstream().add_stream(
            api.StreamConfig(name="LOOSE", subjects=["loose.>"], storage=api.StorageType.MEMORY)
        )
        await nc.close()

    asyncio.run(make())
    with pytest.raises(UnavailableError) as err:
        _open(nats_server.store_url(stream="LOOSE", prefix="loose"))
    assert "storage is 'memory'" in str(err.value) and "purging" in str(err.value)


def test_an_unreachable_server_is_a_clear_error() -> None:
    from natsserver import free_port

    url = f"nats://127.0.0.1:{free_port()}"
    with pytest.raises(UnavailableError, match=f"cannot connect to the NATS server at {url}"):
        _open(url, allow_unsynced=True)
