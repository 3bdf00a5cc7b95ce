"""A local OpenAI-compatible endpoint whose first answer never comes, for ``demo``.

``demo`` kills a turn while its model call is in flight. The offline scripted model answers
at once, so the demo points that one turn at this endpoint instead: the first request is
held open (the model call is then certainly in flight, journaled as MODEL_CALL and not yet
answered) until the demo has killed the caller; every later request gets a normal chat
completion at once. Nothing leaves the machine: it listens on 127.0.0.1 only.

Standard library only; one daemon thread per connection; :meth:`Stall.close` releases a
held request and stops the server.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

ANSWER = "Pack light layers, comfortable shoes and a rain jacket."
HOLD_SECONDS = 60.0
MAX_BODY = 1 << 20


class Stall:
    """The endpoint: ``base_url`` to give a model spec, ``requests`` counted, ``held`` set
    once the first request is being held."""

    def __init__(self, answer: str = ANSWER) -> None:
        self.answer = answer
        self.requests = 0
        self.held = threading.Event()
        self.released = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.stall = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def arrive(self) -> int:
        """Count a request; returns its number (1 for the first)."""
        with self._lock:
            self.requests += 1
            return self.requests

    def __enter__(self) -> Stall:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Release a held request and stop serving."""
        self.released.set()
        self._server.shutdown()
        self._server.server_close()


class _Handler(BaseHTTPRequestHandler):
    """POST .../chat/completions: hold the first request, answer the others."""

    def do_POST(self) -> None:
        stall: Stall = self.server.stall  # type: ignore[attr-defined]
        length = min(int(self.headers.get("Content-Length") or 0), MAX_BODY)
        self.rfile.read(length)
        if stall.arrive() == 1:
            stall.held.set()
            stall.released.wait(HOLD_SECONDS)  # the caller is killed meanwhile
            return
        body = json.dumps(_completion(stall.answer)).encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the demo narrates, the server does not."""


def _completion(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-demo",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
    }
