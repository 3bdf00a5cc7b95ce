"""Replay of a session with a canceled turn (issue 17.2): a cancel is a recorded outcome.

A turn that ended END CANCELED is driven with its recorded effects to the point where the
cancel stopped it, stopped there as the live turn was, with no model call, and counts as
replayed; the turns after it replay as usual. The live cancels are made in-process at each
effect boundary (the harness asks the store for a cancel request of its own execution, so
nothing is timed): before a model call, while one streams (the call is abandoned, its
MODEL_CALL kept without an answer), inside a call that does not stream, before an output,
a usage report, a tool result, and END. Then the other ways a turn ends CANCELED: a turn
whose process died mid-call, a failed turn, a parked turn (each closed by ``cancel``), a
memory harness, and a fork child that inherits the canceled turn. A canceled turn that
replays differently (another effect, fewer effects, another model input) still diverges.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentsessions.controller import cancel as cancel_module
from agentsessions.controller.registry import Registry
from agentsessions.controller.replay import replay
from agentsessions.controller.spi import (
    Completion,
    Harness,
    HarnessDescriptor,
    ModelRequest,
    Sink,
    Start,
)
from agentsessions.errors import ApprovalParkedError, HarnessError
from agentsessions.journal.stores.memory.store import MemoryStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.models import MODELS
from agentsessions.sessions.local import LocalSessions, open_local
from agentsessions.sessions.values import DeltaFrame
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.v1 import construct
from agentsessions.v1.results import ReplayReport
from harnesses import counter
from tests.tool_harness import ToolLineHarness, line_call, plan

LC, END, CALL, OUT = "EVENT_LIFECYCLE", "EVENT_END", "EVENT_MODEL_CALL", "EVENT_OUTPUT"


class Hooks:
    """What the test harness and model reach: the cancel request of the running turn, and
    a count of the model calls made (the evidence that replay makes none)."""

    request: Callable[[str], None] = print  # replaced by each turn
    calls = 0
    skew = ""  # set by a divergence test: the harness then behaves otherwise on replay


class Steps:
    """Runs the steps its config lists: ``model`` (the model's plan rides in the prompt),
    ``output``, ``usage``, ``report``, ``boom`` (raises) and ``cancel`` (asks for a cancel of
    its own execution, as ``agentsessions cancel`` from another terminal would)."""

    def describe(self) -> HarnessDescriptor:
        return HarnessDescriptor(id="steps", version="1")

    def run(self, start: Start, sink: Sink) -> None:
        RUNNING["exec_id"] = start.execution_id
        steps: list[str] = json.loads(start.config or b"[]")
        skewed = Hooks.skew if steps != PLAIN else ""  # only the canceled turn's replay
        if skewed == "first-output":
            steps = ["output", *steps]
        if skewed == "nothing":
            return
        if skewed == "boom":
            raise ValueError("broke before the cancel point")
        for step in steps:
            if step == "cancel":
                Hooks.request(start.execution_id)
            elif step.startswith("model"):
                prompt = step + (" (skewed)" if skewed == "prompt" else "")
                say = construct.text_message("user", prompt)
                sink.model(ModelRequest(model="", messages=(*start.inputs, dict(say))))
            elif step == "output":
                sink.output(dict(construct.text_message("assistant", "harness output")))
            elif step == "usage":
                sink.usage({"input_tokens": "3", "output_tokens": "1"})
            elif step == "report":
                sink.report({"call_id": "c1", "name": "probe", "output": "done"})
            elif step == "boom":
                raise ValueError("the harness broke")
            else:
                raise AssertionError(f"unknown step {step!r}")


class StepModel:
    """Answers in three streamed words. Its plan is the step that asked: ``model:abandon``
    asks for a cancel after the first delta (the next delta meets it: the call is abandoned
    mid-stream), ``model:inside`` asks for one during a call that streams nothing."""

    def complete(
        self, request: ModelRequest, on_delta: Callable[[str], None] | None = None
    ) -> Completion:
        Hooks.calls += 1
        asked = request.messages[-1]["parts"][0]["text"]["text"]
        words = ["the ", "answer ", f"{Hooks.calls}"]
        if asked == "model:inside":
            Hooks.request(_running())
            words = []
        for n, word in enumerate(words):
            if on_delta is not None:
                on_delta(word)
            if n == 0 and asked == "model:abandon":
                Hooks.request(_running())
        return Completion(message=dict(construct.text_message("assistant", "the answer")))


RUNNING: dict[str, str] = {}
DELTAS: list[str] = []  # what the last turn streamed to its caller
PLAIN: list[str] = ["model", "output"]  # the steps of an ordinary turn


def _running() -> str:
    return RUNNING["exec_id"]


HARNESSES.register("tool-line", ToolLineHarness)  # the tests' shared name (tests/tool_harness.py)


@pytest.fixture(autouse=True, scope="module")
def _registered() -> Iterator[None]:
    """This module's own harness and model, for its tests only: a registration left behind
    would show in other modules' lists of known names (they share a worker process)."""
    HARNESSES.register("steps", Steps)
    MODELS.register("steps", StepModel)
    yield
    HARNESSES.unregister("steps")
    MODELS.unregister("steps")


@pytest.fixture
def engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalSessions]:
    monkeypatch.setattr(cancel_module, "STREAM_CHECK_SECONDS", 0.0)  # every delta looks
    Hooks.calls, Hooks.skew = 0, ""
    with open_local(tmp_path / "home", runtime="local") as eng:
        yield eng


