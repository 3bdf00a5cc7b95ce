"""An encrypted JetStream session's tool receipts and workloads are sealed (issue 11): the
server holds no plaintext of a receipt (nor its idempotency key), nor of a workload, as the
file store's ``TOOLRECEIPTS``/``WORKLOAD`` files hold none (docs/FORMAT.md 15); reading them
needs the master key (exit 26 without), a moved blob fails its tag (exit 8), and a plaintext
session's messages are as before. Each runs against the real durable server of the test run."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentsessions.errors import JournalCorruptError, MasterKeyError
from agentsessions.journal.crypto.keys import MasterKey
from agentsessions.journal.stores.jetstream import extras
from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
from agentsessions.journal.stores.jetstream.store import JetStreamStore
from agentsessions.journal.stores.store import SessionMeta, new_uid

ROOT = Path(__file__).resolve().parents[2]
KEY = "idem-KEY-MARK-1"
RECEIPT = {"call_id": "c1", "tool": "t", "args": {"line": "ARGS-MARK"}, "result": "RESULT-MARK"}
WORKLOAD = '[tools.t]\ndescription = "WORKLOAD-MARK"\n'
MARKS = (b"idem-KEY-MARK", b"ARGS-MARK", b"RESULT-MARK", b"WORKLOAD-MARK")


def _url(server: Any) -> str:
    token = new_uid()[5:17]
    return str(server.store_url(stream=f"R{token}", prefix=f"r{token}"))


def _open(url: str, master: MasterKey | None = None) -> JetStreamStore:
    return JetStreamStore(JetStreamOptions.parse(url), master=master)


def _raw(store: JetStreamStore) -> list[tuple[str, bytes]]:
    """Every message of the store's journal stream as the server holds it: (subject, body)."""
    stream = store._opts.stream

    async def scan(js: Any) -> list[tuple[str, bytes]]:
        info = await js.stream_info(stream)
        out = []
        for seq in range(info.state.first_seq, info.state.last_seq + 1):
            msg = await js.get_msg(stream, seq=seq)
            out.append((str(msg.subject), bytes(msg.data or b"")))
        return out

    return store._client.run_js(scan)


def _keep_all(store: JetStreamStore, uid: str) -> str:
    store.record_tool_receipt(uid, KEY, RECEIPT)
    store.set_workload(uid, WORKLOAD)
    return store.keep_workload(uid, WORKLOAD)


def test_an_encrypted_sessions_receipts_and_workloads_are_sealed(nats_server: Any) -> None:
    url, master = _url(nats_server), MasterKey.generate()
    store, other, plain = _open(url, master), _open(url, master), _open(url)
    try:
        uid, control = new_uid(), new_uid()
        store.create(SessionMeta(uid=uid))
        plain.create(SessionMeta(uid=control))
        digest = _keep_all(store, uid)
        assert _keep_all(plain, control) == digest
        # another store object (another host) reads them back: dedup across hosts holds
        assert other.tool_receipt(uid, KEY) == RECEIPT
        assert other.tool_receipt(uid, "another key") is None
        assert other.workload(uid) == WORKLOAD and other.workload_at(uid, digest) == WORKLOAD
        assert other.keep_workload(uid, WORKLOAD) == digest  # kept once, not rewritten
        raw = _raw(store)
        mine = b"".join(body for subject, body in raw if f".{uid}" in subject)
        theirs = b"".join(body for subject, body in raw if f".{control}" in subject)
        for mark in MARKS:
            assert mark in theirs  # the scan sees plaintext where there is some
            assert mark not in mine
        # the receipt's subject is a MAC of its key, not the key's plain hash
        prefix = store._opts.prefix
        tokens = [s.rsplit(".", 1)[1] for s in store._client.subjects(f"{prefix}.r.{uid}.*")]
        assert len(tokens) == 1 and tokens[0] != hashlib.sha256(KEY.encode()).hexdigest()
        assert len(tokens[0]) == 32
        # a plaintext session's messages are as they were: the key and receipt in the clear
        body = plain._client.last(extras.receipt_subject(prefix, control, KEY))
        assert body is not None and body.head == {"k": "r", "key": KEY, "receipt": RECEIPT}
        current = plain._client.last(extras.workload_subject(prefix, control))
        assert current is not None
        assert current.head == {"k": "w", "digest": digest, "text": WORKLOAD}
    finally:
        for s in (store, other, plain):
            s.close()


