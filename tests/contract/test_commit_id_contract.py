"""A turn's commit id, on every ``Sessions`` implementation of the contract suite: the local
engine on the file, memory and JetStream stores, and the gRPC client over a real server.

A request carrying an id that landed writes nothing and answers with the landed turn; a
retry of a turn whose input landed but which did not end finishes it, never appending a
second INPUT (``agentsessions.controller.landed``).
"""

from __future__ import annotations

from typing import Any

import pytest
import test_sessions_contract as suite

from agentsessions.errors import ConflictError, HarnessError, InvalidArgumentError
from agentsessions.sessions.api import Sessions
from agentsessions.sessions.values import RecordFrame

sessions = suite.sessions  # the contract suite's fixture: every engine it runs
_last, _run = suite._last, suite._run

FLAKY = {"fail": True}
"""Whether the flaky harness fails its next turn."""


class FlakyHarness:
    """Echo's turn, failing (after its input landed) while ``FLAKY["fail"]`` is set."""

    def describe(self) -> Any:
        from agentsessions.controller.spi import HarnessDescriptor

        return HarnessDescriptor(id="contract-flaky", version="1")

    def run(self, start: Any, sink: Any) -> None:
        from agentsessions.controller.spi import ModelRequest

        if FLAKY["fail"]:
            raise RuntimeError("the flaky harness failed its turn")
        sink.model(ModelRequest(model="echo", messages=(start.inputs[-1],), params=None))


@pytest.fixture(autouse=True)
def _flaky() -> None:
    from agentsessions.sessions.wiring import HARNESSES

    HARNESSES.register("contract-flaky", FlakyHarness)
    FLAKY["fail"] = True


def _inputs(sessions: Sessions, uid: str) -> list[int]:
    return [r.seq for r in sessions.replay(uid) if r.event["kind"] == "EVENT_INPUT"]


def test_a_retry_of_a_landed_turn_writes_nothing_and_answers_with_it(sessions: Sessions) -> None:
    uid = sessions.create(harness="echo").uid
    first = sessions.run(uid, ["hello"], commit_id="delivery-1")
    assert first.turn is not None and not first.turn.duplicate and first.turn.model_calls == 1
    head = sessions.get(uid).last_seq
    again = sessions.run(uid, ["hello"], commit_id="delivery-1")
    assert again.turn is not None and again.turn.duplicate
    assert again.turn.model_calls == 0  # the model was not called
    assert (again.turn.execution_id, again.turn.first_seq, again.turn.last_seq) == (
        first.turn.execution_id,
        first.turn.first_seq,
        first.turn.last_seq,
    )
    assert again.turn.outputs == first.turn.outputs == ("echo:hello",)
    assert sessions.get(uid).last_seq == head == again.session.last_seq
    assert len(_inputs(sessions, uid)) == 1


def test_a_late_retry_is_answered_after_other_turns_and_despite_its_stale_cas(
    sessions: Sessions,
) -> None:
    uid = sessions.create(harness="echo").uid
    first = sessions.run(uid, ["one"], commit_id="d-1", expected_last_seq=0)
    sessions.run(uid, ["two"], commit_id="d-2")
    sessions.run(uid, ["three"])
    head = sessions.get(uid).last_seq
    again = sessions.run(uid, ["one"], commit_id="d-1", expected_last_seq=0)  # CAS of then
    assert again.turn is not None and again.turn.duplicate
    assert again.turn.last_seq == first.turn.last_seq if first.turn else False
    assert again.turn.outputs == ("echo:one",)
    assert sessions.get(uid).last_seq == head
    with pytest.raises(ConflictError):  # a new id still takes the CAS it is given
        sessions.run(uid, ["four"], commit_id="d-4", expected_last_seq=0)


