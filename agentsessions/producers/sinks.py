"""Where an agent's answer goes: printed, appended to a file, or POSTed to a URL.

A :class:`ReplySink` is one small Protocol (``send``); the CLI's ``--reply`` spec names one
(``agentsessions.cli.produceopts.reply_sink``). The POST sink speaks GitHub's
create-comment API (``{"body": ...}`` to ``/repos/{owner}/{repo}/issues/{number}/comments``
with a bearer token); any URL may name the thread's address fields (``{owner}``,
``{repo}``, ``{number}``), so a local receiver stands in for GitHub in tests.

Invariants: ``send`` either delivered the reply or raises UnavailableError with one line
naming the session and execution (the turn is journaled either way: the answer can be read
back with ``log``); sinks are thread-safe (replies of different threads interleave whole).
"""

from __future__ import annotations

import json
import sys
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from agentsessions.errors import UnavailableError

from .mapping import Thread

GITHUB_API_VERSION = "2022-11-28"
GITHUB_COMMENTS_URL = "https://api.github.com/repos/{owner}/{repo}/issues/{number}/comments"
"""GitHub's REST endpoint that creates a comment on an issue (the production reply sink)."""
POST_TIMEOUT = 30.0


@dataclass(frozen=True)
class Reply:
    """An answer to send: the thread, the turn it came from, its text."""

    thread: Thread
    uid: str
    execution_id: str
    text: str

    def to_json(self) -> dict[str, Any]:
        """The reply as one JSON object (the file sink's line, ``--json`` printing)."""
        return {
            "source": self.thread.source,
            "subject": self.thread.subject,
            "uri": self.thread.uri,
            "uid": self.uid,
            "execution_id": self.execution_id,
            "text": self.text,
        }


class ReplySink(Protocol):
    """Delivers an answer; UnavailableError when it could not."""

    def send(self, reply: Reply) -> None: ...


class PrintSink:
    """Writes each reply to a stream: a header line and the text, or one JSON line."""

    def __init__(self, stream: IO[str] | None = None, *, as_json: bool = False) -> None:
        self._stream, self._json, self._lock = stream, as_json, threading.Lock()

    def send(self, reply: Reply) -> None:
        """Print ``reply`` whole (replies of parallel threads never interleave)."""
        stream = self._stream or sys.stdout
        if self._json:
            text = json.dumps(reply.to_json(), ensure_ascii=False) + "\n"
        else:
            text = f"reply to {reply.thread.subject} ({reply.uid}):\n{reply.text}\n"
        with self._lock:
            stream.write(text)
            stream.flush()


class FileSink:
    """Appends each reply to a file as one JSON line."""

    def __init__(self, path: str | Path) -> None:
        self.path, self._lock = Path(path), threading.Lock()

    def send(self, reply: Reply) -> None:
        """Append ``reply`` as one line (opened per reply, so the file may be rotated)."""
        line = json.dumps(reply.to_json(), ensure_ascii=False) + "\n"
        try:
            with self._lock, self.path.open("a", encoding="utf-8") as out:
                out.write(line)
        except OSError as exc:
            raise UnavailableError(
                f"cannot append the reply of {reply.uid} to {self.path}: {exc.strerror or exc}"
            ) from None


class PostSink:
    """POSTs each reply as ``{"body": text}`` to a URL (GitHub's create-comment API)."""

    def __init__(self, url: str, *, token: str = "", timeout: float = POST_TIMEOUT) -> None:
        self.url, self._token, self.timeout = url, token, timeout

    def send(self, reply: Reply) -> None:
        """POST ``reply``; UnavailableError unless the answer is 2xx."""
        url = self.target(reply.thread)
        request = urllib.request.Request(
            url,
            data=json.dumps({"body": reply.text}, ensure_ascii=False).encode("utf-8"),
            method="POST",
            headers={
                "Content-Type": "application/json",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": GITHUB_API_VERSION,
                "User-Agent": "agentsessions-producer",  # GitHub refuses a request without
                "X-Agentsessions-Session": reply.uid,
                "X-Agentsessions-Execution": reply.execution_id,
                **({"Authorization": f"Bearer {self._token}"} if self._token else {}),
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                answer.read()
        except urllib.error.HTTPError as exc:
            raise UnavailableError(
                f"the reply of {reply.uid} ({reply.execution_id}) was refused by {url}: "
                f"HTTP {exc.code} {exc.reason}"
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise UnavailableError(
                f"cannot POST the reply of {reply.uid} ({reply.execution_id}) to {url}: {reason}"
            ) from None

    def target(self, thread: Thread) -> str:
        """The URL for ``thread``: the template with its address fields filled in."""
        from urllib.parse import quote

        fields = {k: quote(v, safe="") for k, v in thread.address.items()}
        try:
            return self.url.format(**fields)
        except (KeyError, IndexError, ValueError) as exc:
            raise UnavailableError(
                f"the reply URL {self.url!r} names a field {thread.source} threads lack: {exc}"
            ) from None
