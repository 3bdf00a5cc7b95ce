"""ONE contract suite that every ModelProvider passes: echo, scripted, OpenAI-compatible.

A provider joins by adding a :class:`Case` to ``CASES``: how to make it, what it claims
(deterministic, reports usage), if it has one a way to make it fail, and if it can call tools
a way to make it ask for :data:`LOOKUP_CALL` (the tool loop's round trip: the call comes back
as a ``tool_call`` part, and the follow-up request carrying its result is answered). Echo is
exempt from the tool cases (it only echoes text), and so are the scripted model's seed and
random modes: only a script can make it call a tool. The OpenAI
provider runs against a real chat-completions server on 127.0.0.1 (``fake_openai``), both
plain and streamed. Tests skip on a claim a provider does not make, never on its name.

Each promise is a ``check_*`` function so that the suite can be run on deliberately broken
providers too (the last section): a check that passes a broken provider is worthless.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fake_openai import (
    Endpoint,
    compatible_reply,
    free_port,
    json_reply,
    serve,
    tool_call,
    tool_calling_reply,
)

from agentsessions.controller.spi import Completion, ModelProvider, ModelRequest
from agentsessions.errors import AgentSessionsError, UnavailableError
from agentsessions.models import create_model
from agentsessions.models.echo import message_text
from agentsessions.v1.construct import text_message
from agentsessions.v1.schema import validate_message


@dataclass(frozen=True)
class World:
    """What a case may use to build its provider: a temp dir and the fake endpoint."""

    tmp: Path
    endpoint: Endpoint


@dataclass(frozen=True)
class Case:
    """One provider under contract, and the claims it makes."""

    make: Callable[[World], ModelProvider]
    deterministic: bool = True  # a fresh instance answers the same calls the same way
    usage: bool = False  # every completion carries usage
    failing: tuple[Callable[[World], ModelProvider], ...] = ()  # each fails its next call
    remote: bool = False  # talks to its configured endpoint (and nothing else)
    # makes the provider answer a request offering LOOKUP with LOOKUP_CALL, then text
    tool_caller: Callable[[World], ModelProvider] | None = None
    # the tool results (call id, content) the provider's far end received last, if visible
    received: Callable[[World], list[tuple[str, str]]] | None = None


LOOKUP = {
    "name": "lookup",
    "description": "look a word up",
    "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
}
LOOKUP_CALL = {"name": "lookup", "arguments": {"q": "tea"}}
RESULT_TEXT = "tea: a drink"


def _script(world: World, answers: list[str]) -> Path:
    path = world.tmp / "answers.json"
    path.write_text(json.dumps(answers))
    return path


def _scripted_file(world: World) -> ModelProvider:
    return create_model(f"scripted:file={_script(world, ['first answer', 'second', 'third'])}")


def _openai(world: World) -> ModelProvider:
    world.endpoint.reply = compatible_reply(world.endpoint)
    return create_model("openai:gpt-fake", options={"base_url": world.endpoint.url})


def _scripted_tools(world: World) -> ModelProvider:
    path = world.tmp / "tools.json"
    path.write_text(json.dumps([{"tool_calls": [LOOKUP_CALL]}, "looked it up"] * 2))
    return create_model(f"scripted:file={path}")


def _openai_tools(world: World) -> ModelProvider:
    arguments = json.dumps(LOOKUP_CALL["arguments"])
    world.endpoint.reply = tool_calling_reply(
        world.endpoint, [tool_call("call_1", str(LOOKUP_CALL["name"]), arguments)]
    )
    return create_model("openai:gpt-fake", options={"base_url": world.endpoint.url})


def _openai_received(world: World) -> list[tuple[str, str]]:
    messages = world.endpoint.seen[-1].body["messages"]
    return [(m["tool_call_id"], m["content"]) for m in messages if m["role"] == "tool"]


def _openai_failing(world: World) -> ModelProvider:
    world.endpoint.reply = json_reply(503, {"error": {"message": "overloaded"}})
    return create_model("openai:gpt-fake", options={"base_url": world.endpoint.url})


def _openai_unreachable(world: World) -> ModelProvider:
    return create_model("openai:gpt-fake", options={"base_url": f"http://127.0.0.1:{free_port()}"})


CASES: dict[str, Case] = {
    "echo": Case(lambda w: create_model("echo")),
    "scripted-seed": Case(lambda w: create_model("scripted:seed=7")),
    "scripted-random": Case(
        lambda w: create_model("scripted:nondeterministic=1"), deterministic=False
    ),
    "scripted-file": Case(
        _scripted_file,
        failing=(lambda w: create_model(f"scripted:file={_script(w, [])}"),),
        tool_caller=_scripted_tools,  # answers from its script: nothing to observe beyond
    ),
    # fails by an HTTP error status, and by connection refused
    "openai": Case(
        _openai,
        usage=True,
        failing=(_openai_failing, _openai_unreachable),
        remote=True,
        tool_caller=_openai_tools,
        received=_openai_received,
    ),
}


@pytest.fixture(autouse=True)
def _no_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MODEL_API_KEY", "OPENAI_API_KEY", "MODEL_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    with serve() as endpoint:
        yield World(tmp_path, endpoint)


@pytest.fixture(params=sorted(CASES))
def case(request: pytest.FixtureRequest) -> Case:
    return CASES[request.param]


def ask(*texts: str) -> ModelRequest:
    """A request of one user message per text, for the provider's own model."""
    return ModelRequest(model="", messages=tuple(dict(text_message("user", t)) for t in texts))


