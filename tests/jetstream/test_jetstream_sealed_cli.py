"""Encrypted JetStream sessions through the real command line (issue 11): ``export
--ciphertext`` ships the sealed records and the wrapped key from the stream (``verify FILE``
passes keyless, ``import`` into a file home with the same master key reads it), ``export
--decrypt`` works there too, ``keys rotate`` rewraps the key stream, and ``serve --key-file``
seals what its clients write."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from needs import need

from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
from agentsessions.journal.stores.jetstream.store import JetStreamStore
from tests.e2e.clirun import Cli

ROOT = Path(__file__).resolve().parents[2]
SECRET = "swordfish-0815"
BOUND = 120  # a hang becomes a failure; no assertion is timed


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command line in-process (typer's CliRunner, the environment scrubbed as a
    subprocess's would be); ``serve`` and the clients of a served daemon stay processes."""
    run = Cli(home, Path.cwd()).fast("--home", str(home), *args, home=False)
    return subprocess.CompletedProcess(list(args), run.code, run.out, run.err)


def _key_file(path: Path) -> Path:
    path.write_text(base64.b64encode(os.urandom(32)).decode() + "\n")
    path.chmod(0o600)
    return path


def _url(server: Any, name: str) -> str:
    token = os.urandom(6).hex()
    return str(server.store_url(stream=f"{name.upper()}{token}", prefix=f"{name}{token}"))


def _stream_bytes(url: str) -> bytes:
    """Every message body of the journal stream at ``url``, as the server holds it."""
    store = JetStreamStore(JetStreamOptions.parse(url))
    stream = store._opts.stream

    async def scan(js: Any) -> bytes:
        info = await js.stream_info(stream)
        out = b""
        for seq in range(info.state.first_seq, info.state.last_seq + 1):
            out += bytes((await js.get_msg(stream, seq=seq)).data or b"")
        return out

    try:
        return store._client.run_js(scan)
    finally:
        store.close()


def _exec(home: Path, *opts: str, text: str = SECRET) -> str:
    made = _cli(home, *opts, "exec", "--harness", "chat", "--model", "scripted:seed=7",
                "--input", f"the code is {text}", "--json")  # fmt: skip
    assert made.returncode == 0, made.stderr
    return str(json.loads(made.stdout)["uid"])


def test_a_ciphertext_export_from_jetstream_verifies_keyless_and_imports_into_a_file_home(
    nats_server: Any, tmp_path: Path
) -> None:
    store = ("--store", _url(nats_server, "ce"))
    key = _key_file(tmp_path / "master.key")
    kf = ("--key-file", str(key))
    uid = _exec(tmp_path, *store, *kf)
    sealed = tmp_path / "sealed.agx"
    out = _cli(
        tmp_path,
        *store,
        "export",
        uid,
        "-o",
        str(sealed),
        "--ciphertext",
        "--no-compress",
        "--json",
    )  # fmt: skip  (keyless: no master key needed)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["ciphertext"] is True and summary["records"] > 2
    data = sealed.read_bytes()
    assert SECRET.encode() not in data
    header = json.loads(data.splitlines()[0])
    assert header["sealed"]["scope"] == uid and "wrapped" in header["sealed"]["key"]

    keyless = _cli(tmp_path, "verify", str(sealed))
    assert keyless.returncode == 0, keyless.stdout + keyless.stderr
    keyed = _cli(tmp_path, *kf, "verify", str(sealed))
    assert keyed.returncode == 0, keyed.stdout + keyed.stderr

    home = tmp_path / "filehome"
    refused = _cli(home, "import", str(sealed))
    assert refused.returncode == 26 and "ciphertext export" in refused.stderr
    imported = _cli(home, *kf, "import", str(sealed), "--json")
    assert imported.returncode == 0, imported.stderr
    new_uid = json.loads(imported.stdout)["uid"]
    log = _cli(home, *kf, "log", new_uid)
    assert log.returncode == 0 and SECRET in log.stdout, log.stderr
    assert _cli(home, "log", new_uid).returncode == 26  # sealed again in the file home

    plain_out = tmp_path / "plain.agx"
    decrypted = _cli(tmp_path, *store, *kf, "export", uid, "-o", str(plain_out), "--decrypt",
                     "--no-compress")  # fmt: skip
    assert decrypted.returncode == 0, decrypted.stderr
    assert SECRET.encode() in plain_out.read_bytes()
    no_key = _cli(tmp_path, *store, "export", uid, "-o", str(tmp_path / "x.agx"), "--decrypt")
    assert no_key.returncode == 26 and not (tmp_path / "x.agx").exists()

    forked = _cli(tmp_path, *store, *kf, "fork", uid, "--json")
    assert forked.returncode == 0, forked.stderr
    child = json.loads(forked.stdout)
    child_uid = child["uid"] if isinstance(child, dict) else child[0]["uid"]
    fork_out = _cli(tmp_path, *store, "export", child_uid, "-o", str(tmp_path / "c.agx"),
                    "--ciphertext")  # fmt: skip
    assert fork_out.returncode == 2 and "is a fork child" in fork_out.stderr
    assert _cli(tmp_path, *store, "shred", uid).returncode == 0
    gone = _cli(tmp_path, *store, "export", uid, "-o", str(tmp_path / "g.agx"), "--ciphertext")
    assert gone.returncode == 26 and "shredded" in gone.stderr


