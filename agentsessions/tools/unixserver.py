"""A small reference server for the ``unix:`` executor protocol (see :mod:`.unixsock`).

    python3 -m agentsessions.tools.unixserver /run/tools.sock [--dedup]

It serves two tools: ``append_line`` (the built-in's effect: ``args["line"]`` appended
durably to ``config["path"]``) and ``echo`` (a text part repeating ``args["text"]``). It
prints ``ready PATH`` on stdout once it listens, handles each connection in a thread, and
stops on SIGTERM or SIGINT (removing its socket). With ``--dedup`` it keeps the first
outcome of each (session uid, idempotency key) and answers a repeated key with it, with
no second effect; the table lives as long as the server process (which outlives a host
crash, the case re-driving is for), and ``describe`` says ``dedup: true``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socketserver
import stat
import sys
import threading
from typing import Any

from agentsessions.controller.spi import ToolOutcome, ToolRequest

from .appendline import AppendLine
from .unixsock import MAX_REQUEST, PROTOCOL

TOOLS = ("append_line", "echo")


class ToolServer(socketserver.ThreadingUnixStreamServer):
    """The listening server: its tools, its dedup table and a count of effects run."""

    daemon_threads = True

    def __init__(self, path: str, *, dedup: bool = False) -> None:
        self.dedup = dedup
        self.outcomes: dict[tuple[str, str], dict[str, Any]] = {}
        self.lock = threading.Lock()  # one call per key at a time when deduping
        self.append = AppendLine()
        super().__init__(path, Handler)

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """The response object for one decoded request line."""
        op = request.get("op")
        if op == "describe":
            return {"protocol": PROTOCOL, "dedup": self.dedup, "tools": list(TOOLS)}
        if op != "call":
            return {"error": f"unknown op {op!r} (describe | call)"}
        call = ToolRequest(
            session_uid=str(request.get("session_uid", "")),
            call_id=str(request.get("call_id", "")),
            tool=str(request.get("tool", "")),
            args=_object(request.get("args")),
            idempotency_key=str(request.get("idempotency_key", "")),
            config=_object(request.get("config")),
        )
        if not self.dedup:
            return self._run(call)
        with self.lock:
            key = (call.session_uid, call.idempotency_key)
            kept = self.outcomes.get(key)
            if kept is None:
                kept = self.outcomes[key] = self._run(call)
            return kept

    def _run(self, call: ToolRequest) -> dict[str, Any]:
        if call.tool == "append_line":
            outcome = self.append.call(call)
        elif call.tool == "echo":
            outcome = ToolOutcome(content=({"text": {"text": str(call.args.get("text", ""))}},))
        else:
            outcome = ToolOutcome(error=f"no tool {call.tool!r} here (tools: {', '.join(TOOLS)})")
        if outcome.error:
            return {"error": outcome.error}
        out: dict[str, Any] = {}
        if outcome.output is not None:
            out["output"] = dict(outcome.output)
        if outcome.content:
            out["content"] = list(outcome.content)
        return out


class Handler(socketserver.StreamRequestHandler):
    """One connection: one request line in, one response line out."""

    server: ToolServer

    def handle(self) -> None:
        raw = self.rfile.readline(MAX_REQUEST + 1)
        if len(raw) > MAX_REQUEST:
            response: dict[str, Any] = {"error": f"request over {MAX_REQUEST} bytes"}
        else:
            try:
                request = json.loads(raw)
            except ValueError:
                request = None
            if isinstance(request, dict):
                response = self.server.answer(request)
            else:
                response = {"error": "the request is not a JSON object on one line"}
        self.wfile.write(json.dumps(response).encode() + b"\n")


def _object(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def main(argv: list[str] | None = None) -> int:
    """Serve until SIGTERM/SIGINT; exit 2 if the socket path is taken."""
    parser = argparse.ArgumentParser(prog="python3 -m agentsessions.tools.unixserver")
    parser.add_argument("socket", help="the Unix socket path to listen on")
    parser.add_argument("--dedup", action="store_true", help="dedup calls by (session, key)")
    options = parser.parse_args(argv)
    path: str = options.socket
    if os.path.lexists(path):
        kind = "a socket" if stat.S_ISSOCK(os.lstat(path).st_mode) else "a file"
        print(f"unixserver: error: {path} exists ({kind}); remove it first", file=sys.stderr)
        return 2
    server = ToolServer(path, dedup=options.dedup)

    def stop(signum: int, frame: object) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"ready {path}", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
        os.unlink(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
