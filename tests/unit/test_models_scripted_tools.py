"""The scripted model's tool calls: a ``file=`` script entry may ask for tools.

An entry is a string (a text answer) or ``{"text": ..., "tool_calls": [{"name", "arguments"}]}``;
the completion holds the text part (if any) and one ``tool_call`` part per call with the
deterministic id ``call-<entry>-<n>``. The script is validated whole when it is loaded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentsessions.controller.spi import ModelRequest
from agentsessions.errors import InvalidArgumentError, UnavailableError
from agentsessions.models import ScriptedModel, create_model
from agentsessions.models.scripted import Answer, ScriptedCall
from agentsessions.v1.construct import text_message
from agentsessions.v1.schema import validate_message

ASK = ModelRequest(model="", messages=(dict(text_message("user", "q")),))


def script(tmp_path: Path, entries: Any, name: str = "script.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(entries), encoding="utf-8")
    return path


def test_entries_answer_text_and_tool_calls_in_order(tmp_path: Path) -> None:
    path = script(
        tmp_path,
        [
            {
                "text": "let me write that",
                "tool_calls": [{"name": "append_line", "arguments": {"line": "hi", "n": 2}}],
            },
            {"tool_calls": [{"name": "a"}, {"name": "b", "arguments": {"deep": {"x": [1.5]}}}]},
            "done",
            {"text": "plain object"},
        ],
    )
    model = create_model(f"scripted:file={path}")

    got = [model.complete(ASK).message for _ in range(4)]

    assert got == [
        {
            "role": "assistant",
            "parts": [
                {"text": {"text": "let me write that"}},
                {
                    "tool_call": {
                        "id": "call-0-0",
                        "tool": "append_line",
                        "args": {"line": "hi", "n": 2},
                    }
                },
            ],
        },
        {
            "role": "assistant",
            "parts": [
                {"tool_call": {"id": "call-1-0", "tool": "a", "args": {}}},
                {"tool_call": {"id": "call-1-1", "tool": "b", "args": {"deep": {"x": [1.5]}}}},
            ],
        },
        {"role": "assistant", "parts": [{"text": {"text": "done"}}]},
        {"role": "assistant", "parts": [{"text": {"text": "plain object"}}]},
    ]
    for msg in got:
        validate_message(msg, "Message", "message")
    with pytest.raises(UnavailableError, match="call 5 but only 4 answers"):
        model.complete(ASK)


def test_the_ids_are_the_same_in_every_run(tmp_path: Path) -> None:
    path = script(tmp_path, [{"tool_calls": [{"name": "t", "arguments": {"k": "v"}}]}])
    first = ScriptedModel.from_file(path).complete(ASK)
    again = ScriptedModel.from_file(path).complete(ASK)
    assert first == again


def test_only_the_text_is_streamed(tmp_path: Path) -> None:
    path = script(
        tmp_path,
        [{"text": "two words", "tool_calls": [{"name": "t"}]}, {"tool_calls": [{"name": "t"}]}],
    )
    model = ScriptedModel.from_file(path)
    deltas: list[str] = []
    model.complete(ASK, deltas.append)
    assert deltas == ["two ", "words"]
    deltas.clear()
    model.complete(ASK, deltas.append)
    assert deltas == []


def test_answers_may_be_given_in_code() -> None:
    call = ScriptedCall("note", {"text": "x"})
    model = ScriptedModel(answers=["hi", Answer("", (call,))])
    assert model.complete(ASK).message["parts"] == [{"text": {"text": "hi"}}]
    assert model.complete(ASK).message["parts"] == [
        {"tool_call": {"id": "call-1-0", "tool": "note", "args": {"text": "x"}}}
    ]


@pytest.mark.parametrize(
    ("entries", "error"),
    [
        ([{"txt": "typo"}], r"entry 0: unknown key 'txt' \(known: text, tool_calls, overflow\)"),
        (["ok", {}], "entry 1: an object answer needs text or tool_calls"),
        ([{"text": 3}], "entry 0: text must be a string, got a number"),
        ([{"tool_calls": {"name": "t"}}], "entry 0: tool_calls must be an array, got an object"),
        ([{"tool_calls": ["t"]}], r"entry 0 tool_calls\[0\]: expected an object, got a string"),
        (
            [{"tool_calls": [{"name": "t", "args": {}}]}],
            r"entry 0 tool_calls\[0\]: unknown key 'args'",
        ),
        (
            [{"tool_calls": [{"arguments": {}}]}],
            r"entry 0 tool_calls\[0\]: name must be a non-empty",
        ),
        ([{"tool_calls": [{"name": ""}]}], r"entry 0 tool_calls\[0\]: name must be a non-empty"),
        (
            ["a", "b", {"tool_calls": [{"name": "t"}, {"name": "t", "arguments": [1]}]}],
            r"entry 2 tool_calls\[1\]: arguments must be an object, got an array",
        ),
        ([None], "entry 0: expected a string or an object, got null"),
        ([True], "entry 0: expected a string or an object, got a boolean"),
    ],
)
def test_a_bad_script_is_refused_naming_file_and_entry(
    tmp_path: Path, entries: Any, error: str
) -> None:
    path = script(tmp_path, entries)
    with pytest.raises(InvalidArgumentError, match=rf"scripted model: .*script\.json {error}"):
        create_model(f"scripted:file={path}")


def test_nan_in_a_script_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text('[{"tool_calls": [{"name": "t", "arguments": {"x": NaN}}]}]')
    with pytest.raises(InvalidArgumentError, match="is not JSON: NaN"):
        create_model(f"scripted:file={path}")


def test_a_text_file_cannot_script_tool_calls(tmp_path: Path) -> None:
    """One answer per line stays plain text, even one that looks like JSON."""
    path = tmp_path / "answers.txt"
    path.write_text('{"tool_calls": [{"name": "t"}]}\n', encoding="utf-8")
    parts = ScriptedModel.from_file(path).complete(ASK).message["parts"]
    assert parts == [{"text": {"text": '{"tool_calls": [{"name": "t"}]}'}}]


def test_a_turn_resumed_in_a_new_process_continues_the_script(tmp_path: Path) -> None:
    """After an approval or a crash, a fresh instance sees the turn's earlier answers in the
    request and gives the next entry, not the first again."""
    script = tmp_path / "s.json"
    script.write_text(
        json.dumps([{"tool_calls": [{"name": "append_line", "arguments": {"line": "x"}}]}, "Done."])
    )
    first = ScriptedModel.from_file(script).complete(
        ModelRequest(model="m", messages=[dict(text_message("user", "go"))])
    )
    call = first.message["parts"][-1]["tool_call"]
    follow_up = [
        dict(text_message("user", "go")),
        first.message,
        {"role": "tool", "parts": [{"tool_result": {"id": call["id"], "output": {"ok": True}}}]},
    ]
    fresh = ScriptedModel.from_file(script)  # a new process: its own count starts at 1
    again = fresh.complete(ModelRequest(model="m", messages=follow_up))
    assert again.message["parts"] == [{"text": {"text": "Done."}}]
    # a new turn (the user spoke last) still starts where this instance's count is
    new_turn = [*follow_up, again.message, dict(text_message("user", "more"))]
    assert (
        ScriptedModel.from_file(script)
        .complete(ModelRequest(model="m", messages=new_turn))
        .message["parts"][-1]
        .get("tool_call", {})
        .get("tool")
        == "append_line"
    )
