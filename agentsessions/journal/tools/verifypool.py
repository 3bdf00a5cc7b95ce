"""Batch-checking a journal's sealed segments in forked worker processes, for verify.

:class:`Pool` forks one worker per spare CPU to share the batch checks
(:meth:`~agentsessions.journal.format.segmentread.SegmentFiles.check_segment`) of a large
journal's segments with this process; every verdict is the one a serial check gives, and
whatever a failed worker took is checked here. Only on Linux, from a single-threaded process.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import sys
import threading
from dataclasses import dataclass
from typing import Any

from agentsessions.journal.format.segmentread import SegmentCheck, SegmentFiles
from agentsessions.journal.format.segmentscan import PayloadCheck

_FORK_MIN_BYTES = 8 << 20
"""Sealed segments must hold this much (and be at least two) before workers are forked."""


class Pool:
    """Batch checks of sealed segments shared with forked worker processes.

    Fork is used only on Linux from a single-threaded process (no other thread can hold a
    lock the child would need). Jobs are handed out through a pipe, one 4-byte index per
    read, so a process slowed down by other load simply takes fewer; this process takes
    jobs too once its own work (the tail) is done. A worker sends its checks as one JSON
    document on its own pipe and leaves with ``os._exit``; jobs a failed worker took are
    checked here. Every worker is reaped (killed first if this process gives up early)
    before the caller goes on
    (:func:`~agentsessions.journal.tools.verify.verify_dir`).
    """

    def __init__(self, files: SegmentFiles, jobs: Jobs, check: PayloadCheck | None) -> None:
        self.files, self.jobs, self.check = files, jobs, check
        self.workers: list[_Worker] = []
        self.queue = -1

    def _fill(self) -> bool:
        """Queue every job index (before any fork); False if the pipe cannot hold them."""
        self.queue, feed = os.pipe()
        data = b"".join(i.to_bytes(4, "little") for i in range(len(self.jobs)))
        try:
            os.set_blocking(feed, False)
            return os.write(feed, data) == len(data)
        except BlockingIOError:
            return False
        finally:
            os.close(feed)

    @classmethod
    def start(
        cls, files: SegmentFiles, jobs: Jobs, check: PayloadCheck | None, workers: int | None
    ) -> Pool | None:
        """Fork workers to share ``jobs`` with this process; None when they run here, on demand."""
        if workers is None:
            size = sum(files.segment_size(first) for _, first in jobs)
            workers = _cpu_count() if len(jobs) >= 2 and size >= _FORK_MIN_BYTES else 1
        workers = min(workers, len(jobs) + 1)
        if workers < 2 or not _can_fork():
            return None
        pool = cls(files, jobs, check)
        try:
            if not pool._fill():
                pool.stop()
                return None
            for _ in range(workers - 1):
                pool._fork()
        except BaseException:
            pool.stop()
            raise
        return pool

    def _fork(self) -> None:
        r, w = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(r)
            os.close(w)
            return
        if pid == 0:  # the worker: never returns, never runs the parent's cleanup
            code = 1
            try:
                os.close(r)
                data = json.dumps([dataclasses.astuple(c) for c in self._work()])
                with open(w, "wb") as out:
                    out.write(data.encode())
                code = 0
            finally:
                os._exit(code)
        os.close(w)
        self.workers.append(_Worker(pid, r))

    def _work(self) -> list[SegmentCheck]:
        """Take jobs from the queue until it is empty; their checks."""
        done = []
        while len(item := os.read(self.queue, 4)) == 4:
            no, first = self.jobs[int.from_bytes(item, "little")]
            done.append(self.files.check_segment(first, no, self.check))
        return done

    def results(self) -> dict[int, SegmentCheck]:
        """Every job's check: this process's, the workers', then any a failed worker took."""
        out = {c.first: c for c in self._work()}
        for worker in self.workers:
            out.update((c.first, c) for c in worker.collect() or ())
        for no, first in self.jobs:
            if first not in out:
                out[first] = self.files.check_segment(first, no, self.check)
        return out

    def stop(self) -> None:
        """Reap every worker, killing those still running; close the pipes."""
        for worker in self.workers:
            worker.end()
        self.workers.clear()
        if self.queue >= 0:
            os.close(self.queue)
            self.queue = -1


Jobs = list[tuple[int, int]]
"""``(no, first)`` of segments to batch-check."""


@dataclass
class _Worker:
    """A forked worker: its pid and the read end of its result pipe."""

    pid: int
    fd: int
    reaped: bool = False

    def collect(self) -> list[SegmentCheck] | None:
        """Read the worker's checks and reap it; None if it failed."""
        chunks: list[bytes] = []
        with contextlib.suppress(OSError):
            while chunk := os.read(self.fd, 1 << 16):
                chunks.append(chunk)
        status = 0  # stays 0 if it was reaped for us (SIGCHLD ignored): judge by the data
        with contextlib.suppress(ChildProcessError):
            status = os.waitpid(self.pid, 0)[1]
        self.reaped = True
        try:
            if os.waitstatus_to_exitcode(status) != 0:
                return None
            return [_check_from_row(row) for row in json.loads(b"".join(chunks))]
        except (ValueError, TypeError):
            return None

    def end(self) -> None:
        """Kill and reap the worker unless it was reaped; close its pipe."""
        if not self.reaped:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.waitpid(self.pid, 0)
            self.reaped = True
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _check_from_row(row: list[Any]) -> SegmentCheck:
    first, ok, prev, next_seq, last_hash, events, end, last_frame, link, sealed = row
    return SegmentCheck(
        int(first), bool(ok), str(prev), int(next_seq), str(last_hash), int(events), int(end),
        int(last_frame), (int(link[0]), str(link[1])) if link else None, int(sealed),
    )  # fmt: skip


def _cpu_count() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1  # pragma: no cover - platforms without affinity


def _can_fork() -> bool:
    """Fork is cheap and safe: Linux, and no other thread that might hold a lock."""
    return (
        sys.platform.startswith("linux") and hasattr(os, "fork") and threading.active_count() == 1
    )
