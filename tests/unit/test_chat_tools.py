"""The chat harness runs the tool loop through the ``Sessions`` API (issue 9 item 2).

The workload gives the session an ``append_line`` tool (mediated), so a file's line count is
the effect count; the scripted model (``file=`` script) asks for tool calls and then answers
text. A recording model (registered below) shows what each request held.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentsessions.controller.spi import Completion, ModelRequest
from agentsessions.errors import HarnessError
from agentsessions.models import MODELS
from agentsessions.sessions.local import LocalSessions, open_local
from agentsessions.v1.construct import text_message
from harnesses import chat


class Recorder:
    """A model that answers from a list, asking for one append_line call first: it keeps
    every request it got, so a test can see the history the harness sent."""

    requests: list[ModelRequest] = []  # noqa: RUF012 (shared by every instance, on purpose)
    answers: list[dict[str, Any]] = []  # noqa: RUF012

    def complete(self, request: ModelRequest, on_delta: Callable[[str], None] | None = None) -> Any:
        Recorder.requests.append(request)
        return Completion(Recorder.answers.pop(0))


@pytest.fixture(autouse=True)
def _recorder(monkeypatch: pytest.MonkeyPatch) -> None:
    """``chat-recorder`` names the Recorder for this module's tests only (the registry is
    global: other tests list the known providers)."""
    monkeypatch.setitem(MODELS._factories, ("", "chat-recorder"), Recorder)


def _call_message(line: str, call_id: str = "c1", tool: str = "append_line") -> dict[str, Any]:
    args = {"line": line}
    return {
        "role": "assistant",
        "parts": [{"tool_call": {"id": call_id, "tool": tool, "args": args}}],
    }


def _workload(tmp_path: Path, tier: str = "mediated") -> tuple[Path, Path]:
    effects = tmp_path / "effects.txt"
    toml = tmp_path / "tools.toml"
    toml.write_text(
        "[tools.append_line]\n"
        f'mediation = "{tier}"\n'
        'executor = "append_line"\n'
        'description = "Append a line to the file"\n'
        'parameters = { type = "object", properties = { line = { type = "string" } } }\n'
        f"config = {{ path = {json.dumps(str(effects))} }}\n"
    )
    return toml, effects


def _script(tmp_path: Path, *entries: Any, name: str = "script.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(list(entries)))
    return f"scripted:file={path}"


def _append(line: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "append_line", "arguments": {"line": line}}]}


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _events(engine: LocalSessions, uid: str) -> list[dict[str, Any]]:
    return [dict(r.event) for r in engine.store.read(uid)]


def _kinds(engine: LocalSessions, uid: str) -> list[str]:
    return [str(e["kind"]).removeprefix("EVENT_") for e in _events(engine, uid)]


LOOP = ["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "TOOL_CALL", "TOOL_RESULT"]
ANSWER = ["MODEL_CALL", "OUTPUT", "END"]


def test_a_tool_call_runs_once_its_result_goes_back_and_replay_calls_nothing(
    tmp_path: Path,
) -> None:
    tools, effects = _workload(tmp_path)
    model = _script(tmp_path, _append("hello"), "done")
    with open_local(tmp_path / "home") as engine:
        last = engine.run(None, ["add hello"], harness="chat", model=model, tools=tools)
        uid = last.uid
        assert last.turn is not None
        assert last.turn.model_calls == 2
        assert last.turn.outputs[-1] == "done"
        assert _lines(effects) == ["hello"]
        assert _kinds(engine, uid) == LOOP + ANSWER
        events = _events(engine, uid)
        call = next(e["tool"] for e in events if e["kind"] == "EVENT_TOOL_CALL")
        exec_id = events[0]["execution_id"]
        assert call["mediation"] == "MEDIATION_CONTROLLER_MEDIATED"
        assert call["idempotency_key"] == f"{exec_id}:0:0:call-0-0"
        result = next(e["result"] for e in events if e["kind"] == "EVENT_TOOL_RESULT")
        assert result["id"] == "call-0-0" and not result.get("is_error")

        report = engine.rerun(uid)
        assert report.identical, report.divergence
        assert report.model_calls == 0
        assert _lines(effects) == ["hello"]  # the executor did not run again


def test_the_request_offers_the_workload_and_carries_the_call_and_result(
    tmp_path: Path,
) -> None:
    tools, effects = _workload(tmp_path)
    Recorder.requests.clear()
    Recorder.answers[:] = [_call_message("x"), dict(text_message("assistant", "ok"))]
    with open_local(tmp_path / "home") as engine:
        engine.run(None, ["go"], harness="chat", model="chat-recorder", tools=tools)
    first, second = Recorder.requests
    assert first.tools == (
        {
            "name": "append_line",
            "description": "Append a line to the file",
            "input_schema": {"type": "object", "properties": {"line": {"type": "string"}}},
        },
    )
    assert second.tools == first.tools
    assert second.messages[: len(first.messages)] == first.messages
    asked, answered = second.messages[len(first.messages) :]
    assert asked == _call_message("x")  # the completion as it came, never the host's copy
    assert answered["role"] == "tool"
    assert [p["tool_result"]["id"] for p in answered["parts"]] == ["c1"]
    assert _lines(effects) == ["x"]


def test_later_turns_see_earlier_calls_and_results_and_keys_stay_unique(tmp_path: Path) -> None:
    """Each process's script starts again, so both turns' calls are ``call-0-0``: the key
    holds the execution id, so the second line is written too (a key alone would have been
    served from the first call's receipt, or refused for other arguments)."""
    tools, effects = _workload(tmp_path)
    home = tmp_path / "home"
    with open_local(home) as engine:
        model = _script(tmp_path, _append("one"), "first done", name="a.json")
        uid = engine.run(None, ["add one"], harness="chat", model=model, tools=tools).uid
    Recorder.requests.clear()
    Recorder.answers[:] = [dict(text_message("assistant", "seen"))]
    with open_local(home) as engine:
        engine.run(uid, ["what happened?"], model="chat-recorder")
    (request,) = Recorder.requests
    roles = [m["role"] for m in request.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert request.messages[2]["parts"][0]["tool_call"]["id"] == "call-0-0"
    assert request.messages[3]["parts"][0]["tool_result"]["id"] == "call-0-0"
    with open_local(home) as engine:
        model = _script(tmp_path, _append("two"), "second done", name="b.json")
        engine.run(uid, ["add two"], model=model)
        assert _lines(effects) == ["one", "two"]
        keys = [e["tool"]["idempotency_key"] for e in _events(engine, uid) if "tool" in e]
        assert len(set(keys)) == 2
        report = engine.rerun(uid)
        assert report.identical, report.divergence
        assert (report.replayed, report.model_calls) == (3, 0)
    assert _lines(effects) == ["one", "two"]


def test_the_step_limit_ends_the_turn_with_an_error_before_the_extra_calls(
    tmp_path: Path,
) -> None:
    tools, effects = _workload(tmp_path)
    model = _script(tmp_path, _append("a"), _append("b"), _append("c"))
    with open_local(tmp_path / "home") as engine:
        uid = engine.create(harness="chat", tools=tools).uid
        with pytest.raises(HarnessError, match=r"after 2 model calls \(max_steps\)") as err:
            engine.run(uid, ["loop"], model=model, config=b'{"max_steps": 2}')
        assert err.value.exit_code == 14
        assert _lines(effects) == ["a"]  # the second completion's call never ran
        assert _kinds(engine, uid) == [*LOOP, "MODEL_CALL", "OUTPUT", "ERROR"]


def test_max_steps_must_be_a_positive_integer(tmp_path: Path) -> None:
    with (
        open_local(tmp_path / "home") as engine,
        pytest.raises(HarnessError, match="max_steps must be an integer >= 1"),
    ):
        engine.run(None, ["x"], harness="chat", config=b'{"max_steps": 0}')


def test_a_call_to_a_tool_not_offered_gets_an_error_result_and_the_turn_goes_on(
    tmp_path: Path,
) -> None:
    tools, effects = _workload(tmp_path)
    wrong = {"tool_calls": [{"name": "rm_rf", "arguments": {}}]}
    model = _script(tmp_path, wrong, "sorry")
    with open_local(tmp_path / "home") as engine:
        uid = engine.run(None, ["x"], harness="chat", model=model, tools=tools).uid
        kinds = _kinds(engine, uid)
        assert "TOOL_CALL" not in kinds  # nothing for the host to run
        result = next(e["result"] for e in _events(engine, uid) if "result" in e)
        assert result["is_error"] and "not offered (offered: append_line)" in result["error"]
        assert engine.rerun(uid).identical
    assert _lines(effects) == []


def test_reported_tools_are_not_offered(tmp_path: Path) -> None:
    toml = tmp_path / "tools.toml"
    toml.write_text('[tools.mine]\nmediation = "reported"\n')
    Recorder.requests.clear()
    Recorder.answers[:] = [dict(text_message("assistant", "ok"))]
    with open_local(tmp_path / "home") as engine:
        engine.run(None, ["go"], harness="chat", model="chat-recorder", tools=toml)
    assert Recorder.requests[0].tools == ()


def test_a_failed_model_call_mid_loop_resumes_without_running_the_tool_again(
    tmp_path: Path,
) -> None:
    """The turn's second model call fails after the tool ran; an inputless exec continues
    it: the first call and the tool are served from the journal (the I0 check passes on the
    rebuilt request, tool parts included), only the failed call is made again."""
    tools, effects = _workload(tmp_path)
    home = tmp_path / "home"
    Recorder.requests.clear()
    Recorder.answers[:] = [_call_message("once")]  # then the list is empty: the call fails
    with open_local(home) as engine:
        uid = engine.create(harness="chat", tools=tools).uid
        with pytest.raises(HarnessError, match="chat-recorder"):
            engine.run(uid, ["add it"], model="chat-recorder")
        assert _kinds(engine, uid)[-2:] == ["MODEL_CALL", "ERROR"]
    failed = Recorder.requests[-1]
    Recorder.answers[:] = [dict(text_message("assistant", "finished"))]
    with open_local(home) as engine:
        last = engine.run(uid, [])
        assert last.turn is not None and last.turn.resumed
        assert last.turn.model_calls == 1
        assert Recorder.requests[-1] == failed  # the same request, rebuilt from the record
        # the completion lands after the recorded MODEL_CALL (never a second one)
        assert _kinds(engine, uid)[-4:] == ["MODEL_CALL", "ERROR", "OUTPUT", "END"]
        assert _kinds(engine, uid).count("TOOL_CALL") == 1
        report = engine.rerun(uid)
        assert report.identical and report.model_calls == 0
    assert _lines(effects) == ["once"]


def _result_event(call_id: str) -> dict[str, Any]:
    return {"kind": "EVENT_TOOL_RESULT", "result": {"id": call_id, "output": {"ok": True}}}


def _output_event(message: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "EVENT_OUTPUT", "message": message}


def test_history_pairs_calls_with_results_and_drops_cut_exchanges() -> None:
    """A window starting at a result, a failed turn's unanswered call, and several results
    of one completion: the model gets only matched calls and results, results grouped."""
    two = {
        "role": "assistant",
        "parts": [
            {"text": {"text": "both"}},
            {"tool_call": {"id": "a", "tool": "t", "args": {}}},
            {"tool_call": {"id": "b", "tool": "t", "args": {}}},
        ],
    }
    events = [
        _result_event("cut"),  # its call lies before the window
        {"kind": "EVENT_INPUT", "message": dict(text_message("user", "q"))},
        _output_event(two),
        {"kind": "EVENT_TOOL_CALL", "tool": {"id": "a"}},  # the host's copy: not for the model
        _result_event("a"),
        _result_event("b"),
        _output_event(_call_message("lost", call_id="c")),  # the turn failed here
        {"kind": "EVENT_ERROR"},
        {"kind": "EVENT_INPUT", "message": dict(text_message("user", "again"))},
    ]
    out = chat.conversation(events)
    assert [m["role"] for m in out] == ["user", "assistant", "tool", "user"]
    assert out[1] == two
    assert [p["tool_result"]["id"] for p in out[2]["parts"]] == ["a", "b"]


def test_history_keeps_the_answered_calls_of_a_partly_answered_completion() -> None:
    two = {
        "role": "assistant",
        "parts": [
            {"tool_call": {"id": "a", "tool": "t", "args": {}}},
            {"tool_call": {"id": "b", "tool": "t", "args": {}}},
        ],
    }
    out = chat.conversation([_output_event(two), _result_event("a")])
    assert out == [
        {"role": "assistant", "parts": [two["parts"][0]]},
        {"role": "tool", "parts": [{"tool_result": _result_event("a")["result"]}]},
    ]


def test_an_empty_assistant_message_stays_as_it_always_was() -> None:
    """Sessions recorded before tools must get the same requests (their replay's I0)."""
    out = chat.conversation([_output_event({"role": "assistant"})])
    assert out == [{"role": "assistant"}]
