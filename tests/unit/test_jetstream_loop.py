"""The JetStream store's event loop: a call runs it in the calling thread (no hand-off to
another thread and back per call), while the loop keeps running between calls and calls
from several threads at once still share it."""

from __future__ import annotations

import asyncio
import threading

import pytest

from agentsessions.journal.stores.jetstream.loop import Loop, OutcomeUnknown

WAIT = 30  # generous bounds: only a hang reaches them


@pytest.fixture
def loop():
    lp = Loop()
    yield lp
    lp.close()


async def _ident() -> int:
    return threading.get_ident()


def test_a_call_runs_the_loop_in_the_calling_thread(loop: Loop) -> None:
    # the old loop ran every call on its own thread: two wake-ups per call (FACTS.md)
    assert loop.call(_ident(), WAIT) == threading.get_ident()
    other: list[int] = []
    t = threading.Thread(target=lambda: other.append(loop.call(_ident(), WAIT)))
    t.start()
    t.join(WAIT)
    assert other == [t.ident]


def test_results_and_errors_come_back(loop: Loop) -> None:
    async def boom() -> None:
        raise ValueError("no")

    async def add(a: int, b: int) -> int:
        await asyncio.sleep(0)
        return a + b

    assert loop.call(add(2, 3), WAIT) == 5
    with pytest.raises(ValueError, match="no"):
        loop.call(boom(), WAIT)
    assert loop.call(add(1, 1), WAIT) == 2  # the loop is still usable


def test_a_deadline_is_an_unknown_outcome_and_cancels(loop: Loop) -> None:
    cancelled = threading.Event()

    async def hang() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(OutcomeUnknown):
        loop.call(hang(), 0.05)
    assert cancelled.is_set()

    async def nats_deadline() -> None:
        raise TimeoutError  # what nats-py raises when its own request deadline passes

    with pytest.raises(OutcomeUnknown):
        loop.call(nats_deadline(), WAIT)


def test_the_loop_runs_between_calls(loop: Loop) -> None:
    # subscriptions' callbacks (cancel wake-ups, live probes) must run with no call made
    loop.call(_ident(), WAIT)
    ran = threading.Event()
    loop._loop.call_soon_threadsafe(ran.set)
    assert ran.wait(WAIT)
    # and a task started by a call keeps running after the call returned
    ticks = threading.Event()

    async def start() -> None:
        async def later() -> None:
            await asyncio.sleep(0.01)
            ticks.set()

        asyncio.get_running_loop().create_task(later())

    loop.call(start(), WAIT)
    assert ticks.wait(WAIT)


def test_a_call_made_while_another_thread_drives_shares_the_loop(loop: Loop) -> None:
    # B's call is handed to A's run of the loop; A's call ends first (it waits only for B
    # to start), so B's must be finished by the background thread, not left stranded
    async def make() -> tuple[asyncio.Event, asyncio.Event]:
        return asyncio.Event(), asyncio.Event()

    started, release = loop.call(make(), WAIT)
    a_in = threading.Event()

    async def a() -> str:
        a_in.set()
        await started.wait()
        return "a"

    async def b() -> str:
        started.set()
        await release.wait()
        return "b"

    got: dict[str, str] = {}
    ta = threading.Thread(target=lambda: got.update(a=loop.call(a(), WAIT)))
    ta.start()
    assert a_in.wait(WAIT)  # A drives the loop now (or has just finished)
    tb = threading.Thread(target=lambda: got.update(b=loop.call(b(), WAIT)))
    tb.start()
    ta.join(WAIT)
    assert got.get("a") == "a"
    loop._loop.call_soon_threadsafe(release.set)
    tb.join(WAIT)
    assert got == {"a": "a", "b": "b"}


def test_a_call_from_inside_another_event_loop(loop: Loop) -> None:
    # a thread already running a loop of its own cannot run this one: it is handed over
    async def outer() -> int:
        return loop.call(_ident(), WAIT)

    assert asyncio.run(outer()) != threading.get_ident()


def test_many_threads_at_once(loop: Loop) -> None:
    async def work(i: int) -> int:
        for _ in range(3):
            await asyncio.sleep(0)
        return i

    out: list[int] = []
    lock = threading.Lock()

    def run(k: int) -> None:
        for i in range(50):
            value = loop.call(work(k * 100 + i), WAIT)
            with lock:
                out.append(value)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT)
    assert sorted(out) == sorted(k * 100 + i for k in range(4) for i in range(50))


def test_close_is_idempotent_and_stops_the_thread() -> None:
    lp = Loop()
    lp.call(_ident(), WAIT)
    lp.close()
    lp.close()
    assert not lp._thread.is_alive()
