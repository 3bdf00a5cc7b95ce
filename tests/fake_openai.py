"""A fake OpenAI-compatible endpoint: a real HTTP server on 127.0.0.1 in a thread.

Shared by the OpenAI provider's unit tests and the ModelProvider contract suite. The server
records each request (path, headers, JSON body) and answers with whatever the test set as
``Endpoint.reply``: a JSON reply, a stream of server-sent events, an error status, silence,
or (:func:`compatible_reply`) a small but complete chat-completions server that answers
``fake:<last message content>``, streamed as SSE when the request asks for ``stream``;
:func:`tool_calling_reply` is that server with tools: it asks for the given tool calls when a
user's message comes with tools offered, and answers ``fake:<tool result>`` after a result.
Nothing listens beyond the loopback interface, and :func:`serve` joins every thread.

The fake is as strict as real servers are about what they accept: :func:`compatible_reply`
(and the replies built on it) refuse a model the endpoint does not serve (``Endpoint.models``;
HTTP 404 ``model_not_found``, as OpenAI answers) and a request without the fields real servers
require (:func:`request_problem`; HTTP 400 ``invalid_request_error``): a client bug that any
real server would refuse cannot pass here.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[BaseHTTPRequestHandler], None]

USAGE = {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
MODELS = frozenset({"gpt-test", "gpt-fake", "gpt", "gpt-other", "m"})
"""The models a fake endpoint serves unless a test names others."""
_ROLES = ("system", "developer", "user", "assistant", "tool")


@dataclass
class Seen:
    """One request as the server received it."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class Endpoint:
    """The fake endpoint: what it saw, and how it answers next."""

    url: str
    reply: Reply = field(default_factory=lambda: json_reply(200, chat_reply("ok")))
    seen: list[Seen] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    models: frozenset[str] = MODELS


def json_reply(status: int, obj: Any) -> Reply:
    """Answer ``obj`` as a JSON body with ``status``."""
    return raw_reply(status, json.dumps(obj).encode(), "application/json")


def raw_reply(status: int, body: bytes, content_type: str = "text/plain") -> Reply:
    """Answer ``body`` verbatim with ``status``."""

    def send(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    return send


def sse_reply(*payloads: Any) -> Reply:
    """Each payload as one ``data:`` event (dicts as JSON), then the connection closes."""

    def send(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.end_headers()
        handler.wfile.write(b": keep-alive comment\n\n")
        for payload in payloads:
            data = payload if isinstance(payload, str) else json.dumps(payload)
            handler.wfile.write(f"data: {data}\n\n".encode())
            handler.wfile.flush()

    return send


def chat_reply(
    text: str | None, usage: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    """A non-streamed chat completion answering ``text`` (``None``: content null)."""
    reply: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text, **extra}}],
    }
    if usage is not None:
        reply["usage"] = usage
    return reply


def chunk(content: str | None = None, finish: str | None = None, **delta: Any) -> dict[str, Any]:
    """One streamed chunk whose delta carries ``content`` (and any other delta fields)."""
    if content is not None:
        delta["content"] = content
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """One OpenAI ``tool_calls`` item (``arguments`` is the JSON string the model wrote)."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def tool_call_chunks(calls: list[dict[str, Any]], pieces: int = 3) -> list[dict[str, Any]]:
    """The stream chunks of ``calls`` as OpenAI sends them: per call a head (index, id, type,
    name, empty arguments), then its arguments in ``pieces`` fragments; then the finish."""
    out: list[dict[str, Any]] = []
    for index, call in enumerate(calls):
        function = call["function"]
        head = {**call, "index": index, "function": {"name": function["name"], "arguments": ""}}
        out.append(chunk(tool_calls=[head]))
        text = function["arguments"]
        size = max(1, -(-len(text) // pieces))
        for start in range(0, len(text), size):
            fragment = {"index": index, "function": {"arguments": text[start : start + size]}}
            out.append(chunk(tool_calls=[fragment]))
    out.append(chunk(finish="tool_calls"))
    return out


def tool_calling_reply(endpoint: Endpoint, calls: list[dict[str, Any]]) -> Reply:
    """:func:`compatible_reply` that asks for ``calls`` when tools come with a user message.

    After a tool result (the last message has role ``tool``) it answers ``fake:<content>``,
    so a test sees the result reach the server and come back in the answer."""
    plain = compatible_reply(endpoint)

    def send(handler: BaseHTTPRequestHandler) -> None:
        body = endpoint.seen[-1].body
        last = (body.get("messages") or [{}])[-1]
        if refused(endpoint, handler):
            return
        if not body.get("tools") or last.get("role") != "user":
            plain(handler)
        elif not body.get("stream"):
            json_reply(200, chat_reply(None, USAGE, tool_calls=calls))(handler)
        else:
            events: list[Any] = [chunk(role="assistant"), *tool_call_chunks(calls)]
            sse_reply(*events, {"choices": [], "usage": USAGE}, "[DONE]")(handler)

    return send


def compatible_reply(endpoint: Endpoint) -> Reply:
    """A chat-completions server: ``fake:<last content>`` with usage, SSE when streamed.

    The answer depends only on the request, so the fake is deterministic; a streamed answer
    is split into word-sized chunks.
    """

    def send(handler: BaseHTTPRequestHandler) -> None:
        body = endpoint.seen[-1].body
        if refused(endpoint, handler):
            return
        messages = body.get("messages") or [{}]
        text = "fake:" + str(messages[-1].get("content", ""))
        if not body.get("stream"):
            json_reply(200, chat_reply(text, USAGE))(handler)
            return
        pieces = re.findall(r"\S+\s*|\s+", text) or [""]
        events: list[Any] = [chunk(role="assistant")]
        events += [chunk(piece) for piece in pieces]
        events += [chunk(finish="stop"), {"choices": [], "usage": USAGE}, "[DONE]"]
        sse_reply(*events)(handler)

    return send


def refused(endpoint: Endpoint, handler: BaseHTTPRequestHandler) -> bool:
    """Answer the last request's error as a real server would, if it has one (True then)."""
    body = endpoint.seen[-1].body
    model = body.get("model")
    if model not in endpoint.models:
        message = f"The model `{model}` does not exist or you do not have access to it."
        error = {"message": message, "type": "invalid_request_error", "code": "model_not_found"}
        json_reply(404, {"error": error})(handler)
        return True
    problem = request_problem(body)
    if problem:
        error = {"message": problem, "type": "invalid_request_error", "code": None}
        json_reply(400, {"error": error})(handler)
        return True
    return False


