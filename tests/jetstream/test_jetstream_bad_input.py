"""Bad input to the JetStream store (issue 11 item 4): a server that is down, one that dies
in the middle of a commit, a stream made by something else with settings that could lose,
hide or renumber a commit. Each is one clear line and a documented exit code."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.js import api
from needs import need_nats_server

from agentsessions.errors import UnavailableError
from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
from agentsessions.journal.stores.jetstream.store import JetStreamStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.sessions.storeurl import STORE_ENV
from agentsessions.v1 import construct

ROOT = Path(__file__).resolve().parents[2]


def _cli(home: Path, *args: str, url: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != STORE_ENV}
    env["PYTHONPATH"] = str(ROOT)
    if url:
        env[STORE_ENV] = url
    return subprocess.run(
        [sys.executable, "-m", "agentsessions", "--home", str(home), *args],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _say(text: str) -> dict[str, Any]:
    return construct.input_event(construct.text_message("user", text), execution_id="e1")


def test_a_server_that_is_down_is_named_even_with_a_monitor_url(tmp_path: Path) -> None:
    down = _cli(tmp_path, "--store", "nats://127.0.0.1:9?monitor=http://127.0.0.1:8", "list")
    assert down.returncode == 12
    assert down.stderr.splitlines()[0] == (  # within connect_timeout (2 s), every try
        "agentsessions: error: cannot connect to the NATS server at nats://127.0.0.1:9: "
        "not reached within 2s"
    )


def test_a_monitor_url_that_does_not_answer_names_the_server_too(
    nats_server: Any, tmp_path: Path
) -> None:
    url = f"{nats_server.url}?monitor=http://127.0.0.1:9"
    bad = _cli(tmp_path, "--store", url, "list")
    assert bad.returncode == 12
    assert bad.stderr.splitlines()[0] == (
        "agentsessions: error: cannot read the NATS monitoring endpoint http://127.0.0.1:9/varz "
        f"of the NATS server at {nats_server.url}: [Errno 111] Connection refused"
    )


def _admin(server: Any, work: Any) -> Any:
    async def run() -> Any:
        nc = await nats.connect(server.url)
        try:
            return await work(nc.jetstream())
        finally:
            await nc.close()

    return asyncio.run(run())


GOOD: dict[str, Any] = {
    "storage": api.StorageType.FILE, "deny_delete": True, "deny_purge": True,
    "allow_direct": True, "duplicate_window": 120.0,
}  # fmt: skip
BAD: dict[str, tuple[dict[str, Any], str]] = {
    "memory": ({"storage": api.StorageType.MEMORY}, "storage is 'memory', not 'file'"),
    "deletes": ({"deny_delete": False}, "deleting or purging messages is allowed"),
    "purges": ({"deny_purge": False}, "deleting or purging messages is allowed"),
    "max_msgs": ({"max_msgs": 10}, "max_msgs is 10 (old commits would be dropped)"),
    "max_bytes": ({"max_bytes": 1 << 30}, "max_bytes is 1073741824"),
    "per_subject": ({"max_msgs_per_subject": 5}, "max_msgs_per_subject is 5"),
    "max_age": ({"max_age": 3600.0}, "max_age is 3600.0s (old commits would expire)"),
    "discard_new_with_limit": (
        {"discard": api.DiscardPolicy.NEW, "max_msgs": 10},
        "max_msgs is 10",
    ),
    "window": ({"duplicate_window": 5.0}, "duplicate_window is 5s, shorter than the 41s"),
    "workqueue": ({"retention": api.RetentionPolicy.WORK_QUEUE}, "retention is 'workqueue'"),
    "rollup": (  # the server allows roll-ups only with purges
        {"allow_rollup_hdrs": True, "deny_purge": False},
        "rollup headers are allowed",
    ),
    "ttl": ({"allow_msg_ttl": True}, "per-message TTLs are allowed"),
    "direct": ({"allow_direct": False}, "allow_direct is off"),
    "no_ack": ({"no_ack": True}, "no_ack is set"),
    "msg_size": ({"max_msg_size": 1000}, "max_msg_size is 1000 bytes"),
    "subjects": ({"subjects": ["elsewhere.>"]}, "do not include"),
}


@pytest.fixture
def names() -> Iterator[tuple[str, str]]:
    token = new_uid()[5:17]
    yield f"W{token}", f"w{token}"


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_stream_made_elsewhere_with_a_risky_setting_is_refused(
    nats_server: Any, names: tuple[str, str], case: str
) -> None:
    stream, prefix = names
    settings, expected = BAD[case]
    config = {"name": stream, "subjects": [f"{prefix}.>"], **GOOD, **settings}

    async def make(js: Any) -> None:
        await js.add_stream(api.StreamConfig(**config))

    _admin(nats_server, make)
    try:
        with pytest.raises(UnavailableError) as err:
            JetStreamStore(
                JetStreamOptions.parse(nats_server.store_url(stream=stream, prefix=prefix))
            )
        assert err.value.message.startswith(
            f"the JetStream stream {stream!r} at {nats_server.url} cannot hold journals: "
        )
        assert expected in err.value.message
    finally:
        _admin(nats_server, lambda js: js.delete_stream(stream))


def test_discard_new_without_limits_keeps_everything_and_is_accepted(
    nats_server: Any, names: tuple[str, str]
) -> None:
    stream, prefix = names
    config = {"name": stream, "subjects": [f"{prefix}.>"], **GOOD, "discard": api.DiscardPolicy.NEW}
    _admin(nats_server, lambda js: js.add_stream(api.StreamConfig(**config)))
    try:
        JetStreamStore(
            JetStreamOptions.parse(nats_server.store_url(stream=stream, prefix=prefix))
        ).close()
    finally:
        _admin(nats_server, lambda js: js.delete_stream(stream))


def test_fewer_replicas_than_asked_and_taken_subjects_are_refused(
    nats_server: Any, names: tuple[str, str], tmp_path: Path
) -> None:
    stream, prefix = names
    config = {"name": stream, "subjects": [f"{prefix}.>"], **GOOD}
    _admin(nats_server, lambda js: js.add_stream(api.StreamConfig(**config)))
    try:
        asked = nats_server.store_url(stream=stream, prefix=prefix, replicas="3")
        with pytest.raises(UnavailableError, match=r"it has 1 replica\(s\), not the 3 asked"):
            JetStreamStore(JetStreamOptions.parse(asked))
        taken = _cli(
            tmp_path, "list", url=nats_server.store_url(stream="OTHER" + stream, prefix=prefix)
        )
        assert taken.returncode == 12  # was a traceback: the APIError was not mapped
        assert taken.stderr.splitlines()[0] == (
            f"agentsessions: error: cannot create the JetStream stream 'OTHER{stream}' for "
            f"{prefix}.> at {nats_server.url}: subjects overlap with an existing stream"
        )
    finally:
        _admin(nats_server, lambda js: js.delete_stream(stream))


@pytest.fixture
def own_server() -> Iterator[Any]:
    """A server of this test's own: it is stopped and killed on purpose."""
    from natsserver import NatsServer

    binary = need_nats_server()
    server = NatsServer(binary).start()
    try:
        yield server
    finally:
        server.resume() if server.proc is not None else None
        server.cleanup()


