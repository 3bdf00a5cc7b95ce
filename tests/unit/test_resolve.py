"""``Sessions.resolve`` and the ``unresolved_call`` view, through the library.

A call is unresolved once a resume found its outcome unknown; resolve keeps a person's
answer as its receipt and resumes. Bad answers and calls that are not unresolved are
refused with nothing changed (the receipts file and the journal stay byte for byte).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from agentsessions.errors import (
    ApprovalParkedError,
    InvalidArgumentError,
    ToolNotUnresolvedError,
    ToolOutcomeUnknownError,
)
from agentsessions.journal.stores.receipts import RECEIPTS_NAME
from agentsessions.journal.tools.verify import verify_session
from agentsessions.sessions import LocalSessions, open_local
from tests.tool_harness import line_call, plan
from tests.unresolved import cut_workload


def _cut(tmp_path: Path, *calls: dict[str, Any], mediation: str = "mediated") -> tuple[str, Path]:
    """A session whose call c2 wrote its line and was cut before its receipt, and the
    resume that found it unknown (so it is unresolved); (uid, effects file)."""
    effects, tools = tmp_path / "effects.txt", tmp_path / "tools.toml"
    tools.write_text(cut_workload(effects, mediation))
    config = plan(*calls)
    with open_local(tmp_path / "home") as engine:
        with pytest.raises(KeyboardInterrupt):  # c2's executor is cut after its effect
            engine.run(inputs=["go"], harness="tool-line", config=config, tools=tools)
        (uid,) = [s.uid for s in engine.list().sessions]
    with open_local(tmp_path / "home") as engine, pytest.raises(ToolOutcomeUnknownError):
        list(engine.resume(uid))
    return uid, effects


def _files(engine: LocalSessions, uid: str) -> dict[str, bytes]:
    session_dir = Path(engine.store.session_dir(uid))  # type: ignore[attr-defined]
    names = [p for p in sorted(session_dir.rglob("*")) if p.is_file() and p.name != "FENCE"]
    return {str(p): p.read_bytes() for p in names}


def test_only_the_open_turns_last_unknown_call_is_unresolved(tmp_path: Path) -> None:
    uid, effects = _cut(tmp_path, line_call("c1", "one"), line_call("c2", "two"))
    with open_local(tmp_path / "home") as engine:
        ref = engine.get(uid).unresolved_call
        assert ref is not None and ref.tool_call_id == "c2" and ref.idempotency_key == "k-c2"
        receipts = Path(engine.store.session_dir(uid)) / RECEIPTS_NAME  # type: ignore[attr-defined]
        marks = [json.loads(line) for line in receipts.read_text().split("\n") if line]
        assert marks[-1]["key"] == "k-c2" and marks[-1]["receipt"]["unknown"] is True
        before = _files(engine, uid)
        with pytest.raises(ToolNotUnresolvedError) as refused:  # c1 has its result
            engine.resolve(uid, call_id="c1", result={"ok": True})
        assert "its unresolved call is c2 (append)" in str(refused.value)
        assert _files(engine, uid) == before
        done = engine.resolve(uid, call_id="c2", result={"bytes": 4}, actor="ops", resume=False)
        assert done.turn is None and done.session.unresolved_call is None
        assert done.result == {"id": "c2", "output": {"bytes": 4}}
        frames = list(engine.resume(uid))  # TOOL_RESULT from the kept answer
        turn = getattr(frames[-1], "turn", None)
        assert turn is not None and turn.outputs[-1].endswith('\nc2: ok {"bytes": 4}')
    assert effects.read_text() == "one\ntwo\n"


@pytest.mark.parametrize(
    ("result", "failed"),
    [(None, None), ({"a": 1}, "x"), ([1], None), ("{}", None), ({"a": math.nan}, None), (None, "")],
)
def test_a_bad_answer_is_refused_and_changes_nothing(
    tmp_path: Path, result: Any, failed: str | None
) -> None:
    uid, _ = _cut(tmp_path, line_call("c2", "two"))
    with open_local(tmp_path / "home") as engine:
        before = _files(engine, uid)
        with pytest.raises(InvalidArgumentError) as refused:
            engine.resolve(uid, call_id="c2", result=result, failed=failed)
        assert refused.value.exit_code == 2 and "nothing was changed" in str(refused.value)
        assert _files(engine, uid) == before
        assert engine.get(uid).unresolved_call is not None


def test_a_session_without_an_unknown_call_shows_none(tmp_path: Path) -> None:
    with open_local(tmp_path / "home") as engine:
        last = engine.run(inputs=["hi"])
        session = engine.get(last.session.uid)
        assert session.unresolved_call is None and "unresolved_call" not in session.to_json()
        with pytest.raises(ToolNotUnresolvedError):
            engine.resolve(session.uid, call_id="c1", failed="no")


def test_an_approved_call_cut_while_it_ran_is_resolved_with_its_approval_seqs(
    tmp_path: Path,
) -> None:
    effects, tools = tmp_path / "effects.txt", tmp_path / "tools.toml"
    tools.write_text(cut_workload(effects, "approval", cut="c2"))
    call = {**line_call("c2", "two"), "mediation": "MEDIATION_REQUIRES_APPROVAL"}
    with open_local(tmp_path / "home") as engine:
        with pytest.raises(ApprovalParkedError) as parked:
            engine.run(inputs=["go"], harness="tool-line", config=plan(call), tools=tools)
        uid = str(parked.value.fields["session"])
        engine.approve(uid, approved=True, reason="fine", actor="alice")
        with pytest.raises(KeyboardInterrupt):  # the executor is cut after its effect
            list(engine.resume(uid))
    with open_local(tmp_path / "home") as engine:
        with pytest.raises(ToolOutcomeUnknownError):  # a started mark, no outcome: unknown
            list(engine.resume(uid))
        assert engine.get(uid).unresolved_call is not None
        done = engine.resolve(uid, call_id="c2", failed="it did not finish", actor="bob")
        assert done.turn is not None
        assert done.turn.outputs == ("c2: error it did not finish (resolved by bob)",)
        results = [
            r.event["result"] for r in engine.read(uid) if r.event["kind"] == "EVENT_TOOL_RESULT"
        ]
        assert int(results[0]["approval_request_seq"]) == 4
        assert int(results[0]["approval_decision_seq"]) == 5
        assert verify_session(engine.store, uid).ok
    assert effects.read_text() == "two\n"
