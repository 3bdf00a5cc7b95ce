"""The ``unix:///path.sock`` executor: calls go to an operator-run process over a Unix socket.

Protocol (version 1), one exchange per connection: the host connects, writes ONE request as
a JSON object on one line (UTF-8, ``\\n``-terminated), reads ONE response line, and closes.

- ``{"op": "describe"}`` -> ``{"protocol": 1, "dedup": bool, "tools": [name, ...]}``.
  ``dedup`` true means the server keeps, per (session_uid, idempotency_key), the first
  outcome and answers a repeated key with it and no second effect; the executor is then
  ``idempotent`` and the host may re-drive a call a crash cut after its intent. ``tools``
  (optional) lists the tool names it serves.
- ``{"op": "call", "session_uid", "call_id", "tool", "args", "idempotency_key", "config"}``
  -> ``{"output": {...}}`` and/or ``{"content": [Part, ...]}``, or ``{"error": "..."}``.
  ``tool`` is the workload's tool name, or ``config["tool"]`` when that renames it; ``config``
  is the tool's workload config as is.

Bounds: a request over :data:`MAX_REQUEST` bytes is refused before it is sent; a response
line over ``config["max_response_bytes"]`` (default :data:`MAX_RESPONSE`) is garbage; the
connect takes at most :data:`CONNECT_TIMEOUT` s, a call's answer at most
``config["timeout"]`` s (default :data:`CALL_TIMEOUT`).

Failures, and who sees them:

- a malformed spec (not an absolute socket path, too long) is UnknownToolError (exit 2)
  when the workload loads;
- before a call's intent is recorded the host binds the tool (:meth:`UnixExecutor.prepare`,
  a ``describe`` exchange): no socket, a refused connection, a timeout or a garbage answer is
  a configuration problem, ToolServerError (exit 12): the call is not recorded and the
  turn ends with its ERROR (failed, retryable by resume); a tool the
  server says it does not serve is UnknownToolError (exit 2);
- after the intent, the same failures of the ``call`` exchange are ToolServerError raised
  from :meth:`UnixExecutor.call`, which the host records as an EXECUTOR_ERROR result the
  model sees (the call may or may not have had its effect: the message says which side of
  the request it failed on).

:mod:`.unixserver` is a small reference server (``python3 -m agentsessions.tools.unixserver``).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Mapping
from typing import Any

from agentsessions.controller.spi import ToolOutcome, ToolRequest
from agentsessions.errors import ToolServerError, UnknownToolError, WorkloadError

from .configschema import ConfigKey, ConfigSchema

PROTOCOL = 1
MAX_REQUEST = 1 << 20  # 1 MiB: a call's arguments and config
MAX_RESPONSE = 4 << 20  # 4 MiB default bound on one answer line
CONNECT_TIMEOUT = 5.0
CALL_TIMEOUT = 30.0
_SUN_PATH_MAX = 107  # sockaddr_un.sun_path is 108 bytes with the trailing NUL


def parse_socket_spec(spec: str) -> str:
    """The socket path of ``unix:///path.sock``, or UnknownToolError."""
    path = spec.strip()[len("unix://") :]
    if not spec.strip().startswith("unix://") or not path.startswith("/"):
        raise UnknownToolError(
            f"tool executor {spec!r}: expected unix:///absolute/path.sock",
            hint="for example unix:///run/mytools.sock",
        )
    if len(path.encode()) > _SUN_PATH_MAX:
        raise UnknownToolError(
            f"tool executor {spec!r}: the socket path is longer than {_SUN_PATH_MAX} bytes"
        )
    return path


