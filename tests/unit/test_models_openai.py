"""The OpenAI-compatible model against a real HTTP server on 127.0.0.1 (a thread, no network).

The server (shared with the ModelProvider contract suite, in ``tests/fake_openai.py``)
records each request (path, headers, JSON body) and answers with whatever the test
scripted: a JSON reply, a stream of server-sent events, an error status, or silence.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest
from fake_openai import (
    USAGE,
    Endpoint,
    Reply,
    chat_reply,
    chunk,
    free_port,
    json_reply,
    raw_reply,
    serve,
    sse_reply,
)

from agentsessions.controller.spi import Completion, ModelRequest
from agentsessions.errors import InvalidArgumentError, UnavailableError
from agentsessions.models import OpenAIModel, create_model
from agentsessions.v1.construct import data_part, message, text_message, text_part
from agentsessions.v1.schema import validate_message


@pytest.fixture(autouse=True)
def _no_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MODEL_API_KEY", "OPENAI_API_KEY", "MODEL_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    with serve() as state:
        yield state


def provider(endpoint: Endpoint, model: str = "gpt-test", **options: str) -> OpenAIModel:
    made = create_model(f"openai:{model}", options={"base_url": endpoint.url, **options})
    assert isinstance(made, OpenAIModel)
    return made


def ask(*texts: str, model: str = "echo") -> ModelRequest:
    return ModelRequest(model=model, messages=tuple(dict(text_message("user", t)) for t in texts))


def assert_valid(completion: Completion) -> None:
    validate_message(completion.message, "Message", "message")
    if completion.usage is not None:
        validate_message(completion.usage, "Usage", "usage")


# --------------------------------------------------------------------------- happy paths


def test_a_plain_request_sends_text_and_maps_the_answer_and_usage(endpoint: Endpoint) -> None:
    endpoint.reply = json_reply(200, chat_reply("hello", USAGE))
    system = dict(message("system", text_part("be "), text_part("brief")))
    thinking = {"role": "assistant", "parts": [{"reasoning": {"provider": "x"}}, text_part("a")]}
    request = ModelRequest(model="echo", messages=(system, thinking, *ask("hi").messages))

    completion = provider(endpoint).complete(request)

    assert completion == Completion(
        message={"role": "assistant", "parts": [{"text": {"text": "hello"}}]},
        usage={"model": "gpt-test", "input_tokens": "12", "output_tokens": "3"},
    )
    assert_valid(completion)
    (seen,) = endpoint.seen
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["content-type"] == "application/json"
    assert seen.body == {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "assistant", "content": "a"},
            {"role": "user", "content": "hi"},
        ],
    }


def test_no_usage_from_the_server_means_none(endpoint: Endpoint) -> None:
    endpoint.reply = json_reply(200, chat_reply("hi"))
    assert provider(endpoint).complete(ask("q")).usage is None


def test_the_request_model_wins_unless_it_is_the_echo_placeholder(endpoint: Endpoint) -> None:
    model = provider(endpoint)
    model.complete(ask("q", model="echo"))
    model.complete(ask("q", model=""))
    model.complete(ask("q", model="gpt-other"))
    assert [s.body["model"] for s in endpoint.seen] == ["gpt-test", "gpt-test", "gpt-other"]


def test_streaming_delivers_deltas_and_assembles_the_answer(endpoint: Endpoint) -> None:
    endpoint.reply = sse_reply(
        chunk(role="assistant"),
        chunk("Hel"),
        chunk(""),
        chunk("lo"),
        chunk(finish="stop"),
        {"choices": [], "usage": USAGE},
        "[DONE]",
    )
    deltas: list[str] = []

    completion = provider(endpoint).complete(ask("hi"), deltas.append)

    assert deltas == ["Hel", "lo"]
    assert completion.message == {"role": "assistant", "parts": [{"text": {"text": "Hello"}}]}
    assert completion.usage == {"model": "gpt-test", "input_tokens": "12", "output_tokens": "3"}
    assert endpoint.seen[0].body["stream"] is True
    assert endpoint.seen[0].body["stream_options"] == {"include_usage": True}


def test_streamed_reasoning_becomes_a_reasoning_part(endpoint: Endpoint) -> None:
    usage = {**USAGE, "completion_tokens_details": {"reasoning_tokens": 2}}
    endpoint.reply = sse_reply(
        chunk(reasoning_content="think"),
        chunk("answer", finish="stop"),
        {"choices": [], "usage": usage},
        "[DONE]",
    )
    completion = provider(endpoint).complete(ask("q"), lambda _: None)
    reasoning = {
        "provider": "openai",
        "model_id": "gpt-test",
        "opaque_bytes": base64.b64encode(b"think").decode(),
    }
    assert completion.message["parts"] == [{"reasoning": reasoning}, {"text": {"text": "answer"}}]
    assert completion.usage is not None and completion.usage["reasoning_tokens"] == "2"
    assert_valid(completion)


def test_a_stream_that_finished_may_omit_done(endpoint: Endpoint) -> None:
    endpoint.reply = sse_reply(chunk("all", finish="stop"))
    assert provider(endpoint).complete(ask("q"), lambda _: None).usage is None


def test_a_json_answer_to_a_streamed_request_is_one_delta(endpoint: Endpoint) -> None:
    endpoint.reply = json_reply(200, chat_reply("whole"))
    deltas: list[str] = []
    provider(endpoint).complete(ask("q"), deltas.append)
    assert deltas == ["whole"]


def test_an_error_from_on_delta_propagates_unchanged(endpoint: Endpoint) -> None:
    endpoint.reply = sse_reply(chunk("a"), "[DONE]")

    def broken(_: str) -> None:
        raise BrokenPipeError("stdout closed")

    with pytest.raises(BrokenPipeError, match="stdout closed"):
        provider(endpoint).complete(ask("q"), broken)


def test_params_and_a_query_in_the_path(endpoint: Endpoint) -> None:
    model = provider(endpoint, path="deployments/d1/chat/completions?api-version=2024-06-01")
    params = {"temperature": "0.2", "max_tokens": "5", "top_p": "1", "seed": "3"}
    model.complete(ModelRequest(model="m", messages=ask("q").messages, params=params))
    (seen,) = endpoint.seen
    assert seen.path == "/v1/deployments/d1/chat/completions?api-version=2024-06-01"
    assert {k: seen.body[k] for k in params} == {
        "temperature": 0.2,
        "max_tokens": 5,
        "top_p": 1.0,
        "seed": 3,
    }
    assert "api-version" not in model.endpoint.display


# --------------------------------------------------------------------------- credentials


def test_model_api_key_wins_over_openai_api_key(
    endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MODEL_API_KEY", "model-key")
    monkeypatch.setenv("OPENAI_API_KEY", "openai-key")
    provider(endpoint).complete(ask("q"))
    assert endpoint.seen[-1].headers["authorization"] == "Bearer model-key"


def test_openai_api_key_is_the_fallback(
    endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MODEL_API_KEY", "")
    monkeypatch.setenv("OPENAI_API_KEY", "openai-key")
    provider(endpoint).complete(ask("q"))
    assert endpoint.seen[-1].headers["authorization"] == "Bearer openai-key"


def test_no_key_means_no_auth_header(endpoint: Endpoint) -> None:
    model = provider(endpoint)
    model.complete(ask("q"))
    assert "authorization" not in endpoint.seen[-1].headers
    assert not model.has_key


def test_another_header_name_carries_the_raw_key(
    endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MODEL_API_KEY", "raw-key")
    model = provider(endpoint, auth_header="api-key")
    model.complete(ask("q"))
    assert endpoint.seen[-1].headers["api-key"] == "raw-key"
    assert "authorization" not in endpoint.seen[-1].headers
    assert "raw-key" not in repr(model)


def test_a_key_echoed_by_the_server_is_redacted(
    endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MODEL_API_KEY", "sk-secret")
    endpoint.reply = json_reply(401, {"error": {"message": "bad key sk-secret"}})
    with pytest.raises(UnavailableError) as caught:
        provider(endpoint).complete(ask("q"))
    assert "sk-secret" not in str(caught.value)
    assert "[redacted]" in str(caught.value)


def test_a_key_with_control_characters_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODEL_API_KEY", "sk-a\nX-Evil: 1")
    with pytest.raises(InvalidArgumentError, match="MODEL_API_KEY contains") as caught:
        create_model("openai:gpt")
    assert "sk-a" not in str(caught.value)


# --------------------------------------------------------------------------- failures


def test_http_401_names_the_url_status_and_server_message(endpoint: Endpoint) -> None:
    endpoint.reply = json_reply(401, {"error": {"message": "Incorrect API key provided"}})
    with pytest.raises(UnavailableError) as caught:
        provider(endpoint).complete(ask("q"))
    error = caught.value
    assert str(error) == (
        f"model endpoint {endpoint.url}/chat/completions returned HTTP 401: "
        "Incorrect API key provided"
    )
    assert "MODEL_API_KEY" in error.hint
    assert error.fields == {"url": f"{endpoint.url}/chat/completions", "status": 401}


def test_http_500_detail_is_one_truncated_line(endpoint: Endpoint) -> None:
    endpoint.reply = raw_reply(500, b"upstream\nexploded " + b"x" * 500)
    with pytest.raises(UnavailableError, match="returned HTTP 500: upstream exploded x") as caught:
        provider(endpoint).complete(ask("q"), lambda _: None)
    text = str(caught.value)
    assert "\n" not in text and text.endswith("...")
    assert len(text) < 300


def test_connection_refused() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    model = create_model("openai:gpt", options={"base_url": url})
    with pytest.raises(UnavailableError) as caught:
        model.complete(ask("q"))
    assert str(caught.value) == (
        f"model endpoint {url}/chat/completions unreachable: connection refused"
    )


def test_a_silent_server_times_out(endpoint: Endpoint) -> None:
    def hang(_: BaseHTTPRequestHandler) -> None:
        endpoint.release.wait(30)

    endpoint.reply = hang
    model = provider(endpoint, read_timeout="0.2")
    with pytest.raises(UnavailableError, match=r"timed out: no read within 0\.2s"):
        model.complete(ask("q"))


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (raw_reply(200, b"{not json", "application/json"), "invalid JSON"),
        (json_reply(200, {"choices": []}), "no choices"),
        (json_reply(200, {"choices": [{"message": {"content": 7}}]}), "content is not a string"),
        (
            json_reply(200, chat_reply("x", {"prompt_tokens": "many"})),
            "usage input_tokens is not a token count",
        ),
    ],
)
def test_malformed_answers(endpoint: Endpoint, reply: Reply, error: str) -> None:
    endpoint.reply = reply
    with pytest.raises(UnavailableError, match=f"sent a malformed answer: {error}"):
        provider(endpoint).complete(ask("q"))


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (sse_reply(chunk("a"), "{oops"), "invalid JSON"),
        (sse_reply(chunk("a")), r"ended before data: \[DONE\]"),
        (sse_reply({"error": {"message": "overloaded"}}), "error in stream: overloaded"),
    ],
)
def test_malformed_streams(endpoint: Endpoint, reply: Reply, error: str) -> None:
    endpoint.reply = reply
    with pytest.raises(UnavailableError, match=error):
        provider(endpoint).complete(ask("q"), lambda _: None)


@pytest.mark.parametrize(
    ("request_", "error"),
    [
        (ModelRequest("m", (dict(message("user", data_part({"a": 1}))),)), "has a data part"),
        (
            ModelRequest("m", (dict(message("user", {"tool_call": {"id": "c", "tool": "t"}})),)),
            r"message 0 \(user\) has a tool_call part",
        ),
        (ModelRequest("m", ask("q").messages, params={"stop": "x"}), "unsupported param"),
        (ModelRequest("m", ask("q").messages, params={"max_tokens": "lots"}), "must be a number"),
    ],
)
def test_what_cannot_be_sent_whole_is_refused_before_sending(
    endpoint: Endpoint, request_: ModelRequest, error: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=error):
        provider(endpoint).complete(request_)
    assert endpoint.seen == []
