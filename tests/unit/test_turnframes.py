"""The frames of a turn (sessions/turnstream.py): deltas the consumer has not yet taken ride
in one frame, with exactly their text, in order, never across a record; a quick turn wakes
its consumer once, a long one hands each frame over without waiting for the turn."""

from __future__ import annotations

import threading
import time

from agentsessions.sessions.turnstream import DONE, Failed, TurnFrames, frames_of
from agentsessions.sessions.values import DeltaFrame, RecordFrame, SessionFrame


def _drain(frames: TurnFrames) -> list[object]:
    done = threading.Event()
    done.set()
    first = SessionFrame.__new__(SessionFrame)
    return list(frames_of(first, frames, done))[1:]


def test_deltas_not_yet_taken_ride_in_one_frame_and_never_cross_a_record() -> None:
    frames = TurnFrames("s")
    for piece in ("a", "b", "c"):
        frames.delta(piece)
    record = RecordFrame.__new__(RecordFrame)
    frames.put(record)
    frames.delta("d")
    frames.delta("e")
    frames.put(DONE)
    got = _drain(frames)
    assert got[0] == DeltaFrame("s", "abc")
    assert got[1] is record
    assert got[2] == DeltaFrame("s", "de")
    assert len(got) == 3


def test_a_delta_after_the_consumer_took_the_batch_starts_a_new_one() -> None:
    frames = TurnFrames("s")
    frames.delta("x")
    frames.delta("y")
    assert frames.next_batch() == [DeltaFrame("s", "xy")]  # taken by the consumer itself
    frames.delta("z")  # not lost into the batch already taken
    frames.put(DONE)
    assert _drain(frames) == [DeltaFrame("s", "z")]


def test_a_quick_turn_wakes_its_consumer_once_at_its_end() -> None:
    frames = TurnFrames("s")
    frames.put(RecordFrame.__new__(RecordFrame))
    frames.delta("a")
    frames.put(RecordFrame.__new__(RecordFrame))
    frames.put(SessionFrame.__new__(SessionFrame))
    assert frames._bell.qsize() == 0  # nothing woke the consumer yet
    frames.put(DONE)
    assert frames._bell.qsize() == 1  # one wake: the whole turn
    assert len(_drain(frames)) == 4


def test_past_its_first_moments_a_listening_consumer_is_woken_by_each_item() -> None:
    frames = TurnFrames("s")
    got: list[list[object]] = []
    consumer = threading.Thread(target=lambda: got.append(frames.next_batch()))
    consumer.start()
    while not frames._listening:  # waited QUICK for the turn's end, then listens for items
        consumer.join(0.001)
    assert frames._eager and frames._bell.qsize() == 0
    frames.delta("b")  # rings: the consumer is blocked
    consumer.join()
    assert got == [[DeltaFrame("s", "b")]]
    frames.put(RecordFrame.__new__(RecordFrame))
    assert frames._bell.qsize() == 0  # the consumer is not waiting: no ring
    assert len(frames.next_batch()) == 1  # taken without a wait


def test_a_consumer_that_keeps_up_gets_each_delta_alone() -> None:
    frames = TurnFrames("s")
    pieces = [f"{i} " for i in range(50)]
    took = threading.Semaphore(0)

    def produce() -> None:
        for piece in pieces:
            frames.delta(piece)
            took.acquire()  # the consumer has it before the next is made
        frames.put(DONE)

    thread = threading.Thread(target=produce)
    thread.start()
    done = threading.Event()
    done.set()
    got = []
    for frame in frames_of(SessionFrame.__new__(SessionFrame), frames, done):
        if isinstance(frame, DeltaFrame):
            got.append(frame.text)
            took.release()
    thread.join()
    assert got == pieces


def test_a_frame_of_a_long_turn_reaches_the_consumer_before_the_turn_goes_on() -> None:
    frames = TurnFrames("s")
    took = threading.Event()
    record = RecordFrame.__new__(RecordFrame)
    seen: list[bool] = []

    def produce() -> None:
        frames.put(record)
        seen.append(took.wait(60.0))  # a long model call: nothing more comes until then
        frames.put(DONE)

    thread = threading.Thread(target=produce)
    thread.start()
    done = threading.Event()
    done.set()
    for frame in frames_of(SessionFrame.__new__(SessionFrame), frames, done):
        if frame is record:
            took.set()
    thread.join()
    assert seen == [True]