class Connections:
    """Every outgoing TCP/Unix ``connect`` made while installed, by address."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.addresses: list[Any] = []
        original = socket.socket.connect
        seen = self.addresses

        def connect(sock: socket.socket, address: Any) -> None:
            seen.append(address)
            original(sock, address)

        monkeypatch.setattr(socket.socket, "connect", connect)


# --------------------------------------------------------------------------- the checks


def check_answers_as_assistant(model: ModelProvider) -> Completion:
    """A request gets one valid assistant message with some text."""
    completion = model.complete(ask("hello there"))
    assert isinstance(completion, Completion)
    assert completion.message.get("role") == "assistant", completion.message
    validate_message(completion.message, "Message", "message")
    assert message_text(completion.message), "an answer to a text request has text"
    return completion


def check_stream_concatenates(model: ModelProvider) -> None:
    """Streamed deltas are non-empty and concatenate to exactly the completion's text."""
    deltas: list[str] = []
    completion = model.complete(ask("stream me some words please"), deltas.append)
    assert completion.message.get("role") == "assistant"
    assert deltas, "a streamed answer with text sends at least one delta"
    assert all(isinstance(d, str) and d for d in deltas), deltas
    assert "".join(deltas) == message_text(completion.message)


def check_deterministic(make: Callable[[], ModelProvider]) -> None:
    """Two fresh instances answer the same calls identically, streamed or not."""
    requests = [ask("one"), ask("one", "two"), ask("one")]

    def answers() -> list[Any]:
        model = make()
        out: list[Any] = []
        for request in requests:
            deltas: list[str] = []
            done = model.complete(request, deltas.append)
            out.append((done.message, done.usage, deltas))
        return out

    assert answers() == answers()


def check_usage(model: ModelProvider, claims: bool) -> None:
    """Usage is a valid ``Usage`` dict when the provider claims it, else None."""
    for on_delta in (None, lambda _: None):
        usage = model.complete(ask("count my tokens"), on_delta).usage
        if not claims:
            assert usage is None, usage
            continue
        assert usage is not None, "this provider claims to report usage"
        validate_message(usage, "Usage", "usage")
        assert any(int(usage.get(k, "0")) > 0 for k in ("input_tokens", "output_tokens"))


def check_failure_is_clear(model: ModelProvider) -> None:
    """A failed call raises the model-failed class (UnavailableError), one clear line."""
    with pytest.raises(AgentSessionsError) as caught:
        model.complete(ask("this call fails"))
    error = caught.value
    assert isinstance(error, UnavailableError), type(error)
    text = str(error)
    assert text and "\n" not in text and "Traceback" not in text
    assert len(text) < 400


def check_connects_only_to(model: ModelProvider, allowed: set[Any], seen: Connections) -> None:
    """Every connection a call makes goes to ``allowed`` (nothing at all when empty)."""
    before = len(seen.addresses)
    model.complete(ask("where do you go"))
    model.complete(ask("and streamed"), lambda _: None)
    made = seen.addresses[before:]
    assert set(made) <= allowed, f"connected to {made}, allowed {allowed}"
    if allowed:
        assert made, "a remote provider reaches its endpoint"


