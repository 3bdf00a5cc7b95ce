"""Encryption at rest on the JetStream store (docs/JETSTREAM.md, "Encryption at rest"):
the server only ever holds ciphertext of events and state, keys live wrapped in a key
stream that can be shredded, and reads without the right key fail with exit 26."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from needs import need_nats_server

from agentsessions.errors import (
    FencedError,
    InvalidArgumentError,
    JournalCorruptError,
    KeyShreddedError,
    LockHeldError,
    MasterKeyError,
    SessionKeyError,
)
from agentsessions.journal.crypto.keys import MasterKey
from agentsessions.journal.stores.jetstream import wire
from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
from agentsessions.journal.stores.jetstream.store import JetStreamStore
from agentsessions.journal.stores.store import DEFAULT_PROJECT, SessionMeta, StateUpdate, new_uid
from agentsessions.sessions.offline import verify
from agentsessions.v1 import construct


def _say(text: str) -> dict[str, Any]:
    return construct.input_event(construct.text_message("user", text), execution_id="e1")


def _url(server: Any) -> str:
    token = new_uid()[5:17]
    return str(server.store_url(stream=f"C{token}", prefix=f"c{token}"))


def _open(url: str, master: MasterKey | None = None, **kw: Any) -> JetStreamStore:
    return JetStreamStore(JetStreamOptions.parse(url), master=master, **kw)


def _texts(store: JetStreamStore, uid: str) -> list[str]:
    return [r.event["message"]["parts"][0]["text"]["text"] for r in store.read(uid)]


def _session(store: JetStreamStore, *texts: str, state: bytes = b"") -> str:
    uid = new_uid()
    store.create(SessionMeta(uid=uid))
    with store.writer(uid) as w:
        for i, text in enumerate(texts):
            last = i == len(texts) - 1
            w.append([_say(text)], state=StateUpdate(state) if state and last else None)
    return uid


def _raw_messages(store: JetStreamStore, stream: str) -> list[bytes]:
    """Every message stored in ``stream``, as the server holds it."""

    async def scan(js: Any) -> list[bytes]:
        info = await js.stream_info(stream)
        out = []
        for seq in range(info.state.first_seq, info.state.last_seq + 1):
            try:
                out.append(bytes((await js.get_msg(stream, seq=seq)).data or b""))
            except Exception:  # a deleted (erased) message
                continue
        return out

    return store._client.run_js(scan)


def test_the_server_holds_only_ciphertext_of_events_and_state(nats_server: Any) -> None:
    url, master = _url(nats_server), MasterKey.generate()
    store = _open(url, master, checkpoint_every=2)
    plain = _open(url)
    try:
        uid = _session(store, "SECRET-EVENT-MARK", "more", state=b"SECRET-STATE-MARK")
        with store.component(uid, "tool").writer() as w:
            w.append([_say("SECRET-TOOL-MARK")], state=StateUpdate(b"SECRET-TOOLSTATE-MARK"))
        control = _session(plain, "PLAIN-CONTROL-MARK")  # proves the scan sees plaintext
        assert _texts(store, uid) == ["SECRET-EVENT-MARK", "more"]
        assert store.state(uid).data == b"SECRET-STATE-MARK"
        assert store.component(uid, "tool").state().data == b"SECRET-TOOLSTATE-MARK"
        info = store.get(uid)
        assert info.meta.encrypted and not plain.get(control).meta.encrypted
        assert (info.last_seq, info.exec_state, info.state_size) == (2, "EXEC_RUNNING", 17)
        stored = b"".join(_raw_messages(store, store._opts.stream))
        assert b"PLAIN-CONTROL-MARK" in stored
        for mark in (b"SECRET-EVENT-MARK", b"SECRET-STATE-MARK", b"SECRET-TOOL", b"more"):
            assert mark not in stored
        on_disk = b"".join(p.read_bytes() for p in Path(nats_server.root).rglob("*") if p.is_file())
        assert b"PLAIN-CONTROL-MARK" in on_disk and b"SECRET-EVENT-MARK" not in on_disk
        # the key stream holds wrapped keys, one per scope, never a data key in the clear
        keys = store._keys
        assert keys.subjects() == [keys.subject(uid), keys.subject(uid, "tool")]
        data_key = store._ring._unwrap(uid, "")
        key_stream = b"".join(_raw_messages(store, keys.name))
        assert data_key not in key_stream and master.key_id.encode() in key_stream
    finally:
        store.close()
        plain.close()


def test_without_the_right_master_key_reads_fail_with_exit_26(nats_server: Any) -> None:
    url, master = _url(nats_server), MasterKey.generate()
    store = _open(url, master, checkpoint_every=2)  # folds start from a checkpoint
    keyless, wrong = _open(url), _open(url, MasterKey.generate())
    try:
        uid = _session(store, "a", "b", state=b"s")
        for reader in (keyless, wrong):
            for read in (
                lambda r=reader: list(r.read(uid)),
                lambda r=reader: r.state(uid),
                lambda r=reader: list(r.follow(uid, idle_timeout=0.01)),
                lambda r=reader: r.writer(uid),
            ):
                with pytest.raises(MasterKeyError) as err:
                    read()
                assert err.value.exit_code == 26
        with pytest.raises(MasterKeyError, match=r"wrapped by master key .*not by the one given"):
            list(wrong.read(uid))
        with pytest.raises(MasterKeyError, match="no master key was given"):
            list(keyless.read(uid))
        # what is stored in the clear needs no key: get, list, delete
        assert keyless.get(uid).last_seq == 2
        assert [s.uid for s in keyless.list(DEFAULT_PROJECT).sessions] == [uid]
        before = store.get(uid)
        assert keyless.delete(uid).deleted  # its fence folds the sealed commits keyless
        after = store.get(uid)
        assert (after.exec_state, after.state_version, after.state_size, after.last_hash) == (
            before.exec_state, before.state_version, before.state_size, before.last_hash
        )  # fmt: skip
        assert _texts(store, uid) == ["a", "b"]  # still readable with the key
        assert store.state(uid).data == b"s"
        # a plaintext store's session is not encrypted by a reader that has a key
        other = _session(keyless, "plain")
        assert _texts(store, other) == ["plain"] and not store.get(other).meta.encrypted
    finally:
        for s in (store, keyless, wrong):
            s.close()


def test_a_missing_key_is_a_missing_key_not_a_plaintext_session(nats_server: Any) -> None:
    url, master = _url(nats_server), MasterKey.generate()
    store = _open(url, master)
    try:
        uid = _session(store, "a")
        store._keys._run(store._keys._purger(store._keys.subject(uid)))  # lost, not shredded
        fresh = _open(url, master)  # a process that never held the unwrapped key
        try:
            with pytest.raises(SessionKeyError, match="wrapped data key is missing") as err:
                list(fresh.read(uid))
        finally:
            fresh.close()
        assert err.value.exit_code == 26 and not isinstance(err.value, KeyShreddedError)
    finally:
        store.close()


def test_a_kept_data_key_saves_its_fetch_and_a_shred_elsewhere_still_wins(
    nats_server: Any,
) -> None:
    url, master = _url(nats_server), MasterKey.generate()
    writer, reader = _open(url, master, checkpoint_every=2), _open(url, master)
    try:
        uid = _session(writer, "a", "b", state=b"s")
        assert _texts(reader, uid) == ["a", "b"] and reader._ring.key_fetches == 1
        for _ in range(3):  # later reads, states and receipts use the key kept in memory
            assert _texts(reader, uid) == ["a", "b"] and reader.state(uid).data == b"s"
            assert reader.tool_receipt(uid, "k") is None
        assert reader._ring.key_fetches == 1
        writer.shred(uid)  # another host: the reader's kept key does not outlive it
        for read in (
            lambda: list(reader.read(uid)),
            lambda: reader.state(uid),
            lambda: reader.tool_receipt(uid, "k"),
        ):
            with pytest.raises(KeyShreddedError) as err:
                read()
            assert err.value.exit_code == 26
    finally:
        writer.close()
        reader.close()


def test_shred_destroys_every_key_and_fences_live_writers(nats_server: Any) -> None:
    url, master = _url(nats_server), MasterKey.generate()
    store, other_host, keyless = _open(url, master), _open(url, master), _open(url)
    try:
        uid = _session(store, "a", "b", state=b"s")
        with store.component(uid, "tool").writer() as w:
            w.append([_say("t")])
        live = other_host.writer(uid)  # another host's writer, holding the key in memory
        with pytest.raises(LockHeldError, match="a turn is running on another host"):
            store.shred(uid)  # in use there: refused, as the file store's lock (nothing done)
        assert len(store._keys.subjects()) == 2
        assert live.set_busy(False)  # parked between turns, still holding the key
        assert store.shred(uid) is True
        assert store._keys.subjects() == []  # both keys erased and purged
        with pytest.raises(FencedError):
            live.append([_say("after the shred")])
        live.close()
        for reader in (store, keyless):
            for read in (
                lambda r=reader: list(r.read(uid)),
                lambda r=reader: r.state(uid),
                lambda r=reader: list(r.component(uid, "tool").read()),
                lambda r=reader: r.writer(uid),
                lambda r=reader: r.component(uid, "tool").writer(),
            ):
                with pytest.raises(KeyShreddedError) as err:
                    read()
                assert err.value.exit_code == 26
        for reader in (store, keyless):  # the structure still verifies, keyless or keyed
            report = verify(reader, uid)
            assert report.ok and report.records == 2, report.reason
        assert any("shredded" in n for n in verify(store, uid).notes)
        assert store.shred(uid) is False  # already gone: harmless
        assert store.get(uid).last_seq == 2  # the clear metadata stays
        plain = _session(keyless, "p")
        with pytest.raises(InvalidArgumentError, match="not encrypted"):
            store.shred(plain)
    finally:
        for s in (store, other_host, keyless):
            s.close()


def test_a_shred_cut_after_its_marker_reads_as_shredded_and_a_second_run_finishes(
    nats_server: Any,
) -> None:
    store = _open(_url(nats_server), MasterKey.generate())
    try:
        uid = _session(store, "a")
        store._keys.mark_shredded(uid)  # the crash: marker written, key still stored
        assert store._keys.get(store._keys.subject(uid)) is not None
        with pytest.raises(KeyShreddedError):
            list(store.read(uid))
        assert store.shred(uid) is True
        assert store._keys.get(store._keys.subject(uid)) is None
    finally:
        store.close()


def test_a_shredded_parent_takes_its_prefix_from_every_fork_child(nats_server: Any) -> None:
    store = _open(_url(nats_server), MasterKey.generate())
    try:
        parent = _session(store, "p1", "p2")
        (child,) = store.fork(parent, 2, [SessionMeta(uid=new_uid())])
        assert child.meta.encrypted
        with store.writer(child.uid) as w:
            w.append([_say("c4")])
        assert store._keys.get(store._keys.subject(child.uid)) is not None  # its own key
        store.shred(parent)
        with pytest.raises(KeyShreddedError, match=parent):
            list(store.read(child.uid))
        assert _texts_from(store, child.uid, 4) == ["c4"]
        report = verify(store, child.uid)
        assert report.ok and report.records == 4, report.reason
    finally:
        store.close()


def _texts_from(store: JetStreamStore, uid: str, seq: int) -> list[str]:
    return [r.event["message"]["parts"][0]["text"]["text"] for r in store.read(uid, seq)]


def test_rotation_rewraps_every_key_and_a_wrong_old_key_changes_nothing(
    nats_server: Any,
) -> None:
    url, old, new = _url(nats_server), MasterKey.generate(), MasterKey.generate()
    store = _open(url, old)
    try:
        uid = _session(store, "a", state=b"s")
        with store.component(uid, "tool").writer() as w:
            w.append([_say("t")])
        shredded = _session(store, "gone")
        store.shred(shredded)
        subjects = store._keys.subjects()
        with pytest.raises(MasterKeyError):
            store.rewrap_keys(MasterKey.generate(), new)  # a wrong old key
        assert {store._ring.wrapped_by(s) for s in subjects} == {old.key_id}
        assert store.rewrap_keys(old, new) == (2, 0, 0)
        assert {store._ring.wrapped_by(s) for s in subjects} == {new.key_id}
        assert store.rewrap_keys(old, new) == (0, 2, 0)  # done already: a cut rotation reruns
        rotated = _open(url, new)
        assert _texts(rotated, uid) == ["a"] and rotated.state(uid).data == b"s"
        assert [r.seq for r in rotated.component(uid, "tool").read()] == [1]
        rotated.close()
        stale = _open(url, old)  # a process that did not hold the unwrapped data key yet
        try:
            with pytest.raises(MasterKeyError, match="wrapped by master key"):
                list(stale.read(uid))  # the old master key no longer opens it
        finally:
            stale.close()
        assert _texts(store, uid) == ["a"]  # one holding it keeps it: the same data key
    finally:
        store.close()


class _Hostile:
    """A client that can publish to the stream: it alters a commit's bytes on their way."""

    def __init__(self, store: JetStreamStore, alter: Any) -> None:
        self.client, self.alter = store._client, alter
        self.real = self.client.publish

    def __enter__(self) -> None:
        def publish(subject: str, body: bytes, **kw: Any) -> Any:
            if b'"k":"c"' in body.partition(b"\n")[0]:
                body = self.alter(body)
            return self.real(subject, body, **kw)

        self.client.publish = publish  # type: ignore[method-assign]

    def __exit__(self, *exc: object) -> None:
        self.client.publish = self.real  # type: ignore[method-assign]