def _turn(engine: LocalSessions, uid: str, steps: list[str], text: str = "go") -> Any:
    """One turn of the ``steps`` harness, its deltas streamed; its last frame's turn."""

    def request(exec_id: str) -> None:
        engine.store.request_cancel(uid, exec_id)  # type: ignore[attr-defined]

    Hooks.request = request
    frames = list(engine.exec(uid, [text], config=json.dumps(steps).encode()))
    DELTAS[:] = [f.text for f in frames if isinstance(f, DeltaFrame)]
    return frames[-1].turn


def _session(engine: LocalSessions) -> str:
    return engine.create(harness="steps", model="steps").uid


def _kinds_of_turn(engine: LocalSessions, uid: str, exec_id: str) -> list[str]:
    records = engine.read(uid)
    return [str(r.event["kind"]) for r in records if r.event.get("execution_id") == exec_id]


def _replayed(engine: LocalSessions, uid: str) -> ReplayReport:
    calls = Hooks.calls
    report = engine.rerun(uid)
    assert isinstance(report, ReplayReport)
    assert Hooks.calls == calls  # not one model call
    return report


BOUNDARIES = {
    "before-a-model-call": (["cancel", "model", "output"], [LC, END]),
    "model-call-streaming": (["model:abandon", "output"], [CALL, LC, END]),
    "inside-a-call-that-does-not-stream": (["model:inside", "output"], [CALL, OUT, LC, END]),
    "between-model-calls": (["model", "cancel", "model", "output"], [CALL, OUT, LC, END]),
    "before-an-output": (["model", "cancel", "output"], [CALL, OUT, LC, END]),
    "before-usage": (["output", "cancel", "usage"], [OUT, LC, END]),
    "before-a-tool-result": (["usage", "cancel", "report"], ["EVENT_USAGE", LC, END]),
    "before-end": (["model", "output", "cancel"], [CALL, OUT, OUT, LC, END]),
}