def tool_request(*messages: dict[str, Any]) -> ModelRequest:
    """A request offering LOOKUP (tool choice auto) after one user message."""
    history = (dict(text_message("user", "what is tea?")), *messages)
    return ModelRequest(
        model="", messages=history, tools=(LOOKUP,), tool_choice={"mode": "MODE_AUTO"}
    )


def check_tool_round_trip(
    model: ModelProvider, on_delta: Callable[[str], None] | None
) -> tuple[list[str], Completion]:
    """A tool-calling answer is ``tool_call`` parts (id, tool, args as an object), and the
    follow-up request carrying each call's result is answered with text.

    Returns the call ids and the follow-up's completion."""
    deltas: list[str] = []
    first = model.complete(tool_request(), deltas.append if on_delta else None)
    assert first.message.get("role") == "assistant", first.message
    validate_message(first.message, "Message", "message")
    if on_delta is not None:
        assert "".join(deltas) == message_text(first.message)
    calls = [p["tool_call"] for p in first.message.get("parts", []) if "tool_call" in p]
    assert calls, f"the answer asks for no tool: {first.message}"
    for call in calls:
        assert isinstance(call.get("id"), str) and call["id"], call
        assert call.get("tool") == LOOKUP_CALL["name"], call
        assert call.get("args") == LOOKUP_CALL["arguments"], f"args must be an object: {call}"
    results = {
        "role": "tool",
        "parts": [
            {"tool_result": {"id": call["id"], "content": [{"text": {"text": RESULT_TEXT}}]}}
            for call in calls
        ],
    }
    second = model.complete(tool_request(first.message, results), on_delta)
    check_is_text_answer(second)
    return [call["id"] for call in calls], second


def check_is_text_answer(completion: Completion) -> None:
    """An assistant message with text and no tool call (the loop can end here)."""
    assert completion.message.get("role") == "assistant", completion.message
    validate_message(completion.message, "Message", "message")
    parts = completion.message.get("parts", [])
    assert not any("tool_call" in p for p in parts), f"no tool call expected: {parts}"
    assert message_text(completion.message), "the answer after a tool result has text"


def _allowed(case: Case, world: World) -> set[Any]:
    if not case.remote:
        return set()
    port = int(world.endpoint.url.split(":")[2].split("/")[0])
    return {("127.0.0.1", port)}


# --------------------------------------------------------------------------- the contract


def test_answers_a_request_with_an_assistant_message(case: Case, world: World) -> None:
    check_answers_as_assistant(case.make(world))


def test_streamed_deltas_concatenate_to_the_final_text(case: Case, world: World) -> None:
    check_stream_concatenates(case.make(world))


def test_a_deterministic_provider_repeats_itself(case: Case, world: World) -> None:
    if not case.deterministic:
        pytest.skip("the provider does not claim determinism")
    check_deterministic(lambda: case.make(world))


def test_usage_is_reported_as_claimed(case: Case, world: World) -> None:
    check_usage(case.make(world), case.usage)


def test_a_failure_maps_to_the_error_tree(case: Case, world: World) -> None:
    if not case.failing:
        pytest.skip("the provider has no way to fail")
    for failing in case.failing:
        check_failure_is_clear(failing(world))


