"""Choosing the store by configuration: ``--store nats://...`` / ``AGENTSESSIONS_STORE`` runs
the same CLI and engine on JetStream, and a bad or unreachable store is one clear line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from needs import need

from agentsessions.sessions.storeurl import STORE_ENV, resolve_store_url

ROOT = Path(__file__).resolve().parents[2]


def _cli(home: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    full = {k: v for k, v in os.environ.items() if k != STORE_ENV}
    full.update(PYTHONPATH=str(ROOT), **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "agentsessions", "--home", str(home), *args],
        env=full, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_the_flag_wins_over_the_environment() -> None:
    assert resolve_store_url("nats://a:1", {STORE_ENV: "nats://b:2"}) == "nats://a:1"
    assert resolve_store_url(None, {STORE_ENV: "nats://b:2"}) == "nats://b:2"
    assert resolve_store_url(None, {}) == ""


def test_a_turn_runs_and_verifies_on_jetstream(nats_server: Any, tmp_path: Path) -> None:
    token = os.urandom(6).hex()
    env = {STORE_ENV: nats_server.store_url(stream=f"CLI{token}", prefix=f"cli{token}")}
    made = _cli(tmp_path, "exec", "--harness", "chat", "--model", "scripted:seed=7",
                "--input", "plan a trip", "--json", env=env)  # fmt: skip
    assert made.returncode == 0, made.stderr
    uid = json.loads(made.stdout)["uid"]
    assert _cli(tmp_path, "exec", uid, "--input", "shorter", env=env).returncode == 0
    got = json.loads(_cli(tmp_path, "get", uid, "--json", env=env).stdout)
    assert (got["last_seq"], got["exec_state"]) == (10, "EXEC_COMPLETED")
    verified = _cli(tmp_path, "verify", uid, env=env)
    assert verified.returncode == 0 and "10 records verified" in verified.stdout
    assert not list(tmp_path.glob("**/*.seg"))  # nothing went to the file store
    assert _cli(tmp_path, "get", uid).returncode == 3  # the file store never saw it


def test_a_bad_or_unreachable_store_is_one_clear_line(nats_server: Any, tmp_path: Path) -> None:
    bad = _cli(tmp_path, "--store", "redis://x", "list")
    assert bad.returncode == 2
    assert bad.stderr.startswith("agentsessions: error: invalid store 'redis://x'")
    down = _cli(tmp_path, "--store", "nats://127.0.0.1:9", "--allow-unsynced", "list")
    assert down.returncode == 12
    assert "cannot connect to the NATS server at nats://127.0.0.1:9" in down.stderr
    assert len(down.stderr.splitlines()) == 2 and "connect_timeout=" in down.stderr  # the knob
    assert _cli(tmp_path, "--store", "nats://127.0.0.1:9", "list").returncode == 12  # down first
    unproven = _cli(tmp_path, "--store", nats_server.url, "list")  # up, but no monitor URL
    assert unproven.returncode == 12 and "--allow-unsynced" in unproven.stderr


def test_serve_runs_its_engine_on_the_jetstream_store(nats_server: Any, tmp_path: Path) -> None:
    need("grpc", "grpc")
    token = os.urandom(6).hex()
    url = nats_server.store_url(stream=f"SRV{token}", prefix=f"srv{token}")
    env = {k: v for k, v in os.environ.items() if k != STORE_ENV}
    env["PYTHONPATH"] = str(ROOT)
    argv = [sys.executable, "-m", "agentsessions", "--home", str(tmp_path), "serve",
            "--listen", "127.0.0.1:0", "--no-auth", "--store", url]  # fmt: skip
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    ) as daemon:
        try:
            assert daemon.stdout is not None
            line = daemon.stdout.readline()
            assert line.startswith("listening on 127.0.0.1:"), daemon.stderr
            address = line.split()[-1]
            made = subprocess.run(
                [sys.executable, "-m", "agentsessions", "--server", address, "exec",
                 "--harness", "chat", "--model", "scripted:seed=7", "--input", "hi", "--json"],
                env=env, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            assert made.returncode == 0, made.stderr
            uid = json.loads(made.stdout)["uid"]
        finally:
            daemon.terminate()
            daemon.communicate(timeout=120)
    got = _cli(tmp_path, "get", uid, "--json", env={STORE_ENV: url})  # read from JetStream
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["exec_state"] == "EXEC_COMPLETED"
    assert not list(tmp_path.glob("**/*.seg"))  # nothing went to the file store


def test_serve_refuses_a_store_it_cannot_name(tmp_path: Path) -> None:
    bad = _cli(tmp_path, "serve", "--store", "redis://x", "--no-auth")
    assert bad.returncode == 2
    assert bad.stderr.startswith("agentsessions: error: invalid --store 'redis://x'")
    assert "nats://HOST:PORT" in bad.stderr


def test_verify_all_works_and_reindex_refuses_in_one_line(nats_server: Any, tmp_path: Path) -> None:
    token = os.urandom(6).hex()
    env = {STORE_ENV: nats_server.store_url(stream=f"VA{token}", prefix=f"va{token}")}
    uids = []
    for text in ("one", "two"):
        made = _cli(tmp_path, "exec", "--input", text, "--json", env=env)
        assert made.returncode == 0, made.stderr
        uids.append(json.loads(made.stdout)["uid"])
    assert _cli(tmp_path, "delete", uids[1], env=env).returncode == 0  # deleted: still checked
    verified = _cli(tmp_path, "verify", "--all", "--json", env=env)
    assert verified.returncode == 0, verified.stderr
    report = json.loads(verified.stdout)
    assert report["ok"] is True
    assert sorted(r["uid"] for r in report["reports"]) == sorted(uids)
    human = _cli(tmp_path, "verify", "--all", env=env)
    assert human.returncode == 0 and human.stdout.count("5 records verified") == 2
    refused = _cli(tmp_path, "reindex", env=env)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert refused.stderr.startswith(
        "agentsessions: error: reindex: the JetStreamStore has no listing index to rebuild\n"
    )
    assert len(refused.stderr.splitlines()) == 2 and "nothing to rebuild" in refused.stderr
