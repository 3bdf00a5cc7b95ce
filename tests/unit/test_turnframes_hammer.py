"""A turn's frames under concurrency (sessions/turnstream.py): however the producer's deltas
and records interleave with a slow consumer's takes, the consumer sees exactly the text
streamed, every record once and in order, and no text across a record; a cancel mid-stream
leaves the consumer exactly the text handed over before it.

The producer hands deltas over without a lock (one deque append, then a look at whether the
consumer listens), so these tests shrink the interpreter's switch interval to interleave the
two threads between nearly any two bytecodes, and drive both ways a consumer takes frames
(``next`` and a server's ``ready``)."""

from __future__ import annotations

import json
import random
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentsessions.errors import TurnCanceledError, UnavailableError
from agentsessions.sessions.local import open_local
from agentsessions.sessions.turnstream import DONE, Failed, TurnFrames, TurnStream, frames_of
from agentsessions.sessions.values import DeltaFrame, Frame, RecordFrame, SessionFrame

SEGMENTS = 40  # records the producer hands over, with deltas before and between them
PIECES = 500  # deltas between two records


@pytest.fixture(autouse=True)
def _switch_often() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # hand the GIL over as often as the interpreter can
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _record(index: int) -> RecordFrame:
    return RecordFrame("s", index)  # type: ignore[arg-type]  # the index stands for a record


def _piece(segment: int, i: int) -> str:
    return f"{segment}.{i},"


def _produce(frames: TurnFrames, cancel_at: int | None = None) -> None:
    """SEGMENTS runs of PIECES deltas, each closed by a record, as a turn's thread makes them
    (through the delta function a model is given); ``cancel_at``: the cancel check raises
    before that delta, and the turn hands its error over as Turns.start does."""
    calls = 0

    def check() -> None:
        if calls == cancel_at:
            raise TurnCanceledError("canceled", session="s")

    deliver = frames.checked(check, 0.0)  # 0.0: the check runs before every delta
    try:
        for segment in range(SEGMENTS):
            for i in range(PIECES):
                deliver(_piece(segment, i))
                calls += 1
            frames.put(_record(segment))
    except TurnCanceledError as exc:
        frames.put(Failed(exc))
    frames.put(DONE)


def _consume(stream: TurnStream, rng: random.Random) -> tuple[list[Frame], BaseException | None]:
    """Every frame of ``stream``, read slowly and now by ``next``, now by ``ready``."""
    got: list[Frame] = []
    try:
        while True:
            if rng.random() < 0.3:
                got.extend(stream.ready(wait=rng.choice((0.0, 0.001))))
            got.append(next(stream))
            if rng.random() < 0.05:
                time.sleep(rng.random() / 1000)  # a slow display
    except StopIteration:
        return got, None
    except TurnCanceledError as exc:
        return got, exc


