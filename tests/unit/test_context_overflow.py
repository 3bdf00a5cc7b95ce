"""Compaction when a request overflows (issue 9 loose end 3).

The OpenAI-compatible provider maps a context-length refusal (HTTP 400
``context_length_exceeded`` and the variants servers use) to ContextOverflowError; the chat
harness then compacts once, as ``compact`` does, and sends the request again. The journal
keeps the refused call (MODEL_CALL, then a refusal ERROR: ``agentsessions/v1/refusals.py``)
with the compaction's commit, and replay serves the refusal: the same path, 0 model calls.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_openai import OVERFLOWS, json_reply, messages_size, overflowing_reply, serve

from agentsessions.controller.spi import ModelRequest
from agentsessions.errors import ContextOverflowError, InvalidArgumentError, UnavailableError
from agentsessions.journal.tools.verify import verify_session
from agentsessions.models import create_model
from agentsessions.models.scripted import ScriptedModel
from agentsessions.sessions.local import LocalSessions, open_local
from agentsessions.v1 import refusals
from agentsessions.v1.construct import text_message


@pytest.fixture(autouse=True)
def _no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MODEL_API_KEY", "OPENAI_API_KEY", "MODEL_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def _kinds(engine: LocalSessions, uid: str, since: int = 1) -> list[str]:
    return [
        str(r.event["kind"]).removeprefix("EVENT_") for r in engine.store.read(uid, from_seq=since)
    ]


def _request(text: str = "hi") -> ModelRequest:
    return ModelRequest(model="", messages=(dict(text_message("user", text)),))


@pytest.mark.parametrize("variant", sorted(OVERFLOWS))
def test_the_provider_maps_each_overflow_variant_to_context_overflow(variant: str) -> None:
    status, body = OVERFLOWS[variant]
    with serve() as endpoint:
        endpoint.reply = json_reply(status, body)
        provider = create_model("openai:gpt-test", options={"base_url": endpoint.url})
        with pytest.raises(ContextOverflowError) as info:
            provider.complete(_request())
    assert info.value.exit_code == 14 and f"HTTP {status}" in str(info.value)
    assert "context window" in str(info.value)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (400, {"error": {"message": "Unrecognized request argument: foo", "code": None}}),
        (400, {"error": {"message": "temperature must be <= 2", "type": "invalid_request"}}),
        (500, {"error": {"message": "maximum context length is 4096 tokens"}}),
    ],
)
def test_other_errors_stay_endpoint_failures(status: int, body: dict[str, Any]) -> None:
    with serve() as endpoint:
        endpoint.reply = json_reply(status, body)
        provider = create_model("openai:gpt-test", options={"base_url": endpoint.url})
        with pytest.raises(UnavailableError):
            provider.complete(_request())


def _long_turns(engine: LocalSessions, uid: str, count: int) -> None:
    for n in range(count):
        engine.run(uid, [f"turn {n}: " + "lorem ipsum " * 30])


def test_an_overflowing_request_compacts_and_retries_and_replay_calls_nothing(
    tmp_path: Path,
) -> None:
    with serve() as endpoint, open_local(tmp_path / "home") as engine:
        endpoint.reply = overflowing_reply(endpoint, 10**9)
        model = f"openai:gpt-test,base_url={endpoint.url}"
        uid = engine.create(harness="chat", model=model).uid
        _long_turns(engine, uid, 5)
        # the next request holds one turn more than the last one sent: over this limit
        limit = messages_size(endpoint.seen[-1])
        endpoint.reply = overflowing_reply(endpoint, limit)
        before = engine.get(uid).last_seq
        sent = len(endpoint.seen)
        last = engine.run(uid, ["turn 5: " + "lorem ipsum " * 30])
        assert last.turn is not None and last.turn.outputs[-1].startswith("fake:turn 5")
        refused, summary, retry = endpoint.seen[sent:]
        assert messages_size(refused) > limit >= messages_size(retry)
        assert summary.body["messages"][-1]["content"] == "Summarise the conversation above."
        assert _kinds(engine, uid, before + 1) == [
            "EXECUTION_START", "INPUT",
            "MODEL_CALL", "ERROR",  # the refused call and its refusal
            "MODEL_CALL", "OUTPUT", "USAGE", "OUTPUT",  # the summary and the compaction marker
            "MODEL_CALL", "OUTPUT", "USAGE", "END",  # the request again, on the summary
        ]  # fmt: skip
        error = [r.event for r in engine.store.read(uid, from_seq=before + 1)][3]
        assert refusals.is_refusal(error) and "context_length" not in error["error"]["description"]
        assert "maximum context length" in error["error"]["description"]
        assert engine.get(uid).exec_state == "EXEC_COMPLETED"

        seen = len(endpoint.seen)
        report = engine.rerun(uid)
        assert report.identical, report.divergence
        assert report.model_calls == 0 and len(endpoint.seen) == seen
        assert verify_session(engine.store, uid).ok
        # the next turn is bounded by the summary: it fits without a refusal
        engine.run(uid, ["turn 6: short"])
        assert messages_size(endpoint.seen[-1]) <= limit and len(endpoint.seen) == seen + 1


def _script(tmp_path: Path, *entries: Any, name: str = "s.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(list(entries)))
    return f"scripted:file={path}"


def test_a_scripted_overflow_entry_refuses_that_call(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps([{"overflow": True}, "a"]))
    model = ScriptedModel.from_file(path)
    with pytest.raises(ContextOverflowError, match="entry 0"):
        model.complete(_request())
    assert model.complete(_request()).message["parts"][0]["text"]["text"] == "a"


def test_a_second_overflow_after_compacting_fails_the_turn_clearly(tmp_path: Path) -> None:
    over = {"overflow": True}
    model = _script(tmp_path, "a1", "a2", "a3", over, "the summary", over)
    with open_local(tmp_path / "home") as engine:
        uid = engine.create(harness="chat", model=model).uid
        for text in ("one", "two", "three"):
            engine.run(uid, [text])
        with pytest.raises(ContextOverflowError) as info:
            engine.run(uid, ["four"])
        assert info.value.exit_code == 14
        assert "still over the model's context window after compacting" in str(info.value)
        kinds = _kinds(engine, uid)
        assert kinds[-8:] == [
            "MODEL_CALL", "ERROR",  # refused
            "MODEL_CALL", "OUTPUT", "OUTPUT",  # compacted
            "MODEL_CALL", "ERROR",  # refused again
            "ERROR",  # the turn failed
        ]  # fmt: skip
        events = [r.event for r in engine.store.read(uid)]
        assert [refusals.is_refusal(e) for e in events[-8:]] == [
            False, True, False, False, False, False, True, False,
        ]  # fmt: skip
        assert "still over" in events[-1]["error"]["description"]
        assert engine.get(uid).exec_state == "EXEC_FAILED"
        assert engine.rerun(uid).identical  # the failed turn is audit


def test_an_overflow_with_nothing_to_compact_fails_the_turn_clearly(tmp_path: Path) -> None:
    with open_local(tmp_path / "home") as engine:
        model = _script(tmp_path, {"overflow": True})
        with pytest.raises(ContextOverflowError, match="nothing to compact"):
            engine.run(None, ["hello"], harness="chat", model=model)


def test_resume_serves_the_refusal_and_makes_only_the_missing_call(tmp_path: Path) -> None:
    """A turn that failed after compacting on an overflow (its retry's model was gone)
    resumes through the recorded refusal and compaction: one live call, the retry."""
    script = tmp_path / "s.json"
    entries: list[Any] = ["a1", "a2", "a3", {"overflow": True}, "the summary"]
    script.write_text(json.dumps(entries))
    home = tmp_path / "home"
    with open_local(home) as engine:
        uid = engine.create(harness="chat", model=f"scripted:file={script}").uid
        for text in ("one", "two", "three"):
            engine.run(uid, [text])
        with pytest.raises(Exception, match="only 5 answers"):
            engine.run(uid, ["four"])  # the retry finds the script exhausted: ERROR
    script.write_text(json.dumps(["after compaction"]))  # a new process, entry 1
    with open_local(home) as engine:
        frames = list(engine.resume(uid))
        turn = frames[-1].turn
        assert turn is not None and turn.model_calls == 1
        assert turn.outputs[-1] == "after compaction"
        assert engine.get(uid).exec_state == "EXEC_COMPLETED"
        assert engine.rerun(uid).identical


@pytest.mark.parametrize(
    "entry",
    [{"overflow": False}, {"overflow": True, "text": "x"}, {"overflow": 1}],
)
def test_a_malformed_overflow_entry_is_refused(tmp_path: Path, entry: dict[str, Any]) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([entry]))
    with pytest.raises(InvalidArgumentError, match="entry 0"):
        ScriptedModel.from_file(path)


class _Peeking:
    """Refuses its first call as over the context window; its next call (the summary) notes
    the session's last journaled event at that moment; then it answers."""

    store: Any = None
    uid = ""
    seen: list[str] = []  # noqa: RUF012 (shared by every instance, on purpose)

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, request: ModelRequest, on_delta: Any = None) -> Any:
        from agentsessions.controller.spi import Completion

        self.calls += 1
        if self.calls == 1:
            raise ContextOverflowError("peek: over the window")
        last = list(_Peeking.store.read(_Peeking.uid))[-1]
        _Peeking.seen.append(str(last.event["kind"]))
        return Completion(dict(text_message("assistant", f"answer {self.calls}")))


def test_the_refusal_is_never_the_journals_last_word(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the compaction's summary call is out, the refused call is not yet committed:
    a crash then leaves an interrupted turn (resume asks again), never one that looks
    failed; it is committed with the summary."""
    from agentsessions.models import MODELS

    monkeypatch.setitem(MODELS._factories, ("", "peek"), _Peeking)
    with open_local(tmp_path / "home") as engine:
        uid = engine.create(harness="chat", model=_script(tmp_path, "a1", "a2", "a3")).uid
        for text in ("one", "two", "three"):
            engine.run(uid, [text])
        _Peeking.store, _Peeking.uid, _Peeking.seen = engine.store, uid, []
        last = engine.run(uid, ["four"], model="peek")
        assert last.turn is not None and last.turn.outputs[-1] == "answer 3"
        assert _Peeking.seen == ["EVENT_INPUT", "EVENT_OUTPUT"]  # summary call, retry
        assert _kinds(engine, uid)[-10:] == [
            "EXECUTION_START", "INPUT", "MODEL_CALL", "ERROR", "MODEL_CALL", "OUTPUT", "OUTPUT",
            "MODEL_CALL", "OUTPUT", "END",
        ]  # fmt: skip
        assert engine.rerun(uid).identical
