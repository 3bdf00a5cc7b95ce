"""Batched turn streams (``ExecRequest.batched``): the frames a turn had ready travel in one
``ExecUpdate``, records as their committed bytes, and come back as the same frames; a
caller that does not ask (a reference client) gets one update a frame, as before."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

import agentsessions
from agentsessions.errors import ChainBrokenError, FormatError
from agentsessions.server.app import build_server
from agentsessions.server.updates import updates
from agentsessions.sessions.api import Sessions
from agentsessions.sessions.turnstream import DONE, TurnFrames, frames_of
from agentsessions.sessions.values import DeltaFrame, Frame, RecordFrame, SessionFrame
from agentsessions.wire import convert, frames
from agentsessions.wire.gen import common_pb2, session_pb2, session_pb2_grpc


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Sessions]:
    with agentsessions.open(tmp_path / "home", runtime="auto") as eng:
        yield eng


@pytest.fixture
def stub(engine: Sessions) -> Iterator[session_pb2_grpc.SessionsStub]:
    server = build_server(engine, "127.0.0.1:0")
    try:
        with grpc.insecure_channel(server.address) as channel:
            yield session_pb2_grpc.SessionsStub(channel)
    finally:
        server.stop(grace=None)


def _flat(messages: list[session_pb2.ExecUpdate]) -> list[session_pb2.ExecUpdate]:
    return [u for m in messages for u in (m, *m.batch)]


def _exec(stub: session_pb2_grpc.SessionsStub, uid: str, batched: bool) -> list[Any]:
    text = common_pb2.Message(role="user", parts=[{"text": {"text": "hi"}}])
    request = session_pb2.ExecRequest(session=uid, inputs=[text], batched=batched)
    return list(stub.Exec(request))


def test_a_batched_turn_carries_every_frame_once_with_records_as_committed_bytes(
    stub: session_pb2_grpc.SessionsStub, engine: Sessions
) -> None:
    uid = engine.create().uid
    got = _flat(_exec(stub, uid, batched=True))
    kinds = [u.WhichOneof("update") for u in got]
    assert kinds[0] == kinds[-1] == "session" and "record" not in kinds
    records = [convert.record_from_committed(u.committed) for u in got if u.HasField("committed")]
    assert records == list(engine.read(uid))  # the same bytes and hashes as stored
    assert got[-1].frame.last and got[-1].session.last_seq == records[-1].seq


def test_an_unbatched_turn_is_one_update_a_frame_with_log_records(
    stub: session_pb2_grpc.SessionsStub, engine: Sessions
) -> None:
    uid = engine.create().uid
    got = _exec(stub, uid, batched=False)
    assert not any(u.batch or u.HasField("committed") for u in got)
    records = [convert.record_from_proto(u.record) for u in got if u.HasField("record")]
    assert records == list(engine.read(uid))


def _queued(engine: Sessions) -> Iterator[Frame]:
    """A turn's frames, all queued before the consumer reads any (as when the sender is
    slower than the turn): the stream a server pulls from."""
    ran = list(engine.exec(None, ["hi"]))
    first, rest = ran[0], ran[1:]
    assert isinstance(first, SessionFrame)
    frames_ = TurnFrames(first.uid)
    for frame in rest:
        if isinstance(frame, DeltaFrame):
            frames_.delta(frame.text)
        else:
            frames_.put(frame)
    frames_.put(DONE)
    done = threading.Event()
    done.set()
    return frames_of(first, frames_, done)


class _Context:
    def set_trailing_metadata(self, _metadata: Any) -> None:  # pragma: no cover - no park
        raise AssertionError("a turn that did not park sets no trailers")


def test_frames_ready_together_are_sent_as_one_message(engine: Sessions) -> None:
    stream = _queued(engine)
    sent = list(updates(engine, stream, _Context(), batched=True))  # type: ignore[arg-type]
    assert len(sent) == 1  # all of it was ready with the first frame
    back = [frames.update_to_frame(u, "") for u in _flat(sent)]
    assert isinstance(back[0], SessionFrame) and isinstance(back[-1], SessionFrame)
    assert back[-1].last and sum(isinstance(f, RecordFrame) for f in back) == 5


def test_unbatched_updates_never_group_frames(engine: Sessions) -> None:
    sent = list(updates(engine, _queued(engine), _Context()))  # type: ignore[arg-type]
    assert len(sent) > 2 and not any(u.batch for u in sent)


def _committed(engine: Sessions) -> session_pb2.CommittedRecord:
    uid = engine.run(None, ["hi"]).uid
    return convert.committed_to_proto(list(engine.read(uid))[1])  # the input: "hi"


def test_a_committed_record_whose_bytes_do_not_match_its_hash_is_refused(
    engine: Sessions,
) -> None:
    msg = _committed(engine)
    assert convert.record_from_committed(msg).content_hash == msg.content_hash
    msg.event_json = msg.event_json.replace(b"hi", b"ho")
    with pytest.raises(ChainBrokenError, match="content_hash"):
        convert.record_from_committed(msg)


@pytest.mark.parametrize("event_json", [b"{not json}", b"[1]", b""])
def test_a_committed_record_that_is_not_a_json_object_is_refused(
    engine: Sessions, event_json: bytes
) -> None:
    msg = _committed(engine)
    msg.event_json = event_json
    with pytest.raises(FormatError, match=f"record {msg.seq}"):
        convert.record_from_committed(msg)
