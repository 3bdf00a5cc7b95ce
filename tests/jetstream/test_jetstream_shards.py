"""Sessions spread over several streams (jetstream/shards.py): where a session's messages
go, that the count is fixed by the deployment's genesis, and that a shard stream deleted
and recreated is refused as the home stream is (the contract suite runs on a sharded
store too: tests/contract/test_store_contract.py, ``jetstream-sharded``)."""

from __future__ import annotations

import asyncio
from typing import Any

import nats
import pytest

from agentsessions.errors import InvalidArgumentError, StreamReplacedError
from agentsessions.journal.stores.jetstream import shards
from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
from agentsessions.journal.stores.jetstream.store import JetStreamStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.v1 import construct


def _admin(server: Any, work: Any) -> Any:
    async def run() -> Any:
        nc = await nats.connect(server.url)
        try:
            return await work(nc.jetstream())
        finally:
            await nc.close()

    return asyncio.run(run())


def _say(text: str) -> dict[str, Any]:
    return construct.output_event(construct.text_message("assistant", text), execution_id="e1")


def _url(server: Any, token: str, **query: str) -> str:
    return str(server.store_url(stream=f"SH{token}", prefix=f"sh{token}", **query))


def test_each_session_commits_into_its_shards_stream(nats_server: Any) -> None:
    token = new_uid()[5:17]
    store = JetStreamStore(JetStreamOptions.parse(_url(nats_server, token, shards="3")))
    try:
        uids = [new_uid() for _ in range(12)]
        for uid in uids:
            store.create(SessionMeta(uid=uid))
            with store.writer(uid) as w:
                w.append([_say(uid)], commit_id="c1")
        counts = {}
        for k in range(3):
            stream = shards.shard_stream(f"SH{token}", k)
            info = _admin(nats_server, lambda js, s=stream: js.stream_info(s, subjects_filter=">"))
            counts[k] = {s for s in (info.state.subjects or {}) if ".j." in s}
        for uid in uids:  # its journal is in its shard's stream, under the shard's prefix
            k = shards.shard_of(uid, 3)
            assert f"{shards.shard_prefix(f'sh{token}', k)}.j.{uid}" in counts[k]
        assert all(counts.values())  # twelve sessions reached every shard
        other = JetStreamStore(JetStreamOptions.parse(_url(nats_server, token)))  # not asked
        try:
            assert other._client.shards == 3  # the genesis fixed it
            assert [r.seq for r in other.read(uids[0], 1)] == [1]
            assert len(other.list("default").sessions) == 12  # metadata: in the home stream
        finally:
            other.close()
    finally:
        store.close()


def test_the_shard_count_cannot_change_once_the_deployment_began(nats_server: Any) -> None:
    token = new_uid()[5:17]
    JetStreamStore(JetStreamOptions.parse(_url(nats_server, token))).close()  # 1 shard
    with pytest.raises(InvalidArgumentError, match=r"holds a deployment of 1 shard\(s\)"):
        JetStreamStore(JetStreamOptions.parse(_url(nats_server, token, shards="4")))


def test_a_shard_stream_deleted_and_recreated_is_refused(nats_server: Any) -> None:
    token = new_uid()[5:17]
    url = _url(nats_server, token, shards="2")
    store = JetStreamStore(JetStreamOptions.parse(url))
    uid = next(u for u in iter(new_uid, "") if shards.shard_of(u, 2) == 1)
    store.create(SessionMeta(uid=uid))
    with store.writer(uid) as w:
        w.append([_say("acknowledged")], commit_id="c1")
    store.close()
    _admin(nats_server, lambda js: js.delete_stream(f"SH{token}_1"))
    with pytest.raises(StreamReplacedError):  # recreated empty, its genesis gone: refused
        JetStreamStore(JetStreamOptions.parse(url))


@pytest.mark.parametrize(
    ("subject", "k"),
    [("p.j.u", 0), ("p_2.j.u", 2), ("p_2.c.u.ab", 2), ("p_keys.x", 0), ("p_02.j.u", 0),
     ("q_1.j.u", 0), ("p_.j.u", 0), ("p_13.t.*", 13)],
)  # fmt: skip
def test_a_subject_names_its_shard(subject: str, k: int) -> None:
    assert shards.shard_index("p", subject) == k
