"""Issue 18 item 6 on JetStream: a session's metadata message carries the same field sums
as ``session.json`` and is read as strictly; a message with a changed field is damaged
store data (exit 8) naming the field, listed as unindexed, never moved to another project.
Against the real durable server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentsessions.errors import MetadataCorruptError
from agentsessions.journal.stores.jetstream import wire
from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
from agentsessions.journal.stores.jetstream.store import JetStreamStore
from agentsessions.journal.stores.store import SessionMeta, new_uid


def _open(server: Any) -> tuple[JetStreamStore, str]:
    token = new_uid()[5:17]
    prefix = f"m{token}"
    url = str(server.store_url(stream=f"M{token}", prefix=prefix))
    return JetStreamStore(JetStreamOptions.parse(url)), prefix


def _republish(store: JetStreamStore, prefix: str, uid: str, change: Any) -> None:
    """Publish the last metadata message again, its meta changed by ``change`` (what a
    damaged copy or a stray publisher would leave as the current row)."""
    subject = f"{prefix}.m.{uid}"
    last = store._client.last(subject)
    assert last is not None
    meta = json.loads(json.dumps(last.head["meta"]))
    change(meta)
    body = wire.meta_body(meta, deleted=False, update_time_ns=1, stream_id=store._client.genesis)
    assert store._client.publish(subject, body, expect=last.stream_seq, token=new_uid())


@pytest.mark.parametrize(
    ("field", "change"),
    [
        ("project", lambda m: m.update(project="defzult")),
        ("harness", lambda m: m.update(harness="chbt")),
        ("create_time_ns", lambda m: m.update(create_time_ns=m["create_time_ns"] + 1)),
        ("modem", lambda m: m.update(modem=m.pop("model"))),
        ("labels", lambda m: m["sums"].pop("labels")),
    ],
)  # fmt: skip
def test_a_changed_metadata_field_is_damage_naming_it(
    nats_server: Any, field: str, change: Any
) -> None:
    store, prefix = _open(nats_server)
    try:
        meta = SessionMeta(uid=new_uid(), project="default", harness="chat", labels={"a": "b"})
        uid = store.create(meta).uid
        assert "sums" in store._client.last(f"{prefix}.m.{uid}").head["meta"]  # type: ignore[union-attr]
        _republish(store, prefix, uid, change)
        with pytest.raises(MetadataCorruptError) as info:
            store.get(uid)
        assert info.value.exit_code == 8 and info.value.fields["field"] == field
        assert store.list("defzult").sessions == []
        page = store.list("default")  # the damaged session is reported, as a value of the page
        assert page.sessions == [] and [e.fields["field"] for e in page.unindexed] == [field]
    finally:
        store.close()


def test_a_message_from_before_the_sums_is_read_and_the_next_write_adds_them(
    nats_server: Any,
) -> None:
    store, prefix = _open(nats_server)
    try:
        uid = store.create(SessionMeta(uid=new_uid(), project="p")).uid
        _republish(store, prefix, uid, lambda m: m.pop("sums"))
        assert store.get(uid).meta.project == "p"
        store.delete(uid)
        assert "sums" in store._client.last(f"{prefix}.m.{uid}").head["meta"]  # type: ignore[union-attr]
        assert store.get(uid).deleted
    finally:
        store.close()
