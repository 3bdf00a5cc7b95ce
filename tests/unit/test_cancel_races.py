"""Cancel racing the end of the turn it targets: both outcomes leave one END and no request.

Each race is pinned with a store whose hook runs the other side's step at the exact moment
the race needs (no timing): the turn's END lands between the canceller's look at the
session and its next step.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentsessions.controller.cancel import request_and_wait
from agentsessions.errors import InvalidExecutionLogError
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.journal.tools.verify import verify_session
from agentsessions.sessions.local import open_local
from agentsessions.v1 import construct, model

EXEC_ID = "00000000000000bb"


def _open_turn(store: FileStore) -> str:
    """A session whose turn committed START and INPUT and has no END yet."""
    uid = store.create(SessionMeta(uid=new_uid(), harness="echo", model="echo")).uid
    with store.writer(uid) as writer:
        writer.append(_start())
    return uid


def _start() -> list[model.Event]:
    return [
        construct.execution_start(
            input_count=1, config=b"", harness="echo", harness_version="1", execution_id=EXEC_ID
        ),
        construct.input_event(construct.text_message("user", "hi"), execution_id=EXEC_ID),
    ]


def _ends(store: FileStore, uid: str) -> list[str]:
    return [str(r.event["end"]["state"]) for r in store.read(uid) if r.event["kind"] == "EVENT_END"]


class EndsAfterFirstRead(FileStore):
    """Another process (a ``resume``) completes the open turn right after cancel's first look."""

    armed = False

    def read(self, uid: str, from_seq: int = 1, to_seq: int = 0) -> Iterator[Record]:
        records = list(super().read(uid, from_seq, to_seq))
        if self.armed:
            self.armed = False
            with self.writer(uid) as writer:
                writer.append([construct.end_event("COMPLETED", execution_id=EXEC_ID)])
        return iter(records)


def test_a_turn_completed_elsewhere_meanwhile_gets_no_second_end(tmp_path: Path) -> None:
    store = EndsAfterFirstRead(tmp_path / "home")
    uid = _open_turn(store)
    store.armed = True
    with (
        open_local(tmp_path / "home", store=store) as engine,
        pytest.raises(InvalidExecutionLogError, match="ended COMPLETED"),
    ):
        engine.cancel(uid)
    assert _ends(store, uid) == ["COMPLETED"]  # not COMPLETED then CANCELED
    assert store.get(uid).exec_state == "EXEC_COMPLETED"
    assert verify_session(store, uid).ok


class EndsBeforeTheRequest(FileStore):
    """The live turn commits END COMPLETED just before the canceller's request lands."""

    def __init__(self, home: Path) -> None:
        super().__init__(home)
        self.turn = None

    def request_cancel(self, uid: str, execution_id: str) -> None:
        assert self.turn is not None
        self.turn.append([construct.end_event("COMPLETED", execution_id=execution_id)])
        super().request_cancel(uid, execution_id)


def test_a_cancel_that_loses_the_race_to_end_says_so_and_leaves_no_request(
    tmp_path: Path,
) -> None:
    store = EndsBeforeTheRequest(tmp_path / "home")
    uid = store.create(SessionMeta(uid=new_uid(), harness="echo", model="echo")).uid
    with store.writer(uid) as turn:  # the running turn holds the lock
        turn.append(_start())
        store.turn = turn  # type: ignore[assignment]
        with pytest.raises(InvalidExecutionLogError, match="before the cancel"):
            request_and_wait(store, uid, 60.0)
    assert store.cancel_requested(uid) is None  # a stale request never outlives the race
    assert _ends(store, uid) == ["COMPLETED"]
    assert verify_session(store, uid).ok