def test_without_the_master_key_receipts_and_workloads_are_exit_26(nats_server: Any) -> None:
    url, master = _url(nats_server), MasterKey.generate()
    store = _open(url, master)
    keyless, wrong = _open(url), _open(url, MasterKey.generate())
    try:
        uid = new_uid()
        store.create(SessionMeta(uid=uid))
        digest = _keep_all(store, uid)
        for reader in (keyless, wrong):
            for call in (
                lambda r=reader: r.tool_receipt(uid, KEY),
                lambda r=reader: r.workload(uid),
                lambda r=reader: r.workload_at(uid, digest),
                lambda r=reader: r.record_tool_receipt(uid, "k2", RECEIPT),
                lambda r=reader: r.set_workload(uid, WORKLOAD),
            ):
                with pytest.raises(MasterKeyError) as err:
                    call()
                assert err.value.exit_code == 26
        assert store.tool_receipt(uid, "k2") is None  # the refused write wrote nothing
    finally:
        for s in (store, keyless, wrong):
            s.close()


def test_a_moved_or_clear_body_is_refused_never_read(nats_server: Any) -> None:
    url, master = _url(nats_server), MasterKey.generate()
    store = _open(url, master)
    try:
        uid = new_uid()
        store.create(SessionMeta(uid=uid))
        store.record_tool_receipt(uid, KEY, RECEIPT)
        store.record_tool_receipt(uid, "key-B", {"result": "b"})
        cipher = store._host_cipher(uid)
        prefix = store._opts.prefix
        a = store._client.last(extras.receipt_subject(prefix, uid, KEY, cipher))
        b_subject = extras.receipt_subject(prefix, uid, "key-B", cipher)
        b = store._client.last(b_subject)
        assert a is not None and b is not None
        # A's sealed receipt put on B's subject: its tag is bound to A's id
        moved = json.dumps({**a.head, "id": b.head["id"]}).encode() + b"\n"
        store._client.publish(b_subject, moved, expect=b.stream_seq, token="moved")
        with pytest.raises(JournalCorruptError) as err:
            store.tool_receipt(uid, "key-B")
        assert err.value.exit_code == 8
        # a workload blob kept under one digest does not open as the current one
        digest = store.keep_workload(uid, WORKLOAD)
        kept = store._client.last(extras.kept_workload_subject(prefix, uid, digest))
        assert kept is not None
        current = extras.workload_subject(prefix, uid)
        store._client.publish(current, wire_body(kept.head), expect=0, token="w-moved")
        with pytest.raises(JournalCorruptError):
            store.workload(uid)
        # a body in the clear in an encrypted session is not taken for its workload
        clear = {"k": "w", "digest": digest, "text": WORKLOAD}
        last = store._client.last(current)
        assert last is not None
        store._client.publish(current, wire_body(clear), expect=last.stream_seq, token="w-clear")
        store.workloads.forget(current)
        with pytest.raises(JournalCorruptError, match="in the clear in an encrypted session"):
            store.workload(uid)
        # and a sealed body in a plaintext session is refused (exit 26), not read
        plain_uid = new_uid()
        store_plain = _open(url)
        try:
            store_plain.create(SessionMeta(uid=plain_uid))
            sealed = {"k": "r", "id": "0" * 32, "sealed": base64.b64encode(b"x").decode()}
            subject = extras.receipt_subject(prefix, plain_uid, KEY)
            store._client.publish(subject, wire_body(sealed), expect=0, token="r-sealed")
            with pytest.raises(MasterKeyError, match="not marked encrypted"):
                store_plain.tool_receipt(plain_uid, KEY)
        finally:
            store_plain.close()
    finally:
        store.close()


