"""Cancel of an interrupted turn: LIFECYCLE CANCEL + END CANCELED, then exec runs again;
idle sessions refuse, a repeated cancel appends nothing, replay stops the canceled run
where it was stopped (``test_replay_canceled.py`` has the other cases)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentsessions.errors import InvalidExecutionLogError
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.sessions.local import LocalSessions, open_local


def _interrupted(engine: LocalSessions) -> str:
    """A session whose turn died after its model call started (its process is gone)."""
    donor = [f for f in engine.exec(None, ["hi"], harness="echo", model="echo")][-1].uid
    events = [r.event for r in engine.read(donor)][:3]  # START, INPUT, MODEL_CALL; no END
    uid = new_uid()
    engine.store.create(SessionMeta(uid=uid, harness="echo", model="echo"))
    with engine.store.writer(uid) as w:
        w.append(events)
    return uid


def _kinds(engine: LocalSessions, uid: str) -> list[str]:
    return [str(r.event["kind"]) for r in engine.read(uid)]


def test_cancel_closes_an_interrupted_turn_and_exec_runs_again(tmp_path: Path) -> None:
    with open_local(tmp_path / "home") as engine:
        uid = _interrupted(engine)
        with pytest.raises(InvalidExecutionLogError):
            list(engine.exec(uid, ["blocked"]))  # the open turn blocks new input (exit 17)
        info = engine.cancel(uid)
        assert info.exec_state == "EXEC_CANCELED"
        records = list(engine.read(uid))
        assert [r.event["kind"] for r in records[3:]] == ["EVENT_LIFECYCLE", "EVENT_END"]
        assert records[3].event["lifecycle"]["kind"] == "LIFECYCLE_CANCEL"
        assert records[3].event["lifecycle"]["detail"]
        assert records[4].event["end"]["state"] == "CANCELED"
        exec_id = records[0].event["execution_id"]
        assert {r.event["execution_id"] for r in records} == {exec_id}
        assert engine.verify(uid).ok
        assert engine.cancel(uid).last_seq == 5  # idempotent: nothing appended
        frames = list(engine.exec(uid, ["again"]))
        assert frames and engine.get(uid).exec_state == "EXEC_COMPLETED"
        assert _kinds(engine, uid)[-1] == "EVENT_END"
        report = engine.rerun(uid)  # the canceled run stops at its MODEL_CALL
        assert report.identical, report.divergence
        assert (report.executions, report.replayed, report.model_calls) == (2, 2, 0)


def test_cancel_of_an_idle_session_is_an_error(tmp_path: Path) -> None:
    with open_local(tmp_path / "home") as engine:
        fresh = engine.create()
        with pytest.raises(InvalidExecutionLogError, match="no execution"):
            engine.cancel(fresh.uid)
        done = [f for f in engine.exec(None, ["hi"], harness="echo", model="echo")][-1].uid
        with pytest.raises(InvalidExecutionLogError, match="ended COMPLETED"):
            engine.cancel(done)
        assert _kinds(engine, done)[-1] == "EVENT_END"
