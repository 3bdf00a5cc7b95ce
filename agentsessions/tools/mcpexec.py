"""The ``mcp:COMMAND ARGS`` executor: the tools of a stdio MCP server (the ``mcp`` extra).

``COMMAND ARGS`` (split like a shell, no shell run) starts the server. The workload's tool
``NAME`` calls the server's tool ``NAME``, or ``config["tool"]`` when that renames it; the
call's arguments are the tool's arguments, and the session uid and idempotency key travel
in the request's ``_meta`` (``agentsessions/session_uid``, ``agentsessions/idempotency_key``)
for servers that want them. Results map to a ToolOutcome: text content to text parts,
images and audio to file parts (base64 bytes), embedded text or blob resources and
resource links to file parts, ``structuredContent`` to ``output``; ``isError`` is an error
outcome (its text is the error).

Lifetime: one server process per executor, started lazily on the first bind, or when a
turn begins whose workload leaves the tool without a description or parameters (to list
them, :meth:`McpExecutor.listed`, :mod:`.listing`), never when a workload is only
validated; it is kept for the executor's life: the engine keeps its executors by spec, so
it runs one server per distinct command, not one per call (an MCP handshake costs a
process start). :meth:`McpExecutor.close` (or the interpreter's
exit) closes its stdin and stops it. The client runs on its own asyncio loop in a daemon
thread, so the host's threads stay synchronous.

Failures: the extra not installed is UnavailableError naming it (exit 12) when the
workload loads; a command that does not parse is UnknownToolError (exit 2). Before a call's
intent is recorded, a server that does not start, exits, does not finish the handshake
within ``config["startup_timeout"]`` s (default 20) or writes garbage is ToolServerError
(exit 12, the message carries the last line of its stderr), and a tool it does not list is
UnknownToolError: the call is not recorded, and the turn ends with its ERROR (failed, so
resume retries it and new input is taken). After the intent, the same failures of the call
(timeout ``config["timeout"]`` s, default 60) are raised and recorded as an EXECUTOR_ERROR
result the model sees. MCP servers do not dedup by key, so the executor is not
``idempotent``: a call a crash cut after its intent is left for a person to resolve.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import shlex
import tempfile
import threading
import weakref
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Future
from typing import Any, TextIO, TypeVar, cast

from agentsessions.controller.spi import ToolOutcome, ToolRequest
from agentsessions.errors import ToolServerError, UnavailableError, UnknownToolError

from .configschema import ConfigKey, ConfigSchema

T = TypeVar("T")
STARTUP_TIMEOUT = 20.0
CALL_TIMEOUT = 60.0
_CLOSED = ("BrokenResourceError", "ClosedResourceError", "EndOfStream")
_HINT = "install the extra: pip install 'agentsessions[mcp]'"


def require_mcp() -> None:
    """UnavailableError naming the extra unless the ``mcp`` package imports."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise UnavailableError(
            "the mcp: tool executor needs the 'mcp' package, which is not installed",
            hint=_HINT,
        ) from None


