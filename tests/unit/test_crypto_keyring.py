"""The master key from the OS keyring (``keyring:NAME``, the optional ``keyring`` extra).

This machine has no OS keyring backend, so the lookup is tested against an in-memory
backend set in-process, and the error of a machine without one against keyring's own
``fail`` backend, in-process and through the real command line.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from needs import need

from agentsessions.errors import InvalidArgumentError, MasterKeyError
from agentsessions.journal.crypto import keys
from agentsessions.journal.crypto.keys import MasterKey, resolve_master_key

keyring = need("keyring", "keyring")
from keyring.backend import KeyringBackend
from keyring.backends import fail

ROOT = Path(__file__).resolve().parents[2]


class MemoryRing(KeyringBackend):
    """An OS keyring in a dict (the lookup's code is the real one; only the store differs)."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.entries.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.entries[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        del self.entries[(service, username)]


@pytest.fixture
def ring() -> Iterator[MemoryRing]:
    before = keyring.get_keyring()
    memory = MemoryRing()
    keyring.set_keyring(memory)
    try:
        yield memory
    finally:
        keyring.set_keyring(before)


def test_a_key_kept_in_the_keyring_is_found_by_every_way_of_naming_it(ring: MemoryRing) -> None:
    key = MasterKey.generate()
    keys.to_keyring(key, "work")
    assert ("agentsessions", "work") in ring.entries
    for found in (
        resolve_master_key(environ={"AGENTSESSIONS_MASTER_KEY": "keyring:work"}),
        resolve_master_key("keyring:work", environ={}),
        resolve_master_key(environ={"AGENTSESSIONS_KEY_FILE": "keyring:work"}),
    ):
        assert found is not None and found.key_id == key.key_id
    keys.to_keyring(MasterKey.generate())  # the default name
    assert ("agentsessions", "master-key") in ring.entries
    with pytest.raises(InvalidArgumentError, match="refusing to replace"):
        keys.to_keyring(MasterKey.generate(), "work")
    assert resolve_master_key("keyring:work", environ={}).key_id == key.key_id  # type: ignore[union-attr]


def test_keys_new_can_make_the_key_in_the_keyring(ring: MemoryRing) -> None:
    from agentsessions.sessions.keys import new_key_file

    made = new_key_file("keyring:fresh")
    assert resolve_master_key("keyring:fresh", environ={}).key_id == made.key_id  # type: ignore[union-attr]


def test_a_missing_entry_or_a_bad_one_is_exit_26(ring: MemoryRing) -> None:
    with pytest.raises(MasterKeyError, match="no master key in the OS keyring") as caught:
        resolve_master_key(environ={"AGENTSESSIONS_MASTER_KEY": "keyring:none"})
    assert caught.value.exit_code == 26 and "keys new keyring:none" in caught.value.hint
    ring.set_password("agentsessions", "short", "c2hvcnQ=")
    with pytest.raises(MasterKeyError, match="is 5 bytes; expected 32"):
        resolve_master_key("keyring:short", environ={})


def test_no_keyring_backend_is_a_clear_error() -> None:
    before = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        with pytest.raises(MasterKeyError, match="no OS keyring backend is available"):
            resolve_master_key("keyring:", environ={})
        with pytest.raises(MasterKeyError, match="no OS keyring backend is available"):
            keys.to_keyring(MasterKey.generate())
    finally:
        keyring.set_keyring(before)


def test_without_the_keyring_package_the_error_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "keyring", None)  # import keyring: ImportError
    with pytest.raises(MasterKeyError, match="needs the 'keyring' package") as caught:
        resolve_master_key(environ={"AGENTSESSIONS_MASTER_KEY": "keyring:"})
    assert "agentsessions[keyring]" in caught.value.hint


def test_the_cli_on_a_machine_without_a_keyring_says_so_in_one_line(tmp_path: Path) -> None:
    env = {
        "PYTHONPATH": str(ROOT),
        "PATH": "/usr/bin:/bin",
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "AGENTSESSIONS_MASTER_KEY": "keyring:",
    }
    run = subprocess.run(
        [sys.executable, "-m", "agentsessions", "--home", str(tmp_path), "create"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 26, run.stderr
    lines = run.stderr.splitlines()
    assert lines[0].startswith("agentsessions: error: the OS keyring (service 'agentsessions'")
    assert "no OS keyring backend is available" in lines[0] and len(lines) == 2
    assert not (tmp_path / "sessions").exists() or not any((tmp_path / "sessions").iterdir())
