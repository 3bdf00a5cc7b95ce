"""Durability primitives: the ONLY module that calls fsync, fdatasync, replace, link,
ftruncate.

Everything that makes bytes durable goes through one :class:`FileSystem` object, so tests
can swap in :class:`CrashFileSystem` and simulate "power loss loses every write after the
last sync", a disk that fills up on the Nth write, or a process killed at the Nth step.

Invariants:
- every ``OSError`` raised by an operation here is mapped to
  :class:`~agentsessions.errors.StorageError` naming the operation, the path and the errno
  text (for example ``"No space left on device"``), with ``errno`` in its fields;
- :meth:`FileSystem.write_all` either writes every byte or raises (it loops over short
  writes); nothing here retries after a failed sync (a failed fsync leaves the page cache
  state unknown, so the caller must cut back to a known-good end and sync again);
- :meth:`FileSystem.write_file_atomic` leaves either the old file or the complete new one,
  never a mix: tmp in the same directory (``O_EXCL``), write, fsync, replace, directory fsync;
  :meth:`FileSystem.atomic_stream` does the same for bytes written in pieces.
"""

from __future__ import annotations

import contextlib
import errno as errno_mod
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import agentsessions.telemetry as telemetry
from agentsessions.errors import StorageError

if TYPE_CHECKING:  # the crash simulator's rng, passed in by tests: a turn never loads random
    import random

__all__ = ["DEFAULT_FS", "CrashFileSystem", "FileSystem", "SimulatedCrash"]

_HINTS = {
    errno_mod.ENOSPC: "free disk space, then retry; nothing unacknowledged was kept",
    errno_mod.EDQUOT: "raise the disk quota, then retry",
    errno_mod.EIO: "the disk reported an I/O error; check the device, then run verify",
    errno_mod.EROFS: "the file system is read-only",
    errno_mod.EACCES: "check the permissions of the store directory",
}


def storage_error(op: str, path: str | os.PathLike[str], exc: OSError) -> StorageError:
    """Map an ``OSError`` from ``op`` on ``path`` to a StorageError (message names both)."""
    code = exc.errno or 0
    text = os.strerror(code) if code else str(exc)
    return StorageError(
        f"{op} {os.fspath(path)}: {text}",
        hint=_HINTS.get(code, ""),
        path=os.fspath(path),
        errno=code or None,
        op=op,
    )


