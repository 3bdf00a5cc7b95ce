"""A stream deleted and recreated, or one that lost messages, is refused (issue 11 item 3):
numbers are never reused over what was acknowledged. Against the real durable server."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import nats
import pytest

from agentsessions.errors import NotFoundError, StreamReplacedError
from agentsessions.journal.stores.jetstream import identity, wire
from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
from agentsessions.journal.stores.jetstream.store import JetStreamStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.journal.stores.tail import Tail
from agentsessions.sessions.offline import verify
from agentsessions.sessions.storeurl import STORE_ENV
from agentsessions.v1 import construct

ROOT = Path(__file__).resolve().parents[2]


def _say(text: str) -> dict[str, Any]:
    return construct.input_event(construct.text_message("user", text), execution_id="e1")


def _names(server: Any) -> tuple[str, str, str]:
    token = new_uid()[5:17]
    stream, prefix = f"I{token}", f"i{token}"
    return stream, prefix, str(server.store_url(stream=stream, prefix=prefix))


def _open(url: str) -> JetStreamStore:
    return JetStreamStore(JetStreamOptions.parse(url))


def _admin(server: Any, work: Any) -> Any:
    """Run ``work(js)`` on a connection of its own: what an operator's tool would do."""

    async def run() -> Any:
        nc = await nats.connect(server.url)
        try:
            return await work(nc.jetstream())
        finally:
            await nc.close()

    return asyncio.run(run())


def test_a_recreated_stream_is_refused_by_a_live_writer_and_store(nats_server: Any) -> None:
    stream, prefix, url = _names(nats_server)
    live = _open(url)
    try:
        uid = new_uid()
        live.create(SessionMeta(uid=uid))
        writer = live.writer(uid)
        writer.append([_say("a")])
        writer.append([_say("b")])
        assert writer.head[0] == 2
        config = (_admin(nats_server, lambda js: js.stream_info(stream))).config

        async def recreate(js: Any) -> None:
            await js.delete_stream(stream)
            await js.add_stream(config)

        _admin(nats_server, recreate)
        with pytest.raises(StreamReplacedError) as err:  # the subject starts again: refused
            writer.append([_say("c")], expected_last_seq=2)
        assert "was replaced" in err.value.message and "it has none now" in err.value.message
        assert err.value.exit_code == 8
        writer.close()
        other = _open(url)  # a new process: a new genesis, an empty stream, no such session
        try:
            with pytest.raises(NotFoundError):
                other.get(uid)
            assert identity.current(other._client, prefix) == other._client.genesis
            fresh = new_uid()
            other.create(SessionMeta(uid=fresh))
            for call in (
                lambda: live.writer(uid), lambda: live.get(uid), lambda: verify(live, uid),
                lambda: live.create(SessionMeta(uid=new_uid())),
            ):  # fmt: skip
                with pytest.raises(StreamReplacedError) as err:
                    call()
                assert f"identity was {live._client.genesis[:12]}" in err.value.message
            with pytest.raises(StreamReplacedError, match="belongs to stream identity"):
                live.get(fresh)  # the new host's session names the new genesis
            page = live.list("default")
            assert [s.uid for s in page.sessions] == []
            assert [e.fields["session"] for e in page.unindexed] == [fresh]
        finally:
            other.close()
    finally:
        live.close()


def test_a_session_naming_another_streams_identity_is_refused(nats_server: Any) -> None:
    _stream, prefix, url = _names(nats_server)
    store = _open(url)
    try:
        uid = new_uid()
        body = b'{"k":"m","meta":{"uid":"%s"},"del":false,"ut":1,"sid":"ffff0000"}\n' % uid.encode()
        assert store._client.publish(f"{prefix}.m.{uid}", body, expect=0, token="t")
        with pytest.raises(StreamReplacedError, match="belongs to stream identity ffff0000"):
            store.get(uid)
        assert [e.fields["session"] for e in store.list("default").unindexed] == [uid]
    finally:
        store.close()


def test_a_stream_that_lost_a_message_is_refused_at_connect(
    nats_server: Any, tmp_path: Path
) -> None:
    stream, _prefix, url = _names(nats_server)
    store = _open(url)
    uid = new_uid()
    try:
        store.create(SessionMeta(uid=uid))
        with store.writer(uid) as w:
            w.append([_say("a")])
            w.append([_say("b")])
    finally:
        store.close()

    async def drop_old(js: Any) -> None:  # an operator sets a limit for a moment, then lifts it
        config = (await js.stream_info(stream)).config
        await js.update_stream(replace(config, max_msgs_per_subject=1))
        await js.update_stream(config)

    _admin(nats_server, drop_old)
    with pytest.raises(StreamReplacedError, match="has lost messages"):
        _open(url)
    env = {**os.environ, "PYTHONPATH": str(ROOT), STORE_ENV: url}
    run = subprocess.run(
        [sys.executable, "-m", "agentsessions", "--home", str(tmp_path), "verify", uid],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 8, run.stderr
    assert run.stderr.startswith(
        f"agentsessions: error: the JetStream stream {stream!r} at {nats_server.url} has lost "
        "messages (its first sequence is "
    )
    assert "acknowledged commits may be missing" in run.stderr


def _recreate(server: Any, stream: str) -> None:
    config = _admin(server, lambda js: js.stream_info(stream)).config

    async def again(js: Any) -> None:
        await js.delete_stream(stream)
        await js.add_stream(config)

    _admin(server, again)


def test_a_follower_whose_subject_starts_again_is_refused(nats_server: Any) -> None:
    stream, prefix, url = _names(nats_server)
    store = _open(url)
    try:
        uid = new_uid()
        store.create(SessionMeta(uid=uid))
        with store.writer(uid) as w:
            w.append([_say("a")])
            w.append([_say("b")])
        follower = store.follow(uid, 1, idle_timeout=60)
        assert [next(follower).seq, next(follower).seq] == [1, 2]
        _recreate(nats_server, stream)
        # something writes the subject again (a restore, another host): the follower wakes
        fence = wire.fence_body(1, Tail())
        _admin(nats_server, lambda js: js.publish(f"{prefix}.j.{uid}", fence))
        with pytest.raises(StreamReplacedError, match="was replaced"):
            next(follower)
    finally:
        store.close()


def test_a_checkpoint_beyond_its_journal_is_evidence_of_lost_messages(nats_server: Any) -> None:
    """A partial restore: the metadata and the tail checkpoint came back, the journal did
    not. A writer would have numbered from 1; it is refused, naming the checkpoint."""
    stream, prefix, url = _names(nats_server)
    store = JetStreamStore(JetStreamOptions.parse(url), checkpoint_every=2)
    uid = new_uid()
    try:
        store.create(SessionMeta(uid=uid))
        with store.writer(uid) as w:
            for text in "abcd":
                w.append([_say(text)])
        kept = [store._client.last(f"{prefix}.{kind}.{uid}") for kind in ("m", "t")]
    finally:
        store.close()
    _recreate(nats_server, stream)
    meta, ckpt = kept
    assert meta is not None and ckpt is not None
    row = wire.meta_body(meta.head["meta"], deleted=False, update_time_ns=1)  # no identity
    _admin(nats_server, lambda js: js.publish(f"{prefix}.m.{uid}", row))
    body = json.dumps(ckpt.head, separators=(",", ":")).encode() + b"\n"
    _admin(nats_server, lambda js: js.publish(f"{prefix}.t.{uid}", body))
    restored = _open(url)
    try:
        with pytest.raises(StreamReplacedError, match="ends before its tail checkpoint"):
            restored.writer(uid)
    finally:
        restored.close()
