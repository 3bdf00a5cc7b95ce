"""An OpenAI-compatible chat-completions model over plain HTTP (stdlib ``http.client`` only).

One ``complete`` is one POST to ``base_url + path`` (default ``https://api.openai.com/v1`` and
``/chat/completions``; the path may carry a query, e.g. an ``api-version``). The body is
``{"model", "messages": [{"role", "content"}]}``, plus ``"stream": true`` and
``"stream_options": {"include_usage": true}`` when an ``on_delta`` is given; the answer is then
read as server-sent events (``data: {...}`` lines until ``data: [DONE]``), each
``choices[0].delta.content`` going to ``on_delta`` as it arrives.

Invariants:

- What is sent is exactly what the journal says was asked, or nothing: a message's content is
  the concatenation of its text parts; reasoning parts are dropped (they are provider state
  recorded for replay continuity, not input); tool definitions, tool choice, an assistant's
  tool-call parts and a ``tool`` message's tool-result parts are mapped as
  :mod:`.openai_tools` says; file and data parts, and params other than ``temperature``,
  ``top_p``, ``max_tokens`` and ``seed``, are refused with InvalidArgumentError before any
  byte is sent.
- The body's ``model`` is the model's own name, never a spec: a request model of ``""`` or
  ``"echo"`` (the echo harness's placeholder) or an ``openai:NAME[,options]`` spec (what the
  controller passes: the spec this provider was made from) means this provider's model; any
  other request model is a plain name and is sent as is.
- Without a key (``MODEL_API_KEY``/``OPENAI_API_KEY``) a call to the public endpoint
  (``api.openai.com``, which answers every keyless request with 401) is refused before
  anything is sent (UnavailableError; the turn fails and keeps its input for ``resume`` once
  the key is set). Other endpoints (a local server) may need none.
- An answer with no text and no tool call is a failed call (UnavailableError naming the
  finish reason), not an empty OUTPUT: a turn never ends COMPLETED on nothing.
- The completion is ``assistant`` with a reasoning part (only if the server returned
  ``reasoning_content``), a text part (only if non-empty), then one ``tool_call`` part per
  tool call the server asked for (streamed calls assembled by index). Usage is the
  ``agentsessions.v1.Usage`` dict (int64 counts as strings, zero counts omitted) when the
  server reports usage, else None. The concatenated deltas equal the completion text.
- A streamed answer counts only if it ends with ``data: [DONE]`` or a choice carried a
  ``finish_reason``; a stream cut before that raises rather than recording half an answer.
- The API key comes only from the environment, ``MODEL_API_KEY`` else ``OPENAI_API_KEY``
  (never an option); unset means no auth header. Header ``Authorization`` carries
  ``Bearer <key>``, any other header name the raw key. The key never appears in a message,
  a repr or an error (a server error that echoes it is redacted).
- Every failure to get an answer is an UnavailableError with one line naming the endpoint
  (scheme, host, port and path; never the query or credentials) and, for an HTTP error, the
  status and the server's message truncated to 200 characters; except a request over the
  model's context window (HTTP 400 ``context_length_exceeded`` and the variants
  :mod:`.overflow` lists), which is a ContextOverflowError, so a harness can compact.
- Timeouts: ``connect_timeout`` bounds connecting (and the TLS handshake), ``read_timeout``
  bounds each wait for bytes (an idle stream), not the whole answer. Proxies are not used.
"""

from __future__ import annotations

import base64
import http.client
import json
import math
import os
import re
import socket
import ssl
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from agentsessions.controller.spi import Completion, Message, ModelRequest
from agentsessions.errors import (
    AgentSessionsError,
    ContextOverflowError,
    InvalidArgumentError,
    UnavailableError,
)
from agentsessions.models.catalog import clip
from agentsessions.models.openai_tools import (
    Malformed,
    ToolCallAssembler,
    assistant_message,
    tool_choice_body,
    tool_messages,
    tools_body,
)
from agentsessions.models.overflow import is_overflow
from agentsessions.v1.model import Part, message, text_part

