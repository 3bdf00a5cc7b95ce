"""The OpenAI chat-completions JSON: the request body sent, the reply or stream read back.

Pure translation, no I/O: :mod:`.openai` posts the body and hands the answer here. What
may be sent and how an answer becomes an ``assistant`` :class:`Completion` are the
invariants :mod:`.openai` states; a 2xx answer that is not a chat completion raises
:class:`~.openai_tools.Malformed`, and an exception from ``on_delta`` is carried out as
:class:`CallbackError` so the transport's handlers never mistake it for the server's.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from agentsessions.controller.spi import Completion, Message, ModelRequest
from agentsessions.errors import InvalidArgumentError
from agentsessions.models.openai_tools import (
    Malformed,
    ToolCallAssembler,
    assistant_message,
    tool_choice_body,
    tool_messages,
    tools_body,
)
from agentsessions.v1.construct import message, text_part
from agentsessions.v1.model import Part

PARAMS: dict[str, type[int] | type[float]] = {
    "temperature": float,
    "top_p": float,
    "max_tokens": int,
    "seed": int,
}
MAX_DETAIL = 200


class CallbackError(Exception):
    """``on_delta`` raised: carried past the transport handlers, then re-raised unchanged."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def deliver(on_delta: Callable[[str], None], text: str) -> None:
    try:
        on_delta(text)
    except Exception as exc:
        raise CallbackError(exc) from exc


# --------------------------------------------------------------------------- request


def request_body(model: str, request: ModelRequest, *, stream: bool) -> bytes:
    """The JSON body for ``request``, or InvalidArgumentError if it cannot be sent whole."""
    body: dict[str, Any] = {"model": model, "messages": chat_messages(request.messages)}
    if request.tools:
        body["tools"] = tools_body(request.tools)
    offered = [tool["function"]["name"] for tool in body.get("tools", ())]
    choice = tool_choice_body(request.tool_choice, offered)
    if choice is not None:
        body["tool_choice"] = choice
    body.update(sampling_params(request.params or {}))
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


def chat_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """``{"role", "content"}`` per message: text parts joined, reasoning parts dropped.

    An assistant message's tool calls become its ``tool_calls``; a ``tool`` message becomes
    one ``tool`` message per result it holds (see :mod:`.openai_tools`)."""
    out: list[dict[str, Any]] = []
    for index, msg in enumerate(messages):
        role = str(msg.get("role") or "user")
        parts = msg.get("parts") or ()
        if role == "tool":
            out.extend(tool_messages(index, parts))
            continue
        pieces: list[str] = []
        calls: list[Any] = []
        for part in parts:
            kind = next(iter(part), "")
            if kind == "text":
                pieces.append(str(part["text"].get("text", "")))
            elif kind == "tool_call" and role == "assistant":
                calls.append(part["tool_call"])
            elif kind not in ("", "reasoning"):
                raise InvalidArgumentError(
                    f"openai model: message {index} ({role}) has a {kind} part; only text"
                    " (and tool calls on an assistant message) is supported"
                )
        if calls:
            out.append(assistant_message(index, "".join(pieces), calls))
        else:
            out.append({"role": role, "content": "".join(pieces)})
    return out


def sampling_params(params: Mapping[str, str]) -> dict[str, int | float]:
    """The request's params as JSON numbers; only the keys in ``PARAMS`` are accepted."""
    out: dict[str, int | float] = {}
    for key, value in params.items():
        kind = PARAMS.get(key)
        if kind is None:
            known = ", ".join(PARAMS)
            raise InvalidArgumentError(f"openai model: unsupported param {key!r} ({known})")
        try:
            number = kind(value)
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            raise InvalidArgumentError(f"openai model: param {key} must be a number: {value!r}")
        out[key] = number
    return out


# --------------------------------------------------------------------------- response