def _flip_last_byte(body: bytes) -> bytes:
    return body[:-1] + bytes([body[-1] ^ 1])  # the last record's tag


def test_a_flipped_ciphertext_byte_is_found_by_the_tag_and_by_keyed_verify(
    nats_server: Any,
) -> None:
    url, master = _url(nats_server), MasterKey.generate()
    store, keyless = _open(url, master), _open(url)
    try:
        uid = _session(store, "a")
        with store.writer(uid) as w, _Hostile(store, _flip_last_byte):
            w.append([_say("forged")])
        with pytest.raises(JournalCorruptError, match="does not authenticate") as err:
            list(store.read(uid))
        assert err.value.exit_code == 8
        report = verify(store, uid)
        assert not report.ok and report.first_bad_seq == 2 and report.exit_code == 8
        # without the key the chain and every head still hold: only the tag can tell
        assert verify(keyless, uid).ok
        # the same for a working state's blob: its read and keyed verify find it
        stateful = _session(store, "a")
        with store.writer(stateful) as w, _Hostile(store, _flip_last_byte):
            w.append([_say("b")], state=StateUpdate(b"state bytes"))  # the blob ends the body
        assert _texts(store, stateful) == ["a", "b"]  # the records are intact
        with pytest.raises(JournalCorruptError, match="sealed state does not authenticate"):
            store.state(stateful)
        report = verify(store, stateful)
        assert (
            not report.ok and report.exit_code == 8 and "state committed at seq 2" in report.reason
        )
        assert verify(keyless, stateful).ok
    finally:
        store.close()
        keyless.close()


