"""The configuration file (sessions/config.py): the store and the master key chosen by file,
the lowest-priority source; a typo or a wrong type refused, never ignored."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from agentsessions.errors import InvalidArgumentError, MasterKeyError
from agentsessions.sessions.config import CONFIG_ENV, load_config
from agentsessions.sessions.local import open_local


def _write(home: Path, text: str) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text(text)
    return path


def test_no_file_says_nothing(tmp_path: Path) -> None:
    config = load_config(tmp_path, env={})
    assert (config.path, config.store_url, config.allow_unsynced, config.key_file) == (
        None, "", False, "",
    )  # fmt: skip


def test_values_and_a_relative_key_file(tmp_path: Path) -> None:
    _write(
        tmp_path,
        '[store]\nurl = "nats://h:4222"\nallow_unsynced = true\n[keys]\nkey_file = "k/m.key"\n',
    )
    config = load_config(tmp_path, env={})
    assert config.store_url == "nats://h:4222" and config.allow_unsynced is True
    assert config.key_file == str((tmp_path / "k" / "m.key").resolve())


def test_the_environment_names_another_file(tmp_path: Path) -> None:
    other = _write(tmp_path / "etc", '[store]\nurl = "nats://x:1"\n')
    assert load_config(tmp_path, env={CONFIG_ENV: str(other)}).store_url == "nats://x:1"
    with pytest.raises(InvalidArgumentError, match="does not exist"):
        load_config(tmp_path, env={CONFIG_ENV: str(tmp_path / "missing.toml")})


@pytest.mark.parametrize(
    "text, message",
    [
        ("[store\n", "not valid TOML"),
        ('[stor]\nurl = "nats://h:1"\n', r"unknown table \[stor\]"),
        ('[store]\nuri = "nats://h:1"\n', "unknown key 'uri' in \\[store\\]"),
        ("[store]\nurl = 4222\n", "url must be a str, not int"),
        ('[store]\nallow_unsynced = "yes"\n', "allow_unsynced must be a bool"),
        ('store = "nats://h:1"\n', r"unknown table \[store\]"),
        (b"\xff\xfe".decode("latin-1"), "not valid TOML"),
    ],
)
def test_bad_files_are_refused_naming_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(InvalidArgumentError, match=message) as caught:
        load_config(tmp_path, env={})
    assert str(path) in str(caught.value)


def test_open_local_takes_the_key_from_the_file_below_the_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AGENTSESSIONS_KEY_FILE", "AGENTSESSIONS_MASTER_KEY", "AGENTSESSIONS_STORE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv(CONFIG_ENV, raising=False)
    key = tmp_path / "master.key"
    key.write_text(base64.b64encode(os.urandom(32)).decode())
    key.chmod(0o600)
    home = tmp_path / "home"
    _write(home, f'[keys]\nkey_file = "{key}"\n')
    engine = open_local(home)
    try:
        assert getattr(engine.store, "master", None) is not None  # the file's key is in play
    finally:
        engine.close()
    key.chmod(0o644)  # the same checks as --key-file: a readable key is refused
    with pytest.raises(MasterKeyError):
        open_local(home)
