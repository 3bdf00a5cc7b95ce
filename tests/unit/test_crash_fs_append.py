"""The crash file system appends as the real one does (found by the torture suite).

A tool receipt is appended with ``append_durable`` (``O_WRONLY | O_APPEND``) to a file that
already holds synced lines. The crash double took the descriptor's offset (0 at open) for
the write's position, saw an overwrite of synced bytes and tried to read them back through a
write-only descriptor: EBADF, so any turn with a tool call failed on it. An append lands at
the end, and a power cut loses exactly the unsynced appended bytes.
"""

from __future__ import annotations

import os
from pathlib import Path

from agentsessions.journal.format.durable import CrashFileSystem


def test_appending_to_a_synced_file_works_and_a_crash_keeps_what_was_synced(
    tmp_path: Path,
) -> None:
    path = tmp_path / "receipts"
    fs = CrashFileSystem()
    fs.append_durable(path, b"one\n")
    fs.append_durable(path, b"two\n")  # EBADF before the fix
    assert path.read_bytes() == b"one\ntwo\n"
    fd = fs.open(path, os.O_WRONLY | os.O_APPEND)  # as append_durable opens it
    fs.write_all(fd, b"lost\n")  # never synced
    fs.close(fd)
    fs.crash()
    assert path.read_bytes() == b"one\ntwo\n"