def test_a_server_killed_mid_commit_is_an_unknown_outcome_then_the_retry_lands_once(
    own_server: Any,
) -> None:
    url = own_server.store_url(stream="KILL", prefix="kill", timeout="0.5")
    store = JetStreamStore(JetStreamOptions.parse(url))
    uid = new_uid()
    store.create(SessionMeta(uid=uid))
    writer = store.writer(uid)
    writer.append([_say("a")], commit_id="c1")
    own_server.pause()  # the commit reaches the server's socket; no answer comes
    with pytest.raises(UnavailableError) as err:
        writer.append([_say("b")], commit_id="c2", expected_last_seq=1)
    assert err.value.exit_code == 12
    assert "may or may not have landed (retrying with the same commit id resolves it)" in str(
        err.value
    )
    own_server.proc.kill()  # it dies while stopped: what it had not read is gone
    own_server.proc.wait()
    own_server.proc = None
    writer.close()
    store.close()
    own_server.start()  # the same store directory and ports
    again = JetStreamStore(JetStreamOptions.parse(url))
    try:
        with again.writer(uid) as w:  # landed or not (either may happen), it lands once
            result = w.append([_say("b")], commit_id="c2", expected_last_seq=1)
            assert (result.first_seq, result.last_seq) == (2, 2)
            repeat = w.append([_say("b")], commit_id="c2", expected_last_seq=1)
            assert repeat.duplicate and repeat.last_seq == 2  # answered, not appended
        records = list(again.read(uid))
        assert [r.seq for r in records] == [1, 2]
    finally:
        again.close()


def test_a_server_stopped_mid_turn_makes_exec_say_the_outcome_is_unknown(
    own_server: Any, tmp_path: Path
) -> None:
    url = own_server.store_url(stream="STOP", prefix="stop", timeout="0.5", commit_timeout="3")
    made = _cli(tmp_path, "create", "--harness", "chat", url=url)
    assert made.returncode == 0, made.stderr
    uid = made.stdout.strip()
    # a host whose model holds the turn until told (busy_turn.py): the server stops while the
    # model answers, so the commit of MODEL_CALL and OUTPUT is the one left unanswered,
    # however fast or slow the machine (a timed stream raced the turn's other requests)
    script = str(Path(__file__).with_name("busy_turn.py"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with subprocess.Popen([sys.executable, script, url, str(tmp_path), uid], env=env, text=True,
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE) as host:  # fmt: skip
        assert host.stdin is not None and host.stdout is not None
        try:
            host.stdin.write("turn\n")
            host.stdin.flush()
            assert host.stdout.readline().strip() == "running"
            own_server.pause()
            host.stdin.write("go\n")
            host.stdin.flush()
            said = host.stdout.readline().strip()
        finally:
            own_server.resume()
        _out, err = host.communicate("quit\n", timeout=120)
    assert said == "error 12", err
    assert err.splitlines()[-1] == (
        f"the NATS server at {own_server.url} did not acknowledge a "
        f"commit on stop.j.{uid} within 3s (commit_timeout=); it may or may not have landed "
        "(retrying with the same commit id resolves it)"
    )


def test_a_flush_answered_after_its_deadline_leaves_the_connection_reading(
    own_server: Any,
) -> None:
    # nats-py cancels a timed-out flush's PONG future but keeps it queued: the late PONG
    # then raised InvalidStateError in the read loop, which stopped reading for good
    from agentsessions.journal.stores.jetstream.client import flush
    from agentsessions.journal.stores.jetstream.loop import OutcomeUnknown

    store = JetStreamStore(JetStreamOptions.parse(
        own_server.store_url(stream="FL", prefix="fl", timeout="1", commit_timeout="3")
    ))  # fmt: skip
    try:
        client = store._client
        assert client._nc is not None
        own_server.pause()
        try:
            with pytest.raises(OutcomeUnknown):
                client._loop.call(flush(client._nc, 1), 5)
        finally:
            own_server.resume()
        assert client.last("fl.nothing") is None  # read after the late PONG: it answers
        assert not client._nc._reading_task.done()
    finally:
        store.close()