@pytest.mark.parametrize("name", list(BOUNDARIES))
def test_a_turn_canceled_at_each_boundary_replays_identical_with_the_turns_after_it(
    engine: LocalSessions, name: str
) -> None:
    steps, recorded = BOUNDARIES[name]
    uid = _session(engine)
    assert not _turn(engine, uid, ["model", "output"], "one").canceled
    stopped = _turn(engine, uid, steps, "two")
    assert stopped.canceled
    kinds = _kinds_of_turn(engine, uid, stopped.execution_id)
    assert kinds[2:] == recorded  # after START and INPUT: what the cancel left
    assert not _turn(engine, uid, ["model", "output"], "three").canceled
    head = engine.get(uid).last_seq

    report = _replayed(engine, uid)
    assert report.identical, report.divergence
    assert (report.executions, report.replayed, report.model_calls) == (3, 3, 0)
    assert engine.get(uid).last_seq == head  # replay writes nothing


def test_the_abandoned_call_keeps_its_model_call_and_no_partial_answer(
    engine: LocalSessions,
) -> None:
    uid = _session(engine)
    stopped = _turn(engine, uid, ["model:abandon", "output"])
    assert stopped.canceled and stopped.outputs == ()
    assert "".join(DELTAS) == "the "  # streamed to the caller, never recorded
    assert _kinds_of_turn(engine, uid, stopped.execution_id)[2:] == [CALL, LC, END]
    report = _replayed(engine, uid)
    assert report.identical and report.outputs == ()
    assert report.replayed == 1


def _cancel_case(engine: LocalSessions, steps: list[str]) -> str:
    uid = _session(engine)
    _turn(engine, uid, ["model", "output"], "one")
    assert _turn(engine, uid, steps, "two").canceled
    _turn(engine, uid, ["model", "output"], "three")
    return uid


@pytest.mark.parametrize(
    ("skew", "why"),
    [
        ("first-output", "harness asked for an output but seq"),  # another effect
        ("nothing", "consumed 0 of"),  # stops before the recorded effects (I5)
        ("prompt", "model input differs"),  # the abandoned call's input (I0)
    ],
)
def test_a_canceled_turn_that_replays_otherwise_still_diverges(
    engine: LocalSessions, skew: str, why: str
) -> None:
    uid = _cancel_case(engine, ["model:abandon", "output"])
    Hooks.skew = skew
    report = _replayed(engine, uid)
    assert not report.identical
    assert why in report.divergence
    assert report.replayed == 1  # the first turn replayed; the canceled one diverged
    assert report.diverged_execution


def test_a_canceled_turn_whose_harness_fails_before_the_cancel_point_diverges(
    engine: LocalSessions,
) -> None:
    uid = _cancel_case(engine, ["model", "cancel", "output"])
    Hooks.skew = "boom"  # the record has no ERROR: a harness that now raises is not it
    report = _replayed(engine, uid)
    assert not report.identical
    assert "harness failed on replay: broke before the cancel point" in report.divergence
    assert report.replayed == 1


def test_a_failed_turn_closed_by_cancel_replays_identical(engine: LocalSessions) -> None:
    uid = _session(engine)
    _turn(engine, uid, ["model", "output"], "one")
    with pytest.raises(HarnessError):
        _turn(engine, uid, ["model", "boom"], "two")
    assert engine.cancel(uid).exec_state == "EXEC_CANCELED"  # the failed turn was open
    _turn(engine, uid, ["model", "output"], "three")
    report = _replayed(engine, uid)
    assert report.identical, report.divergence
    assert (report.executions, report.replayed) == (3, 3)


def test_a_turn_whose_process_died_mid_call_closed_by_cancel_replays_identical(
    engine: LocalSessions,
) -> None:
    donor = _session(engine)
    _turn(engine, donor, ["model", "output"], "one")
    _turn(engine, donor, ["model", "output"], "two")
    events = [r.event for r in engine.read(donor)]
    second = [i for i, e in enumerate(events) if e["kind"] == "EVENT_EXECUTION_START"][1]
    uid = new_uid()
    engine.store.create(SessionMeta(uid=uid, harness="steps", model="steps"))
    with engine.store.writer(uid) as writer:  # turn two died after its MODEL_CALL
        writer.append(events[: second + 3])
    assert engine.cancel(uid).exec_state == "EXEC_CANCELED"
    _turn(engine, uid, ["model", "output"], "three")
    report = _replayed(engine, uid)
    assert report.identical, report.divergence
    assert (report.executions, report.replayed) == (3, 3)


