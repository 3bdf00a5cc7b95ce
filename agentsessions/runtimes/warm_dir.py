"""Where warm hosts live on disk, and how to tell whether a host process still exists.

Layout, all under ``<home>/run/`` (created 0700):

- ``live-<session>.sock`` / ``.json``: the live host serving a session; a session uid
  that is not a plain file name is replaced by ``h`` + 24 hex digits of its sha256;
- ``snap-<id>.sock`` / ``.json``: a frozen warm snapshot;
- ``warm.log``: the hosts' stdout and stderr (harness prints, host tracebacks).

A unix socket path must fit ``sun_path`` (108 bytes on Linux). When ``<home>/run/x.sock``
is too long, the socket goes to ``/tmp/agentsessions-<uid>/<sha256(run dir, stem)>.sock``
(a 0700 directory owned by this user, checked) and the ``.json`` state file under
``<home>/run/`` records that path. The state file is advisory (pid, role, socket,
factory): liveness is always decided by connecting to the socket, so a torn or stale state
file is harmless and is not written with durability primitives.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import time
from pathlib import Path
from typing import Any

from agentsessions.errors import StorageError
from agentsessions.valueclass import value

HOST_MODULE = "agentsessions.runtimes.warm_host"
LOG_NAME = "warm.log"
LOG_LIMIT = 4 * 1024 * 1024
_SUN_PATH_MAX = 100  # bytes, leaving room under Linux's 108 and macOS's 104
_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@value(frozen=True)
class Endpoint:
    """Where one host process listens (``socket``) and describes itself (``state``)."""

    stem: str
    socket: str
    state: str


class RunDir:
    """The ``run/`` directory of one store home."""

    def __init__(self, home: Path) -> None:
        self.path = Path(home).absolute() / "run"

    @property
    def log(self) -> Path:
        """The hosts' shared log file."""
        return self.path / LOG_NAME

    def ensure(self) -> None:
        """Create the directory (0700); StorageError if the OS refuses."""
        try:
            self.path.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create {self.path}: {exc}", path=str(self.path)) from None

    def live(self, session: str) -> Endpoint:
        """The endpoint of the live host for ``session``."""
        return self._endpoint("live-" + _file_name(session))

    def snapshot(self, snapshot_id: str) -> Endpoint:
        """The endpoint of frozen warm snapshot ``snapshot_id``."""
        return self._endpoint("snap-" + snapshot_id)

    def states(self) -> list[tuple[Path, dict[str, Any]]]:
        """Every readable state file with its content (unreadable ones are skipped)."""
        if not self.path.is_dir():
            return []
        found = []
        for path in sorted(self.path.glob("*.json")):
            state = read_state(path)
            if state is not None:
                found.append((path, state))
        return found

    def _endpoint(self, stem: str) -> Endpoint:
        state = str(self.path / f"{stem}.json")
        sock = str(self.path / f"{stem}.sock")
        if len(os.fsencode(sock)) > _SUN_PATH_MAX:
            sock = _short_socket(f"{self.path}\0{stem}")
        return Endpoint(stem=stem, socket=sock, state=state)


def _file_name(session: str) -> str:
    if _PLAIN.fullmatch(session):
        return session
    return "h" + hashlib.sha256(session.encode("utf-8")).hexdigest()[:24]


def _short_socket(key: str) -> str:
    base = Path("/tmp") if Path("/tmp").is_dir() else Path(os.path.realpath(os.sep))
    short = base / f"agentsessions-{os.getuid()}"
    try:
        short.mkdir(mode=0o700, exist_ok=True)
        info = short.lstat()
    except OSError as exc:
        raise StorageError(f"cannot create {short}: {exc}", path=str(short)) from None
    private = stat.S_ISDIR(info.st_mode) and not info.st_mode & 0o077
    if not private or info.st_uid != os.getuid():
        raise StorageError(
            f"{short} is not a private directory owned by this user; refusing to put sockets there",
            path=str(short),
        )
    return str(short / (hashlib.sha256(key.encode("utf-8")).hexdigest()[:24] + ".sock"))


# --------------------------------------------------------------------------- state files


def read_state(path: Path | str) -> dict[str, Any] | None:
    """The state file's object, or None if it is missing, torn or not an object."""
    try:
        value = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None


def write_state(path: Path | str, state: dict[str, Any]) -> None:
    """Write an advisory state file, readable by this user only."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(state, out)


def remove(path: Path | str) -> None:
    """Remove a file if it is there."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


# --------------------------------------------------------------------------- processes


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (a zombie is reaped if it is ours)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if _process_state(pid) in ("Z", "X"):
        reap(pid)
        return False
    return True


def _process_state(pid: int) -> str:
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:  # vanished since the kill probe, or no /proc on this platform
        return "X" if os.path.isdir("/proc/self") else ""
    fields = text.rpartition(")")[2].split()
    return fields[0] if fields else ""


def reap(pid: int) -> None:
    """Collect ``pid``'s exit status if it is our child (a subreaper's orphans are)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def wait_gone(pid: int, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for ``pid`` to end; True if it did."""
    deadline = time.monotonic() + timeout
    delay = 0.005
    while alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.1)
    return True


def is_host(pid: int) -> bool:
    """True if ``pid`` runs the warm host module (checked before signalling a pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return HOST_MODULE.encode("ascii") in cmdline.split(b"\0")