DEFAULT_BASE_URL = "https://api.openai.com/v1"
PUBLIC_HOST = "api.openai.com"
DEFAULT_PATH = "/chat/completions"
DEFAULT_AUTH_HEADER = "Authorization"
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_READ_TIMEOUT = 120.0
BASE_URL_VARIABLE = "MODEL_BASE_URL"
KEY_VARIABLES = ("MODEL_API_KEY", "OPENAI_API_KEY")
OPTIONS = ("base_url", "path", "auth_header", "connect_timeout", "read_timeout")
PARAMS: dict[str, type[int] | type[float]] = {
    "temperature": float,
    "top_p": float,
    "max_tokens": int,
    "seed": int,
}
MAX_RESPONSE = 32 << 20  # a completion is small; a runaway endpoint must not exhaust memory
MAX_DETAIL = 200
_PLACEHOLDER_MODELS = ("", "echo")
_SPEC_PREFIX = "openai:"
_UNREACHABLE = "check the model's base_url (or MODEL_BASE_URL) and that the server is up"
_NOT_COMPATIBLE = "check that base_url and path name an OpenAI-compatible chat endpoint"
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


_Malformed = Malformed  # the server answered 2xx with something that is not a chat completion


class _CallbackError(Exception):
    """``on_delta`` raised: carried past the transport handlers, then re-raised unchanged."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def _deliver(on_delta: Callable[[str], None], text: str) -> None:
    try:
        on_delta(text)
    except Exception as exc:
        raise _CallbackError(exc) from exc


@dataclass(frozen=True)
class Endpoint:
    """Where the completions endpoint is; ``display`` is safe to show (no query, no userinfo)."""

    scheme: str
    host: str
    port: int | None
    target: str
    display: str

    @classmethod
    def parse(cls, base_url: str, path: str = DEFAULT_PATH) -> Endpoint:
        """Join ``base_url`` and ``path`` (which may carry a query) and check the result."""
        path = path or DEFAULT_PATH
        if not path.startswith("/"):
            path = "/" + path
        parts = urlsplit(base_url.rstrip("/") + path)
        try:
            port = parts.port
        except ValueError:
            port = -1
        if parts.scheme not in ("http", "https") or not parts.hostname or port == -1:
            raise InvalidArgumentError(
                f"model base_url must look like http(s)://host[:port]/path, got {clip(base_url)!r}"
            )
        host = parts.hostname
        netloc = (f"[{host}]" if ":" in host else host) + (f":{port}" if port else "")
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return cls(parts.scheme, host, port, target, f"{parts.scheme}://{netloc}{parts.path}")

    def connection(self, timeout: float) -> http.client.HTTPConnection:
        """An unconnected HTTP(S) connection to this endpoint."""
        if self.scheme == "https":
            context = ssl.create_default_context()
            return http.client.HTTPSConnection(
                self.host, self.port, timeout=timeout, context=context
            )
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)


def api_key(environ: Mapping[str, str]) -> str | None:
    """The key from ``MODEL_API_KEY``, else ``OPENAI_API_KEY``; None if neither is set."""
    for name in KEY_VARIABLES:
        value = environ.get(name, "").strip()
        if value:
            if _CONTROL.search(value):
                raise InvalidArgumentError(f"{name} contains control characters")
            return value
    return None


class OpenAIModel:
    """A model provider for one OpenAI-compatible chat-completions endpoint."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "",
        path: str = DEFAULT_PATH,
        auth_header: str = DEFAULT_AUTH_HEADER,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        env = os.environ if environ is None else environ
        if not model:
            raise InvalidArgumentError("openai model: a model name is required (openai:MODEL)")
        if not _HEADER_NAME.fullmatch(auth_header):
            raise InvalidArgumentError(f"openai model: bad auth_header name {clip(auth_header)!r}")
        self.model = model
        self.endpoint = Endpoint.parse(
            base_url or env.get(BASE_URL_VARIABLE, "") or DEFAULT_BASE_URL, path
        )
        self.auth_header = auth_header
        self.connect_timeout = _positive("connect_timeout", connect_timeout)
        self.read_timeout = _positive("read_timeout", read_timeout)
        self._key = api_key(env)

    @classmethod
    def from_options(
        cls, model: str, options: Mapping[str, str], environ: Mapping[str, str] | None = None
    ) -> OpenAIModel:
        """A provider from spec options (see ``OPTIONS``); timeouts are seconds."""
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise InvalidArgumentError(
                f"openai model: unknown option {clip(unknown[0])!r} (known: {', '.join(OPTIONS)})"
            )
        timeouts = {
            name: _seconds(name, options[name])
            for name in ("connect_timeout", "read_timeout")
            if name in options
        }
        return cls(
            model,
            base_url=options.get("base_url", ""),
            path=options.get("path", DEFAULT_PATH),
            auth_header=options.get("auth_header", DEFAULT_AUTH_HEADER),
            environ=environ,
            **timeouts,
        )

    @property
    def has_key(self) -> bool:
        """Whether requests carry a credential (the key itself is never exposed)."""
        return self._key is not None

    def __repr__(self) -> str:
        auth = self.auth_header if self._key else "none"
        return f"OpenAIModel({self.model!r}, url={self.endpoint.display!r}, auth={auth!r})"

    def wire_model(self, requested: str) -> str:
        """The model name sent for a request model (see the module docstring)."""
        if requested in _PLACEHOLDER_MODELS or requested.strip().startswith(_SPEC_PREFIX):
            return self.model
        return requested

    def complete(
        self, request: ModelRequest, on_delta: Callable[[str], None] | None = None
    ) -> Completion:
        """POST the request and return the whole answer (streaming deltas if asked)."""
        model = self.wire_model(request.model)
        body = request_body(model, request, stream=on_delta is not None)
        if self._key is None and self.endpoint.host == PUBLIC_HOST:
            raise UnavailableError(
                f"model endpoint {self.endpoint.display} needs an API key, and neither"
                " MODEL_API_KEY nor OPENAI_API_KEY is set; nothing was sent",
                hint="export MODEL_API_KEY=... and resume the turn, or name a local server"
                " with base_url=http://HOST:PORT/v1",
                url=self.endpoint.display,
            )
        connection, response = self._post(body)
        try:
            return self._answer(model, response, on_delta)
        except _CallbackError as exc:
            raise exc.error from None
        except _Malformed as exc:
            raise self._failure(f"sent a malformed answer: {exc}", _NOT_COMPATIBLE) from exc
        except (OSError, http.client.HTTPException) as exc:
            raise self._failure(_reason(exc, self.read_timeout, "read")) from exc
        finally:
            response.close()
            connection.close()

    def _answer(
        self,
        model: str,
        response: http.client.HTTPResponse,
        on_delta: Callable[[str], None] | None,
    ) -> Completion:
        if not 200 <= response.status < 300:
            raise self._status_error(response)
        content_type = response.getheader("Content-Type", "").lower()
        calls = ToolCallAssembler(self.endpoint.display)
        if on_delta is None or content_type.startswith("application/json"):
            text, reasoning, usage = parse_reply(_json(_read_all(response)), calls)
            if on_delta is not None and text:
                _deliver(on_delta, text)
        else:
            text, reasoning, usage = parse_stream(_sse_data(response), on_delta, calls)
        parts = calls.parts()
        if not text and not parts:
            raise UnavailableError(
                f"model endpoint {self.endpoint.display} returned an empty answer (no text"
                " and no tool call); nothing was recorded as the model's output",
                hint="the model may have filtered its answer or run out of max_tokens; "
                "continue the failed turn with agentsessions resume SESSION",
                url=self.endpoint.display,
            )
        return completion(model, text, reasoning, usage, parts)

    def _post(self, body: bytes) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        connection = self.endpoint.connection(self.connect_timeout)
        try:
            connection.connect()
        except OSError as exc:
            connection.close()
            raise self._failure(_reason(exc, self.connect_timeout, "connect")) from exc
        try:
            connection.sock.settimeout(self.read_timeout)
            connection.request("POST", self.endpoint.target, body=body, headers=self._headers())
            return connection, connection.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            connection.close()
            raise self._failure(_reason(exc, self.read_timeout, "read")) from exc

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "User-Agent": "agentsessions"}
        if self._key is not None:
            bearer = self.auth_header.lower() == DEFAULT_AUTH_HEADER.lower()
            headers[self.auth_header] = f"Bearer {self._key}" if bearer else self._key
        return headers

    def _status_error(self, response: http.client.HTTPResponse) -> AgentSessionsError:
        raw = response.read(64 << 10)
        detail = self._redact(error_detail(raw))
        status = response.status
        message = f"model endpoint {self.endpoint.display} returned HTTP {status}"
        if is_overflow(status, raw):  # the harness may compact and retry (.overflow)
            return ContextOverflowError(
                f"{message} (the request is over the model's context window): {detail}",
                hint="compact the session (agentsessions compact SESSION) or send less",
                url=self.endpoint.display,
                status=status,
            )
        return UnavailableError(
            f"{message}: {detail}" if detail else message,
            hint=_STATUS_HINTS.get(status, ""),
            url=self.endpoint.display,
            status=status,
        )

    def _failure(self, reason: str, hint: str = _UNREACHABLE) -> UnavailableError:
        return UnavailableError(
            f"model endpoint {self.endpoint.display} {self._redact(reason)}",
            hint=hint,
            url=self.endpoint.display,
        )

    def _redact(self, text: str) -> str:
        return text.replace(self._key, "[redacted]") if self._key else text


