"""A local webhook sender: GitHub's deliveries, built and signed here, POSTed to a receiver.

For trying a producer offline and for its tests: :func:`issue_event` and
:func:`comment_event` build payloads in GitHub's documented shape (the fields a receiver
reads, and the ones around them it must ignore), :func:`deliver` signs the exact body as
GitHub does (``X-Hub-Signature-256``) and POSTs it with ``X-GitHub-Event`` and
``X-GitHub-Delivery`` to ``http://HOST:PORT/...`` or ``unix:///PATH``.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from agentsessions.errors import InvalidArgumentError, UnavailableError

from .github import sign


@dataclass(frozen=True)
class Sent:
    """What the receiver answered."""

    status: int
    body: dict[str, Any]
    delivery_id: str


def _user(login: str, user_id: int, kind: str = "User") -> dict[str, Any]:
    return {
        "login": login,
        "id": user_id,
        "node_id": f"U_{user_id}",
        "html_url": f"https://github.com/{login}",
        "type": kind,
        "site_admin": False,
    }


def _split(subject: str) -> tuple[str, str, int]:
    repo, sep, number = subject.rpartition("#")
    owner, slash, name = repo.partition("/")
    if not sep or not slash or not owner or not name or not number.isdigit():
        raise InvalidArgumentError(f"invalid issue {subject!r}: expected OWNER/REPO#NUMBER")
    return owner, name, int(number)


def _common(subject: str, sender: dict[str, Any], issue: dict[str, Any]) -> dict[str, Any]:
    owner, name, number = _split(subject)
    full = f"{owner}/{name}"
    issue = {
        "url": f"https://api.github.com/repos/{full}/issues/{number}",
        "html_url": f"https://github.com/{full}/issues/{number}",
        "id": 1000 + number,
        "number": number,
        "state": "open",
        "locked": False,
        "labels": [],
        "comments": 0,
        "author_association": "OWNER",
        **issue,
    }
    repository = {
        "id": 186853002,
        "name": name,
        "full_name": full,
        "private": False,
        "owner": _user(owner, 21031067),
        "html_url": f"https://github.com/{full}",
    }
    return {"issue": issue, "repository": repository, "sender": sender}


def issue_event(
    subject: str,
    *,
    author: str,
    title: str = "",
    body: str = "",
    action: str = "opened",
    author_id: int = 583231,
) -> dict[str, Any]:
    """An ``issues`` payload (``opened``, ``edited``, ``deleted``...) for ``OWNER/REPO#N``."""
    user = _user(author, author_id)
    issue = {"title": title or subject, "body": body or None, "user": user}
    return {"action": action, **_common(subject, user, issue)}


def comment_event(
    subject: str,
    *,
    author: str,
    body: str,
    comment_id: int = 492700400,
    action: str = "created",
    author_id: int = 583231,
    bot: bool = False,
    previous: str | None = None,
) -> dict[str, Any]:
    """An ``issue_comment`` payload (``created``, ``edited`` with ``previous``, ``deleted``)."""
    user = _user(author, author_id, "Bot" if bot else "User")
    issue = {"title": subject, "body": None, "user": _user("octocat", 1)}
    payload = {"action": action, **_common(subject, user, issue)}
    owner, name, number = _split(subject)
    payload["comment"] = {
        "url": f"https://api.github.com/repos/{owner}/{name}/issues/comments/{comment_id}",
        "html_url": f"https://github.com/{owner}/{name}/issues/{number}#issuecomment-{comment_id}",
        "id": comment_id,
        "user": user,
        "author_association": "CONTRIBUTOR",
        "body": body,
    }
    if previous is not None:
        payload["changes"] = {"body": {"from": previous}}
    return payload


def deliver(
    url: str,
    event: str,
    payload: dict[str, Any] | bytes,
    secret: bytes,
    *,
    delivery_id: str = "",
    signature: str | None = None,
    timeout: float = 60.0,
    connect_wait: float = 0.0,
) -> Sent:
    """POST one signed delivery to the receiver at ``url``; its answer. ``signature``
    overrides the computed one (a forged delivery); ``connect_wait``: seconds to retry a
    receiver that is not listening yet."""
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
    delivery_id = delivery_id or str(uuid.uuid4())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/agentsessions-send",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery_id,
        "X-Hub-Signature-256": sign(body, secret) if signature is None else signature,
    }
    conn, path = _connection(url, timeout)
    deadline = time.monotonic() + connect_wait
    while True:
        try:
            conn.request("POST", path, body=body, headers=headers)
            answer = conn.getresponse()
            data = answer.read()
            break
        except (ConnectionRefusedError, FileNotFoundError) as exc:
            conn.close()
            if time.monotonic() >= deadline:
                raise UnavailableError(f"no receiver listens at {url}: {exc}") from None
            time.sleep(0.1)
        except OSError as exc:
            raise UnavailableError(f"cannot deliver to {url}: {exc}") from None
        finally:
            conn.close()
    try:
        answered = json.loads(data) if data else {}
    except ValueError:
        answered = {"text": data.decode("utf-8", "replace")}
    return Sent(answer.status, answered if isinstance(answered, dict) else {}, delivery_id)


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


def _connection(url: str, timeout: float) -> tuple[http.client.HTTPConnection, str]:
    if url.startswith("unix://"):
        return _UnixConnection(url.removeprefix("unix://"), timeout), "/"
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme != "http" or not parts.hostname:
        raise InvalidArgumentError(f"invalid receiver {url!r}: expected http://HOST:PORT/PATH")
    conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=timeout)
    return conn, parts.path or "/"
