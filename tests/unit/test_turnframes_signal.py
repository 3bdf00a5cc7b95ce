"""A consumer waiting for a turn's next frame lets signal handlers run (sessions/turnstream.py).

The kernel may hand a process-directed signal (Ctrl-C) to any thread; CPython then only flags
it for the main thread, which runs the Python handler when it next executes bytecode. A
consumer blocked in one endless wait (a long model call that streams nothing) never got
there, so Ctrl-C did nothing until the next frame. It now waits in slices.
"""

from __future__ import annotations

import signal
import threading
import time
from types import FrameType

from agentsessions.sessions.turnstream import DONE, TurnFrames, frames_of, wait_for
from agentsessions.sessions.values import RecordFrame, SessionFrame

PATIENCE = 60.0  # how long the producer waits for the handler before it gives up (the failure)


def test_a_signal_handed_to_another_thread_runs_its_handler_while_the_consumer_waits() -> None:
    assert threading.current_thread() is threading.main_thread()  # handlers run only here
    frames = TurnFrames("s")
    handled = threading.Event()
    took_first = threading.Event()
    seen_in_time: list[bool] = []

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        handled.set()

    def producer() -> None:
        frames.put(RecordFrame.__new__(RecordFrame))
        took_first.wait()  # the consumer has the first frame and goes back to waiting
        time.sleep(0.3)  # ... and is blocked in that wait (the failure needs it; a pass not)
        # the signal goes to this thread, not the main one: as the kernel may choose
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        seen_in_time.append(handled.wait(PATIENCE))  # no frame comes until the handler ran
        frames.put(RecordFrame.__new__(RecordFrame))
        frames.put(DONE)

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        done = threading.Event()
        done.set()
        thread = threading.Thread(target=producer)
        thread.start()
        got = []
        for frame in frames_of(SessionFrame.__new__(SessionFrame), frames, done):
            got.append(frame)
            if len(got) == 2:  # the first record (after the session frame)
                took_first.set()
        thread.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert seen_in_time == [True]  # the handler ran while the consumer waited for a frame
    assert len(got) == 3


def test_waiting_for_a_turns_end_lets_a_handler_run_too() -> None:
    done = threading.Event()
    handled: list[bool] = []

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        handled.append(True)
        done.set()  # the handler itself ends the wait: it must run for the wait to end

    def kicker() -> None:
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        threading.Thread(target=kicker).start()
        wait_for(done)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert handled == [True]
