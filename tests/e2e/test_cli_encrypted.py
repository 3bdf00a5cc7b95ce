"""Encryption at rest through the real command line (issue 11 item 2, FORMAT.md 15).

With a master key (``--key-file``, ``AGENTSESSIONS_KEY_FILE`` or ``AGENTSESSIONS_MASTER_KEY``)
new sessions are encrypted: a turn's input is nowhere in plaintext on disk, ``log`` shows it
with the key; without the key ``log`` exits 26 with one error line while ``verify`` passes
keyless and says so; a key file others may read is refused (exit 26). ``shred`` and
``delete --shred`` destroy the data key; a plaintext session has none to destroy (exit 2).
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

from clirun import Cli

SECRET = "swordfish-4711"


def _key_file(tmp_path: Path) -> tuple[Path, str]:
    text = base64.b64encode(os.urandom(32)).decode()
    path = tmp_path / "master.key"
    path.write_text(text + "\n")
    path.chmod(0o600)
    return path, text


def _all_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def test_a_keyed_turn_is_sealed_on_disk_and_read_back_only_with_the_key(
    cli: Cli, tmp_path: Path
) -> None:
    key, text = _key_file(tmp_path)
    kf = ("--key-file", str(key))
    uid = cli.fast(*kf, "create", "--harness", "chat", "--model", "echo").ok().out.strip()
    cli.fast(*kf, "exec", uid, "--input", f"the code is {SECRET}").ok()
    assert SECRET in cli.fast(*kf, "log", uid).ok().out
    assert SECRET.encode() not in _all_bytes(cli.home / "sessions" / uid)
    # the same key by either variable
    assert SECRET in cli.run("log", uid, env={"AGENTSESSIONS_KEY_FILE": str(key)}).ok().out
    assert SECRET in cli.run("log", uid, env={"AGENTSESSIONS_MASTER_KEY": text}).ok().out

    run = cli.fast("log", uid).fails(26)
    assert "is encrypted and no master key was given" in run.err
    assert "--key-file" in run.err  # the hint names how to give it
    # get shows only what is stored in the clear: it needs no key while the TAIL hint holds
    assert cli.fast("get", uid, "--json").ok().json()["uid"] == uid
    keyless = cli.fast("verify", uid, "--json").ok().json()
    assert keyless["ok"] is True
    assert any("content hashes not recomputed" in n for n in keyless["notes"])
    keyed = cli.fast(*kf, "verify", uid, "--json").ok().json()
    assert keyed["ok"] is True
    assert not any("content hashes not recomputed" in n for n in keyed["notes"])

    (tmp_path / "other").mkdir()
    other, _ = _key_file(tmp_path / "other")
    assert "wrapped by master key" in cli.fast("--key-file", str(other), "log", uid).fails(26).err


def test_a_key_file_others_may_read_is_refused(cli: Cli, tmp_path: Path) -> None:
    key, _ = _key_file(tmp_path)
    key.chmod(0o644)
    run = cli.fast("--key-file", str(key), "create").fails(26)
    assert "may be read or written by others" in run.err and "chmod 600" in run.err
    assert not (cli.home / "sessions").exists() or not any((cli.home / "sessions").iterdir())


def test_without_a_key_sessions_stay_plaintext(cli: Cli) -> None:
    uid = cli.fast("create").ok().out.strip()
    assert not (cli.home / "sessions" / uid / "KEY").exists()


def test_shred_makes_the_content_unreadable_for_good_and_verify_still_passes(
    cli: Cli, tmp_path: Path
) -> None:
    key, _ = _key_file(tmp_path)
    kf = ("--key-file", str(key))
    uid = cli.fast(*kf, "create", "--harness", "chat", "--model", "echo").ok().out.strip()
    cli.fast(*kf, "exec", uid, "--input", f"the code is {SECRET}").ok()
    assert cli.fast("shred", uid).ok().out == f"shredded {uid}\n"  # no master key needed
    assert not (cli.home / "sessions" / uid / "KEY").exists()
    run = cli.fast(*kf, "log", uid).fails(26)
    assert "shredded" in run.err and "unreadable for good" in run.err
    assert cli.fast(*kf, "verify", uid, "--json").ok().json()["ok"] is True
    assert cli.fast("verify", uid, "--json").ok().json()["ok"] is True
    again = cli.fast("shred", uid, "--json").ok().json()
    assert again == {"uid": uid, "shredded": True, "key_destroyed": False}


def test_delete_shred_deletes_and_destroys_the_key_and_a_plaintext_session_is_refused(
    cli: Cli, tmp_path: Path
) -> None:
    key, _ = _key_file(tmp_path)
    uid = cli.fast("--key-file", str(key), "create").ok().out.strip()
    doc = cli.fast("delete", uid, "--shred", "--json").ok().json()
    assert doc["deleted"] is True and doc["shredded"] is True
    assert (cli.home / "sessions" / uid / "SHREDDED").is_file()
    plain = cli.fast("create").ok().out.strip()
    for args in (("shred", plain), ("delete", plain, "--shred")):
        assert "is not encrypted" in cli.fast(*args).fails(2).err
    assert cli.fast("get", plain, "--json").ok().json()["deleted"] is False  # nothing changed