def test_no_network_beyond_the_configured_endpoint(
    case: Case, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = case.make(world)
    check_connects_only_to(model, _allowed(case, world), Connections(monkeypatch))


def test_the_request_is_not_mutated(case: Case, world: World) -> None:
    request = ask("keep me", "as I am")
    copy = json.loads(json.dumps([dict(m) for m in request.messages]))
    case.make(world).complete(request, lambda _: None)
    assert [dict(m) for m in request.messages] == copy


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_a_tool_call_round_trips_into_the_follow_up(
    case: Case, world: World, streamed: bool
) -> None:
    if case.tool_caller is None:
        pytest.skip("the provider does not call tools (echo and unscripted answers are text)")
    ids, _ = check_tool_round_trip(case.tool_caller(world), (lambda _: None) if streamed else None)
    if case.received is not None:
        assert case.received(world) == [(i, RESULT_TEXT) for i in ids]


def test_tool_calls_repeat_in_a_fresh_instance(case: Case, world: World) -> None:
    if case.tool_caller is None or not case.deterministic:
        pytest.skip("the provider does not call tools deterministically")
    make = case.tool_caller
    assert make(world).complete(tool_request()) == make(world).complete(tool_request())


# --------------------------------------------------------------------------- the suite itself


class WrongRole:
    """Answers as ``user``: the contract must refuse it."""

    def __init__(self, inner: ModelProvider) -> None:
        self.inner = inner

    def complete(
        self, request: ModelRequest, on_delta: Callable[[str], None] | None = None
    ) -> Completion:
        done = self.inner.complete(request, on_delta)
        return Completion({**done.message, "role": "user"}, done.usage)


class DropsLastDelta:
    """Streams every delta but the last."""

    def __init__(self, inner: ModelProvider) -> None:
        self.inner = inner

    def complete(
        self, request: ModelRequest, on_delta: Callable[[str], None] | None = None
    ) -> Completion:
        deltas: list[str] = []
        done = self.inner.complete(request, deltas.append)
        for delta in deltas[:-1]:
            if on_delta is not None:
                on_delta(delta)
        return done


class Raw:
    """Fails with a foreign exception instead of the error tree."""

    def complete(
        self, request: ModelRequest, on_delta: Callable[[str], None] | None = None
    ) -> Completion:
        raise ConnectionResetError("peer reset")


class Strays:
    """Answers offline but also phones another host."""

    def __init__(self, inner: ModelProvider, port: int) -> None:
        self.inner = inner
        self.port = port

    def complete(
        self, request: ModelRequest, on_delta: Callable[[str], None] | None = None
    ) -> Completion:
        with socket.create_connection(("127.0.0.1", self.port), timeout=5):
            pass
        return self.inner.complete(request, on_delta)


class ArgsAsString:
    """Passes the server's JSON arguments string through instead of an object."""

    def __init__(self, inner: ModelProvider) -> None:
        self.inner = inner

    def complete(
        self, request: ModelRequest, on_delta: Callable[[str], None] | None = None
    ) -> Completion:
        done = self.inner.complete(request, on_delta)
        parts = [
            {"tool_call": {**p["tool_call"], "args": {"raw": json.dumps(p["tool_call"]["args"])}}}
            if "tool_call" in p
            else p
            for p in done.message.get("parts", [])
        ]
        return Completion({**done.message, "parts": parts}, done.usage)


class DropsToolCalls:
    """Keeps only the text of an answer: the loop never sees the calls."""

    def __init__(self, inner: ModelProvider) -> None:
        self.inner = inner

    def complete(
        self, request: ModelRequest, on_delta: Callable[[str], None] | None = None
    ) -> Completion:
        done = self.inner.complete(request, on_delta)
        parts = [p for p in done.message.get("parts", []) if "tool_call" not in p]
        return Completion({"role": "assistant", **({"parts": parts} if parts else {})})


def test_the_suite_catches_broken_tool_calls(world: World) -> None:
    with pytest.raises(AssertionError, match="args must be an object"):
        check_tool_round_trip(ArgsAsString(_scripted_tools(world)), None)
    with pytest.raises(AssertionError, match="asks for no tool"):
        check_tool_round_trip(DropsToolCalls(_openai_tools(world)), None)
    with pytest.raises(AssertionError, match="no tool call"):
        check_is_text_answer(_scripted_tools(world).complete(tool_request()))


def test_the_suite_catches_a_wrong_role() -> None:
    with pytest.raises(AssertionError, match="role"):
        check_answers_as_assistant(WrongRole(create_model("echo")))


def test_the_suite_catches_a_dropped_delta() -> None:
    with pytest.raises(AssertionError):
        check_stream_concatenates(DropsLastDelta(create_model("scripted:seed=1")))


def test_the_suite_catches_nondeterminism_and_missing_usage() -> None:
    with pytest.raises(AssertionError):
        check_deterministic(lambda: create_model("scripted:nondeterministic=1"))
    with pytest.raises(AssertionError, match="claims to report usage"):
        check_usage(create_model("echo"), claims=True)


def test_the_suite_catches_a_foreign_failure() -> None:
    with pytest.raises(ConnectionResetError):
        check_failure_is_clear(Raw())


def test_the_suite_catches_a_stray_connection(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = int(world.endpoint.url.split(":")[2].split("/")[0])
    with pytest.raises(AssertionError, match="connected to"):
        check_connects_only_to(Strays(create_model("echo"), port), set(), Connections(monkeypatch))
