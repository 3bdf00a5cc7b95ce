"""Watching a turn never changes it: observer errors stay out of the journal (issue 7.3.1).

``on_record`` and ``on_delta`` are the caller's (a terminal, a gRPC stream); when they
raise, the controller keeps the error in ``observer_errors`` and the turn goes on to END.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentsessions.controller.controller import Controller
from agentsessions.controller.live import Observer
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.sessions.wiring import build_controller
from agentsessions.v1 import construct


def broken_pipe(_: object) -> None:
    """An observer whose terminal went away."""
    raise BrokenPipeError(32, "Broken pipe")


def controller(home: Path, **observers: object) -> Controller:
    return build_controller(FileStore(home), home, runtime="local", **observers)  # type: ignore[arg-type]


def kinds(ctl: Controller, uid: str) -> list[str]:
    return [str(r.event["kind"]) for r in ctl.store.read(uid)]


@pytest.mark.parametrize("which", ["on_record", "on_delta"])
def test_a_failing_observer_does_not_fail_the_turn(tmp_path: Path, which: str) -> None:
    ctl = controller(tmp_path, **{which: broken_pipe})
    uid = ctl.store.create(SessionMeta(uid=new_uid(), harness="echo")).uid
    result = ctl.exec(uid, [dict(construct.text_message("user", "hello"))])
    assert result.outputs == ["echo:hello"]
    assert kinds(ctl, uid)[-2:] == ["EVENT_OUTPUT", "EVENT_END"]
    assert "EVENT_ERROR" not in kinds(ctl, uid)
    assert ctl.store.get(uid).exec_state == "EXEC_COMPLETED"
    assert [type(e) for e in ctl.observer_errors] == [BrokenPipeError]


def test_a_broken_observer_is_not_called_again_and_others_still_are(tmp_path: Path) -> None:
    seen: list[int] = []
    calls: list[object] = []

    def flaky(value: object) -> None:
        calls.append(value)
        raise OSError(28, "No space left on device")

    def record(rec: Record) -> None:
        seen.append(rec.seq)

    ctl = controller(tmp_path, on_record=record, on_delta=flaky)
    uid = ctl.store.create(SessionMeta(uid=new_uid(), harness="echo")).uid
    ctl.exec(uid, [dict(construct.text_message("user", "a"))])
    ctl.exec(uid, [dict(construct.text_message("user", "b"))])
    assert len(calls) == 1  # the first failure retired it
    assert seen == list(range(1, 11))  # the healthy observer saw every record of both turns
    assert ctl.store.get(uid).exec_state == "EXEC_COMPLETED"


def test_interrupts_are_not_absorbed() -> None:
    def interrupted(_: object) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Observer(interrupted, [])(1)


def test_an_observer_set_after_construction_is_isolated_too(tmp_path: Path) -> None:
    ctl = controller(tmp_path)
    ctl.on_record = broken_pipe
    uid = ctl.store.create(SessionMeta(uid=new_uid(), harness="echo")).uid
    ctl.exec(uid, [dict(construct.text_message("user", "x"))])
    assert kinds(ctl, uid)[-1] == "EVENT_END"
    assert len(ctl.observer_errors) == 1


def test_a_checked_delta_stream_isolates_as_the_observer_and_checks_on_its_clock() -> None:
    """``Observer.checked`` (a streamed model call's one function per delta) keeps the
    observer's isolation and asks the cancel check as ``checked_stream`` does."""
    seen: list[str] = []
    errors: list[Exception] = []

    def flaky(text: str) -> None:
        seen.append(text)
        if text == "b":
            raise BrokenPipeError(32, "Broken pipe")

    checks: list[int] = []
    every_time = Observer(flaky, errors).checked(lambda: checks.append(1), 0.0)
    for text in "abc":
        every_time(text)
    assert seen == ["a", "b"] and len(errors) == 1  # not called again once broken
    assert len(checks) == 3  # a zero interval: asked before every delta, broken or not

    never = Observer(seen.append, []).checked(lambda: checks.append(1), 3600.0)
    never("d")
    assert seen[-1] == "d" and len(checks) == 3  # within the interval: not asked

    def canceled() -> None:
        raise KeyboardInterrupt  # the check's own error reaches the caller

    with pytest.raises(KeyboardInterrupt):
        Observer(seen.append, []).checked(canceled, 0.0)("e")
    assert seen[-1] == "d"  # checked before delivering