def test_a_changed_clear_head_or_a_plaintext_commit_is_refused(nats_server: Any) -> None:
    url, master = _url(nats_server), MasterKey.generate()
    store, keyless = _open(url, master), _open(url)
    try:
        uid = _session(store, "a")

        def head_byte(body: bytes) -> bytes:  # a byte of the first record's clear prev_hash
            line, _, rest = body.partition(b"\n")
            return line + b"\n" + rest[:10] + bytes([rest[10] ^ 1]) + rest[11:]

        with store.writer(uid) as w:
            with _Hostile(store, head_byte):
                w.append([_say("forged")])
            w.append([_say("after")])  # the head stays readable: get works, verify walks
        for reader in (store, keyless):
            report = verify(reader, uid)
            assert not report.ok and report.exit_code == 8
            assert "does not match its header" in report.reason
        forged = _session(store, "a")
        with store.writer(forged) as w:
            sealer = w._cipher
            w._cipher = None  # a writer that does not seal: a plaintext commit
            w.append([_say("PLAINTEXT")])
            w._cipher = sealer
        with pytest.raises(JournalCorruptError, match="plaintext commit in an encrypted"):
            list(store.read(forged))
        report = verify(keyless, forged)
        assert not report.ok and "plaintext commit in an encrypted" in report.reason
        assert isinstance(wire.decode(b'{"k":"f"}\n', 1, "s"), wire.Message)
    finally:
        store.close()
        keyless.close()


