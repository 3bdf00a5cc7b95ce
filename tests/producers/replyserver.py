"""A local stand-in for GitHub's create-comment API: records every POST it is sent."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Posted:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class ReplyServer:
    """Answers 201 to each POST (or ``status``) and keeps it; a context manager."""

    status: int = 201
    posts: list[Posted] = field(default_factory=list)
    arrived: threading.Condition = field(default_factory=threading.Condition)

    def __post_init__(self) -> None:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                data = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with owner.arrived:
                    owner.posts.append(
                        Posted(self.path, dict(self.headers.items()), json.loads(data))
                    )
                    owner.arrived.notify_all()
                self.send_response(owner.status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The comment API's URL template, as ``--reply URL`` takes it."""
        port = self.server.server_address[1]
        return f"http://127.0.0.1:{port}/repos/{{owner}}/{{repo}}/issues/{{number}}/comments"

    def wait_for(self, count: int, timeout: float = 60.0) -> list[Posted]:
        """The posts, once there are at least ``count`` (fails after ``timeout`` s)."""
        with self.arrived:
            assert self.arrived.wait_for(lambda: len(self.posts) >= count, timeout), self.posts
            return list(self.posts)

    def __enter__(self) -> ReplyServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
