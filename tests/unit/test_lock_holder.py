"""The LOCK file names its holder by pid, host, program and start time, never user content."""

from __future__ import annotations

import fcntl
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentsessions.errors import LockHeldError
from agentsessions.journal.format import lock
from agentsessions.journal.format.lock import SessionLock

SECRET = "my secret 4f1c"


@pytest.fixture(autouse=True)
def fresh_program(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(lock, "_program", None)
    yield


def busy_message(path: Path) -> str:
    with pytest.raises(LockHeldError) as caught:
        SessionLock(path, session="sess-x").acquire()
    return str(caught.value)


def test_the_holder_is_named_without_its_arguments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["/usr/bin/agentsessions", "exec", "--input", SECRET])
    path = tmp_path / "LOCK"
    held = SessionLock(path, session="sess-x")
    held.acquire()
    try:
        raw = path.read_bytes()
        assert SECRET.encode() not in raw and b"--input" not in raw
        info = json.loads(raw)
        assert set(info) == {"pid", "host", "program", "since_unix"}
        assert (info["pid"], info["program"]) == (os.getpid(), "agentsessions")
        message = busy_message(path)
        assert SECRET not in message
        assert f"pid {os.getpid()} on " in message and ": agentsessions, since " in message
    finally:
        held.release()


def test_the_cli_verb_names_the_holder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["/x/agentsessions/__main__.py", "-i", SECRET])
    assert lock.program() == "agentsessions"  # python -m agentsessions
    lock.set_program("agentsessions exec")
    held = SessionLock(tmp_path / "LOCK", session="sess-x")
    held.acquire()
    try:
        assert "agentsessions exec, since" in busy_message(tmp_path / "LOCK")
    finally:
        held.release()


def test_an_old_or_hostile_lock_file_shows_only_clean_identity_fields(tmp_path: Path) -> None:
    # a LOCK written by an older version carries the whole command line; another may lie
    path = tmp_path / "LOCK"
    old = {"pid": 7, "host": "h\x1b[2Jost", "command": f"agentsessions exec -i {SECRET}"}
    path.write_text(json.dumps(old))
    # hold the flock without rewriting the identity, as that older writer would
    fd = os.open(path, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        message = busy_message(path)
    finally:
        os.close(fd)
    assert SECRET not in message and "\x1b" not in message
    assert message.endswith("(pid 7 on h[2Jost: ?)")
