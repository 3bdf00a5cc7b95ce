"""The OpenAI-compatible model's tool mapping, both ways, against the fake server on 127.0.0.1.

Out: tool definitions, tool choice, an assistant's tool calls and the ``tool`` messages that
carry results, asserted as the exact JSON the server received. In: the answer's
``tool_calls`` (whole, and streamed in fragments) as ``tool_call`` parts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fake_openai import (
    USAGE,
    Endpoint,
    Reply,
    chat_reply,
    chunk,
    json_reply,
    serve,
    sse_reply,
    tool_call,
    tool_call_chunks,
    tool_calling_reply,
)

from agentsessions.controller.spi import ModelRequest
from agentsessions.errors import HarnessError, InvalidArgumentError, UnavailableError
from agentsessions.models import OpenAIModel, create_model
from agentsessions.v1.construct import message, text_message, text_part
from agentsessions.v1.schema import validate_message

LOOKUP = {
    "name": "lookup",
    "description": "find a word",
    "input_schema": {
        "type": "object",
        "properties": {"q": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
        "required": ["q"],
    },
}
NOTE = {"name": "note"}  # no description, no schema: the bare function


@pytest.fixture(autouse=True)
def _no_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MODEL_API_KEY", "OPENAI_API_KEY", "MODEL_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    with serve() as state:
        yield state


def provider(endpoint: Endpoint) -> OpenAIModel:
    made = create_model("openai:gpt-test", options={"base_url": endpoint.url})
    assert isinstance(made, OpenAIModel)
    return made


def user(text: str) -> dict[str, Any]:
    return dict(text_message("user", text))


def ask(*messages: dict[str, Any], **kw: Any) -> ModelRequest:
    return ModelRequest(model="", messages=messages, tools=kw.pop("tools", (LOOKUP,)), **kw)


def calls_of(msg: dict[str, Any]) -> list[dict[str, Any]]:
    return [part["tool_call"] for part in msg.get("parts", []) if "tool_call" in part]


# --------------------------------------------------------------------------- out


def test_the_exact_request_for_tools_calls_and_results(endpoint: Endpoint) -> None:
    """Definitions, choice, an assistant's calls and the results, byte for byte as sent."""
    endpoint.reply = json_reply(200, chat_reply("done"))
    assistant = dict(
        message(
            "assistant",
            {"reasoning": {"provider": "x", "opaque_bytes": "AA=="}},
            text_part("let me look"),
            {"tool_call": {"id": "c1", "tool": "lookup", "args": {"q": "tea", "limit": 2}}},
            {"tool_call": {"id": "c2", "tool": "note"}},
        )
    )
    results = dict(
        message(
            "tool",
            {"tool_result": {"id": "c1", "content": [text_part("tea: "), text_part("a drink")]}},
            {"tool_result": {"id": "c2", "output": {"saved": True, "n": 1}}},
        )
    )
    failed = {
        "role": "tool",
        "parts": [{"tool_result": {"id": "c3", "is_error": True, "error": "disk full"}}],
    }
    request = ModelRequest(
        model="",
        messages=(user("define tea"), assistant, results, failed),
        tools=(LOOKUP, NOTE),
        tool_choice={"mode": "MODE_AUTO"},
        params={"temperature": "0"},
    )

    provider(endpoint).complete(request)

    sent = endpoint.seen[0].body
    assert sent == {
        "model": "gpt-test",
        "messages": [
            {"role": "user", "content": "define tea"},
            {
                "role": "assistant",
                "content": "let me look",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "lookup", "arguments": '{"q":"tea","limit":2}'},
                    },
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "note", "arguments": "{}"},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "tea: a drink"},
            {"role": "tool", "tool_call_id": "c2", "content": '{"saved":true,"n":1}'},
            {"role": "tool", "tool_call_id": "c3", "content": "error: disk full"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "lookup",
                    "description": "find a word",
                    "parameters": LOOKUP["input_schema"],
                },
            },
            {"type": "function", "function": {"name": "note"}},
        ],
        "tool_choice": "auto",
        "temperature": 0.0,
    }


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        (None, None),
        ({}, None),
        ({"mode": "MODE_UNSPECIFIED"}, None),
        ({"mode": "MODE_AUTO"}, "auto"),
        ({"mode": "MODE_NONE"}, "none"),
        ({"mode": "MODE_REQUIRED"}, "required"),
        ({"mode": 3}, "required"),
        (
            {"mode": "MODE_REQUIRED", "name": "lookup"},
            {"type": "function", "function": {"name": "lookup"}},
        ),
    ],
)
def test_tool_choice(endpoint: Endpoint, choice: Any, wire: Any) -> None:
    provider(endpoint).complete(ask(user("q"), tool_choice=choice))
    assert endpoint.seen[0].body.get("tool_choice") == wire


