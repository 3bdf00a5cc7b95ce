"""A client reads a whole ExecQuick reply at once (:func:`agentsessions.client.turns.quick_turn`):
every frame converted and checked before the caller sees any, and what the reply ends with (a
record that fails its checks, a park, the turn's error) raised after the frames before it, at
once when there are none; the frames equal the engine's own."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import agentsessions
from agentsessions.client import dial
from agentsessions.client.turns import LastSession, RemoteTurn, quick_turn
from agentsessions.errors import (
    ApprovalParkedError,
    ChainBrokenError,
    FormatError,
    HarnessError,
    UnavailableError,
)
from agentsessions.server.app import build_server
from agentsessions.sessions.api import Sessions
from agentsessions.sessions.values import DeltaFrame, Frame, RecordFrame, SessionFrame
from agentsessions.wire import frames, status
from agentsessions.wire.gen import session_pb2


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Sessions]:
    with agentsessions.open(tmp_path / "home", runtime="auto") as eng:
        yield eng


class _Ended:
    """A unary call that has ended, as grpc hands one back with its reply."""

    def __init__(self, trailers: tuple[tuple[str, str], ...] = ()) -> None:
        self._trailers = trailers

    def trailing_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._trailers


def _turn(engine: Sessions) -> list[Frame]:
    uid = engine.run(None, ["first"]).uid
    return list(engine.exec(uid, ["hello"]))


def _reply(turn: list[Frame]) -> session_pb2.ExecQuickResponse:
    """The reply a server sends for ``turn``: its first frame, the rest batched in it."""
    updates = [frames.frame_to_update(f, "exec-1", committed=True) for f in turn]
    reply = session_pb2.ExecQuickResponse(update=updates[0])
    reply.update.batch.extend(updates[1:])
    return reply


def _no_rest(key: str) -> Iterator[Any]:  # pragma: no cover - a reply without a rest
    raise AssertionError(f"no rest to read: {key}")


def _read(
    reply: session_pb2.ExecQuickResponse,
    call: _Ended,
    rest: Callable[[str], Iterator[Any]] = _no_rest,
) -> RemoteTurn:
    return quick_turn(reply, call, rest, "here", LastSession())


def test_a_reply_reads_back_as_the_engines_own_frames(engine: Sessions) -> None:
    turn = _turn(engine)
    got = list(_read(_reply(turn), _Ended()))
    assert got == turn
    for mine, theirs in zip(got, turn, strict=True):
        if isinstance(mine, RecordFrame):
            assert isinstance(theirs, RecordFrame)
            assert mine.record.payload == theirs.record.payload
            assert mine.record.content_hash == theirs.record.content_hash
    kinds = [type(f) for f in got]
    assert kinds[0] is SessionFrame and kinds[-1] is SessionFrame and RecordFrame in kinds
    assert DeltaFrame not in kinds or kinds.index(DeltaFrame) > 0


def test_a_record_that_fails_its_check_ends_the_frames_there(engine: Sessions) -> None:
    turn = _turn(engine)
    reply = _reply(turn)
    bad = [u for u in reply.update.batch if u.HasField("committed")][2]
    bad.committed.event_json = bad.committed.event_json.replace(b'"kind"', b' "kind"')
    got: list[Frame] = []
    with pytest.raises(ChainBrokenError, match=f"record {bad.committed.seq}"):
        for frame in _read(reply, _Ended()):
            got.append(frame)
    before = turn[: len(got)]
    assert got == before  # every frame before the bad record, and none of it or after
    assert not any(isinstance(f, RecordFrame) and f.record.seq >= bad.committed.seq for f in got)


def test_a_reply_whose_first_frame_fails_raises_when_the_turn_starts(engine: Sessions) -> None:
    reply = _reply(_turn(engine))
    # field 1023, a varint: what a newer server's Session might carry
    raw = reply.update.session.SerializeToString() + b"\xf8\x3f\x01"
    reply.update.session.ParseFromString(raw)
    with pytest.raises(FormatError, match="session carries fields"):
        _read(reply, _Ended())


def test_the_turns_error_in_the_trailers_comes_after_its_frames(engine: Sessions) -> None:
    turn = _turn(engine)
    failed = HarnessError("the model gave up")
    got: list[Frame] = []
    with pytest.raises(HarnessError, match="gave up"):
        for frame in _read(_reply(turn), _Ended(status.ok_trailers(failed))):
            got.append(frame)
    assert got == turn


def test_a_parked_final_frame_raises_the_park_after_the_frames(engine: Sessions) -> None:
    turn = _turn(engine)
    reply = _reply(turn)
    reply.update.batch[-1].frame.parked = True
    parked = ApprovalParkedError(
        "waiting for an approval", execution_id="exec-1", tool_call_id="call-1", request_seq=7
    )
    got: list[Frame] = []
    with pytest.raises(ApprovalParkedError, match="waiting"):
        for frame in _read(reply, _Ended(status.ok_trailers(parked))):
            got.append(frame)
    assert got == turn[:-1]  # the parked frame is not a frame of the turn


def test_a_reply_with_no_frame_and_no_rest_is_the_servers_fault() -> None:
    reply = session_pb2.ExecQuickResponse()
    reply.update.session.metadata.uid = "sess-0"
    reply.update.frame.parked = True  # skipped: its trailers name no park
    with pytest.raises(UnavailableError, match="ended a turn's stream empty"):
        _read(reply, _Ended(), lambda key: iter(()))


def test_the_rest_of_a_turn_follows_its_reply(engine: Sessions) -> None:
    turn = _turn(engine)
    head, tail = turn[:3], turn[3:]
    reply = _reply(head)
    reply.rest = "rest-1"
    asked: list[str] = []

    def rest(key: str) -> Iterator[Any]:
        asked.append(key)
        yield from (frames.frame_to_update(f, "exec-1", committed=True) for f in tail)

    got = _read(reply, _Ended(), rest)
    assert asked == []  # not asked before the caller reads past the reply
    assert list(got) == turn and asked == ["rest-1"]


def test_a_session_message_met_again_is_the_session_converted_before(engine: Sessions) -> None:
    turn = _turn(engine)
    last = turn[-1]
    assert isinstance(last, SessionFrame)
    msg = frames.frame_to_update(last).session
    sessions = LastSession()
    first = sessions(msg)
    assert first == last.session
    again = session_pb2.Session.FromString(msg.SerializeToString())
    assert sessions(again) is first  # the same bytes: not converted again
    later = session_pb2.Session.FromString(msg.SerializeToString())
    later.last_seq += 1
    moved = sessions(later)
    assert moved is not first and moved.last_seq == first.last_seq + 1


def test_a_session_message_that_fails_its_checks_is_never_remembered(engine: Sessions) -> None:
    last = _turn(engine)[-1]
    assert isinstance(last, SessionFrame)
    raw = frames.frame_to_update(last).session.SerializeToString() + b"\xf8\x3f\x01"
    sessions = LastSession()
    for _ in range(2):  # refused each time it is met
        with pytest.raises(FormatError, match="session carries fields"):
            sessions(session_pb2.Session.FromString(raw))


def test_consecutive_turns_over_the_wire_share_their_session_frames(engine: Sessions) -> None:
    server = build_server(engine, "127.0.0.1:0")
    try:
        with dial(server.address) as client:
            uid = client.run(None, ["one"]).uid
            before = list(client.exec(uid, ["two"]))
            after = list(client.exec(uid, ["three"]))
    finally:
        server.stop(grace=None)
    assert isinstance(before[-1], SessionFrame) and isinstance(after[0], SessionFrame)
    assert after[0].session is before[-1].session  # converted once, for both frames