_STATUS_HINTS = {
    401: "set MODEL_API_KEY (or OPENAI_API_KEY) to a key this endpoint accepts",
    403: "the key in MODEL_API_KEY (or OPENAI_API_KEY) may not access this model",
    404: "check the model name and the base_url and path options",
    429: "the endpoint is rate limiting; retry later",
}


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
        raise _Malformed("no choices")
    msg = choices[0].get("message")
    if not isinstance(msg, dict):
        raise _Malformed("choices[0].message is not an object")
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
        chunk = _json(payload.encode("utf-8"))
        if not isinstance(chunk, dict):
            raise _Malformed("a stream chunk is not an object")
        if chunk.get("error"):
            raise _Malformed(f"error in stream: {error_detail(payload.encode('utf-8'))}")
        usage = chunk.get("usage") or usage
        content, thought, done = _delta(chunk, calls)
        finished = finished or done
        reasoning.append(thought)
        if content:
            text.append(content)
            _deliver(on_delta, content)
    if not finished:
        raise _Malformed("the stream ended before data: [DONE]")
    return "".join(text), "".join(reasoning), usage


def _delta(chunk: dict[str, Any], calls: ToolCallAssembler) -> tuple[str, str, bool]:
    """(content, reasoning, finished) of one stream chunk; usage-only chunks have no choice."""
    choices = chunk.get("choices")
    if not choices:
        return "", "", False
    if not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise _Malformed("choices is not a list of objects")
    delta = choices[0].get("delta") or {}
    if not isinstance(delta, dict):
        raise _Malformed("choices[0].delta is not an object")
    done = choices[0].get("finish_reason") is not None
    calls.add_deltas(delta.get("tool_calls"))
    return _text(delta, "content"), _text(delta, "reasoning_content"), done