def parse_reply(reply: Any, calls: ToolCallAssembler) -> tuple[str, str, Any]:
    """(text, reasoning, raw usage) of a non-streamed chat completion; its tool calls go to
    ``calls``."""
    choices = reply.get("choices") if isinstance(reply, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise Malformed("no choices")
    msg = choices[0].get("message")
    if not isinstance(msg, dict):
        raise Malformed("choices[0].message is not an object")
    usage = reply.get("usage")
    calls.add_reply(msg.get("tool_calls"))
    return _text(msg, "content"), _text(msg, "reasoning_content"), usage


def parse_stream(
    payloads: Iterator[str], on_delta: Callable[[str], None], calls: ToolCallAssembler
) -> tuple[str, str, Any]:
    """(text, reasoning, raw usage) from the ``data:`` payloads of a streamed completion;
    the tool-call fragments are assembled in ``calls``."""
    text: list[str] = []
    reasoning: list[str] = []
    usage: Any = None
    finished = False
    for payload in payloads:
        if payload == "[DONE]":
            finished = True
            break
        chunk = json_value(payload.encode("utf-8"))
        if not isinstance(chunk, dict):
            raise Malformed("a stream chunk is not an object")
        if chunk.get("error"):
            raise Malformed(f"error in stream: {error_detail(payload.encode('utf-8'))}")
        usage = chunk.get("usage") or usage
        content, thought, done = _delta(chunk, calls)
        finished = finished or done
        reasoning.append(thought)
        if content:
            text.append(content)
            deliver(on_delta, content)
    if not finished:
        raise Malformed("the stream ended before data: [DONE]")
    return "".join(text), "".join(reasoning), usage


def _delta(chunk: dict[str, Any], calls: ToolCallAssembler) -> tuple[str, str, bool]:
    """(content, reasoning, finished) of one stream chunk; usage-only chunks have no choice."""
    choices = chunk.get("choices")
    if not choices:
        return "", "", False
    if not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise Malformed("choices is not a list of objects")
    delta = choices[0].get("delta") or {}
    if not isinstance(delta, dict):
        raise Malformed("choices[0].delta is not an object")
    done = choices[0].get("finish_reason") is not None
    calls.add_deltas(delta.get("tool_calls"))
    return _text(delta, "content"), _text(delta, "reasoning_content"), done


def usage_body(model: str, raw: Any) -> dict[str, Any] | None:
    """The ``agentsessions.v1.Usage`` dict for the server's usage object (None if absent)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise Malformed("usage is not an object")
    details = raw.get("completion_tokens_details") or {}
    counts = {
        "input_tokens": raw.get("prompt_tokens"),
        "output_tokens": raw.get("completion_tokens"),
        "reasoning_tokens": details.get("reasoning_tokens") if isinstance(details, dict) else None,
    }
    out: dict[str, Any] = {"model": model}
    for name, value in counts.items():
        if value is None:
            continue
        if type(value) is not int or not 0 <= value < 2**63:
            raise Malformed(f"usage {name} is not a token count: {value!r}")
        if value:
            out[name] = str(value)
    return out


def completion(
    model: str, text: str, reasoning: str, usage: Any, calls: Sequence[Part] = ()
) -> Completion:
    """The assistant message: a reasoning part if any, a text part if any, then the calls."""
    parts: list[Part] = []
    if reasoning:
        opaque = base64.b64encode(reasoning.encode("utf-8")).decode("ascii")
        parts.append(
            {"reasoning": {"provider": "openai", "model_id": model, "opaque_bytes": opaque}}
        )
    if text:
        parts.append(text_part(text))
    parts.extend(calls)
    answer: Message = dict(message("assistant", *parts))
    return Completion(message=answer, usage=usage_body(model, usage))


def error_detail(raw: bytes) -> str:
    """The server's error message (``error.message`` if JSON), one line, at most 200 chars."""
    text = raw.decode("utf-8", errors="replace")
    try:
        decoded = json.loads(text)
    except ValueError:
        decoded = None
    if isinstance(decoded, dict):
        error = decoded.get("error", decoded)
        found = error.get("message") if isinstance(error, dict) else error
        if isinstance(found, str) and found.strip():
            text = found
    text = " ".join(text.split())
    return text if len(text) <= MAX_DETAIL else text[:MAX_DETAIL] + "..."


def json_value(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise Malformed(f"invalid JSON ({exc})") from exc


def _text(obj: dict[str, Any], key: str) -> str:
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value or ""
    raise Malformed(f"{key} is not a string")