def test_an_assistant_call_without_text_sends_null_content(endpoint: Endpoint) -> None:
    call = {"tool_call": {"id": "c1", "tool": "lookup", "args": {}}}
    provider(endpoint).complete(ask(user("q"), dict(message("assistant", call))))
    assert endpoint.seen[0].body["messages"][1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
        ],
    }


@pytest.mark.parametrize(
    ("result", "content"),
    [
        ({"id": "c", "output": {"a": [1, "é"]}}, '{"a":[1,"é"]}'),
        ({"id": "c"}, ""),
        ({"id": "c", "is_error": True, "code": "APPROVAL_DENIED"}, "error: APPROVAL_DENIED"),
        (
            {"id": "c", "is_error": True, "error": "boom", "output": {"partial": 1}},
            'error: boom\n{"partial":1}',
        ),
        ({"id": "c", "is_error": True}, "error: the tool failed"),
        ({"id": "c", "output": {"x": 1}, "content": [text_part("text wins")]}, "text wins"),
    ],
)
def test_what_a_tool_result_tells_the_model(
    endpoint: Endpoint, result: dict[str, Any], content: str
) -> None:
    provider(endpoint).complete(
        ask(user("q"), {"role": "tool", "parts": [{"tool_result": result}]})
    )
    assert endpoint.seen[0].body["messages"][1] == {
        "role": "tool",
        "tool_call_id": "c",
        "content": content,
    }


@pytest.mark.parametrize(
    ("request_", "error"),
    [
        (ask(user("q"), tools=({"name": ""},)), "tool definition 0 needs a name"),
        (ask(user("q"), tools=({"name": "t", "parameters": {}},)), "unknown field 'parameters'"),
        (ask(user("q"), tools=({"name": "t", "input_schema": "x"},)), "not a JSON object"),
        (ask(user("q"), tools=(NOTE, NOTE)), "defined twice"),
        (ask(user("q"), tool_choice={"mode": "MODE_LOUD"}), "unknown tool_choice mode"),
        (ask(user("q"), tool_choice={"mode": "MODE_REQUIRED", "name": "gone"}), "not offered"),
        (ask(user("q"), tool_choice={"mode": "MODE_AUTO", "name": "lookup"}), "only MODE_REQ"),
        (ask(user("q"), tools=(), tool_choice={"mode": "MODE_REQUIRED"}), "no tool is offered"),
        (
            ask(user("q"), {"role": "tool", "parts": [text_part("hi")]}),
            "tool message 1 has a text part",
        ),
        (ask(user("q"), {"role": "tool"}), "tool message 1 has no tool_result part"),
        (
            ask(user("q"), {"role": "tool", "parts": [{"tool_result": {"output": {}}}]}),
            "result without an id",
        ),
        (
            ask(
                user("q"),
                {"role": "tool", "parts": [{"tool_result": {"id": "c", "output_uri": "s3://x"}}]},
            ),
            "only an output_uri",
        ),
        (
            ask(
                user("q"),
                {
                    "role": "tool",
                    "parts": [{"tool_result": {"id": "c", "content": [{"data": {"data": {}}}]}}],
                },
            ),
            "has a data content part",
        ),
        (
            ask(user("q"), dict(message("assistant", {"tool_result": {"id": "c"}}))),
            r"message 1 \(assistant\) has a tool_result part",
        ),
        (
            ask(user("q"), dict(message("assistant", {"tool_call": {"tool": "lookup"}}))),
            "tool call 0 has no id",
        ),
        (
            ask(user("q"), dict(message("assistant", {"tool_call": {"id": "c"}}))),
            "names no tool",
        ),
    ],
)
def test_what_cannot_be_mapped_is_refused_before_sending(
    endpoint: Endpoint, request_: ModelRequest, error: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=error):
        provider(endpoint).complete(request_)
    assert endpoint.seen == []


