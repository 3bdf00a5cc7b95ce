"""The reference harnesses (echo, counter, chat) driven by a recording fake Sink and History.

Each harness is checked for exactly the effects it sends through the sink, what it reads
from history (counter: nothing, I4), its descriptor, and that the registry finds it by name.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agentsessions
from agentsessions.controller.inputhash import model_input_hash
from agentsessions.controller.registry import Registry
from agentsessions.controller.spi import (
    REQUIRES_MEMORY_SNAPSHOT,
    STATELESS_REPLAY,
    Completion,
    Event,
    Harness,
    History,
    Message,
    ModelRequest,
    Start,
)
from agentsessions.errors import AgentSessionsError, HarnessError
from agentsessions.v1.construct import (
    end_event,
    input_event,
    model_call_event,
    output_event,
    text_message,
)
from harnesses import chat, counter, echo, memory

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(agentsessions.__file__).parent / "data" / "go-v0.1.2-completed.json"
HELLO_HASH = "2611c24a1a665deca46265ed96d1e1efc699260c9cba9c07f22cda7939232c30"


# --------------------------------------------------------------------------- fakes


class FakeSink:
    """Records every effect; the model answers ``echo:<text of the last message>``."""

    def __init__(self, fail_output: bool = False) -> None:
        self.requests: list[ModelRequest] = []
        self.outputs: list[Message] = []
        self.reports: list[dict[str, Any]] = []
        self.usages: list[dict[str, Any]] = []
        self.deltas: list[str] = []
        self.fail_output = fail_output

    def model(self, request: ModelRequest) -> Completion:
        self.requests.append(request)
        text = "".join(p.get("text", {}).get("text", "") for p in request.messages[-1]["parts"])
        return Completion(message=dict(text_message("assistant", f"echo:{text}")))

    def output(self, message: Message) -> None:
        if self.fail_output:
            raise AgentSessionsError("journal append failed")
        self.outputs.append(message)

    def report(self, result: dict[str, Any]) -> None:
        self.reports.append(result)

    def usage(self, usage: dict[str, Any]) -> None:
        self.usages.append(usage)

    def delta(self, text: str) -> None:
        self.deltas.append(text)

    @property
    def effects(self) -> int:
        return len(self.requests) + len(self.outputs) + len(self.reports) + len(self.usages)


class FakeHistory:
    """A list of events served from the tail; remembers each ``tail`` size asked for."""

    def __init__(self, events: list[Event]) -> None:
        self.events = events
        self.tails: list[int] = []
        self.iterated = False

    def __len__(self) -> int:
        return len(self.events)

    def __iter__(self) -> Iterator[Event]:
        self.iterated = True
        return iter(self.events)

    def tail(self, count: int) -> list[Event]:
        self.tails.append(count)
        return self.events[max(0, len(self.events) - count) :] if count > 0 else []


class UntouchableHistory:
    """A history that fails the test if anyone reads it (I4 for the counter)."""

    def __len__(self) -> int:
        raise AssertionError("history was read")

    def __iter__(self) -> Iterator[Event]:
        raise AssertionError("history was read")

    def tail(self, count: int) -> list[Event]:
        raise AssertionError("history was read")


def user(text: str) -> Message:
    return dict(text_message("user", text))


def assistant(text: str) -> Message:
    return dict(text_message("assistant", text))


def turn(text: str, exec_id: str = "e") -> list[Event]:
    """The journal of one echo turn: INPUT, MODEL_CALL, OUTPUT, END."""
    return [
        dict(input_event(text_message("user", text), execution_id=exec_id)),
        dict(model_call_event("echo", input_hash="0" * 64, call_id="c", execution_id=exec_id)),
        dict(output_event(text_message("assistant", f"echo:{text}"), execution_id=exec_id)),
        dict(end_event(execution_id=exec_id)),
    ]


def start(
    *inputs: Message,
    history: History | None = None,
    config: bytes = b"",
    memory_restored: bool = False,
) -> Start:
    return Start(
        execution_id="0123456789abcdef",
        config=config,
        inputs=inputs,
        history=FakeHistory([]) if history is None else history,
        memory_restored=memory_restored,
    )


# --------------------------------------------------------------------------- echo


def test_echo_calls_the_model_once_with_the_last_input() -> None:
    sink = FakeSink()
    echo.create().run(start(user("first"), user("hello")), sink)
    assert sink.requests == [ModelRequest(model="echo", messages=(user("hello"),), params=None)]
    assert model_input_hash(sink.requests[0]) == HELLO_HASH
    assert sink.effects == 1  # no OUTPUT of its own: the sink records the completion


def test_echo_request_matches_the_go_fixture_hash() -> None:
    records = json.loads(FIXTURE.read_text())
    go_input = next(r["Event"] for r in records if r["Event"]["Kind"] == "INPUT")
    go_call = next(r["Event"]["ModelCall"] for r in records if r["Event"]["Kind"] == "MODEL_CALL")
    text = go_input["Message"]["Parts"][0]["Text"]["Text"]
    sink = FakeSink()
    echo.create().run(start(dict(text_message(go_input["Message"]["Role"], text))), sink)
    assert model_input_hash(sink.requests[0]) == go_call["InputHash"]
    assert sink.requests[0].model == go_call["Model"]


def test_echo_without_inputs_uses_the_last_input_in_history() -> None:
    events = turn("old") + turn("hello")
    events += [dict(model_call_event("echo"))] * 40  # the INPUT lies beyond the first window
    history = FakeHistory(events)
    sink = FakeSink()
    echo.create().run(start(history=history), sink)
    assert sink.requests[0].messages == (user("hello"),)
    assert model_input_hash(sink.requests[0]) == HELLO_HASH
    assert history.tails[0] < len(events)  # read from the tail, not the whole log up front
    assert not history.iterated


def test_echo_last_input_scans_each_event_once_per_window() -> None:
    history = FakeHistory(turn("only") + [dict(model_call_event("echo"))] * 100)
    assert echo.last_input(history) == user("only")
    assert history.tails == sorted(history.tails)
    assert echo.last_input(FakeHistory([])) is None
    assert echo.last_input(FakeHistory([dict(end_event())])) is None


def test_echo_with_nothing_to_echo_is_a_harness_error() -> None:
    sink = FakeSink()
    with pytest.raises(HarnessError, match="nothing to echo"):
        echo.create().run(start(history=FakeHistory([dict(end_event())])), sink)
    assert sink.effects == 0


def test_echo_is_stateless() -> None:
    harness, sink = echo.create(), FakeSink()
    harness.run(start(user("a")), sink)
    harness.run(start(user("a")), sink)
    assert sink.requests[0] == sink.requests[1]


# --------------------------------------------------------------------------- counter


def test_counter_counts_across_runs_of_one_instance() -> None:
    harness, sink = counter.create(), FakeSink()
    harness.run(start(user("a"), user("b"), history=UntouchableHistory()), sink)
    harness.run(start(user("c"), history=UntouchableHistory()), sink)
    assert sink.outputs == [assistant("count:1"), assistant("count:2"), assistant("count:3")]
    assert harness.count == 3
    assert sink.requests == []  # no model calls


def test_counter_new_instance_restarts_and_never_rebuilds_from_history() -> None:
    """I4: even with a history full of counts and memory_restored, a fresh counter is at 0."""
    sink = FakeSink()
    harness = counter.create()
    harness.run(start(user("a"), history=UntouchableHistory(), memory_restored=True), sink)
    harness.run(start(user("a"), history=UntouchableHistory(), memory_restored=False), sink)
    assert sink.outputs == [assistant("count:1"), assistant("count:2")]
    assert counter.create().count == 0


def test_counter_inputless_run_outputs_nothing() -> None:
    harness, sink = counter.create(), FakeSink()
    harness.run(start(history=UntouchableHistory()), sink)
    assert sink.effects == 0 and harness.count == 0


def test_counter_does_not_count_an_output_that_was_not_recorded() -> None:
    harness = counter.create()
    with pytest.raises(AgentSessionsError):
        harness.run(start(user("a"), history=UntouchableHistory()), FakeSink(fail_output=True))
    assert harness.count == 0


# --------------------------------------------------------------------------- chat


def test_chat_builds_system_history_and_inputs() -> None:
    history = FakeHistory(turn("hi") + turn("how are you?"))
    sink = FakeSink()
    chat.create().run(start(user("bye"), history=history), sink)
    (request,) = sink.requests
    assert request == ModelRequest(
        model="",
        messages=(
            dict(text_message("system", chat.DEFAULT_SYSTEM_PROMPT)),
            user("hi"),
            assistant("echo:hi"),
            user("how are you?"),
            assistant("echo:how are you?"),
            user("bye"),
        ),
        params=None,
    )
    assert history.tails == [chat.DEFAULT_HISTORY_EVENTS]
    assert sink.effects == 1


def test_chat_honours_history_events() -> None:
    history = FakeHistory(turn("one") + turn("two"))
    sink = FakeSink()
    config = json.dumps({"history_events": 3}).encode()
    chat.create().run(start(user("three"), history=history, config=config), sink)
    # The last 3 events are MODEL_CALL, OUTPUT, END of turn "two": only the OUTPUT is kept.
    assert sink.requests[0].messages[1:] == (assistant("echo:two"), user("three"))
    assert history.tails == [3]


def test_chat_history_events_zero_reads_no_history() -> None:
    history = FakeHistory(turn("one"))
    sink = FakeSink()
    chat.create().run(start(user("x"), history=history, config=b'{"history_events": 0}'), sink)
    assert sink.requests[0].messages[1:] == (user("x"),)
    assert history.tails == [] and not history.iterated


def test_chat_config_model_and_prompt() -> None:
    sink = FakeSink()
    config = b'{"system_prompt": "Be brief.", "model": "gpt-x", "unknown": 1}'
    chat.create().run(start(user("x"), config=config), sink)
    assert sink.requests[0].model == "gpt-x"
    assert sink.requests[0].messages[0] == dict(text_message("system", "Be brief."))
    no_prompt = FakeSink()
    chat.create().run(start(user("x"), config=b'{"system_prompt": ""}'), no_prompt)
    assert no_prompt.requests[0].messages == (user("x"),)


@pytest.mark.parametrize("config", [b"", b"  \n", b"null", b"{}"])
def test_chat_empty_config_means_defaults(config: bytes) -> None:
    assert chat.ChatConfig.parse(config) == chat.ChatConfig()


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe", "not valid JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (b'{"history_events": -1}', "history_events"),
        (b'{"history_events": "50"}', "history_events"),
        (b'{"history_events": true}', "history_events"),
        (b'{"model": 3}', "model must be a string"),
        (b'{"system_prompt": null}', "system_prompt must be a string"),
    ],
)
def test_chat_invalid_config_is_a_harness_error(config: bytes, problem: str) -> None:
    sink = FakeSink()
    with pytest.raises(HarnessError, match=problem) as err:
        chat.create().run(start(user("x"), config=config), sink)
    assert "history_events" in err.value.hint
    assert sink.effects == 0


def test_chat_normalizes_roles_and_skips_other_events() -> None:
    odd: list[Event] = [
        dict(input_event(text_message("customer", "q"))),
        dict(output_event(text_message("model", "a"))),
        dict(model_call_event("m")),
        {"kind": "EVENT_OUTPUT"},  # no message: nothing to say
    ]
    assert chat.conversation(odd) == [user("q"), assistant("a")]


def test_chat_request_hash_is_reproducible_for_replay() -> None:
    def request() -> ModelRequest:
        sink = FakeSink()
        chat.create().run(start(user("x"), history=FakeHistory(turn("a") + turn("b"))), sink)
        return sink.requests[0]

    assert model_input_hash(request()) == model_input_hash(request())


# --------------------------------------------------------------------------- descriptors


@pytest.mark.parametrize(
    ("module", "name", "resumability", "models"),
    [
        (echo, "echo", STATELESS_REPLAY, ("echo",)),
        (counter, "counter", REQUIRES_MEMORY_SNAPSHOT, ()),
        (chat, "chat", STATELESS_REPLAY, ()),
        (memory, "memory", REQUIRES_MEMORY_SNAPSHOT, ()),
    ],
)
def test_descriptors(module: Any, name: str, resumability: str, models: tuple[str, ...]) -> None:
    harness: Harness = module.create()
    descriptor = harness.describe()
    assert descriptor.id == name
    assert descriptor.version == "1"
    assert descriptor.models == models
    assert descriptor.capabilities.resumability == resumability


@pytest.mark.parametrize("name", ["echo", "counter", "chat", "memory"])
def test_registry_finds_each_harness_by_name(name: str) -> None:
    registry: Registry[Harness] = Registry("harness", "agentsessions.harnesses", "harnesses")
    assert registry.create(name).describe().id == name
    convention_only: Registry[Harness] = Registry("harness", "no.such.group", "harnesses")
    assert convention_only.create(name).describe().id == name


ALLOWED = {
    "agentsessions.controller.spi",
    "agentsessions.v1.construct",
    "agentsessions.v1.model",
    "agentsessions.errors",
    "agentsessions.v1.compaction",  # vocabulary: the compaction marker's format (issue 9 item 5)
}


@pytest.mark.parametrize("path", sorted((ROOT / "harnesses").glob("*.py")), ids=lambda p: p.name)
def test_harnesses_import_only_the_spi(path: Path) -> None:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            if name.split(".")[0] in {"agentsessions", "harnesses"}:
                assert name in ALLOWED, f"{path.name} imports {name}"
