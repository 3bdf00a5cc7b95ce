"""Encryption at rest on JetStream through the real command line: ``--store nats://...
--key-file FILE`` creates encrypted sessions, ``log`` reads them only with the key (exit 26
with one line otherwise), ``verify`` passes keyless and keyed, ``shred`` and ``delete
--shred`` destroy the keys."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from needs import need

from tests.e2e.clirun import Cli

ROOT = Path(__file__).resolve().parents[2]
SECRET = "swordfish-4711"


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command line in-process (typer's CliRunner, the environment scrubbed as a
    subprocess's would be); ``serve`` and the clients of a served daemon stay processes."""
    run = Cli(home, Path.cwd()).fast("--home", str(home), *args, home=False)
    return subprocess.CompletedProcess(list(args), run.code, run.out, run.err)


def _key_file(path: Path) -> Path:
    path.write_text(base64.b64encode(os.urandom(32)).decode() + "\n")
    path.chmod(0o600)
    return path


def test_a_keyed_session_on_jetstream_end_to_end(nats_server: Any, tmp_path: Path) -> None:
    token = os.urandom(6).hex()
    store = ("--store", nats_server.store_url(stream=f"CK{token}", prefix=f"ck{token}"))
    kf = ("--key-file", str(_key_file(tmp_path / "master.key")))
    made = _cli(tmp_path, *store, *kf, "exec", "--harness", "chat", "--model",
                "scripted:seed=7", "--input", f"the code is {SECRET}", "--json")  # fmt: skip
    assert made.returncode == 0, made.stderr
    uid = json.loads(made.stdout)["uid"]
    log = _cli(tmp_path, *store, *kf, "log", uid)
    assert log.returncode == 0 and SECRET in log.stdout, log.stderr

    keyless_log = _cli(tmp_path, *store, "log", uid)
    assert keyless_log.returncode == 26
    assert keyless_log.stderr.startswith(
        f"agentsessions: error: {uid} is encrypted and no master key was given"
    )
    assert "--key-file" in keyless_log.stderr
    other = ("--key-file", str(_key_file(tmp_path / "other.key")))
    wrong = _cli(tmp_path, *store, *other, "log", uid)
    assert wrong.returncode == 26 and "wrapped by master key" in wrong.stderr
    got = _cli(tmp_path, *store, "get", uid, "--json")  # the clear metadata needs no key
    assert got.returncode == 0 and json.loads(got.stdout)["exec_state"] == "EXEC_COMPLETED"

    keyless = json.loads(_cli(tmp_path, *store, "verify", uid, "--json").stdout)
    assert keyless["ok"] and any("content hashes not recomputed" in n for n in keyless["notes"])
    keyed = _cli(tmp_path, *store, *kf, "verify", uid)
    assert keyed.returncode == 0 and f"{keyless['records']} records verified" in keyed.stdout

    shred = _cli(tmp_path, *store, *kf, "shred", uid)
    assert (shred.returncode, shred.stdout) == (0, f"shredded {uid}\n"), shred.stderr
    for args in (kf, ()):
        gone = _cli(tmp_path, *store, *args, "log", uid)
        assert gone.returncode == 26 and "the data key was shredded" in gone.stderr
    after = json.loads(_cli(tmp_path, *store, "verify", uid, "--json").stdout)
    assert after["ok"] and after["records"] == keyless["records"]
    again = _cli(tmp_path, *store, "shred", uid)
    assert (again.returncode, again.stdout) == (0, f"shredded {uid} (its key was already gone)\n")

    second = _cli(tmp_path, *store, *kf, "create", "--harness", "chat")
    assert second.returncode == 0, second.stderr
    uid2 = second.stdout.strip()
    deleted = _cli(tmp_path, *store, "delete", uid2, "--shred")
    assert (deleted.returncode, deleted.stdout) == (0, f"deleted {uid2} and shredded its key\n")
    assert _cli(tmp_path, *store, *kf, "log", uid2).returncode == 26

    plain = _cli(tmp_path, *store, "create", "--harness", "chat").stdout.strip()
    refused = _cli(tmp_path, *store, "shred", plain)
    assert refused.returncode == 2 and "is not encrypted" in refused.stderr
    assert not list(tmp_path.glob("**/*.seg"))  # nothing went to the file store


def test_serve_seals_its_sessions_on_jetstream_with_the_environments_key(
    nats_server: Any, tmp_path: Path
) -> None:
    need("grpc", "grpc")
    token = os.urandom(6).hex()
    url = nats_server.store_url(stream=f"SK{token}", prefix=f"sk{token}")
    key = _key_file(tmp_path / "master.key")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTSESSIONS_")}
    env.update(PYTHONPATH=str(ROOT), AGENTSESSIONS_KEY_FILE=str(key))
    argv = [sys.executable, "-m", "agentsessions", "--home", str(tmp_path), "serve",
            "--listen", "127.0.0.1:0", "--no-auth", "--store", url]  # fmt: skip
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    ) as daemon:
        try:
            assert daemon.stdout is not None
            line = daemon.stdout.readline()
            assert line.startswith("listening on 127.0.0.1:"), daemon.stderr
            made = subprocess.run(
                [sys.executable, "-m", "agentsessions", "--server", line.split()[-1], "exec",
                 "--harness", "chat", "--model", "scripted:seed=7", "--input", SECRET, "--json"],
                env=env, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            assert made.returncode == 0, made.stderr
            uid = json.loads(made.stdout)["uid"]
        finally:
            daemon.terminate()
            daemon.communicate(timeout=120)
    assert SECRET in _cli(tmp_path, "--store", url, "--key-file", str(key), "log", uid).stdout
    assert _cli(tmp_path, "--store", url, "log", uid).returncode == 26
