"""Small helpers front ends need before (or beside) an engine, without reaching the journal.

Validation that must happen before the file system is touched (a session id, a project
name), how a process names itself in the LOCK files it takes, whether a path is a
device or pipe that is written in place, and how a generated file is replaced. Each is the
journal's own rule, re-exported here so that a front end imports only the ``sessions`` layer.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentsessions.v1.results import VerifyReport


def check_uid(uid: str) -> str:
    """``uid`` if it is a well-formed session id, else InvalidArgumentError (exit 2)."""
    from agentsessions.journal.stores.store import check_uid as check

    return check(uid)


def check_project(project: str) -> str:
    """``project`` if it is a usable project name, else InvalidArgumentError (exit 2)."""
    from agentsessions.journal.stores.store import check_project as check

    return check(project)


def set_program(program: str) -> None:
    """Name this process in the LOCK files it takes (a registered verb, no user content)."""
    from agentsessions.journal.format.lock import set_program as name

    name(program)


def is_stream(path: Path) -> bool:
    """True if ``path`` is a device, pipe or socket (``/dev/stdout``): written in place."""
    from agentsessions.journal.tools.exchange import is_stream as stream

    return stream(path)


def replace_atomically(path: Path) -> AbstractContextManager[Callable[[bytes], None]]:
    """``with replace_atomically(path) as write: write(piece)...``: ``path`` replaced, once
    the block ends cleanly, by the pieces written, atomically and durably; untouched if it
    raises (a generated file such as ``view``'s page; StorageError on failure)."""
    from agentsessions.journal.format.durable import FileSystem

    return FileSystem().atomic_stream(path)


def verify_path(
    path: Path, *, strict: bool = False, progress: Any = None, key_file: str | None = None
) -> VerifyReport:
    """Verify a session directory or an export file anywhere on disk (offline, no home);
    with a master key (``key_file``, else the environment's) encrypted records are opened."""
    from agentsessions.journal.crypto.cipher import resolve_master
    from agentsessions.journal.tools.verifyfile import verify_path as verify

    master = resolve_master(key_file)
    return verify(Path(path), strict=strict, progress=progress, master=master)