def test_a_streamed_retry_sends_no_record(sessions: Sessions) -> None:
    uid = sessions.create(harness="echo").uid
    frames = _run(sessions.exec(uid, ["hi"], commit_id="x"))
    assert any(isinstance(f, RecordFrame) for f in frames)
    frames = _run(sessions.exec(uid, ["hi"], commit_id="x"))
    assert not any(isinstance(f, RecordFrame) for f in frames)
    last = _last(frames)
    assert last.turn is not None and last.turn.duplicate and last.turn.to_json()["duplicate"]


def test_a_retry_of_a_turn_whose_input_landed_finishes_it_with_no_second_input(
    sessions: Sessions,
) -> None:
    uid = sessions.create(harness="contract-flaky").uid
    with pytest.raises(HarnessError):
        sessions.run(uid, ["once"], commit_id="d-9")
    assert sessions.get(uid).exec_state == "EXEC_FAILED"
    FLAKY["fail"] = False
    again = sessions.run(uid, ["once"], commit_id="d-9")
    assert again.turn is not None and again.turn.duplicate and again.turn.resumed
    assert again.turn.outputs == ("echo:once",) and again.turn.model_calls == 1
    assert sessions.get(uid).exec_state == "EXEC_COMPLETED"
    assert len(_inputs(sessions, uid)) == 1
    third = sessions.run(uid, ["once"], commit_id="d-9")  # and now it is the ended turn
    assert third.turn is not None and third.turn.model_calls == 0
    assert third.turn.last_seq == again.turn.last_seq


def test_a_failed_turn_followed_by_others_is_refused_with_nothing_written(
    sessions: Sessions,
) -> None:
    uid = sessions.create(harness="contract-flaky").uid
    with pytest.raises(HarnessError):
        sessions.run(uid, ["once"], commit_id="d-5")
    FLAKY["fail"] = False
    sessions.run(uid, ["later"])  # new input is taken after a failed turn
    head = sessions.get(uid).last_seq
    with pytest.raises(HarnessError, match="later turns followed"):
        sessions.run(uid, ["once"], commit_id="d-5")
    assert sessions.get(uid).last_seq == head


def test_bad_commit_ids_are_refused_before_anything_is_written(sessions: Sessions) -> None:
    with pytest.raises(InvalidArgumentError, match="existing session"):
        sessions.run(None, ["hi"], commit_id="d-1", harness="echo")
    uid = sessions.create(harness="echo").uid
    for bad in ("x" * 124, "tab\there"):
        with pytest.raises(InvalidArgumentError, match="commit id"):
            sessions.run(uid, ["hi"], commit_id=bad)
    with pytest.raises(InvalidArgumentError, match="fresh_start"):
        sessions.run(uid, ["hi"], commit_id="d-2", fresh_start=True)
    assert sessions.get(uid).last_seq == 0
    assert sessions.run(uid, ["hi"], commit_id="x" * 123).turn is not None


def test_a_turn_mode_turn_lands_once_with_its_records_after_its_sync(sessions: Sessions) -> None:
    """durability="turn" on every engine (over the wire it rides in ExecRequest): the turn
    and its retry behave as in step mode, and its records are the same kinds."""
    uid = sessions.create(harness="echo").uid
    frames = _run(sessions.exec(uid, ["hi"], commit_id="t-1", durability="turn"))
    kinds = [f.record.event["kind"] for f in frames if isinstance(f, RecordFrame)]
    assert kinds == [
        "EVENT_EXECUTION_START",
        "EVENT_INPUT",
        "EVENT_MODEL_CALL",
        "EVENT_OUTPUT",
        "EVENT_END",
    ]
    again = sessions.run(uid, ["hi"], commit_id="t-1", durability="turn")
    assert again.turn is not None and again.turn.duplicate and again.turn.model_calls == 0
    assert [r.event["kind"] for r in sessions.replay(uid)] == kinds
    assert sessions.verify(uid).ok
    with pytest.raises(InvalidArgumentError, match="durability"):
        sessions.run(uid, ["hi"], durability="exit")
