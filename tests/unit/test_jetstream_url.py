"""The JetStream store URL: a server list for a cluster, replicas, the commit timeout, and
one clear error for a URL that names none of them right (no server needed)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from agentsessions.errors import InvalidArgumentError
from agentsessions.journal.stores.jetstream.conn import (
    JetStreamOptions,
    stream_config,
    stream_problems,
)


def test_a_cluster_is_a_comma_separated_server_list() -> None:
    o = JetStreamOptions.parse(
        "nats://a:1,b:2,c:3?monitor=http://a:8,http://b:8/&replicas=3&commit_timeout=5"
    )
    assert o.servers == ["nats://a:1", "nats://b:2", "nats://c:3"]
    assert o.monitors == ["http://a:8", "http://b:8"]
    assert (o.replicas, o.commit_timeout) == (3, 5.0)
    assert stream_config(o)["num_replicas"] == 3
    single = JetStreamOptions.parse("nats://127.0.0.1:4222")
    assert single.servers == ["nats://127.0.0.1:4222"] and single.replicas == 0
    assert stream_config(single)["num_replicas"] == 1  # not asked: one


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("nats://a:1,", "expected nats://HOST:PORT[,HOST:PORT...]"),
        ("nats://a:x", "expected nats://HOST:PORT"),
        ("redis://a:1", "expected nats://HOST:PORT"),
        ("nats://a:1?replicas=6", "replicas=6 is not 1..5"),
        ("nats://a:1?shards=65", "shards=65 is not 1..64"),
        ("nats://a:1?commit_timeout=0", "a timeout must be positive"),
        ("nats://a:1?servers=b:2", "unknown ['servers']"),
    ],
)
def test_a_bad_url_is_one_clear_error(url: str, says: str) -> None:
    with pytest.raises(InvalidArgumentError) as err:
        JetStreamOptions.parse(url)
    assert says in str(err.value)


def _config(replicas: int) -> SimpleNamespace:
    return SimpleNamespace(
        storage="file", deny_delete=True, deny_purge=True, max_msgs=-1, max_bytes=-1,
        max_msgs_per_subject=-1, max_age=0, subjects=["ags.>"], num_replicas=replicas,
        retention=None, allow_rollup_hdrs=False, sealed=False, mirror=None, sources=None,
        no_ack=False, first_seq=None, allow_direct=True, duplicate_window=120.0,
    )  # fmt: skip


def test_an_existing_stream_with_other_replicas_is_refused_only_when_asked() -> None:
    asked = JetStreamOptions.parse("nats://a:1?replicas=3")
    assert stream_problems(_config(1), asked) == [
        "it has 1 replica(s), not the 3 asked (replicas=)"
    ]
    assert stream_problems(_config(3), asked) == []
    assert stream_problems(_config(3), JetStreamOptions.parse("nats://a:1")) == []


def test_connect_timeout_is_two_seconds_unless_the_url_says() -> None:
    assert JetStreamOptions.parse("nats://a:1").connect_timeout == 2.0
    assert JetStreamOptions.parse("nats://a:1?connect_timeout=0.25").connect_timeout == 0.25
    with pytest.raises(InvalidArgumentError, match="a timeout must be positive"):
        JetStreamOptions.parse("nats://a:1?connect_timeout=0")


def test_a_port_nobody_listens_on_is_one_error_naming_connect_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import socket

    import nats

    from agentsessions.errors import UnavailableError
    from agentsessions.journal.stores.jetstream.client import Client

    with socket.socket() as sock:  # a port that was free a moment ago: nobody listens
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    seen: dict[str, float] = {}
    real_connect = nats.connect

    async def connect(**kwargs: object) -> object:
        seen["connect_timeout"] = float(kwargs["connect_timeout"])  # type: ignore[arg-type]
        return await real_connect(**kwargs)

    monkeypatch.setattr(nats, "connect", connect)
    options = JetStreamOptions.parse(
        f"nats://127.0.0.1:{port}?connect_timeout=0.3", allow_unsynced=True
    )
    with pytest.raises(UnavailableError) as err:
        Client(options)
    assert seen == {"connect_timeout": 0.3}  # the URL's value reaches the client
    assert f"cannot connect to the NATS server at nats://127.0.0.1:{port}" in err.value.message
    assert "connect_timeout=" in err.value.hint