def test_a_parked_turn_closed_by_cancel_replays_identical(
    engine: LocalSessions, tmp_path: Path
) -> None:
    workload = tmp_path / "w.toml"
    workload.write_text(
        '[tools.append]\nmediation = "approval"\nexecutor = "append_line"\n'
        f'config = {{ path = "{tmp_path / "effects.txt"}" }}\n'
        '[tools.note]\nmediation = "mediated"\nexecutor = "append_line"\n'
        f'config = {{ path = "{tmp_path / "notes.txt"}" }}\n'
    )
    uid = engine.create(harness="tool-line", tools=workload).uid
    call = {"id": "c1", "tool": "append", "key": "k-c1", "args": {"line": "x"},
            "mediation": "MEDIATION_REQUIRES_APPROVAL"}  # fmt: skip
    with pytest.raises(ApprovalParkedError):
        engine.run(uid, ["go"], config=plan(call))
    assert engine.cancel(uid).exec_state == "EXEC_CANCELED"
    engine.run(uid, ["again"], config=plan(line_call("c2", "noted", tool="note")))
    report = _replayed(engine, uid)
    assert report.identical, report.divergence
    assert (report.executions, report.replayed) == (2, 2)
    assert not (tmp_path / "effects.txt").exists()  # the gated call never ran
    assert (tmp_path / "notes.txt").read_text() == "noted\n"  # once: replay runs no tool


def test_a_fork_child_that_inherits_a_canceled_turn_replays_identical(
    engine: LocalSessions,
) -> None:
    uid = _cancel_case(engine, ["model:abandon", "output"])
    canceled_end = next(
        r.seq
        for r in engine.read(uid)
        if r.event["kind"] == "EVENT_END" and r.event["end"]["state"] == "CANCELED"
    )
    child = engine.fork(uid, at=canceled_end)[0].uid
    _turn(engine, child, ["model", "output"], "in the child")
    report = _replayed(engine, child)
    assert report.identical, report.divergence
    assert (report.executions, report.replayed) == (3, 3)  # one, the canceled two, the child's


def test_a_memory_harness_replays_a_canceled_turn_on_its_one_instance() -> None:
    """The counter's turn two was canceled after its first of two outputs: the instance that
    replays turn three must have counted it (skipping it would replay ``count:2``)."""
    store = MemoryStore()
    uid = store.create(SessionMeta(uid=new_uid(), harness="counter")).uid
    writer = store.writer(uid)
    turns = [(["a"], ["count:1"], "COMPLETED"), (["b", "c"], ["count:2"], "CANCELED"),
             (["d"], ["count:3"], "COMPLETED")]  # fmt: skip
    for n, (inputs, outputs, state) in enumerate(turns, start=1):
        exec_id = f"{n:016x}"
        events: list[dict[str, Any]] = [construct.execution_start(
            input_count=len(inputs), harness="counter", harness_version="1",
            execution_id=exec_id)]  # fmt: skip
        events += [construct.input_event(construct.text_message("user", t), execution_id=exec_id)
                   for t in inputs]  # fmt: skip
        events += [construct.output_event(construct.text_message("assistant", t),
                                          execution_id=exec_id)
                   for t in outputs]  # fmt: skip
        if state == "CANCELED":
            events += cancel_module.cancel_events(exec_id)
        else:
            events.append(construct.end_event(state, execution_id=exec_id))
        for event in events:
            writer.append([event], expected_last_seq=writer.head[0])
    writer.close()
    registry: Registry[Harness] = Registry("harness", "agentsessions.test.none")
    registry.register("counter", counter.create)
    result = replay(store, uid, registry)
    assert result.identical, result.divergence
    assert (result.executions, result.replayed, result.model_calls) == (3, 3, 0)
    assert result.outputs == ["count:1", "count:2", "count:3"]
