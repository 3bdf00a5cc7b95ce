"""The configuration file through the real command line: `<home>/config.toml` chooses the
store and the master key when no flag or variable does; a bad file is one error line, exit 2."""

from __future__ import annotations

import base64
import os
from pathlib import Path

from clirun import Cli


def test_the_config_file_supplies_the_master_key(cli: Cli, tmp_path: Path) -> None:
    key = tmp_path / "master.key"
    key.write_text(base64.b64encode(os.urandom(32)).decode())
    key.chmod(0o600)
    cli.home.mkdir(parents=True, exist_ok=True)
    (cli.home / "config.toml").write_text(f'[keys]\nkey_file = "{key}"\n')
    uid = cli.fast("create", "--harness", "chat", "--model", "echo").ok().out.strip()
    cli.fast("exec", uid, "--input", "kept under the file's key").ok()
    assert "kept under the file's key" in cli.fast("log", uid).ok().out
    assert b"kept under the file" not in b"".join(
        p.read_bytes() for p in (cli.home / "sessions" / uid).rglob("*") if p.is_file()
    )
    (cli.home / "config.toml").unlink()  # without it the session is unreadable, not garbage
    assert cli.fast("log", uid).fails(26).err.startswith("agentsessions: error: ")


def test_a_bad_config_file_is_one_line_and_exit_2(cli: Cli) -> None:
    cli.home.mkdir(parents=True, exist_ok=True)
    (cli.home / "config.toml").write_text('[store]\nurl = "redis://somewhere"\n')
    run = cli.fast("list").fails(2)
    assert "invalid store 'redis://somewhere'" in run.err
    (cli.home / "config.toml").write_text("[store]\nurll = 1\n")
    run = cli.fast("list").fails(2)
    assert run.err.splitlines()[0] == (
        f"agentsessions: error: config file '{cli.home / 'config.toml'}': "
        "unknown key 'urll' in [store]"
    )
    # a broken file is refused even under a flag (it is broken); a valid one loses to the flag
    (cli.home / "config.toml").write_text('[store]\nurl = "redis://file"\n')
    assert cli.fast("--store", "redis://flag", "list").fails(2).err.count("redis://flag") == 1