def usage_body(model: str, raw: Any) -> dict[str, Any] | None:
    """The ``agentsessions.v1.Usage`` dict for the server's usage object (None if absent)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise _Malformed("usage is not an object")
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
            raise _Malformed(f"usage {name} is not a token count: {value!r}")
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


# --------------------------------------------------------------------------- wire helpers


def _read_all(response: http.client.HTTPResponse) -> bytes:
    raw = response.read(MAX_RESPONSE + 1)
    if len(raw) > MAX_RESPONSE:
        raise _Malformed(f"the answer is over {MAX_RESPONSE >> 20} MiB")
    return raw


def _sse_data(response: http.client.HTTPResponse) -> Iterator[str]:
    """The payload of each ``data:`` line (comments, ``event:`` and blank lines skipped)."""
    total = 0
    while line := response.readline(MAX_RESPONSE + 1):
        total += len(line)
        if total > MAX_RESPONSE:
            raise _Malformed(f"the stream is over {MAX_RESPONSE >> 20} MiB")
        try:
            text = line.decode("utf-8").strip()
        except UnicodeDecodeError as exc:
            raise _Malformed(f"the stream is not UTF-8 ({exc.reason})") from exc
        if text.startswith("data:"):
            yield text[len("data:") :].strip()


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise _Malformed(f"invalid JSON ({exc})") from exc


def _text(obj: dict[str, Any], key: str) -> str:
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value or ""
    raise _Malformed(f"{key} is not a string")


def _reason(exc: BaseException, timeout: float, phase: str) -> str:
    """Why a connection failed, in a few words on one line."""
    if isinstance(exc, ConnectionRefusedError):
        return "unreachable: connection refused"
    if isinstance(exc, TimeoutError):
        return f"timed out: no {phase} within {timeout:g}s ({phase}_timeout)"
    if isinstance(exc, socket.gaierror):
        return f"unreachable: cannot resolve host ({exc.strerror})"
    detail = " ".join(str(exc).split()) or type(exc).__name__
    verb = "unreachable" if phase == "connect" else "failed"
    return f"{verb}: {detail}"


def _positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidArgumentError(f"openai model: {name} must be a number of seconds")
    if not (math.isfinite(value) and value > 0):
        raise InvalidArgumentError(f"openai model: {name} must be positive, got {value!r}")
    return float(value)


def _seconds(name: str, value: str) -> float:
    try:
        return _positive(name, float(value))
    except ValueError:
        raise InvalidArgumentError(
            f"openai model: {name} must be seconds, got {clip(value)!r}"
        ) from None
