"""The single-writer lock of a session: an exclusive ``flock`` on ``LOCK`` in its directory.

``flock`` locks belong to an open file description, so a second writer fails fast whether it
is another process or another open in this one, and the kernel releases the lock when the
holder dies (a crashed writer never leaves a session stuck). The holder writes who it is
(pid, host, program, since) into the file so the loser can say who holds the session; that
text is informational and never fsync'd.

Invariant: the holder identity never carries user content. The program is the name of the
executable (``agentsessions``, or the verb the CLI declared with :func:`set_program`), never
its arguments: a command line holds ``--input`` texts, labels and paths, and the LOCK file
and the busy message are readable by whoever can list the session.

We use ``fcntl`` directly rather than the ``filelock`` package: filelock opens the lock file
with ``O_TRUNC`` on every attempt, so a losing writer would erase the holder's identity.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path

from agentsessions.errors import LockHeldError, StorageError, UnavailableError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

_HOLDER_BYTES = 512
_PROGRAM_CHARS = 64
_program: str | None = None


def set_program(name: str) -> None:
    """Name this process in the LOCK files it writes (e.g. ``agentsessions exec``).

    Callers pass a fixed name (a subcommand verb), never a user-supplied value.
    """
    global _program
    _program = _clean(name)


def program() -> str:
    """This process's name for LOCK files: :func:`set_program`'s, else argv[0]'s basename."""
    if _program:
        return _program
    argv0 = sys.argv[0] if sys.argv and sys.argv[0] else "python"
    path = Path(argv0)
    # ``python -m agentsessions`` runs .../agentsessions/__main__.py
    name = path.parent.name if path.name == "__main__.py" else path.name
    return _clean(name) or "python"


def _clean(text: object) -> str:
    """``text`` as a short, printable, single-line string (a LOCK file may be hostile)."""
    value = "".join(ch for ch in str(text) if ch.isprintable())
    return value[:_PROGRAM_CHARS]


class SessionLock:
    """Exclusive, non-blocking writer lock on one session directory."""

    def __init__(self, path: Path, *, session: str) -> None:
        self.path = path
        self.session = session
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock or raise LockHeldError naming the current holder."""
        if fcntl is None:
            raise UnavailableError("file locking needs fcntl (POSIX); this platform lacks it")
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StorageError(f"cannot open lock file {self.path}: {exc.strerror}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise LockHeldError(
                f"session {self.session} is busy: another writer holds it ({holder})",
                hint="wait for that command to finish, or stop it",
                session=self.session,
                holder=holder,
            ) from None
        except OSError as exc:
            os.close(fd)
            raise StorageError(f"cannot lock {self.path}: {exc.strerror}") from exc
        self._fd = fd
        _write_holder(fd)

    def release(self) -> None:
        """Drop the lock (idempotent)."""
        fd, self._fd = self._fd, None
        if fd is not None and fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)


def _write_holder(fd: int) -> None:
    info = {
        "pid": os.getpid(),
        "host": _host_name(),
        "program": program(),
        "since_unix": int(time.time()),
    }
    data = json.dumps(info).encode()[: _HOLDER_BYTES - 1]
    # The identity is a courtesy to the next writer, never a reason to fail.
    with contextlib.suppress(OSError):
        os.pwrite(fd, data.ljust(_HOLDER_BYTES - 1) + b"\n", 0)


def _host_name() -> str:
    """This machine's name, as ``socket.gethostname()`` gives it: POSIX's ``uname`` has it
    without loading the socket module (~1 ms, with its enums and selectors, on a turn)."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()


def _read_holder(fd: int) -> str:
    try:
        raw = os.pread(fd, _HOLDER_BYTES, 0)
        info = json.loads(raw.decode("utf-8", "replace").strip() or "{}")
    except (OSError, ValueError):
        return "holder unknown"
    if not isinstance(info, dict) or "pid" not in info:
        return "holder unknown"
    # Only the identity fields, cleaned: an older LOCK may hold a whole command line.
    out = f"pid {_clean(info.get('pid'))} on {_clean(info.get('host', '?'))}"
    out += f": {_clean(info.get('program', '?')) or '?'}"
    since = info.get("since_unix")
    if isinstance(since, int) and 0 < since < 1 << 40:
        when = time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(since))
        out += f", since {when}"
    return out
