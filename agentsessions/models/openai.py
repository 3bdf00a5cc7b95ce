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

import http.client
import math
import os
import re
import socket
import ssl
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from agentsessions.controller.spi import Completion, ModelRequest
from agentsessions.errors import (
    AgentSessionsError,
    ContextOverflowError,
    InvalidArgumentError,
    UnavailableError,
)
from agentsessions.models.catalog import clip
from agentsessions.models.openai_body import (
    CallbackError,
    completion,
    deliver,
    error_detail,
    json_value,
    parse_reply,
    parse_stream,
    request_body,
)
from agentsessions.models.openai_tools import Malformed, ToolCallAssembler
from agentsessions.models.overflow import is_overflow

DEFAULT_BASE_URL = "https://api.openai.com/v1"
PUBLIC_HOST = "api.openai.com"
DEFAULT_PATH = "/chat/completions"
DEFAULT_AUTH_HEADER = "Authorization"
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_READ_TIMEOUT = 120.0
BASE_URL_VARIABLE = "MODEL_BASE_URL"
KEY_VARIABLES = ("MODEL_API_KEY", "OPENAI_API_KEY")
OPTIONS = ("base_url", "path", "auth_header", "connect_timeout", "read_timeout")
MAX_RESPONSE = 32 << 20  # a completion is small; a runaway endpoint must not exhaust memory
_PLACEHOLDER_MODELS = ("", "echo")
_SPEC_PREFIX = "openai:"
_UNREACHABLE = "check the model's base_url (or MODEL_BASE_URL) and that the server is up"
_NOT_COMPATIBLE = "check that base_url and path name an OpenAI-compatible chat endpoint"
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


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
        except CallbackError as exc:
            raise exc.error from None
        except Malformed as exc:
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
            text, reasoning, usage = parse_reply(json_value(_read_all(response)), calls)
            if on_delta is not None and text:
                deliver(on_delta, text)
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


# --------------------------------------------------------------------------- wire helpers


def _read_all(response: http.client.HTTPResponse) -> bytes:
    raw = response.read(MAX_RESPONSE + 1)
    if len(raw) > MAX_RESPONSE:
        raise Malformed(f"the answer is over {MAX_RESPONSE >> 20} MiB")
    return raw


def _sse_data(response: http.client.HTTPResponse) -> Iterator[str]:
    """The payload of each ``data:`` line (comments, ``event:`` and blank lines skipped)."""
    total = 0
    while line := response.readline(MAX_RESPONSE + 1):
        total += len(line)
        if total > MAX_RESPONSE:
            raise Malformed(f"the stream is over {MAX_RESPONSE >> 20} MiB")
        try:
            text = line.decode("utf-8").strip()
        except UnicodeDecodeError as exc:
            raise Malformed(f"the stream is not UTF-8 ({exc.reason})") from exc
        if text.startswith("data:"):
            yield text[len("data:") :].strip()


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