def test_a_shred_survives_a_server_killed_right_after_its_ack(tmp_path: Path) -> None:
    """The marker, the fences and the erased key are on disk once acknowledged: a server
    killed (SIGKILL) straight after comes back with the session still shredded."""
    from natsserver import NatsServer

    binary = need_nats_server()
    master = MasterKey.generate()
    (tmp_path / "nats").mkdir()
    server = NatsServer(binary, tmp_path / "nats").start()
    try:
        store = _open(server.store_url(), master)
        uid = _session(store, "a")
        assert store.shred(uid) is True
        assert server.proc is not None
        server.proc.kill()  # straight after the acknowledgements
        server.proc.wait()
        store.close()
        server = NatsServer(binary, tmp_path / "nats").start()
        again = _open(server.store_url(), master)
        try:
            assert again._keys.subjects() == [] and again._keys.shredded(uid)
            with pytest.raises(KeyShreddedError):
                list(again.read(uid))
            assert verify(again, uid).ok
        finally:
            again.close()
    finally:
        server.cleanup()


def test_agentsessions_open_takes_a_key_file_with_a_jetstream_store(
    nats_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No refusal of a master key with a ``nats://`` store any more (it was exit 2): the
    engine runs a turn sealed on JetStream and reads it back only with the key."""
    import base64
    import os

    import agentsessions
    from agentsessions.sessions.storeurl import STORE_ENV

    key = tmp_path / "master.key"
    key.write_text(base64.b64encode(os.urandom(32)).decode())
    key.chmod(0o600)
    monkeypatch.setenv(STORE_ENV, _url(nats_server))
    for name in ("AGENTSESSIONS_KEY_FILE", "AGENTSESSIONS_MASTER_KEY"):
        monkeypatch.delenv(name, raising=False)
    with agentsessions.open(tmp_path / "home", key_file=str(key), runtime="local") as engine:
        frame = engine.run(None, ["SECRET-TURN-MARK"], harness="chat", model="scripted:seed=7")
        uid = frame.uid
        assert any(b"SECRET-TURN-MARK" in r.payload for r in engine.store.read(uid))
        assert engine.store.get(uid).meta.encrypted
    with (
        agentsessions.open(tmp_path / "home", runtime="local") as keyless,
        pytest.raises(MasterKeyError),
    ):
        list(keyless.store.read(uid))