def wire_body(head: dict[str, Any]) -> bytes:
    """A message body as jetstream/extras.py writes one (one JSON line)."""
    return json.dumps(head, separators=(",", ":")).encode() + b"\n"


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTSESSIONS_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "agentsessions", "--home", str(home), *args],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _key_file(path: Path) -> Path:
    path.write_text(base64.b64encode(os.urandom(32)).decode() + "\n")
    path.chmod(0o600)
    return path


def test_exec_with_tools_on_an_encrypted_jetstream_session_seals_and_replays(
    nats_server: Any, tmp_path: Path
) -> None:
    url = _url(nats_server)
    store = ("--store", url)
    kf = ("--key-file", str(_key_file(tmp_path / "master.key")))
    effects = tmp_path / "notes.txt"
    tools = tmp_path / "tools.toml"
    tools.write_text(
        "[tools.append_line]\n"
        'mediation = "mediated"\n'
        'executor = "append_line"\n'
        'description = "WORKLOAD-MARK appends a line"\n'
        'parameters = { type = "object", properties = { line = { type = "string" } } }\n'
        f"config = {{ path = {json.dumps(str(effects))} }}\n"
    )
    script = tmp_path / "script.json"
    call = {"name": "append_line", "arguments": {"line": "ARGS-MARK milk"}}
    script.write_text(json.dumps([{"text": "Noting.", "tool_calls": [call]}, "Done."]))
    run = _cli(tmp_path, *store, *kf, "exec", "--harness", "chat", "--model",
               f"scripted:file={script}", "--tools", str(tools), "--input", "note it",
               "--json")  # fmt: skip
    assert run.returncode == 0, run.stderr
    uid = json.loads(run.stdout)["uid"]
    assert effects.read_text() == "ARGS-MARK milk\n"
    replay = _cli(tmp_path, *store, *kf, "replay", uid, "--rerun", "--json")
    assert replay.returncode == 0, replay.stderr
    got = json.loads(replay.stdout)
    assert got["identical"] is True and got["model_calls"] == 0
    assert effects.read_text() == "ARGS-MARK milk\n"  # the receipt answered: no second run
    keyless = _cli(tmp_path, *store, "replay", uid, "--rerun", "--json")
    assert keyless.returncode == 26, keyless.stderr
    assert keyless.stderr.startswith("agentsessions: error: ")
    reader = _open(url)
    try:
        raw = _raw(reader)
        assert any(f".r.{uid}." in s for s, _ in raw) and any(f".w.{uid}" in s for s, _ in raw)
        stored = b"".join(body for _subject, body in raw)
        for mark in (b"ARGS-MARK", b"WORKLOAD-MARK", b"append_line", str(effects).encode()):
            assert mark not in stored
    finally:
        reader.close()
    assert not list(tmp_path.glob("**/WORKLOAD*")) and not list(tmp_path.glob("**/TOOLREC*"))


def test_keyed_verify_opens_every_receipt_and_workload(nats_server: Any) -> None:
    from agentsessions.sessions.offline import verify
    from agentsessions.v1 import construct

    url, master = _url(nats_server), MasterKey.generate()
    store, keyless = _open(url, master), _open(url)
    try:
        uid = new_uid()
        store.create(SessionMeta(uid=uid))
        with store.writer(uid) as w:
            w.append(
                [construct.input_event(construct.text_message("user", "hi"), execution_id="e1")]
            )
        _keep_all(store, uid)
        assert verify(store, uid).ok and verify(keyless, uid).ok
        cipher = store._host_cipher(uid)
        subject = extras.receipt_subject(store._opts.prefix, uid, KEY, cipher)
        last = store._client.last(subject)
        assert last is not None
        blob = bytearray(base64.b64decode(last.head["sealed"]))
        blob[-1] ^= 1  # one flipped bit of the receipt's tag
        damaged = {**last.head, "sealed": base64.b64encode(bytes(blob)).decode()}
        store._client.publish(subject, wire_body(damaged), expect=last.stream_seq, token="flip")
        report = verify(store, uid)
        assert not report.ok and "does not authenticate" in report.reason
        assert verify(keyless, uid).ok  # keyless: the journal's structure only
    finally:
        store.close()
        keyless.close()