def _check(got: list[Frame], delivered: int) -> None:
    """``got`` (after the first frame) is the first ``delivered`` deltas' text, each record
    after exactly the text streamed before it, and nothing else."""
    expected = [_piece(s, i) for s in range(SEGMENTS) for i in range(PIECES)][:delivered]
    text, records = "", []
    for frame in got:
        if isinstance(frame, DeltaFrame):
            assert frame.text, "an empty delta frame"
            text += frame.text
        else:
            assert isinstance(frame, RecordFrame)
            segment = int(frame.record)  # type: ignore[call-overload]
            assert text == "".join(expected[: (segment + 1) * PIECES]), "text crossed a record"
            records.append(segment)
    assert text == "".join(expected)
    assert records == list(range(min(SEGMENTS, delivered // PIECES)))


@pytest.mark.parametrize("seed", range(4))
def test_a_slow_consumer_sees_exactly_the_text_and_records_in_order(seed: int) -> None:
    frames = TurnFrames("s")
    done = threading.Event()
    first = SessionFrame.__new__(SessionFrame)
    stream = frames_of(first, frames, done)  # type: ignore[arg-type]  # an Event as Done
    producer = threading.Thread(target=lambda: (_produce(frames), done.set()))
    producer.start()
    got, error = _consume(stream, random.Random(seed))
    producer.join()
    assert error is None and got[0] is first
    _check(got[1:], SEGMENTS * PIECES)


@pytest.mark.parametrize("cancel_at", [1, 7 * PIECES, 7 * PIECES + 123, SEGMENTS * PIECES - 1])
def test_a_cancel_mid_stream_leaves_exactly_the_text_handed_over_before_it(cancel_at: int) -> None:
    frames = TurnFrames("s")
    done = threading.Event()
    stream = frames_of(SessionFrame.__new__(SessionFrame), frames, done)  # type: ignore[arg-type]
    producer = threading.Thread(target=lambda: (_produce(frames, cancel_at), done.set()))
    producer.start()
    got, error = _consume(stream, random.Random(cancel_at))
    producer.join()
    assert isinstance(error, TurnCanceledError)  # raised from the iterator, after the text
    _check(got[1:], cancel_at)


def test_two_producers_lose_nothing_and_keep_each_ones_order() -> None:
    frames = TurnFrames("s")
    done = threading.Event()
    stream = frames_of(SessionFrame.__new__(SessionFrame), frames, done)  # type: ignore[arg-type]

    def produce(tag: str) -> None:
        deliver = frames.checked(lambda: None, 60.0)
        for i in range(5000):
            deliver(f"{tag}{i},")

    producers = [threading.Thread(target=produce, args=(tag,)) for tag in "ab"]
    for thread in producers:
        thread.start()

    def end() -> None:
        for thread in producers:
            thread.join()
        frames.put(DONE)
        done.set()

    ender = threading.Thread(target=end)
    ender.start()
    got, error = _consume(stream, random.Random(9))
    ender.join()
    pieces = "".join(f.text for f in got if isinstance(f, DeltaFrame)).rstrip(",").split(",")
    for tag in "ab":
        assert [p for p in pieces if p[0] == tag] == [f"{tag}{i}" for i in range(5000)]
    assert error is None and len(pieces) == 10000


# -- a real engine: a slow streaming model, a slow consumer, a cancel mid-turn --------------
WORDS = 1500


def _engine_model(tmp: Path) -> tuple[str, str]:
    answer = " ".join(f"w{i}" for i in range(WORDS))
    script = tmp / "answers.json"
    script.write_text(json.dumps([answer, answer]))
    return f"scripted:file={script},delay=1.5", answer  # each delta ~1 ms apart


def _turn_frames(frames: Iterator[Frame], on_text: int | None, cancel: object) -> list[Frame]:
    """Every frame of a turn, read slowly; ``cancel()`` once ``on_text`` characters came."""
    got: list[Frame] = []
    seen, asked = 0, False
    for frame in frames:
        got.append(frame)
        if isinstance(frame, DeltaFrame):
            seen += len(frame.text)
            time.sleep(0.002)  # slower than the model: deltas pile up and ride together
            if on_text is not None and seen >= on_text and not asked:
                asked = True
                cancel()  # type: ignore[operator]
    return got


def test_an_engine_turn_streams_its_text_and_records_in_order_even_when_canceled(
    tmp_path: Path,
) -> None:
    model, answer = _engine_model(tmp_path)
    with open_local(tmp_path / "home", model=model) as engine:
        uid = engine.create(harness="chat").uid
        for on_text in (None, len(answer) // 3):  # a whole turn, then one canceled mid-stream

            def cancel() -> None:
                with pytest.raises(UnavailableError, match="did not stop"):
                    engine.cancel(uid, wait=0.0)  # the request is durable; the turn stops
                    # at its next look (a delta within STREAM_CHECK_SECONDS)

            frames = engine.exec(uid, ["go"], harness="chat")
            got = _turn_frames(frames, on_text, cancel)
            head = [f.record.seq for f in got if isinstance(f, RecordFrame)]
            stored = [r for r in engine.read(uid) if r.seq >= head[0]]
            assert head == [r.seq for r in stored]  # every record, once, in order
            kinds = [str(r.event["kind"]) for r in stored]
            text = "".join(f.text for f in got if isinstance(f, DeltaFrame))
            # the text streams in one run between two records (the model's call, made
            # durable with what follows it, reaches the consumer after its text)
            streamed = [i for i, f in enumerate(got) if isinstance(f, DeltaFrame)]
            assert streamed == list(range(streamed[0], streamed[-1] + 1))
            assert isinstance(got[streamed[0] - 1], RecordFrame)
            assert isinstance(got[streamed[-1] + 1], RecordFrame)
            last = got[-1]
            assert isinstance(last, SessionFrame) and last.turn is not None
            if on_text is None:
                assert text == answer and not last.turn.canceled
                output = next(r for r in stored if r.event["kind"] == "EVENT_OUTPUT")
                assert output.event["message"]["parts"][0]["text"]["text"] == answer
            else:
                assert answer.startswith(text) and len(text) < len(answer)
                assert last.turn.canceled and "EVENT_OUTPUT" not in kinds
                assert kinds[-1] == "EVENT_END"
