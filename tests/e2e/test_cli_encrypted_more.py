"""Encryption at rest through the real command line, beyond events (issue 11, FORMAT.md 15):
a tool's own store, its receipts and the workload are sealed; ``keys new`` and ``keys
rotate``; ``export --decrypt`` / ``--ciphertext`` and their import; ``serve --key-file``.

Every check looks for the secret in every byte under the home, and every refusal is one
error line with a stable exit code and nothing changed (a snapshot of the home's files).
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

from clirun import Cli
from conftest import snapshot

SECRET = "swordfish-4711"
WORKLOAD = """\
[session]
components = ["chat"]
tool_components = ["notes"]

[tools.notes]
mediation = "mediated"
executor = "notes"
description = "Keep notes between turns"
parameters = { type = "object", properties = { op = { type = "string" } } }
"""


def _key_file(where: Path, name: str = "master.key") -> Path:
    path = where / name
    path.write_text(base64.b64encode(os.urandom(32)).decode() + "\n")
    path.chmod(0o600)
    return path


def _all_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def _journals(home: Path) -> dict[str, str]:
    """sha256 of every segment file (sessions' and tool stores') under ``home``."""
    return {k: v for k, v in snapshot(home).items() if "/journal/" in k}


def _noted_session(cli: Cli, tmp_path: Path, key: Path) -> str:
    """A session whose turn called the notes tool: a tool store, a receipt, a workload."""
    tools = tmp_path / "tools.toml"
    tools.write_text(f"# {SECRET}\n" + WORKLOAD)
    script = tmp_path / "script.json"
    call = {"name": "notes", "arguments": {"op": "add", "text": f"note {SECRET}"}}
    script.write_text(json.dumps([{"text": "", "tool_calls": [call]}, "Noted."]))
    run = cli.fast("--key-file", str(key), "exec", "--harness", "chat", "--model",
                   f"scripted:file={script}", "--tools", str(tools), "--input",
                   f"remember {SECRET}", "--json").ok()  # fmt: skip
    return str(run.json()["uid"])


def test_a_tool_store_its_receipts_and_the_workload_are_sealed(cli: Cli, tmp_path: Path) -> None:
    key = _key_file(tmp_path)
    uid = _noted_session(cli, tmp_path, key)
    sdir = cli.home / "sessions" / uid
    assert (sdir / "components" / "notes" / "KEY").is_file()
    assert (sdir / "TOOLRECEIPTS").is_file() and (sdir / "WORKLOAD").is_file()
    assert SECRET.encode() not in _all_bytes(cli.home)
    entries = cli.fast("--key-file", str(key), "store", uid, "notes", "--json").ok().json_lines()
    assert [e["data"] for e in entries] == [{"op": "add", "text": f"note {SECRET}"}]
    before = snapshot(cli.home)
    run = cli.fast("store", uid, "notes").fails(26)
    assert "is encrypted and no master key was given" in run.err and "--key-file" in run.err
    assert snapshot(cli.home) == before
    keyless = cli.fast("verify", uid, "--json").ok().json()
    assert keyless["ok"] and keyless["components"][0]["ok"]
    assert any("not recomputed" in n for n in keyless["components"][0]["notes"])
    keyed = cli.fast("--key-file", str(key), "verify", uid, "--json").ok().json()
    assert keyed["ok"] and not any("not recomputed" in n for n in keyed["components"][0]["notes"])
    # a second turn in another process reads the sealed workload and receipts back
    cli.fast("--key-file", str(key), "exec", uid, "--model", "echo", "--input", "again").ok()
    cli.fast("shred", uid).ok()
    run = cli.fast("--key-file", str(key), "store", uid, "notes").fails(26)
    assert "shredded" in run.err
    assert not (sdir / "components" / "notes" / "KEY").exists()
    assert cli.fast("verify", uid, "--json").ok().json()["ok"]


def test_keys_new_makes_a_0600_key_file_and_refuses_an_existing_one(
    cli: Cli, tmp_path: Path
) -> None:
    path = tmp_path / "new.key"
    out = cli.fast("keys", "new", str(path)).ok().out
    assert out.startswith("wrote master key ") and out.endswith(f" to {path} (mode 0600)\n")
    assert (path.stat().st_mode & 0o777) == 0o600
    assert len(base64.b64decode(path.read_text().strip())) == 32
    text = path.read_bytes()
    run = cli.fast("keys", "new", str(path)).fails(2)
    assert "already exists" in run.err and path.read_bytes() == text
    uid = cli.fast("--key-file", str(path), "create").ok().out.strip()  # the file works as is
    assert (cli.home / "sessions" / uid / "KEY").is_file()


def test_keys_rotate_rewraps_every_key_and_moves_no_journal_byte(cli: Cli, tmp_path: Path) -> None:
    old, new, wrong = (_key_file(tmp_path, n) for n in ("old.key", "new.key", "wrong.key"))
    uid = _noted_session(cli, tmp_path, old)
    plain = cli.fast("create").ok().out.strip()
    journals = _journals(cli.home)
    before = snapshot(cli.home)
    rotate = ("keys", "rotate", "--old-key-file")

    run = cli.fast(*rotate, str(wrong), "--new-key-file", str(new)).fails(26)
    assert "wrapped by master key" in run.err
    assert snapshot(cli.home) == before  # a wrong old key changes nothing

    doc = cli.fast(*rotate, str(old), "--new-key-file", str(new), "--json").ok().json()
    assert (doc["rewrapped"], doc["already"], doc["shredded"]) == (2, 0, 0)  # session + notes
    assert _journals(cli.home) == journals  # no journal byte moved
    changed = {k for k, v in snapshot(cli.home).items() if before.get(k) != v}
    assert changed == {f"sessions/{uid}/KEY", f"sessions/{uid}/components/notes/KEY"}
    assert not (cli.home / "sessions" / plain / "KEY").exists()

    assert "wrapped by master key" in cli.fast("--key-file", str(old), "log", uid).fails(26).err
    assert SECRET in cli.fast("--key-file", str(new), "log", uid).ok().out
    assert SECRET in cli.fast("--key-file", str(new), "store", uid, "notes").ok().out
    again = cli.fast(*rotate, str(old), "--new-key-file", str(new)).ok().out
    assert again == f"rewrapped 0 data keys under master key {doc['new_key_id']} (2 already under it, 0 shredded)\n"  # fmt: skip # noqa: E501


def test_keys_rotate_cut_by_a_crash_is_finished_by_running_it_again(
    cli: Cli, tmp_path: Path
) -> None:
    from agentsessions.journal.crypto.keys import KeyDir, MasterKey

    old, new = _key_file(tmp_path, "old.key"), _key_file(tmp_path, "new.key")
    uid = _noted_session(cli, tmp_path, old)
    sdir = cli.home / "sessions" / uid
    # as if a rotation died after its first KEY: the session's is new, the tool store's old
    KeyDir(sdir, uid).rewrap(MasterKey.from_file(old), MasterKey.from_file(new))
    out = cli.fast("keys", "rotate", "--old-key-file", str(old), "--new-key-file", str(new))
    assert out.ok().out.startswith("rewrapped 1 data key under master key ")
    assert "(1 already under it, 0 shredded)" in out.out
    assert SECRET in cli.fast("--key-file", str(new), "store", uid, "notes").ok().out


def test_a_bad_key_file_is_one_line_and_exit_26(cli: Cli, tmp_path: Path) -> None:
    good = _key_file(tmp_path, "good.key")
    short = tmp_path / "short.key"
    short.write_text(base64.b64encode(os.urandom(16)).decode())
    short.chmod(0o600)
    garbage = tmp_path / "garbage.key"
    garbage.write_text("not base64 at all!")
    garbage.chmod(0o600)
    shared = _key_file(tmp_path, "shared.key")
    shared.chmod(0o640)
    for bad, says in [(short, "is 16 bytes; expected 32"), (garbage, "is not base64"),
                      (shared, "may be read or written by others"),
                      (tmp_path / "none.key", "cannot read")]:  # fmt: skip
        for args in (
            ("keys", "rotate", "--old-key-file", str(bad), "--new-key-file", str(good)),
            ("keys", "rotate", "--old-key-file", str(good), "--new-key-file", str(bad)),
            ("serve", "--key-file", str(bad), "--listen", "unix:///nowhere/x.sock"),
            ("--key-file", str(bad), "export", "sess-" + "0" * 24, "-o", str(tmp_path / "x")),
        ):
            assert says in cli.fast(*args).fails(26).err, (bad, args)


def test_an_encrypted_export_is_chosen_decrypted_or_sealed(cli: Cli, tmp_path: Path) -> None:
    key = _key_file(tmp_path)
    kf = ("--key-file", str(key))
    uid = _noted_session(cli, tmp_path, key)
    out = tmp_path / "out"
    out.mkdir()
    run = cli.fast(*kf, "export", uid, "-o", str(out / "bare.agx")).fails(2)
    assert "is encrypted: choose its encryption" in run.err  # the library's terms
    assert "hint: choose --decrypt" in run.err and "--ciphertext" in run.err  # the CLI's flags
    assert "no master key" in cli.fast("export", uid, "-o", str(out / "p.agx"), "--decrypt").fails(26).err  # fmt: skip # noqa: E501
    both = cli.fast(*kf, "export", uid, "-o", str(out / "b.agx"), "--decrypt", "--ciphertext")
    assert "exclude each other" in both.fails(2).err
    assert list(out.iterdir()) == []  # every refusal wrote nothing

    cli.fast(*kf, "export", uid, "-o", str(out / "plain.agx"), "--decrypt", "--no-compress").ok()
    assert SECRET.encode() in (out / "plain.agx").read_bytes()
    sealed = cli.fast("export", uid, "-o", str(out / "sealed.agx"), "--ciphertext",
                      "--no-compress", "--json").ok().json()  # fmt: skip
    assert sealed["ciphertext"] is True and sealed["records"] >= 5
    assert SECRET.encode() not in (out / "sealed.agx").read_bytes()
    keyless = cli.fast("verify", str(out / "sealed.agx"), "--json").ok().json()
    assert keyless["ok"] and any("not recomputed" in n for n in keyless["notes"])
    assert cli.fast(*kf, "verify", str(out / "sealed.agx"), "--json").ok().json()["notes"] == []

    other = tmp_path / "other-home"
    run = cli.fast("--home", str(other), "import", str(out / "sealed.agx"), home=False).fails(26)
    assert "ciphertext export" in run.err
    assert not (other / "sessions").exists() or not any((other / "sessions").iterdir())
    copy = cli.fast("--home", str(other), *kf, "import", str(out / "sealed.agx"), home=False)
    new_uid = copy.ok().out.strip().split()[-1]
    log = cli.fast("--home", str(other), *kf, "log", new_uid, home=False).ok().out
    assert f"remember {SECRET}" in log
    assert SECRET.encode() not in _all_bytes(other)  # sealed again, under its own key

    plain_uid = cli.fast("create").ok().out.strip()
    run = cli.fast("export", plain_uid, "-o", str(out / "x.agx"), "--ciphertext").fails(2)
    assert "is not encrypted" in run.err


def test_a_tampered_ciphertext_export_is_refused(cli: Cli, tmp_path: Path) -> None:
    key = _key_file(tmp_path)
    uid = _noted_session(cli, tmp_path, key)
    path = tmp_path / "sealed.agx"
    cli.fast("export", uid, "-o", str(path), "--ciphertext", "--no-compress").ok()
    lines = path.read_bytes().split(b"\n")
    fence, body = lines[2].split(b" ")
    raw = bytearray(base64.b64decode(body))
    raw[-1] ^= 0x01  # one flipped bit of the second record's ciphertext
    lines[2] = fence + b" " + base64.b64encode(bytes(raw))
    path.write_bytes(b"\n".join(lines))
    keyless = cli.fast("verify", str(path), "--json")  # the trailer's digest finds damage
    assert keyless.code == 10 and "do not match the end marker's digest" in keyless.json()["reason"]
    keyed = cli.fast("--key-file", str(key), "verify", str(path), "--json")  # the tag, first
    assert keyed.code == 8 and "does not authenticate" in keyed.json()["reason"]
    before = snapshot(cli.home)
    run = cli.fast("--key-file", str(key), "import", str(path)).fails(9)
    assert "refused to import" in run.err and "does not authenticate" in run.err
    assert snapshot(cli.home) == before


def test_serve_with_a_key_file_encrypts_what_its_clients_write(cli: Cli, tmp_path: Path) -> None:
    from needs import need

    need("grpc", "grpc")
    from test_serve import remote, served

    key = _key_file(tmp_path)
    home = tmp_path / "served"
    with served(home, "--key-file", str(key)) as daemon:
        run = remote(daemon.address, tmp_path, "exec", "--input", f"hi {SECRET}", "--json")
        uid = run.ok().json()["uid"]
        assert SECRET in remote(daemon.address, tmp_path, "log", uid).ok().out
        out = str(tmp_path / "remote.agx")
        run = remote(daemon.address, tmp_path, "export", uid, "-o", out).fails(2)
        assert "is encrypted: choose its encryption" in run.err  # the server refuses to choose
        assert "hint: choose --decrypt" in run.err  # the flags, by the client's CLI
        run = remote(daemon.address, tmp_path, "export", uid, "-o", out, "--decrypt").fails(2)
        assert "needs a local home" in run.err
        assert not (tmp_path / "remote.agx").exists()
        code, err = daemon.stop()
    assert code == 0, err
    assert (home / "sessions" / uid / "KEY").is_file()
    assert SECRET.encode() not in _all_bytes(home)
    local = ("--home", str(home))
    assert SECRET in cli.fast(*local, "--key-file", str(key), "log", uid, home=False).ok().out
    assert cli.fast(*local, "log", uid, home=False).fails(26)
    # the memory store encrypts with it too (its ciphertext is tested by the store contract)
    with served(tmp_path / "mem", "--store", "memory", "--key-file", str(key)) as daemon:
        run = remote(daemon.address, tmp_path, "exec", "--input", f"hi {SECRET}", "--json")
        uid = run.ok().json()["uid"]
        assert SECRET in remote(daemon.address, tmp_path, "log", uid).ok().out


def test_export_with_a_wrong_missing_or_shredded_key_is_exit_26_and_writes_nothing(
    cli: Cli, tmp_path: Path
) -> None:
    key, other = _key_file(tmp_path), _key_file(tmp_path, "other.key")
    uid = cli.fast("--key-file", str(key), "exec", "--input", f"hi {SECRET}", "--json").ok()
    uid = uid.json()["uid"]
    out = tmp_path / "out"
    out.mkdir()
    run = cli.fast("--key-file", str(other), "export", uid, "-o", str(out / "a"), "--decrypt")
    assert "wrapped by master key" in run.fails(26).err
    child = cli.fast("--key-file", str(key), "fork", uid, "--at", "2", "--json").ok().json()
    child_uid = (child[0] if isinstance(child, list) else child)["uid"]
    run = cli.fast("export", child_uid, "-o", str(out / "c"), "--ciphertext").fails(2)
    assert "fork child" in run.err and "--decrypt" in run.err
    sdir = cli.home / "sessions" / uid
    (sdir / "KEY").rename(tmp_path / "KEY.saved")
    assert "is missing" in cli.fast("export", uid, "-o", str(out / "m"), "--ciphertext").fails(26).err  # fmt: skip # noqa: E501
    (tmp_path / "KEY.saved").rename(sdir / "KEY")
    cli.fast("shred", uid).ok()
    for flag in ("--ciphertext", "--decrypt"):
        run = cli.fast("--key-file", str(key), "export", uid, "-o", str(out / "s"), flag)
        assert "shredded" in run.fails(26).err
    assert list(out.iterdir()) == []