class McpExecutor:
    """Calls the tools of one stdio MCP server, started on first use (see the module doc)."""

    idempotent = False  # an MCP server cannot confirm a call by its key
    config_schema = ConfigSchema(
        {
            "tool": ConfigKey("string", doc="the server's name for the tool"),
            "startup_timeout": ConfigKey("number", positive=True),
            "timeout": ConfigKey("number", positive=True),
        }
    )

    def __init__(self, command: list[str]) -> None:
        self.command = command
        self.spec = "mcp:" + shlex.join(command)
        self._lock = threading.Lock()
        self._client: _Client | None = None

    @classmethod
    def from_spec(cls, spec: str) -> McpExecutor:
        """``mcp:COMMAND ARGS``: checks the form and the extra; starts nothing."""
        try:
            command = shlex.split(spec.strip()[len("mcp:") :])
        except ValueError as exc:
            raise UnknownToolError(f"tool executor {spec!r}: the command {exc}") from None
        if not command:
            raise UnknownToolError(
                f"tool executor {spec!r}: expected mcp:COMMAND ARGS",
                hint="for example mcp:python3 -m my_mcp_server",
            )
        require_mcp()
        return cls(command)

    def prepare(self, tool: str, config: Mapping[str, Any]) -> None:
        """Start the server if it is not running and check it lists the tool (before the
        call's intent is recorded): ToolServerError or UnknownToolError if not."""
        name = _server_tool(tool, config)
        tools = self._started(config).tools
        if name not in tools:
            raise UnknownToolError(
                f"mcp server {self.spec!r} has no tool {name!r} (its tools: "
                f"{', '.join(sorted(tools)) or 'none'}); nothing was recorded",
                hint='name one of them, or rename with config = { tool = "..." }',
            )

    def listed(self, tool: str, config: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
        """The description and input schema the server lists for the tool (its
        ``tools/list`` answer when it started), starting it if it is not running; None if
        it does not list the tool. A server that does not start is ToolServerError."""
        return self._started(config).listed.get(_server_tool(tool, config))

    def call(self, request: ToolRequest) -> ToolOutcome:
        """Call the server's tool; a transport failure raises ToolServerError."""
        client = self._started(request.config)
        meta = {
            "agentsessions/session_uid": request.session_uid,
            "agentsessions/idempotency_key": request.idempotency_key,
        }
        name = _server_tool(request.tool, request.config)
        try:
            result = client.run(
                _number(request.config, "timeout", CALL_TIMEOUT),
                f"call of {name!r}",
                lambda session: session.call_tool(name, dict(request.args), meta=meta),
            )
        except ToolServerError:
            self.close()  # a server that failed a call is restarted on the next bind
            raise
        return outcome(result)

    def close(self) -> None:
        """Stop the server (closes its stdin, then terminates it if it lingers)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def _started(self, config: Mapping[str, Any]) -> _Client:
        with self._lock:
            if self._client is None or not self._client.alive():
                timeout = _number(config, "startup_timeout", STARTUP_TIMEOUT)
                self._client = _Client(self.command, self.spec, timeout)
            return self._client


class _Client:
    """One running server and its MCP client session, on a private loop thread."""

    def __init__(self, command: list[str], spec: str, timeout: float) -> None:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        logging.getLogger("mcp").addHandler(logging.NullHandler())  # no tracebacks on stderr
        self.spec = spec
        # the server's stderr, kept for the error message; closed by the finalizer
        self.errlog = cast(
            TextIO,
            tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace"),  # noqa: SIM115
        )
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True, name=spec)
        self.thread.start()
        self.garbage: list[str] = []
        self.session: Any = None
        self.tools: set[str] = set()
        self.listed: dict[str, tuple[str, dict[str, Any]]] = {}  # name: description, schema
        ready: Future[None] = Future()
        params = StdioServerParameters(command=command[0], args=command[1:])

        async def serve() -> None:
            self.stop = asyncio.Event()
            self.bad = asyncio.Event()
            try:
                async with (
                    stdio_client(params, errlog=self.errlog) as (read, write),
                    ClientSession(read, write, message_handler=self._incoming) as session,
                ):
                    await self._guarded(timeout, "start (initialize)", session.initialize())
                    listed = await self._guarded(
                        timeout, "start (tools/list)", session.list_tools()
                    )
                    self.tools = {tool.name for tool in listed.tools}
                    self.listed = {
                        tool.name: (tool.description or "", dict(tool.inputSchema or {}))
                        for tool in listed.tools
                    }
                    self.session = session
                    ready.set_result(None)
                    await self.stop.wait()
            except BaseException as exc:
                if not ready.done():
                    ready.set_exception(exc)
                else:
                    raise

        self.served = asyncio.run_coroutine_threadsafe(serve(), self.loop)
        self._finalizer = weakref.finalize(self, _shutdown, self.loop, self.thread, self.errlog)
        try:
            ready.result()
        except BaseException as exc:
            error = self._failed("did not start", exc)
            self.close()
            raise error from None

    def alive(self) -> bool:
        """The server still serves (it did not exit or fail since it started)."""
        return not self.served.done()

    def run(self, timeout: float, what: str, call: Callable[[Any], Awaitable[T]]) -> T:
        """``call(session)`` on the loop, bounded by ``timeout`` s and by server garbage."""
        future = asyncio.run_coroutine_threadsafe(
            self._guarded(timeout, what, call(self.session)), self.loop
        )
        try:
            return future.result()
        except BaseException as exc:
            raise self._failed(f"{what} failed after the request was sent", exc) from None

    def close(self) -> None:
        """End the session, stop the process and the loop thread."""
        if self.loop.is_running() and hasattr(self, "stop"):
            self.loop.call_soon_threadsafe(self.stop.set)
            with contextlib.suppress(BaseException):  # closing a server that already failed
                self.served.result()
        self._finalizer()

    async def _incoming(self, message: Any) -> None:
        if isinstance(message, Exception):  # a line on its stdout that is not JSON-RPC
            self.garbage.append(f"a stdout line that is not JSON-RPC ({_first_line(message)})")
            self.bad.set()

    async def _guarded(self, timeout: float, what: str, work: Awaitable[T]) -> T:
        """``work``, unless the server writes garbage first or ``timeout`` passes."""
        task = asyncio.ensure_future(work)
        watch = asyncio.ensure_future(self.bad.wait())
        for pending in (task, watch):  # a failure after we stopped waiting is not logged
            pending.add_done_callback(_retrieved)
        try:
            done, _ = await asyncio.wait(
                {task, watch}, timeout=timeout, return_when="FIRST_COMPLETED"
            )
        finally:
            watch.cancel()
            if not task.done():
                task.cancel()
        if task in done:
            return task.result()
        if self.garbage:
            raise ToolServerError(f"answered garbage during {what}: {self.garbage[0]}")
        raise TimeoutError(f"no answer to {what} within {timeout:g}s")

    def _failed(self, what: str, exc: BaseException) -> ToolServerError:
        why = _why(exc)
        self.errlog.flush()
        self.errlog.seek(0)
        lines = [line.strip() for line in self.errlog.read().splitlines() if line.strip()]
        stderr = f"; its stderr: {lines[-1][:200]}" if lines else ""
        return ToolServerError(f"mcp server {self.spec!r} {what}: {why}{stderr}", hint="")


def outcome(result: Any) -> ToolOutcome:
    """A CallToolResult as a ToolOutcome (see the module docstring for the mapping)."""
    parts = tuple(p for p in (_part(c) for c in result.content) if p is not None)
    if result.isError:
        text = " ".join(p["text"]["text"] for p in parts if "text" in p).strip()
        return ToolOutcome(error=text or "the mcp tool reported an error")
    output = result.structuredContent
    if output is not None and not isinstance(output, dict):
        output = {"result": output}
    return ToolOutcome(output=output, content=parts or ({"text": {"text": ""}},))


def _part(content: Any) -> dict[str, Any] | None:
    kind = getattr(content, "type", "")
    if kind == "text":
        return {"text": {"text": content.text}}
    if kind in ("image", "audio"):
        return {"file": {"mime": content.mimeType, "bytes": content.data}}
    if kind == "resource":
        res = content.resource
        uri, mime = str(res.uri), res.mimeType or "application/octet-stream"
        if hasattr(res, "text"):
            data = base64.b64encode(res.text.encode()).decode()
            return {"file": {"mime": res.mimeType or "text/plain", "bytes": data, "name": uri}}
        return {"file": {"mime": mime, "bytes": res.blob, "name": uri}}
    if kind == "resource_link":
        return {"file": {"mime": content.mimeType or "", "uri": str(content.uri)}}
    return None  # a content kind this version does not know: left out


def _server_tool(tool: str, config: Mapping[str, Any]) -> str:
    renamed = config.get("tool")
    return renamed if isinstance(renamed, str) and renamed else tool


def _number(config: Mapping[str, Any], key: str, default: float) -> float:
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return default
    return float(value)


def _why(exc: BaseException) -> str:
    """The innermost cause of ``exc`` (task groups wrap failures), as one line."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, ToolServerError):
        return exc.message
    if isinstance(exc, FileNotFoundError):
        return f"no such command ({exc.filename or exc})"
    if type(exc).__name__ in _CLOSED or "Connection closed" in str(exc):
        return "it exited or closed its stdout before answering"
    return f"{type(exc).__name__}: {_first_line(exc)}" if str(exc) else type(exc).__name__


def _retrieved(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__


def _shutdown(loop: asyncio.AbstractEventLoop, thread: threading.Thread, errlog: TextIO) -> None:
    if loop.is_running():
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
    if not loop.is_closed():
        loop.close()
    errlog.close()
