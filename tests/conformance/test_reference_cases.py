"""The Go reference's conformance cases (digest section 6), on our engine and journal.

Each test builds its journal through the real controller, on the file store and on the
memory store (the ``backend`` fixture, see ``backends.py``), reopening the store and the
controller where the reference does, and asserts what a user of either implementation
relies on: replay makes zero model calls, a crashed turn is completed at most once, forks
share their parent's prefix hashes, and a stale writer is refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from backends import Backend

from agentsessions.controller.controller import Controller
from agentsessions.controller.lifecycle import ForkRequest, fork
from agentsessions.controller.replay import replay
from agentsessions.errors import (
    ConflictError,
    HarnessError,
    HarnessMismatchError,
    InvalidExecutionLogError,
)
from agentsessions.journal.stores.store import SessionMeta, Store, new_uid
from agentsessions.journal.tools.exchange import import_file
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.v1 import construct

FIXTURE = (
    Path(__file__).resolve().parents[2] / "agentsessions" / "data" / "go-v0.1.2-completed.json"
)


def _kinds(store: Store, uid: str) -> list[str]:
    return [r.event["kind"].removeprefix("EVENT_") for r in store.read(uid)]


def _say(text: str) -> list[dict[str, Any]]:
    return [dict(construct.text_message("user", text))]


def test_replay_reconstructs_nondeterministic_output_with_zero_model_calls(
    backend: Backend,
) -> None:
    ctl = backend.controller()
    uid = ctl.store.create(
        SessionMeta(uid=new_uid(), harness="chat", model="scripted:nondeterministic=1")
    ).uid
    first = ctl.exec(uid, _say("pick a number"))
    again = backend.controller().exec(uid, _say("pick a number"))
    assert first.outputs != again.outputs  # the model really is nondeterministic
    fresh = backend.controller()
    result = replay(fresh.store, uid, HARNESSES, model_calls=lambda: fresh.models.calls)
    assert result.identical, result.divergence
    assert result.model_calls == 0
    assert result.outputs == first.outputs + again.outputs


def test_three_turns_on_three_reopened_controllers(backend: Backend) -> None:
    uid = None
    outputs = []
    for text in ("one", "two", "three"):
        ctl = backend.controller()
        turn = ctl.exec(uid, _say(text), harness="echo")
        uid = turn.uid
        outputs += turn.outputs
    assert outputs == ["echo:one", "echo:two", "echo:three"]
    store = backend.open()
    assert uid is not None and backend.verified(uid)
    assert _kinds(store, uid).count("EXECUTION_START") == 3
    fences = {r.fence for r in store.read(uid)}
    assert len(fences) == 3  # a fresh writer fence per reopened controller


def _journal(store: Store, uid: str, events: list[dict[str, Any]]) -> None:
    with store.writer(uid) as writer:
        writer.append(events)


def _cut_turn(backend: Backend, text: str, upto: str) -> str:
    """A session whose echo turn was cut right after the event kind ``upto`` (a crash)."""
    ctl = backend.controller()
    store = ctl.store
    done = ctl.exec(None, _say(text), harness="echo")
    events = [r.event for r in store.read(done.uid)]
    cut = next(i for i, e in enumerate(events) if e["kind"] == f"EVENT_{upto}") + 1
    uid = store.create(SessionMeta(uid=new_uid(), harness="echo")).uid
    _journal(store, uid, events[:cut])
    return uid


def test_crash_mid_turn_is_completed_with_zero_model_calls(backend: Backend) -> None:
    uid = _cut_turn(backend, "hello", "OUTPUT")
    store = backend.open()
    assert store.get(uid).exec_state == "EXEC_RUNNING"
    ctl = backend.controller()
    result = ctl.resume(uid)
    assert result is not None and result.model_calls == 0
    assert _kinds(store, uid) == ["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "END"]
    assert store.get(uid).exec_state == "EXEC_COMPLETED"
    assert backend.verified(uid)
    assert ctl.resume(uid) is None  # nothing left to do; nothing appended
    assert store.get(uid).last_seq == 5


def test_crash_mid_model_call_reinvokes_once(backend: Backend) -> None:
    uid = _cut_turn(backend, "hello", "MODEL_CALL")
    ctl = backend.controller()
    store = ctl.store
    result = ctl.resume(uid)
    assert result is not None and result.model_calls == 1 and result.outputs == ["echo:hello"]
    assert _kinds(store, uid) == ["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "END"]
    assert backend.verified(uid)


def test_fork_prefix_hashes_equal_the_parent(backend: Backend) -> None:
    ctl = backend.controller()
    uid = ctl.exec(None, _say("a"), harness="echo").uid
    ctl.exec(uid, _say("b"))
    parent = [r.content_hash for r in ctl.store.read(uid)]
    children = fork(ctl, uid, ForkRequest(at_seq=5, count=2, names=("x", "y")))
    for child in children:
        hashes = [r.content_hash for r in ctl.store.read(child.uid)]
        assert hashes[:5] == parent[:5]
        assert backend.verified(child.uid)
        turn = ctl.exec(child.uid, _say("child"))
        assert turn.outputs == ["echo:child"]
    assert backend.verified(uid)
    assert [r.content_hash for r in ctl.store.read(uid)] == parent


def test_stale_single_writer_is_rejected(backend: Backend) -> None:
    uid = backend.controller().exec(None, _say("first"), harness="echo").uid
    with pytest.raises(ConflictError) as err:
        backend.controller().exec(uid, _say("stale"), expected_last_seq=0)
    assert err.value.head_seq == 5
    assert backend.open().get(uid).last_seq == 5


def test_go_fixture_replays_after_import(backend: Backend) -> None:
    ctl = backend.controller()
    uid = import_file(ctl.store, FIXTURE).uid
    result = replay(ctl.store, uid, HARNESSES, harness="echo", model_calls=lambda: ctl.models.calls)
    assert result.identical and result.model_calls == 0 and result.outputs == ["echo:hello"]
    turn = ctl.exec(uid, _say("modern"), harness="echo")  # a modern turn after a legacy one
    assert turn.outputs == ["echo:modern"]
    again = replay(ctl.store, uid, HARNESSES, harness="echo", model_calls=lambda: ctl.models.calls)
    assert again.identical and again.outputs == ["echo:hello", "echo:modern"]


def _legacy(backend: Backend, tmp_path: Path, keep: int) -> tuple[Controller, str]:
    records = json.loads(FIXTURE.read_text())[:keep]
    cut = tmp_path / "cut.json"
    cut.write_text(json.dumps(records))
    ctl = backend.controller()
    return ctl, import_file(ctl.store, cut).uid


def test_legacy_crash_after_output_is_completed_by_resume(backend: Backend, tmp_path: Path) -> None:
    ctl, uid = _legacy(backend, tmp_path, 3)
    result = ctl.resume(uid, harness="echo")
    assert result is not None and result.model_calls == 0
    end = list(ctl.store.read(uid))[-1].event
    assert end["kind"] == "EVENT_END" and "execution_id" not in end  # still ID-less
    assert replay(ctl.store, uid, HARNESSES, harness="echo").identical


def test_legacy_crash_after_model_call_refuses_to_redrive(backend: Backend, tmp_path: Path) -> None:
    ctl, uid = _legacy(backend, tmp_path, 2)
    with pytest.raises(HarnessError, match="recorded completion missing"):
        ctl.resume(uid, harness="echo")
    assert ctl.models.calls == 0


def test_incomplete_invocation_is_refused(backend: Backend) -> None:
    store = backend.open()
    uid = store.create(SessionMeta(uid=new_uid(), harness="echo")).uid
    start = construct.execution_start(input_count=2, harness="echo", execution_id="e0")
    _journal(
        store,
        uid,
        [
            start,
            construct.input_event(construct.text_message("user", "only one"), execution_id="e0"),
        ],
    )
    with pytest.raises(InvalidExecutionLogError, match="incomplete invocation"):
        backend.controller().resume(uid)
    assert store.get(uid).last_seq == 2


def test_harness_version_mismatch_fails_before_any_run(backend: Backend) -> None:
    store = backend.open()
    uid = store.create(SessionMeta(uid=new_uid(), harness="echo")).uid
    start = construct.execution_start(
        input_count=0, harness="echo", harness_version="0.9", execution_id="e0"
    )
    _journal(store, uid, [start, construct.end_event(execution_id="e0")])
    with pytest.raises(HarnessMismatchError, match="version"):
        replay(store, uid, HARNESSES)
