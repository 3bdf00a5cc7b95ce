"""The echo and scripted models, and the ``--model`` spec that chooses a provider."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentsessions.controller.spi import Completion, ModelProvider, ModelRequest
from agentsessions.errors import InvalidArgumentError, UnavailableError
from agentsessions.models import (
    MODELS,
    EchoModel,
    OpenAIModel,
    ScriptedModel,
    create_model,
    parse_spec,
)
from agentsessions.models.scripted import Answer
from agentsessions.v1.construct import data_part, message, text_message, text_part
from agentsessions.v1.schema import validate_message


def ask(text: str, model: str = "echo") -> ModelRequest:
    """The request the echo harness makes for one input."""
    return ModelRequest(model=model, messages=(dict(text_message("user", text)),))


def answer(completion: Completion) -> str:
    parts: list[dict[str, Any]] = completion.message.get("parts", [])
    return "".join(part["text"].get("text", "") for part in parts if "text" in part)


def assert_valid(completion: Completion) -> None:
    validate_message(completion.message, "Message", "message")
    assert completion.message["role"] == "assistant"


@pytest.fixture(autouse=True)
def _no_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MODEL_API_KEY", "OPENAI_API_KEY", "MODEL_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


# --------------------------------------------------------------------------- echo


def test_echo_answers_the_last_message_as_the_reference_does() -> None:
    completion = EchoModel().complete(ask("hello"))
    assert completion == Completion(
        message={"role": "assistant", "parts": [{"text": {"text": "echo:hello"}}]}
    )
    assert_valid(completion)


def test_echo_joins_text_parts_of_the_last_message_and_skips_others() -> None:
    first = dict(text_message("user", "ignored"))
    last = dict(message("user", text_part("a"), data_part({"k": 1}), text_part("b")))
    completion = EchoModel().complete(ModelRequest(model="echo", messages=(first, last)))
    assert answer(completion) == "echo:ab"


def test_echo_of_nothing_is_the_bare_prefix() -> None:
    assert answer(EchoModel().complete(ModelRequest(model="echo", messages=()))) == "echo:"


def test_echo_streams_its_whole_answer_once() -> None:
    deltas: list[str] = []
    completion = EchoModel().complete(ask("hi"), deltas.append)
    assert deltas == ["echo:hi"] == [answer(completion)]


# --------------------------------------------------------------------------- scripted


def test_seeded_answers_depend_only_on_seed_and_request() -> None:
    one, two = ScriptedModel(seed=7), ScriptedModel(seed=7)
    assert answer(one.complete(ask("x"))) == answer(two.complete(ask("x")))
    assert answer(one.complete(ask("x"))) == answer(one.complete(ask("x")))
    assert answer(one.complete(ask("x"))) != answer(one.complete(ask("y")))
    assert answer(one.complete(ask("x"))) != answer(ScriptedModel(seed=8).complete(ask("x")))
    assert answer(one.complete(ask("x"))).startswith("scripted-7-")
    assert one.calls == 7 and two.calls == 1


def test_seeded_answers_cover_the_whole_request() -> None:
    model = ScriptedModel(seed=1)
    plain = ask("x")
    tuned = ModelRequest(model="echo", messages=plain.messages, params={"temperature": "0"})
    assert answer(model.complete(plain)) != answer(model.complete(tuned))
    assert answer(model.complete(plain)) != answer(model.complete(ask("x", model="other")))


def test_nondeterministic_answers_differ_on_every_call() -> None:
    model = ScriptedModel(nondeterministic=True)
    answers = {answer(model.complete(ask("same"))) for _ in range(5)}
    assert len(answers) == 5
    assert model.calls == 5


def test_file_answers_come_in_order_then_run_out(tmp_path: Path) -> None:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(["one", "", "three\nlines"]), encoding="utf-8")
    model = ScriptedModel.from_file(path)
    got = [model.complete(ask("q")) for _ in range(3)]
    assert [answer(c) for c in got] == ["one", "", "three\nlines"]
    for completion in got:
        assert_valid(completion)
    with pytest.raises(UnavailableError, match=r"call 4 but only 3 answers in .*answers\.json"):
        model.complete(ask("q"))
    assert model.calls == 4


def test_text_file_has_one_answer_per_line_blank_lines_skipped(tmp_path: Path) -> None:
    path = tmp_path / "answers.txt"
    path.write_text("first\n\nsecond answer\n", encoding="utf-8")
    model = ScriptedModel.from_file(path)
    assert [answer(model.complete(ask("q"))) for _ in range(2)] == ["first", "second answer"]


@pytest.mark.parametrize(
    ("name", "content", "error"),
    [
        ("a.json", "not json", "is not JSON"),
        ("a.json", '["ok", 3]', r"a\.json entry 1: expected a string or an object, got a number"),
        ("a.json", '{"a": "b"}', r"a\.json must hold a JSON array of answers"),
        ("missing.txt", None, "cannot read"),
    ],
)
def test_a_bad_answer_file_is_refused_up_front(
    tmp_path: Path, name: str, content: str | None, error: str
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(InvalidArgumentError, match=error):
        ScriptedModel.from_file(path)


def test_scripted_deltas_add_up_to_the_answer() -> None:
    model = ScriptedModel(answers=["a few  words here "])
    deltas: list[str] = []
    completion = model.complete(ask("q"), deltas.append)
    assert len(deltas) > 1
    assert "".join(deltas) == answer(completion) == "a few  words here "


# --------------------------------------------------------------------------- specs


def test_the_registry_holds_the_builtins() -> None:
    assert {"echo", "scripted"} <= set(MODELS.names())
    assert isinstance(MODELS.create("echo"), EchoModel)


@pytest.mark.parametrize("spec", ["", "echo", "  echo  "])
def test_echo_is_the_default(spec: str) -> None:
    assert isinstance(create_model(spec), EchoModel)


def test_scripted_specs(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text('["hi"]', encoding="utf-8")
    seeded = create_model("scripted:seed=7")
    assert isinstance(seeded, ScriptedModel) and seeded.seed == 7
    plain = create_model("scripted")
    assert isinstance(plain, ScriptedModel) and plain.seed == 0
    scripted = create_model(f"scripted:file={path}")
    assert isinstance(scripted, ScriptedModel) and scripted.answers == (Answer("hi"),)
    random = create_model("scripted", options={"nondeterministic": "1", "seed": ""})
    assert isinstance(random, ScriptedModel) and random.nondeterministic


def test_openai_specs(monkeypatch: pytest.MonkeyPatch) -> None:
    named = create_model("openai:gpt-4o-mini")
    assert isinstance(named, OpenAIModel) and named.model == "gpt-4o-mini"
    assert named.endpoint.display == "https://api.openai.com/v1/chat/completions"
    colon = create_model("openai:llama3:8b", options={"base_url": "http://127.0.0.1:11434/v1"})
    assert isinstance(colon, OpenAIModel) and colon.model == "llama3:8b"
    assert colon.endpoint.display == "http://127.0.0.1:11434/v1/chat/completions"
    inline = create_model("openai:llama3:8b,base_url=http://h:1/x,path=/c?v=1,read_timeout=5")
    assert isinstance(inline, OpenAIModel) and inline.model == "llama3:8b"
    assert (inline.endpoint.target, inline.read_timeout) == ("/x/c?v=1", 5.0)
    monkeypatch.setenv("MODEL_BASE_URL", "http://from-env:8000/v1/")
    from_env = create_model("openai:m")
    assert isinstance(from_env, OpenAIModel)
    assert from_env.endpoint.display == "http://from-env:8000/v1/chat/completions"


def test_parse_spec() -> None:
    assert parse_spec("scripted:seed=7").options == {"seed": "7"}
    assert parse_spec("openai:m,path=/p?a=b").options == {"path": "/p?a=b"}
    assert (parse_spec("echo").kind, parse_spec("openai:x:y").kind) == ("echo", "openai")


@pytest.mark.parametrize("spec", ["scriptd:seed=7", "gpt-4o-mini", "llama3:8b", "x:y", "Echo"])
def test_an_unknown_provider_is_refused_never_sent_to_openai(spec: str) -> None:
    # a bare or misspelt spec used to become openai:<spec> and reach the default endpoint
    with pytest.raises(InvalidArgumentError, match="unknown model provider") as caught:
        create_model(spec)
    assert "(known: echo, openai, scripted)" in str(caught.value)
    assert "--model" in caught.value.hint


def test_a_registered_plugin_is_found_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = EchoModel()
    monkeypatch.setitem(MODELS._factories, ("", "my-model"), lambda: plugin)
    model: ModelProvider = create_model("my-model")
    assert model is plugin


@pytest.mark.parametrize(
    ("spec", "options", "error"),
    [
        ("echo:x=1", None, "takes no options"),
        ("echo", {"base_url": "http://h"}, "takes no options"),
        ("openai:", None, "needs a model name"),
        ("openai", None, "needs a model name"),
        ("scripted:seed", None, "expected key=value"),
        ("scripted:seed=1,seed=2", None, "given twice"),
        ("scripted:seed=1", {"seed": "2"}, "inline but"),
        ("scripted:seed=x", None, "seed must be an integer"),
        ("scripted:seed=1,nondeterministic=1", None, "exclude each other"),
        ("scripted:nondeterministic=maybe", None, "must be 1 or 0"),
        ("scripted:colour=red", None, "unknown option 'colour'"),
        ("openai:m,colour=red", None, "unknown option 'colour'"),
        ("openai:m,base_url=ftp://h", None, "base_url must look like"),
        ("openai:m,base_url=http://h:port", None, "base_url must look like"),
        ("openai:m,read_timeout=-1", None, "must be positive"),
        ("openai:m,connect_timeout=soon", None, "must be seconds"),
        ("openai:m,auth_header=bad header", None, "bad auth_header"),
        ("openai:gpt", {"api_key": "sk-1"}, "comes only from the MODEL_API_KEY"),
    ],
)
def test_bad_specs_are_invalid_arguments(
    spec: str, options: dict[str, str] | None, error: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=error) as caught:
        create_model(spec, options=options)
    assert "sk-1" not in str(caught.value)


def test_scripted_delay_keeps_the_answer_and_refuses_bad_values() -> None:
    from agentsessions.controller.spi import ModelRequest
    from agentsessions.errors import InvalidArgumentError
    from agentsessions.models import create_model
    from agentsessions.v1.construct import text_message

    request = ModelRequest("m", (dict(text_message("user", "hi")),))
    slow = create_model("scripted:seed=3,delay=0.05").complete(request)
    fast = create_model("scripted:seed=3").complete(request)
    assert slow.message == fast.message
    for bad in ("-1", "abc", "601"):
        with pytest.raises(InvalidArgumentError, match="delay"):
            create_model(f"scripted:delay={bad}")