def test_a_consumer_on_another_thread_gets_every_delta_in_order() -> None:
    frames = TurnFrames("s")
    pieces = [f"{i}," for i in range(5000)]

    def produce() -> None:
        for i, piece in enumerate(pieces):
            frames.delta(piece)
            if i % 1000 == 999:
                frames.put(RecordFrame.__new__(RecordFrame))
        frames.put(DONE)

    thread = threading.Thread(target=produce)
    thread.start()
    got = _drain(frames)
    thread.join()
    texts, records = "", 0
    for frame in got:
        if isinstance(frame, DeltaFrame):
            texts += frame.text
            # a record closes a batch: no batch spans two thousands
            assert len({int(p) // 1000 for p in frame.text.rstrip(",").split(",")}) == 1
        else:
            records += 1
    assert texts == "".join(pieces) and records == 5


def test_ready_hands_over_what_is_queued_without_waiting_and_leaves_the_end() -> None:
    frames = TurnFrames("s")
    done = threading.Event()
    first = SessionFrame.__new__(SessionFrame)
    stream = frames_of(first, frames, done)
    record = RecordFrame.__new__(RecordFrame)
    frames.put(record)
    frames.delta("a")
    assert stream.ready() == [first, record, DeltaFrame("s", "a")]
    assert stream.ready() == []  # nothing more queued: no wait
    last = RecordFrame.__new__(RecordFrame)
    frames.put(last)
    frames.put(DONE)
    done.set()
    assert stream.ready() == [last]  # the end is left for next()
    assert stream.ready() == []
    assert list(stream) == []


def test_an_error_taken_by_ready_is_raised_by_the_next_next() -> None:
    frames = TurnFrames("s")
    done = threading.Event()
    stream = frames_of(SessionFrame.__new__(SessionFrame), frames, done)
    next(stream)
    record = RecordFrame.__new__(RecordFrame)
    frames.put(record)
    frames.put(Failed(ValueError("the turn failed")))
    frames.put(DONE)
    done.set()
    assert stream.ready() == [record]
    try:
        next(stream)
    except ValueError as exc:
        assert str(exc) == "the turn failed"
    else:  # pragma: no cover - the test fails here
        raise AssertionError("the turn's error was not raised")
    assert list(stream) == []


def test_poll_takes_what_was_handed_over_without_waiting() -> None:
    frames = TurnFrames("s")
    assert frames.poll() == []  # nothing yet: no wait
    record = RecordFrame.__new__(RecordFrame)
    frames.put(record)
    frames.delta("a")
    assert frames.poll() == [record, DeltaFrame("s", "a")]
    assert frames.poll() == []
    frames.delta("b")
    frames.put(DONE)  # rings the bell (the turn's end wakes the consumer) ...
    assert frames.poll() == [DeltaFrame("s", "b"), DONE]  # ... and a poll takes it all


def test_within_waits_for_a_quick_turns_end_and_takes_it_whole() -> None:
    frames = TurnFrames("s")
    record = RecordFrame.__new__(RecordFrame)

    def produce() -> None:
        frames.put(record)
        frames.delta("a")
        frames.put(DONE)

    thread = threading.Thread(target=produce)
    thread.start()
    got = frames.within(60.0)  # returns at the end (DONE rings), not at the first record
    thread.join()
    assert got == [record, DeltaFrame("s", "a"), DONE]


def test_a_spare_ring_does_not_end_a_wait_for_frames_early() -> None:
    frames = TurnFrames("s")
    frames._eager = True  # past the turn's first moments
    frames._bell.put(None)  # a ring no one needed: a producer that saw the consumer listen
    record = RecordFrame.__new__(RecordFrame)

    def produce() -> None:
        patience = time.monotonic() + 60.0  # a consumer that stopped waiting fails, not hangs
        while frames._bell.qsize() and time.monotonic() < patience:
            time.sleep(0.001)  # the waiting consumer took the spare ring ...
        while not frames._listening and time.monotonic() < patience:
            time.sleep(0.001)  # ... and waits again
        frames.put(record)

    thread = threading.Thread(target=produce)
    thread.start()
    got = frames.within(60.0)
    thread.join()
    assert got == [record]
