"""Compaction through the ``Sessions`` API (issue 9 item 5): history is never lost.

A recording model (registered below) answers every request with a text derived from it and
keeps the requests, so a test sees exactly what the chat harness sent after a compaction.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentsessions.controller.spi import Completion, ModelRequest
from agentsessions.errors import InvalidArgumentError, NothingToCompactError
from agentsessions.models import MODELS
from agentsessions.models.echo import message_text
from agentsessions.sessions.local import LocalSessions, open_local
from agentsessions.v1 import compaction
from agentsessions.v1.construct import text_message

SUMMARY = "SUMMARY: the user counted from 0 upwards."


class Recorder:
    """Answers ``SUMMARY`` to a compaction request and ``re:<last text>`` otherwise; keeps
    every request it got."""

    requests: list[ModelRequest] = []  # noqa: RUF012 (shared by every instance, on purpose)

    def complete(self, request: ModelRequest, on_delta: Callable[[str], None] | None = None) -> Any:
        Recorder.requests.append(request)
        last = message_text(request.messages[-1])
        text = SUMMARY if last.startswith("Summarise") else f"re:{last}"
        return Completion(dict(text_message("assistant", text)))


@pytest.fixture(autouse=True)
def _recorder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(MODELS._factories, ("", "compact-recorder"), Recorder)
    Recorder.requests = []


def _texts(request: ModelRequest) -> list[tuple[str, str]]:
    return [(str(m.get("role")), message_text(m)) for m in request.messages]


def _session(engine: LocalSessions, turns: int) -> str:
    uid = engine.run(None, ["turn 0"], harness="chat", model="compact-recorder").uid
    for i in range(1, turns):
        engine.run(uid, [f"turn {i}"])
    return uid


def _events(engine: LocalSessions, uid: str) -> list[dict[str, Any]]:
    return [dict(r.event) for r in engine.read(uid)]


def test_a_compacted_30_turn_session_sends_summary_last_two_turns_and_input(
    tmp_path: Path,
) -> None:
    with open_local(tmp_path / "home") as engine:
        uid = _session(engine, 30)
        before = _events(engine, uid)
        frame = engine.compact(uid, keep_turns=2)
        assert frame.turn is not None and frame.turn.model_calls == 1
        # the compaction request: summarising prompt, the 28 older turns, the ask
        ask = _texts(Recorder.requests[-1])
        assert ask[0][0] == "system" and ask[-1] == ("user", compaction_ask())
        assert ("user", "turn 27") in ask and ("user", "turn 28") not in ask

        events = _events(engine, uid)
        assert events[: len(before)] == before  # every original entry stays
        summary, marker = events[-3], events[-2]
        assert summary["kind"] == "EVENT_OUTPUT"
        assert summary["message"] == {"role": "assistant", "parts": [{"text": {"text": SUMMARY}}]}
        data = compaction.marker_data(marker)
        assert marker["message"]["role"] == "assistant"
        assert data is not None and data["from_seq"] == 1
        assert data["to_seq"] == 28 * 5  # five entries a turn; the last two turns are kept
        assert data["tokens_saved"] > 0

        engine.run(uid, ["new question"])
        assert _texts(Recorder.requests[-1]) == [
            ("system", "You are a helpful assistant."),
            ("assistant", SUMMARY),
            ("user", "turn 28"),
            ("assistant", "re:turn 28"),
            ("user", "turn 29"),
            ("assistant", "re:turn 29"),
            ("user", "new question"),
        ]
        calls = len(Recorder.requests)
        report = engine.rerun(uid)
        assert report.identical and report.model_calls == 0
        assert len(Recorder.requests) == calls
        assert not engine.verify(uid).first_bad_seq


def compaction_ask() -> str:
    from harnesses.chat import COMPACT_REQUEST

    return COMPACT_REQUEST


def test_a_second_compaction_covers_the_first_summary_and_stays_bounded(tmp_path: Path) -> None:
    with open_local(tmp_path / "home") as engine:
        uid = _session(engine, 6)
        engine.compact(uid, keep_turns=1)
        for i in range(6, 9):
            engine.run(uid, [f"turn {i}"])
        engine.compact(uid, keep_turns=1)
        ask = _texts(Recorder.requests[-1])
        assert ask[1] == ("assistant", SUMMARY)  # the first summary, as model output
        assert ("user", "turn 4") not in ask  # already summarised by the first
        assert ("user", "turn 5") in ask and ("user", "turn 8") not in ask
        marker = compaction.marker_data(_events(engine, uid)[-2])
        assert marker is not None and marker["from_seq"] == 1
        engine.run(uid, ["next"])
        roles = [r for r, _t in _texts(Recorder.requests[-1])]
        assert roles == ["system", "assistant", "user", "assistant", "user"]
        assert engine.rerun(uid).model_calls == 0


def test_request_size_after_compaction_does_not_grow_with_the_session(tmp_path: Path) -> None:
    sizes = []
    with open_local(tmp_path / "home") as engine:
        for turns in (15, 60):  # the kept turns' numbers have two digits either way
            uid = _session(engine, turns)
            engine.compact(uid, keep_turns=2)
            engine.run(uid, ["q"])
            sizes.append(len(json.dumps(Recorder.requests[-1].messages)))
    assert sizes[0] == sizes[1]


@pytest.mark.parametrize(("turns", "keep"), [(0, 2), (2, 2), (1, 3)])
def test_nothing_to_compact_is_refused_and_writes_nothing(
    tmp_path: Path, turns: int, keep: int
) -> None:
    with open_local(tmp_path / "home") as engine:
        if turns:
            uid = _session(engine, turns)
        else:
            uid = engine.create(harness="chat", model="compact-recorder").uid
        before = _events(engine, uid)
        with pytest.raises(NothingToCompactError) as caught:
            engine.compact(uid, keep_turns=keep)
        assert caught.value.exit_code == 17
        assert _events(engine, uid) == before


def test_a_compaction_with_nothing_new_since_the_last_is_refused(tmp_path: Path) -> None:
    with open_local(tmp_path / "home") as engine:
        uid = _session(engine, 4)
        engine.compact(uid, keep_turns=2)
        before = _events(engine, uid)
        with pytest.raises(NothingToCompactError):
            engine.compact(uid, keep_turns=2)
        assert _events(engine, uid) == before


def test_only_chat_sessions_compact_and_keep_turns_is_checked(tmp_path: Path) -> None:
    with open_local(tmp_path / "home") as engine:
        uid = engine.run(None, ["a"], harness="echo", model="echo").uid
        engine.run(uid, ["b"])
        with pytest.raises(InvalidArgumentError, match="only chat sessions compact"):
            engine.compact(uid, keep_turns=0)
        chat = _session(engine, 3)
        with pytest.raises(InvalidArgumentError, match="keep_turns"):
            engine.compact(chat, keep_turns=-1)


def test_the_compaction_bench_runs_in_quick_mode() -> None:
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, str(root / "bench" / "compact.py"), "--quick"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "compacted turn" in done.stdout and "x smaller" in done.stdout


OVER = json.dumps({"compact_over_bytes": 300, "compact_keep_turns": 2}).encode()


def test_a_turn_over_compact_over_bytes_compacts_itself_first(tmp_path: Path) -> None:
    with open_local(tmp_path / "home") as engine:
        uid = _session(engine, 10)
        small = engine.run(
            uid, ["small"], config=json.dumps({"compact_over_bytes": 10**6}).encode()
        )
        assert small.turn is not None and small.turn.model_calls == 1  # under: as ever
        count = len(Recorder.requests)
        frame = engine.run(uid, ["big"], config=OVER)
        assert frame.turn is not None and frame.turn.model_calls == 2
        summary_ask, request = Recorder.requests[count:]
        assert _texts(summary_ask)[-1] == ("user", compaction_ask())
        assert ("user", "turn 8") in _texts(summary_ask)  # turns 9 and "small" are kept
        assert _texts(request) == [
            ("system", "You are a helpful assistant."),
            ("assistant", SUMMARY),
            ("user", "turn 9"),
            ("assistant", "re:turn 9"),
            ("user", "small"),
            ("assistant", "re:small"),
            ("user", "big"),
        ]
        kinds = [str(e["kind"]).removeprefix("EVENT_") for e in _events(engine, uid)[-8:]]
        assert kinds == [
            "EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "OUTPUT", "MODEL_CALL",
            "OUTPUT", "END",
        ]  # fmt: skip
        marker = compaction.marker_data(_events(engine, uid)[-4])
        assert marker is not None and marker["to_seq"] == 9 * 5

        engine.run(uid, ["after"])  # the next turn keeps its own input and answer
        assert _texts(Recorder.requests[-1])[1:] == [
            ("assistant", SUMMARY),
            ("user", "turn 9"),
            ("assistant", "re:turn 9"),
            ("user", "small"),
            ("assistant", "re:small"),
            ("user", "big"),
            ("assistant", "re:big"),
            ("user", "after"),
        ]
        calls = len(Recorder.requests)
        report = engine.rerun(uid)
        assert report.identical and report.model_calls == 0 and len(Recorder.requests) == calls


def test_a_bad_compact_over_bytes_fails_the_turn(tmp_path: Path) -> None:
    from agentsessions.errors import HarnessError

    with open_local(tmp_path / "home") as engine:
        uid = _session(engine, 1)
        with pytest.raises(HarnessError, match="compact_over_bytes"):
            engine.run(uid, ["x"], config=b'{"compact_over_bytes": -1}')