def test_keys_rotate_on_jetstream_rewraps_the_key_stream(nats_server: Any, tmp_path: Path) -> None:
    store = ("--store", _url(nats_server, "kr"))
    old, new = _key_file(tmp_path / "old.key"), _key_file(tmp_path / "new.key")
    uids = [_exec(tmp_path, *store, "--key-file", str(old), text=f"{SECRET}-{i}") for i in (1, 2)]
    rotate = ("keys", "rotate", "--old-key-file", str(old), "--new-key-file", str(new))
    wrong = _cli(tmp_path, *store, "keys", "rotate", "--old-key-file",
                 str(_key_file(tmp_path / "wrong.key")), "--new-key-file", str(new))  # fmt: skip
    assert wrong.returncode == 26, wrong.stderr
    assert wrong.stderr.startswith("agentsessions: error: ")
    for uid in uids:  # nothing changed: the old key still reads every session
        assert _cli(tmp_path, *store, "--key-file", str(old), "log", uid).returncode == 0

    done = _cli(tmp_path, *store, *rotate)
    assert done.returncode == 0, done.stderr
    new_id = json.loads(_cli(tmp_path, *store, *rotate, "--json").stdout)["new_key_id"]
    assert (
        done.stdout
        == f"rewrapped 2 data keys under master key {new_id} (0 already under it, 0 shredded)\n"
    )
    again = _cli(tmp_path, *store, *rotate, "--json")
    assert json.loads(again.stdout) == {
        "rewrapped": 0, "already": 2, "shredded": 0, "new_key_id": new_id,
    }  # fmt: skip
    for uid in uids:
        log = _cli(tmp_path, *store, "--key-file", str(new), "log", uid)
        assert log.returncode == 0 and SECRET in log.stdout, log.stderr
        stale = _cli(tmp_path, *store, "--key-file", str(old), "log", uid)
        assert stale.returncode == 26 and "wrapped by master key" in stale.stderr
    assert not list(tmp_path.glob("**/KEY"))  # the keys are in the key stream, not the home


def test_serve_with_a_key_file_on_jetstream_seals_and_its_clients_read(
    nats_server: Any, tmp_path: Path
) -> None:
    need("grpc", "grpc")
    url = _url(nats_server, "sv")
    key = _key_file(tmp_path / "master.key")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTSESSIONS_")}
    env["PYTHONPATH"] = str(ROOT)
    argv = [sys.executable, "-m", "agentsessions", "--home", str(tmp_path), "serve",
            "--listen", "127.0.0.1:0", "--no-auth", "--store", url,
            "--key-file", str(key)]  # fmt: skip
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    ) as daemon:
        try:
            assert daemon.stdout is not None
            line = daemon.stdout.readline()
            assert line.startswith("listening on 127.0.0.1:"), line
            server = ("--server", line.split()[-1])
            uid = _exec(tmp_path, *server)
            log = _cli(tmp_path, *server, "log", uid)
            assert log.returncode == 0 and SECRET in log.stdout, log.stderr
        finally:
            daemon.terminate()
            daemon.communicate(timeout=BOUND)
    assert SECRET.encode() not in _stream_bytes(url)
    keyless = _cli(tmp_path, "--store", url, "log", uid)
    assert keyless.returncode == 26 and f"{uid} is encrypted" in keyless.stderr
    keyed = _cli(tmp_path, "--store", url, "--key-file", str(key), "log", uid)
    assert keyed.returncode == 0 and SECRET in keyed.stdout, keyed.stderr