class FileSystem:
    """The real file system; the seam through which every durable write passes.

    Methods take and return plain file descriptors; callers keep a path for messages.
    """

    def __init__(self) -> None:
        self._fd_paths: dict[int, str] = {}

    # -- descriptors ------------------------------------------------------------------
    def open(self, path: str | os.PathLike[str], flags: int, mode: int = 0o600) -> int:
        """``os.open`` with errors mapped; remembers the path for messages."""
        try:
            fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), mode)
        except OSError as exc:
            raise storage_error("open", path, exc) from exc
        self._fd_paths[fd] = os.fspath(path)
        return fd

    def close(self, fd: int) -> None:
        """Close ``fd``; errors on close are mapped too (NFS reports write errors here)."""
        path = self._fd_paths.pop(fd, f"<fd {fd}>")
        try:
            os.close(fd)
        except OSError as exc:
            raise storage_error("close", path, exc) from exc

    def path_of(self, fd: int) -> str:
        """The path ``fd`` was opened with (for messages)."""
        return self._fd_paths.get(fd, f"<fd {fd}>")

    # -- primitives -------------------------------------------------------------------
    def write_all(self, fd: int, data: bytes | memoryview) -> None:
        """Write every byte of ``data`` at the current position, looping over short writes."""
        view = memoryview(data)
        try:
            while view:
                n = os.write(fd, view)
                view = view[n:]
        except OSError as exc:
            raise storage_error("write", self.path_of(fd), exc) from exc

    def sync(self, fd: int, *, full: bool = False) -> None:
        """Make ``fd``'s data durable: ``fdatasync`` where available (``fsync`` if ``full``);
        its latency goes to the installed telemetry (read the clock only when one listens)."""
        tel = telemetry.current()
        began = time.perf_counter() if tel.enabled else 0.0
        try:
            if full or not hasattr(os, "fdatasync"):
                os.fsync(fd)
            else:
                os.fdatasync(fd)
        except OSError as exc:
            raise storage_error("fsync", self.path_of(fd), exc) from exc
        if tel.enabled:
            tel.fsync(time.perf_counter() - began)

    def sync_dir(self, path: str | os.PathLike[str]) -> None:
        """Fsync a directory so created, renamed and removed entries in it are durable."""
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError as exc:
            raise storage_error("open directory", path, exc) from exc
        try:
            os.fsync(fd)
        except OSError as exc:
            raise storage_error("fsync directory", path, exc) from exc
        finally:
            os.close(fd)

    def replace(self, src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        """Atomically rename ``src`` over ``dst`` (durable only after :meth:`sync_dir`)."""
        try:
            os.replace(src, dst)
        except OSError as exc:
            raise storage_error("rename", f"{os.fspath(src)} -> {os.fspath(dst)}", exc) from exc

    def link_new(self, src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> bool:
        """Give file ``src`` the second name ``dst`` if no ``dst`` exists: True, or False when
        one does (link(2) is atomic and exclusive, so of two processes one wins, and the file
        appears whole, unlike one made with ``O_EXCL`` and then written). Durable only after
        :meth:`sync_dir` of ``dst``'s directory."""
        try:
            os.link(src, dst)
        except FileExistsError:
            return False
        except OSError as exc:
            raise storage_error("link", f"{os.fspath(src)} -> {os.fspath(dst)}", exc) from exc
        return True

    def truncate(self, fd: int, size: int) -> None:
        """Cut ``fd`` to ``size`` bytes (durable only after :meth:`sync`)."""
        try:
            os.ftruncate(fd, size)
        except OSError as exc:
            raise storage_error("truncate", self.path_of(fd), exc) from exc

    def unlink(self, path: str | os.PathLike[str], *, missing_ok: bool = True) -> None:
        """Remove a file (durable only after :meth:`sync_dir`)."""
        try:
            os.unlink(path)
        except FileNotFoundError:
            if not missing_ok:
                raise
        except OSError as exc:
            raise storage_error("unlink", path, exc) from exc

    # -- compositions -----------------------------------------------------------------
    def create_file(self, path: str | os.PathLike[str], data: bytes) -> None:
        """Create ``path`` (must not exist) holding ``data``, fsync'd; no directory fsync."""
        fd = self.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        try:
            self.write_all(fd, data)
            self.sync(fd, full=True)
        finally:
            self.close(fd)

    def write_file_atomic(
        self, path: str | os.PathLike[str], data: bytes, *, shared: bool = False
    ) -> None:
        """Replace ``path`` with ``data`` atomically and durably.

        Tmp file ``<path>.tmp`` in the same directory (``O_EXCL``; a stale one is removed
        first), write, fsync, replace, directory fsync. On failure the tmp file is removed.
        ``shared``: processes may write ``path`` at once, holding no lock in common, so each
        writes its own ``<path>.<pid>.<random>.tmp`` (removing another's "stale" tmp file
        would pull it from under its rename); the last rename wins, whole.
        """
        target = Path(path)
        if shared:
            tmp = target.with_name(f"{target.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
        else:
            tmp = target.with_name(target.name + ".tmp")
            self.unlink(tmp)
        try:
            self.create_file(tmp, data)
            self.replace(tmp, target)
        except StorageError:
            self.discard(tmp)
            raise
        self.sync_dir(target.parent)

    def shred_file(self, path: str | os.PathLike[str]) -> bool:
        """Overwrite ``path`` in place with random bytes of its length, fsync, unlink it and
        fsync its directory; False if it did not exist.

        Why overwrite before unlink: an unlinked file's blocks keep its bytes until reused;
        the overwrite is synced first so the old bytes are gone from this file system's
        view (not from a copy-on-write snapshot, a backup or the device's spare blocks).
        """
        if not os.path.lexists(path):
            return False
        fd = self.open(path, os.O_WRONLY)
        try:
            size = os.fstat(fd).st_size
            self.write_all(fd, os.urandom(size))
            self.sync(fd, full=True)
        finally:
            self.close(fd)
        self.unlink(path)
        self.sync_dir(Path(path).parent)
        return True

    @contextlib.contextmanager
    def atomic_stream(self, path: str | os.PathLike[str]) -> Iterator[Callable[[bytes], None]]:
        """Replace ``path`` atomically and durably with bytes written in pieces.

        :meth:`write_file_atomic` for output too large to hold at once (an export): yields
        ``write(piece)``; on a clean exit the tmp file ``<path>.tmp`` (``O_EXCL``, a stale
        one removed first) is fsync'd, renamed over ``path`` and the directory fsync'd. If
        the body or any step raises, the tmp file is removed and ``path`` is untouched.
        """
        target = Path(path)
        tmp = target.with_name(target.name + ".tmp")
        self.unlink(tmp)
        fd = self.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        try:
            try:
                yield lambda piece: self.write_all(fd, piece)
                self.sync(fd, full=True)
            finally:
                self.close(fd)
            self.replace(tmp, target)
        except Exception:  # not SimulatedCrash: a killed process cleans up nothing
            self.discard(tmp)
            raise
        self.sync_dir(target.parent)

    def append_durable(self, path: str | os.PathLike[str], data: bytes) -> None:
        """Append ``data`` to ``path`` (created if missing) and fsync it (and its directory)."""
        target = Path(path)
        created = not target.exists()
        fd = self.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            self.write_all(fd, data)
            self.sync(fd, full=True)
        finally:
            self.close(fd)
        if created:
            self.sync_dir(target.parent)

    def discard(self, path: str | os.PathLike[str]) -> None:
        """Best-effort unlink (cleanup after another failure); never raises StorageError."""
        with contextlib.suppress(StorageError):
            self.unlink(path)

    # -- reads (no durability, but errors are mapped the same way) ----------------------
    def read_at(self, fd: int, n: int, offset: int) -> bytes:
        """Up to ``n`` bytes at ``offset`` (fewer only at end of file)."""
        out = bytearray()
        try:
            while len(out) < n:
                piece = os.pread(fd, n - len(out), offset + len(out))
                if not piece:
                    break
                out += piece
        except OSError as exc:
            raise storage_error("read", self.path_of(fd), exc) from exc
        return bytes(out)

    def writable(self, path: str | os.PathLike[str]) -> bool:
        """True if new files may be made in directory ``path`` (False on a read-only mount,
        where ``access(2)`` says EROFS even to root); tests override it to simulate one."""
        return os.access(path, os.W_OK)

    def listdir(self, path: str | os.PathLike[str]) -> list[str]:
        """Sorted names in directory ``path``."""
        try:
            return sorted(os.listdir(path))
        except OSError as exc:
            raise storage_error("list", path, exc) from exc


DEFAULT_FS = FileSystem()
"""The process-wide real file system."""


class SimulatedCrash(BaseException):
    """Raised by :class:`CrashFileSystem` to model ``kill -9`` at a chosen step.

    A ``BaseException`` so no ``except Exception`` cleanup in the code under test runs as if
    the process had survived (``finally`` blocks still run, like closing descriptors).
    """


class CrashFileSystem(FileSystem):
    """A test double that models power loss, a full disk, and a kill at step *k*.

    - It remembers, per file, the length made durable by the last :meth:`sync`, and the
      previous bytes of every unsynced overwrite below that length (a writer reusing its
      preallocated free space); :meth:`crash` puts those bytes back and truncates every file
      it wrote back to that length (with ``rng``, a random subset of the unsynced 512-byte
      sectors survives instead, and the rest reads as the old bytes, zeros, or is cut, the
      way a disk persists pages of an unsynced write in any order).
      Files created since the last :meth:`sync_dir` of their directory vanish.
    - ``enospc_at_write=N`` makes the Nth :meth:`write_all` (1-based, counted over the
      object's life) write half its bytes, then raise StorageError(ENOSPC), once.
    - ``crash_at_op=K`` raises :class:`SimulatedCrash` instead of performing the Kth
      mutating operation (open-with-create, write, sync, sync_dir, replace, link,
      truncate, unlink). ``ops`` lists every mutating operation performed, for choosing K.
    """

    def __init__(self, *, enospc_at_write: int | None = None, crash_at_op: int | None = None):
        super().__init__()
        self.enospc_at_write = enospc_at_write
        self.crash_at_op = crash_at_op
        self.writes = 0
        self.ops: list[tuple[str, str]] = []
        self.synced: dict[str, int] = {}
        self.overwritten: dict[str, list[tuple[int, bytes]]] = {}  # (offset, old bytes)
        self.unsynced_creates: set[str] = set()
        self._appending: set[int] = set()  # O_APPEND descriptors: each write lands at the end

    def _op(self, name: str, path: str | os.PathLike[str]) -> None:
        if self.crash_at_op is not None and len(self.ops) + 1 >= self.crash_at_op:
            self.crash_at_op = None
            raise SimulatedCrash(f"simulated crash before {name} {os.fspath(path)}")
        self.ops.append((name, os.fspath(path)))

    def open(self, path: str | os.PathLike[str], flags: int, mode: int = 0o600) -> int:
        """Open; a file created here vanishes on :meth:`crash` until its dir is synced."""
        key = os.path.abspath(path)
        creating = bool(flags & os.O_CREAT) and not os.path.exists(key)
        if creating:
            self._op("create", key)
        fd = super().open(path, flags, mode)
        self._fd_paths[fd] = key
        if flags & os.O_APPEND:
            self._appending.add(fd)
        if creating:
            self.unsynced_creates.add(key)
            self.synced[key] = 0
        elif flags & (os.O_WRONLY | os.O_RDWR) and key not in self.synced:
            self.synced[key] = os.fstat(fd).st_size
        return fd

    def write_all(self, fd: int, data: bytes | memoryview) -> None:
        """Write, or (at the configured write) write half and raise ENOSPC."""
        key = self.path_of(fd)
        self._op("write", key)
        self.writes += 1
        # an O_APPEND write lands at the end whatever the offset says (a write-only
        # descriptor's offset is 0 at open: it would look like an overwrite it cannot read)
        at = os.fstat(fd).st_size if fd in self._appending else os.lseek(fd, 0, os.SEEK_CUR)
        durable = self.synced.get(key, 0)
        if at < durable:
            old = os.pread(fd, min(len(data), durable - at), at)
            self.overwritten.setdefault(key, []).append((at, old))
        if self.enospc_at_write is not None and self.writes == self.enospc_at_write:
            super().write_all(fd, bytes(data[: len(data) // 2]))
            err = OSError(errno_mod.ENOSPC, os.strerror(errno_mod.ENOSPC))
            raise storage_error("write", self.path_of(fd), err)
        super().write_all(fd, data)

    def close(self, fd: int) -> None:
        """Close ``fd`` (and forget whether it appends: the number is reused)."""
        self._appending.discard(fd)
        super().close(fd)

    def sync(self, fd: int, *, full: bool = False) -> None:
        """Sync and remember the file's length as durable."""
        self._op("sync", self.path_of(fd))
        super().sync(fd, full=full)
        self.synced[self.path_of(fd)] = os.fstat(fd).st_size
        self.overwritten.pop(self.path_of(fd), None)

    def sync_dir(self, path: str | os.PathLike[str]) -> None:
        """Sync a directory: creations in it become durable."""
        self._op("sync_dir", path)
        super().sync_dir(path)
        base = os.path.abspath(path)
        self.unsynced_creates = {p for p in self.unsynced_creates if os.path.dirname(p) != base}

    def replace(self, src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        """Rename; the durable length and the pending-creation mark move with the file."""
        self._op("replace", dst)
        super().replace(src, dst)
        s, d = os.path.abspath(src), os.path.abspath(dst)
        if s in self.synced:
            self.synced[d] = self.synced.pop(s)
        if s in self.overwritten:
            self.overwritten[d] = self.overwritten.pop(s)
        if s in self.unsynced_creates:
            self.unsynced_creates.discard(s)
            self.unsynced_creates.add(d)

    def link_new(self, src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> bool:
        """Link; the new name vanishes on :meth:`crash` until its directory is synced."""
        self._op("link", dst)
        if not super().link_new(src, dst):
            return False
        s, d = os.path.abspath(src), os.path.abspath(dst)
        self.synced[d] = self.synced.get(s, os.path.getsize(d))
        self.unsynced_creates.add(d)
        return True

    def truncate(self, fd: int, size: int) -> None:
        """Truncate; the durable length can only shrink here."""
        self._op("truncate", self.path_of(fd))
        super().truncate(fd, size)
        key = self.path_of(fd)
        self.synced[key] = min(self.synced.get(key, size), size)
        undo = [(at, old[: size - at]) for at, old in self.overwritten.get(key, ()) if at < size]
        self.overwritten[key] = undo

    def unlink(self, path: str | os.PathLike[str], *, missing_ok: bool = True) -> None:
        """Unlink (treated as durable at once: the pessimistic case for readers)."""
        self._op("unlink", path)
        super().unlink(path, missing_ok=missing_ok)
        key = os.path.abspath(path)
        self.synced.pop(key, None)
        self.overwritten.pop(key, None)
        self.unsynced_creates.discard(key)

    def crash(self, rng: random.Random | None = None) -> list[str]:
        """Simulate power loss: lose unsynced bytes and unsynced creations; return touched paths."""
        touched: list[str] = []
        for path in sorted(self.unsynced_creates):
            if os.path.exists(path):
                os.unlink(path)
                touched.append(path)
        for path, keep in sorted(self.synced.items()):
            if path in self.unsynced_creates or not os.path.exists(path):
                continue
            undo = self.overwritten.get(path, [])
            if undo:
                _undo_overwrites(path, undo, rng)
            size = os.path.getsize(path)
            if size > keep:
                _lose_tail(path, keep, size, rng)
            if undo or size > keep:
                touched.append(path)
        self.unsynced_creates.clear()
        self.overwritten.clear()
        for fd in list(self._fd_paths):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fd_paths.clear()
        self._appending.clear()
        return touched


def _undo_overwrites(path: str, undo: list[tuple[int, bytes]], rng: random.Random | None) -> None:
    """Put back the old bytes of unsynced overwrites (with ``rng``, sector by sector, each
    with probability 1/2), newest first so the oldest content wins."""
    with open(path, "r+b") as f:
        for at, old in reversed(undo):
            sector = 512
            for start in range(at - at % sector, at + len(old), sector):
                lo, hi = max(start, at), min(start + sector, at + len(old))
                if rng is None or rng.random() < 0.5:
                    f.seek(lo)
                    f.write(old[lo - at : hi - at])


def _lose_tail(path: str, keep: int, size: int, rng: random.Random | None) -> None:
    """Cut ``path`` to ``keep`` bytes, or with ``rng`` keep a random mix of unsynced sectors."""
    with open(path, "r+b") as f:
        if rng is None:
            f.truncate(keep)
            return
        f.seek(keep)
        tail = bytearray(f.read(size - keep))
        sector = 512
        first = keep - keep % sector
        for start in range(first, size, sector):
            lo, hi = max(start, keep) - keep, min(start + sector, size) - keep
            if rng.random() < 0.5:
                tail[lo:hi] = bytes(hi - lo)
        cut = rng.randrange(0, len(tail) + 1)
        f.seek(keep)
        f.write(tail[:cut])
        f.truncate(keep + cut)