# --------------------------------------------------------------------------- in


def test_a_reply_with_tool_calls_becomes_tool_call_parts(endpoint: Endpoint) -> None:
    calls = [
        tool_call("call_a", "lookup", '{"q": "tea", "limit": 2, "deep": {"x": [1.5, null]}}'),
        tool_call("call_b", "note", ""),  # a function without parameters: ""
    ]
    endpoint.reply = json_reply(200, chat_reply("checking", USAGE, tool_calls=calls))

    done = provider(endpoint).complete(ask(user("q")))

    assert done.message == {
        "role": "assistant",
        "parts": [
            {"text": {"text": "checking"}},
            {
                "tool_call": {
                    "id": "call_a",
                    "tool": "lookup",
                    "args": {"q": "tea", "limit": 2, "deep": {"x": [1.5, None]}},
                }
            },
            {"tool_call": {"id": "call_b", "tool": "note", "args": {}}},
        ],
    }
    validate_message(done.message, "Message", "message")


def test_streamed_tool_calls_are_assembled_by_index(endpoint: Endpoint) -> None:
    """Two calls, their argument fragments interleaved, plus text: one completion."""
    a = tool_call("call_a", "lookup", '{"q":"green tea"}')
    b = tool_call("call_b", "note", '{"text":"x"}')
    head_a, *frags_a, _ = tool_call_chunks([a])
    head_b, *frags_b, _ = tool_call_chunks([b])
    head_b["choices"][0]["delta"]["tool_calls"][0]["index"] = 1
    for frag in frags_b:
        frag["choices"][0]["delta"]["tool_calls"][0]["index"] = 1
    interleaved = [x for pair in zip(frags_a, frags_b, strict=True) for x in pair]
    endpoint.reply = sse_reply(
        chunk("let me ", role="assistant"),
        chunk("see"),
        head_a,
        head_b,
        *interleaved,
        chunk(finish="tool_calls"),
        {"choices": [], "usage": USAGE},
        "[DONE]",
    )
    deltas: list[str] = []

    done = provider(endpoint).complete(ask(user("q")), deltas.append)

    assert deltas == ["let me ", "see"]  # tool calls are not text: no deltas for them
    assert done.message["parts"][0] == {"text": {"text": "let me see"}}
    assert calls_of(done.message) == [
        {"id": "call_a", "tool": "lookup", "args": {"q": "green tea"}},
        {"id": "call_b", "tool": "note", "args": {"text": "x"}},
    ]
    assert done.usage is not None


def test_a_stream_that_repeats_id_and_name_in_every_fragment(endpoint: Endpoint) -> None:
    def piece(arguments: str) -> dict[str, Any]:
        call = {"index": 0, "id": "c9", "function": {"name": "lookup", "arguments": arguments}}
        return chunk(tool_calls=[call])

    endpoint.reply = sse_reply(piece('{"q":'), piece('"x"}'), chunk(finish="tool_calls"))
    done = provider(endpoint).complete(ask(user("q")), lambda _: None)
    assert calls_of(done.message) == [{"id": "c9", "tool": "lookup", "args": {"q": "x"}}]


def test_the_tool_calling_fake_streams_and_answers_the_same(endpoint: Endpoint) -> None:
    calls = [tool_call("call_1", "lookup", '{"q":"tea","limit":3}')]
    endpoint.reply = tool_calling_reply(endpoint, calls)
    model = provider(endpoint)
    plain = model.complete(ask(user("q")))
    streamed = model.complete(ask(user("q")), lambda _: None)
    assert plain.message == streamed.message
    assert calls_of(plain.message) == [
        {"id": "call_1", "tool": "lookup", "args": {"q": "tea", "limit": 3}}
    ]


