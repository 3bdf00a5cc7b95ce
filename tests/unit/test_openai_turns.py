"""The OpenAI-compatible provider in whole turns, as a real server would see them (issue 17,
section 7): the model's own name on the wire, usage journaled per call, the turn's model on
the record, an empty answer, hints that survive, and no keyless request to the public API.

The fake server (``tests/fake_openai.py``) refuses unknown models and requests without the
fields real servers require, so what passes here would pass a real server too; the e2e test
``tests/e2e/test_litellm.py`` drives the same paths against LiteLLM's proxy.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import (
    USAGE,
    Endpoint,
    chat_reply,
    chunk,
    compatible_reply,
    json_reply,
    request_problem,
    serve,
    sse_reply,
    tool_call,
    tool_calling_reply,
)

from agentsessions.controller.spi import ModelRequest
from agentsessions.errors import HarnessError, UnavailableError
from agentsessions.models import OpenAIModel, create_model
from agentsessions.sessions.local import LocalSessions, open_local
from agentsessions.sessions.usage import usage_totals
from agentsessions.v1 import workloadref
from agentsessions.v1.construct import text_message


@pytest.fixture(autouse=True)
def _no_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MODEL_API_KEY", "OPENAI_API_KEY", "MODEL_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    with serve() as state:
        state.reply = compatible_reply(state)
        yield state


def ask(text: str, model: str = "") -> ModelRequest:
    return ModelRequest(model=model, messages=(dict(text_message("user", text)),))


def kinds(engine: LocalSessions, uid: str, since: int = 1) -> list[str]:
    return [str(r.event["kind"]).removeprefix("EVENT_") for r in engine.read(uid, from_seq=since)]


def spec(endpoint: Endpoint, model: str = "gpt-test") -> str:
    return f"openai:{model},base_url={endpoint.url}"


# --------------------------------------------------------------------------- the wire


def test_a_spec_as_request_model_sends_the_models_own_name(endpoint: Endpoint) -> None:
    provider = create_model(spec(endpoint))
    provider.complete(ask("q", model=spec(endpoint)))
    provider.complete(ask("q", model="openai:gpt-test"))
    assert [s.body["model"] for s in endpoint.seen] == ["gpt-test", "gpt-test"]


def test_a_session_on_an_openai_spec_reaches_the_fake_by_name(
    endpoint: Endpoint, tmp_path: Path
) -> None:
    with open_local(tmp_path / "home") as engine:
        last = engine.run(None, ["hello"], harness="chat", model=spec(endpoint))
        assert last.turn is not None and last.turn.outputs == ("fake:hello",)
    assert endpoint.seen[-1].body["model"] == "gpt-test"


def test_the_fake_refuses_an_unknown_model_as_real_servers_do(endpoint: Endpoint) -> None:
    with pytest.raises(UnavailableError, match="HTTP 404: The model `nope` does not exist") as e:
        create_model(spec(endpoint, "nope")).complete(ask("q"))
    assert "model name" in e.value.hint


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"messages": []}, "non-empty"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "role must be"),
        ({"messages": [{"role": "tool", "tool_call_id": "c1", "content": "x"}]}, "tool_call_id"),
        (
            {"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]},
            "function name",
        ),
        (
            {"messages": [{"role": "user", "content": "x"}], "stream_options": {}},
            "only allowed when stream",
        ),
    ],
)
def test_the_fake_refuses_what_real_servers_refuse(body: dict[str, Any], problem: str) -> None:
    assert problem in request_problem(body)


def test_the_public_endpoint_without_a_key_is_refused_before_sending(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    connects: list[object] = []
    monkeypatch.setattr(OpenAIModel, "_post", lambda *a: connects.append(a))
    with pytest.raises(UnavailableError, match="needs an API key") as caught:
        create_model("openai:gpt-4o-mini").complete(ask("secret question"))
    assert "MODEL_API_KEY" in caught.value.hint
    with open_local(tmp_path / "home") as engine:
        uid = engine.create(harness="chat", model="openai:gpt-4o-mini").uid
        with pytest.raises(HarnessError, match="needs an API key") as failed:
            engine.run(uid, ["secret question"])
        assert "export MODEL_API_KEY" in failed.value.hint
        assert kinds(engine, uid) == ["EXECUTION_START", "INPUT", "MODEL_CALL", "ERROR"]
    assert connects == []  # nothing was sent
    monkeypatch.setenv("MODEL_API_KEY", "sk-test")
    assert create_model("openai:gpt-4o-mini").has_key  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- empty answers


@pytest.mark.parametrize("streamed", [False, True])
def test_an_empty_answer_is_a_failed_call(endpoint: Endpoint, streamed: bool) -> None:
    if streamed:
        endpoint.reply = sse_reply(chunk(role="assistant"), chunk(finish="stop"), "[DONE]")
    else:
        endpoint.reply = json_reply(200, chat_reply("", USAGE))
    with pytest.raises(UnavailableError, match="returned an empty answer"):
        create_model(spec(endpoint)).complete(ask("q"), (lambda _: None) if streamed else None)


def test_an_empty_answer_fails_the_turn_and_records_no_output(
    endpoint: Endpoint, tmp_path: Path
) -> None:
    endpoint.reply = json_reply(200, chat_reply(None))
    with open_local(tmp_path / "home") as engine:
        uid = engine.create(harness="chat", model=spec(endpoint)).uid
        with pytest.raises(HarnessError, match="empty answer") as caught:
            engine.run(uid, ["q"])
        assert "resume" in caught.value.hint
        assert kinds(engine, uid) == ["EXECUTION_START", "INPUT", "MODEL_CALL", "ERROR"]
        assert engine.get(uid).exec_state == "EXEC_FAILED"


# --------------------------------------------------------------------------- hints


def test_a_providers_hint_survives_the_failed_turn(endpoint: Endpoint, tmp_path: Path) -> None:
    endpoint.reply = json_reply(429, {"error": {"message": "slow down"}})
    with open_local(tmp_path / "home") as engine:
        uid = engine.create(harness="chat", model=spec(endpoint)).uid
        with pytest.raises(HarnessError, match="HTTP 429: slow down") as caught:
            engine.run(uid, ["q"])
    assert caught.value.hint == "the endpoint is rate limiting; retry later"


# --------------------------------------------------------------------------- usage


def _workload(tmp_path: Path) -> Path:
    path = tmp_path / "tools.toml"
    log = tmp_path / "log.txt"
    path.write_text(
        "[tools.append_line]\n"
        'mediation = "mediated"\n'
        'executor = "append_line"\n'
        f"config = {{ path = {json.dumps(str(log))} }}\n"
    )
    return path


@pytest.mark.parametrize("streamed", [False, True])
def test_usage_is_journaled_per_model_call_and_replayed(
    endpoint: Endpoint, tmp_path: Path, streamed: bool
) -> None:
    calls = [tool_call("call_1", "append_line", json.dumps({"line": "hi"}))]
    endpoint.reply = tool_calling_reply(endpoint, calls)
    with open_local(tmp_path / "home") as engine:
        turn = engine.exec if streamed else engine.run  # exec streams deltas, run does not
        frames = turn(
            None, ["log hi"], harness="chat", model=spec(endpoint), tools=_workload(tmp_path)
        )
        last = list(frames)[-1] if streamed else frames
        uid = last.session.uid  # type: ignore[union-attr]
        assert [s.body.get("stream", False) for s in endpoint.seen] == [streamed] * 2
        offered = endpoint.seen[0].body["tools"][0]["function"]  # the built-in's own schema
        assert offered["description"] == "Append one line of text to the log file."
        assert offered["parameters"]["required"] == ["line"]
        assert kinds(engine, uid) == [
            "EXECUTION_START", "INPUT",
            "MODEL_CALL", "OUTPUT", "USAGE",  # the call asking for the tool, and its usage
            "TOOL_CALL", "TOOL_RESULT",
            "MODEL_CALL", "OUTPUT", "USAGE",  # the answer after the result
            "END",
        ]  # fmt: skip
        usage = [r.event["usage"] for r in engine.read(uid) if r.event["kind"] == "EVENT_USAGE"]
        assert usage == [{"model": "gpt-test", "input_tokens": "12", "output_tokens": "3"}] * 2
        totals = usage_totals(engine.read(uid))
        assert (totals.input_tokens, totals.output_tokens, totals.records) == (24, 6, 2)
        seen = len(endpoint.seen)
        report = engine.rerun(uid)
        assert report.identical, report.divergence
        assert report.model_calls == 0 and len(endpoint.seen) == seen


# --------------------------------------------------------------------------- the turn's model


def test_the_turns_model_is_recorded_and_resume_uses_it(endpoint: Endpoint, tmp_path: Path) -> None:
    with open_local(tmp_path / "home") as engine:
        uid = engine.create(harness="chat", model="echo").uid
        engine.run(uid, ["on echo"])
        endpoint.reply = json_reply(500, {"error": {"message": "down"}})
        with pytest.raises(HarnessError, match="HTTP 500"):
            engine.run(uid, ["on the server"], model=spec(endpoint),
                       config=b'{"system_prompt": "be brief"}')  # fmt: skip
        start = [r.event for r in engine.read(uid) if r.event["kind"] == "EVENT_EXECUTION_START"]

        recorded = base64.b64decode(start[-1]["execution_start"]["config"])
        config, digest, model = workloadref.parse(recorded)
        assert (config, digest, model) == (b'{"system_prompt": "be brief"}', "", spec(endpoint))
        assert (
            workloadref.parse(base64.b64decode(start[0]["execution_start"].get("config", "")))[2]
            == ""
        )  # a turn on the session's own model records none
        endpoint.reply = compatible_reply(endpoint)
        sent = len(endpoint.seen)
        frames = list(engine.resume(uid))
        last = frames[-1].turn
        assert last is not None and last.outputs == ("fake:on the server",)
        assert len(endpoint.seen) == sent + 1  # resumed on the server, not on echo
        assert endpoint.seen[-1].body["messages"][0] == {"role": "system", "content": "be brief"}
        report = engine.rerun(uid)
        assert report.identical, report.divergence


# --------------------------------------------------------------------------- tool schemas


def test_a_builtin_offers_its_schema_unless_the_workload_says_its_own() -> None:
    from agentsessions.tools.workload import parse_workload

    bare = (
        '[tools.log]\nmediation = "mediated"\nexecutor = "append_line"\n'
        'config = { path = "/tmp/log.txt" }\n'
    )
    (tool,) = parse_workload(bare).definitions()
    assert tool["description"].startswith("Append one line")
    assert tool["input_schema"]["properties"]["line"]["type"] == "string"
    own = bare + 'description = "Write to the journal of the ship"\n'
    (tool,) = parse_workload(own).definitions()
    assert tool["description"] == "Write to the journal of the ship"  # the workload's own
    assert tool["input_schema"]["required"] == ["line"]  # the built-in's
    python = '[tools.f]\nmediation = "reported"\n'
    assert parse_workload(python).definitions() == ({"name": "f"},)


def test_the_model_line_of_the_config_envelope() -> None:
    digest = "ab" * 32
    both = workloadref.wrap(b"{}", digest, "openai:m,base_url=http://h/v1")
    assert workloadref.parse(both) == (b"{}", digest, "openai:m,base_url=http://h/v1")
    assert workloadref.split(both) == (b"{}", digest)
    alone = workloadref.wrap(b"cfg", "", "scripted:seed=7")
    assert alone == b"\x00agentsessions.model scripted:seed=7\ncfg"
    assert workloadref.parse(alone) == (b"cfg", "", "scripted:seed=7")
    assert workloadref.wrap(b"cfg", "") == b"cfg"  # no workload, no model: unchanged bytes
    assert workloadref.reserved(b"\x00agentsessions.model x\n")
    with pytest.raises(ValueError, match="control characters"):
        workloadref.wrap(b"", "", "openai:m\nx")
