"""A harness node's workers: reused when idle, a new one whenever none is, daemons all."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from agentsessions.wire.workers import Workers


def _until(ok: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not ok():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def test_one_job_after_another_reuses_one_daemon_thread() -> None:
    workers = Workers()
    seen: set[int] = set()
    for _ in range(20):
        done = threading.Event()

        def job(done: threading.Event = done) -> None:
            seen.add(threading.get_ident())
            done.set()

        workers.run(job)
        assert done.wait(10)
        _until(lambda: workers.idle == 1)  # the worker counts itself idle after its job
    assert len(seen) == 1


def test_jobs_that_wait_on_each_other_each_get_a_daemon_thread() -> None:
    workers = Workers()
    first, second = threading.Event(), threading.Event()
    daemons: list[bool] = []

    def wait_then(mine: threading.Event, other: threading.Event) -> None:
        daemons.append(threading.current_thread().daemon)
        other.set()
        assert mine.wait(10)

    workers.run(wait_then, first, second)  # blocks until the second job runs
    workers.run(wait_then, second, first)
    assert first.wait(10) and second.wait(10)
    assert daemons == [True, True]


def test_at_most_idle_workers_stay() -> None:
    workers = Workers(idle=1)
    release = threading.Event()
    started = threading.Semaphore(0)
    idents: set[int] = set()

    def block() -> None:
        idents.add(threading.get_ident())
        started.release()
        release.wait(10)

    for _ in range(3):
        workers.run(block)
    for _ in range(3):
        assert started.acquire(timeout=10)
    release.set()
    _until(lambda: workers.idle == 1)
    time.sleep(0.05)
    assert workers.idle == 1  # two of the three ended
    live = {t.ident for t in threading.enumerate()}
    _until(lambda: len(idents & {t.ident for t in threading.enumerate()}) == 1)
    assert len(idents & live) >= 1