def test_a_completion_round_trips_into_the_next_request(endpoint: Endpoint) -> None:
    """The recorded completion, sent back as history, is the call the server made."""
    calls = [tool_call("call_1", "lookup", '{"q":"tea"}')]
    endpoint.reply = tool_calling_reply(endpoint, calls)
    model = provider(endpoint)
    first = model.complete(ask(user("q")))
    result = {"role": "tool", "parts": [{"tool_result": {"id": "call_1", "output": {"n": 1}}}]}

    second = model.complete(ask(user("q"), first.message, result))

    sent = endpoint.seen[-1].body["messages"]
    assert sent[1] == {"role": "assistant", "content": None, "tool_calls": calls}
    assert sent[2] == {"role": "tool", "tool_call_id": "call_1", "content": '{"n":1}'}
    assert second.message["parts"] == [{"text": {"text": 'fake:{"n":1}'}}]


def test_a_call_without_an_id_gets_a_unique_one(endpoint: Endpoint) -> None:
    call = {"type": "function", "function": {"name": "note", "arguments": "{}"}}
    endpoint.reply = json_reply(200, chat_reply(None, tool_calls=[call, call]))
    ids = [c["id"] for c in calls_of(provider(endpoint).complete(ask(user("q"))).message)]
    assert len(set(ids)) == 2 and all(i.startswith("call_") for i in ids)


def test_arguments_given_as_an_object_are_taken(endpoint: Endpoint) -> None:
    call = {"id": "c", "function": {"name": "note", "arguments": {"text": "hi"}}}
    endpoint.reply = json_reply(200, chat_reply(None, tool_calls=[call]))
    done = provider(endpoint).complete(ask(user("q")))
    assert calls_of(done.message) == [{"id": "c", "tool": "note", "args": {"text": "hi"}}]


@pytest.mark.parametrize("arguments", ['{"q": "tea"', '["tea"]', '"tea"', '{"n": NaN}'])
@pytest.mark.parametrize("streamed", [False, True])
def test_bad_arguments_are_a_harness_error(
    endpoint: Endpoint, arguments: str, streamed: bool
) -> None:
    calls = [tool_call("call_1", "lookup", arguments)]
    endpoint.reply = tool_calling_reply(endpoint, calls)
    with pytest.raises(HarnessError) as caught:
        provider(endpoint).complete(ask(user("q")), (lambda _: None) if streamed else None)
    text = str(caught.value)
    assert "tool 'lookup' (call 0) with arguments" in text
    assert "\n" not in text and endpoint.url.split("//")[1].split("/")[0] in text


def _reply_with(tool_calls: Any) -> Reply:
    return json_reply(200, chat_reply(None, tool_calls=tool_calls))


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (_reply_with("lookup"), "tool_calls is not a list"),
        (_reply_with([7]), r"tool_calls\[0\] is not an object"),
        (_reply_with([{"type": "code", "function": {"name": "x"}}]), "unsupported type 'code'"),
        (_reply_with([{"id": "c", "function": {"arguments": "{}"}}]), "names no function"),
        (_reply_with([{"id": "c", "function": "lookup"}]), "function is not an object"),
        (_reply_with([{"function": {"name": "x", "arguments": 7}}]), "arguments is not a string"),
        (_reply_with([{"id": 7, "function": {"name": "x"}}]), "id is not a string"),
        (sse_reply(chunk(tool_calls={"index": 0}), "[DONE]"), "delta.tool_calls is not a list"),
        (
            sse_reply(chunk(tool_calls=[{"index": -1, "function": {"name": "x"}}]), "[DONE]"),
            "index is not a count",
        ),
    ],
)
def test_garbage_tool_calls_are_a_malformed_answer(
    endpoint: Endpoint, reply: Reply, error: str
) -> None:
    endpoint.reply = reply
    with pytest.raises(UnavailableError, match=f"sent a malformed answer: .*{error}"):
        provider(endpoint).complete(ask(user("q")), lambda _: None)


def test_the_fake_records_what_it_was_sent(endpoint: Endpoint) -> None:
    endpoint.reply = tool_calling_reply(endpoint, [tool_call("c", "lookup", "{}")])
    provider(endpoint).complete(ask(user("q"), tool_choice={"mode": "MODE_REQUIRED"}))
    assert json.loads(json.dumps(endpoint.seen[0].body))["tool_choice"] == "required"