class UnixExecutor:
    """Routes each call to the process listening on a Unix socket (see the module doc)."""

    # open: the server gets the whole config and may read keys of its own
    config_schema = ConfigSchema(
        {
            "tool": ConfigKey("string", doc="the server's name for the tool"),
            "timeout": ConfigKey("number", positive=True),
            "max_response_bytes": ConfigKey("integer", positive=True),
        },
        open=True,
    )

    def __init__(self, path: str) -> None:
        self.path = path
        self.spec = f"unix://{path}"
        self.idempotent = False  # set from the server's ``describe`` by :meth:`prepare`

    @classmethod
    def from_spec(cls, spec: str) -> UnixExecutor:
        """``unix:///path.sock``; checks the form only (nothing is connected)."""
        return cls(parse_socket_spec(spec))

    def prepare(self, tool: str, config: Mapping[str, Any]) -> None:
        """Check the server answers before the call is recorded: ToolServerError if not,
        UnknownToolError if it lists its tools and ``tool`` is not one of them; a bad
        ``timeout`` or ``max_response_bytes`` in ``config`` is a WorkloadError."""
        _check_config(tool, config)
        tool = _server_tool(tool, config)
        answer = self._exchange({"op": "describe"}, config, CONNECT_TIMEOUT, "describe")
        if answer.get("protocol") != PROTOCOL:
            raise self._garbage("describe", f"protocol {answer.get('protocol')!r}, expected 1")
        self.idempotent = answer.get("dedup") is True
        tools = answer.get("tools")
        if isinstance(tools, list) and tool not in tools:
            raise UnknownToolError(
                f"tool server {self.spec} does not serve tool {tool!r} (it serves: "
                f"{', '.join(map(str, tools)) or 'none'}); nothing was recorded"
            )

    def call(self, request: ToolRequest) -> ToolOutcome:
        """One ``call`` exchange; a transport failure raises ToolServerError (the host
        records it as an EXECUTOR_ERROR result)."""
        body = {
            "op": "call",
            "session_uid": request.session_uid,
            "call_id": request.call_id,
            "tool": _server_tool(request.tool, request.config),
            "args": dict(request.args),
            "idempotency_key": request.idempotency_key,
            "config": dict(request.config),
        }
        answer = self._exchange(body, request.config, _timeout(request.config), "call")
        return self._outcome(answer)

    # -- the wire ---------------------------------------------------------------------------
    def _exchange(
        self, body: Mapping[str, Any], config: Mapping[str, Any], timeout: float, op: str
    ) -> dict[str, Any]:
        try:
            line = json.dumps(body, ensure_ascii=False, allow_nan=False).encode() + b"\n"
        except (TypeError, ValueError) as exc:
            raise ToolServerError(f"{self.spec} {op}: the request is not JSON: {exc}") from None
        if len(line) > MAX_REQUEST:
            raise ToolServerError(
                f"{self.spec} {op}: the request is {len(line)} bytes, over {MAX_REQUEST}; "
                "it was not sent"
            )
        limit = _limit(config)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(CONNECT_TIMEOUT)
            try:
                sock.connect(self.path)
            except OSError as exc:
                raise ToolServerError(
                    f"tool server {self.spec} is not reachable ({_os_why(exc)}); the request "
                    "was not sent",
                    hint="start the operator's tool server on that socket",
                    path=self.path,
                ) from None
            sock.settimeout(timeout)
            try:
                sock.sendall(line)
                raw = _read_line(sock, limit)
            except TimeoutError:
                raise ToolServerError(
                    f"tool server {self.spec} {op}: no answer within {timeout:g}s; the "
                    "request was sent, its effect is unknown",
                    path=self.path,
                ) from None
            except OSError as exc:
                raise ToolServerError(
                    f"tool server {self.spec} {op}: the connection failed ({_os_why(exc)}) "
                    "after the request was sent; its effect is unknown",
                    path=self.path,
                ) from None
        if raw is None:
            raise self._garbage(op, f"the answer is over {limit} bytes")
        try:
            answer = json.loads(raw)
        except (UnicodeDecodeError, ValueError):
            what = "no answer (closed)" if not raw.strip() else f"not a JSON line: {raw[:60]!r}"
            raise self._garbage(op, what) from None
        if not isinstance(answer, dict):
            raise self._garbage(op, f"a JSON {type(answer).__name__}, not an object")
        return answer

    def _outcome(self, answer: Mapping[str, Any]) -> ToolOutcome:
        extra = sorted(set(answer) - {"output", "content", "error"})
        if extra:
            raise self._garbage("call", f"unknown key {extra[0]!r}")
        error = answer.get("error", "")
        output = answer.get("output")
        content = answer.get("content", [])
        if not isinstance(error, str):
            raise self._garbage("call", "'error' is not a string")
        if error:
            return ToolOutcome(error=error)
        if output is not None and not isinstance(output, dict):
            raise self._garbage("call", "'output' is not an object")
        if not isinstance(content, list) or not all(isinstance(p, dict) for p in content):
            raise self._garbage("call", "'content' is not a list of parts")
        if output is None and not content:
            raise self._garbage("call", "neither output, content nor error")
        return ToolOutcome(output=output, content=tuple(content))

    def _garbage(self, op: str, what: str) -> ToolServerError:
        return ToolServerError(
            f"tool server {self.spec} {op}: answered garbage ({what})", path=self.path
        )


def _read_line(sock: socket.socket, limit: int) -> bytes | None:
    """Bytes up to the first newline (or EOF); None past ``limit`` bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return b"".join(chunks)
        newline = chunk.find(b"\n")
        if newline >= 0:
            chunk = chunk[:newline]
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if newline >= 0:
            return b"".join(chunks)


def _server_tool(tool: str, config: Mapping[str, Any]) -> str:
    """The server's name for the workload's tool: ``config["tool"]`` renames it."""
    renamed = config.get("tool")
    return renamed if isinstance(renamed, str) and renamed else tool


def _check_config(tool: str, config: Mapping[str, Any]) -> None:
    for key, kinds in (("timeout", (int, float)), ("max_response_bytes", (int,))):
        value = config.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, kinds) or value <= 0:
            raise WorkloadError(
                f"workload: [tools.{tool}] config.{key}: must be a positive number; got {value!r}",
                table=f"tools.{tool}",
                key=f"config.{key}",
            )


def _timeout(config: Mapping[str, Any]) -> float:
    value = config.get("timeout", CALL_TIMEOUT)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return CALL_TIMEOUT
    return float(value)


def _limit(config: Mapping[str, Any]) -> int:
    value = config.get("max_response_bytes", MAX_RESPONSE)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return MAX_RESPONSE
    return value


def _os_why(exc: OSError) -> str:
    if isinstance(exc, TimeoutError):
        return "connect timed out"
    return exc.strerror or type(exc).__name__