def request_problem(body: dict[str, Any]) -> str:
    """What a real chat-completions server refuses in ``body`` ("" if nothing): messages
    must be a non-empty list of known roles, a tool message must answer a tool call of the
    assistant message before it by ``tool_call_id``, every tool call and tool must have
    ``type: function`` and a function name (a call also its ``arguments`` string), and
    ``stream_options`` is only allowed with ``stream``."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array"
    asked: set[str] = set()
    for index, msg in enumerate(messages):
        role = msg.get("role") if isinstance(msg, dict) else None
        if role not in _ROLES:
            return f"messages[{index}].role must be one of {', '.join(_ROLES)}"
        if role == "tool":
            if msg.get("tool_call_id") not in asked:
                return f"messages[{index}]: a tool message must answer a preceding tool_call_id"
            continue
        calls = msg.get("tool_calls") or []
        asked = set()
        for call in calls:
            function = call.get("function") or {}
            if call.get("type") != "function" or not call.get("id") or not function.get("name"):
                return f"messages[{index}].tool_calls: each needs id, type function and a name"
            if not isinstance(function.get("arguments"), str):
                return f"messages[{index}].tool_calls: arguments must be a JSON string"
            asked.add(call["id"])
    for tool in body.get("tools") or []:
        if tool.get("type") != "function" or not (tool.get("function") or {}).get("name"):
            return "each of 'tools' needs type function and a function name"
    if "stream_options" in body and not body.get("stream"):
        return "stream_options is only allowed when stream is true"
    return ""


OVERFLOWS = {
    "openai": (400, {"error": {
        "message": "This model's maximum context length is 128 tokens. However, your messages "
        "resulted in 900 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded",
    }}),
    "llama.cpp": (400, {"error": {
        "code": 400, "message": "the request exceeds the available context size, try "
        "increasing it", "type": "exceed_context_size_error",
    }}),
    "vllm": (400, {"object": "error", "type": "BadRequestError", "code": 400, "message":
        "This model's maximum context length is 4096 tokens. However, you requested 5000 "
        "tokens in the messages, Please reduce the length of the messages."}),
    "gateway": (413, {"error": "request entity too large"}),
}  # fmt: skip
"""How servers say "over the context window": an HTTP status and a JSON body each."""


def overflowing_reply(endpoint: Endpoint, max_bytes: int, variant: str = "openai") -> Reply:
    """:func:`compatible_reply`, except that a request whose messages are over ``max_bytes``
    (compact JSON) is refused as over the context window, the way ``variant`` says it."""
    answer = compatible_reply(endpoint)
    status, body = OVERFLOWS[variant]

    def send(handler: BaseHTTPRequestHandler) -> None:
        messages = endpoint.seen[-1].body.get("messages") or []
        if len(json.dumps(messages, separators=(",", ":"))) > max_bytes:
            json_reply(status, body)(handler)
        else:
            answer(handler)

    return send


def messages_size(seen: Seen) -> int:
    """The size :func:`overflowing_reply` compares with its limit."""
    return len(json.dumps(seen.body.get("messages") or [], separators=(",", ":")))


@contextlib.contextmanager
def serve() -> Iterator[Endpoint]:
    """Run a fake endpoint for the duration of the block; every thread is joined after."""
    state = Endpoint(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length))
            headers = {k.lower(): v for k, v in self.headers.items()}
            state.seen.append(Seen(self.path, headers, body))
            state.reply(self)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = False  # server_close joins every handler thread
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()
        thread.join()


def free_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
