"""GitHub's ``issues`` and ``issue_comment`` webhooks as deliveries, and their endpoint.

The payload shapes are GitHub's documented ones ("Webhook events and payloads"): ``action``,
``issue`` (``number``, ``title``, ``body``, ``html_url``, ``user``), ``comment`` (``id``,
``body``, ``html_url``, ``user``), ``changes`` on an edit (``body.from``, ``title.from``),
``repository.full_name`` and ``sender`` (who did it). tests/producers/payloads/ holds recorded
examples of each.

Invariants: nothing is parsed before the ``X-Hub-Signature-256`` HMAC-SHA256 of the exact
body under the configured secret verifies (compared in constant time); a bad or missing
signature is 401 and nothing is written; an event from a bot (the configured bot logins, or
any account GitHub marks ``type: Bot``) is never a turn, so the agent never answers itself;
one issue is one thread, ``subject`` ``owner/repo#number``; an edit or a deletion is a
delivery of its own (history is never rewritten); the delivery id is ``X-GitHub-Delivery``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Collection, Mapping
from typing import Any, Protocol
from urllib.parse import parse_qs

from agentsessions.errors import AgentSessionsError, InvalidArgumentError

from .mapping import Ack, Author, Delivery, Kind, Skip, Thread
from .receiver import Request, Response

SOURCE = "github"
ISSUER = "https://github.com"
SIGNATURE_HEADER = "x-hub-signature-256"
EVENT_HEADER = "x-github-event"
DELIVERY_HEADER = "x-github-delivery"
EVENTS = ("issues", "issue_comment")


def sign(body: bytes, secret: bytes) -> str:
    """The ``X-Hub-Signature-256`` value GitHub sends with ``body`` under ``secret``."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def verify(body: bytes, secret: bytes, header: str | None) -> bool:
    """Whether ``header`` is the signature of ``body`` under ``secret`` (constant time; an
    empty secret or a missing header never verifies)."""
    if not secret or not header:
        return False
    given = header.encode("latin-1", "replace")  # as http.server decoded it
    return hmac.compare_digest(sign(body, secret).encode("ascii"), given)


def decode(body: bytes, content_type: str) -> dict[str, Any]:
    """The payload object of a delivery: JSON, or the ``payload`` field of a form post
    (GitHub's ``application/x-www-form-urlencoded`` content type)."""
    text = body.decode("utf-8", "strict") if body else ""
    if content_type.split(";")[0].strip().lower() == "application/x-www-form-urlencoded":
        text = (parse_qs(text).get("payload") or [""])[0]
    try:
        payload = json.loads(text)
    except ValueError as exc:
        raise InvalidArgumentError(f"the delivery's payload is not JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise InvalidArgumentError("the delivery's payload is not a JSON object")
    return payload


def _field(payload: Mapping[str, Any], path: str, kind: type, event: str) -> Any:
    """``payload``'s value at dotted ``path``, of type ``kind``; InvalidArgumentError if not."""
    value: Any = payload
    for name in path.split("."):
        value = value.get(name) if isinstance(value, Mapping) else None
    if kind is str and value is None and path.endswith(".body"):
        return ""  # GitHub sends "body": null for an issue opened without one
    if not isinstance(value, kind) or isinstance(value, bool) is not (kind is bool):
        raise InvalidArgumentError(f"malformed {event} payload: {path} is not a {kind.__name__}")
    return value


def _author(payload: Mapping[str, Any], path: str, event: str) -> Author:
    """The account at ``path`` of ``payload`` (``sender``, ``comment.user``)."""
    user = _field(payload, path, dict, event)
    return Author(
        login=_field(payload, f"{path}.login", str, event),
        issuer=ISSUER,
        user_id=str(user.get("id", "")),
        bot=user.get("type") == "Bot",
    )


def _thread(payload: Mapping[str, Any], event: str) -> Thread:
    full_name = _field(payload, "repository.full_name", str, event)
    number = _field(payload, "issue.number", int, event)
    owner, _, repo = full_name.partition("/")
    return Thread(
        source=SOURCE,
        subject=f"{full_name}#{number}",
        uri=str(payload["issue"].get("html_url") or ""),
        address={"owner": owner, "repo": repo, "number": str(number)},
    )


def parse(
    event: str, delivery_id: str, payload: Mapping[str, Any], *, bots: Collection[str] = ()
) -> Delivery | Skip:
    """The delivery GitHub event ``event`` (its ``X-GitHub-Event``) carries, or why it is
    not a turn. ``bots``: the logins whose events are the agent's own (case-insensitive)."""
    if event not in EVENTS:
        return Skip(f"{event} events are not turns")
    action = _field(payload, "action", str, event)
    kind = _kind(event, action)
    if kind is None:
        return Skip(f"{event} {action} is not a turn")
    thread = _thread(payload, event)
    actor = _author(payload, "sender", event)
    if actor.bot or actor.login.lower() in {b.lower() for b in bots}:
        return Skip(f"{event} {action} by the bot {actor.login}")
    text, details = (_comment if event == "issue_comment" else _issue)(payload, thread, kind)
    details = {"event": event, "action": action, "delivery": delivery_id, **details}
    return Delivery(delivery_id, thread, actor, kind, text, details)


def _kind(event: str, action: str) -> Kind | None:
    if action == "edited":
        return "edit"
    if action == "deleted":
        return "delete"
    new = "created" if event == "issue_comment" else "opened"
    return "message" if action == new else None


def _issue(payload: Mapping[str, Any], thread: Thread, kind: Kind) -> tuple[str, dict[str, Any]]:
    """What the model reads of an ``issues`` event, and its details."""
    sender = payload["sender"]["login"]
    title = _field(payload, "issue.title", str, "issues")
    body = _field(payload, "issue.body", str, "issues")
    details: dict[str, Any] = {"url": thread.uri, "title": title}
    if kind == "message":
        return f"{sender} opened issue {thread.subject}: {title}\n\n{body}".rstrip(), details
    if kind == "delete":
        return f"{sender} deleted issue {thread.subject}.", details
    for name in ("title", "body"):
        before = _previous(payload, name)
        if before is not None:
            details[f"previous_{name}"] = before
    text = f"{sender} edited issue {thread.subject}. It now reads: {title}\n\n{body}"
    return text.rstrip(), details


def _previous(payload: Mapping[str, Any], name: str) -> str | None:
    """What an edit's ``changes.<name>.from`` says the field was, if it says."""
    changes = payload.get("changes")
    change = changes.get(name) if isinstance(changes, Mapping) else None
    before = change.get("from") if isinstance(change, Mapping) else None
    return before if isinstance(before, str) else None


def _comment(payload: Mapping[str, Any], thread: Thread, kind: Kind) -> tuple[str, dict[str, Any]]:
    """What the model reads of an ``issue_comment`` event, and its details."""
    sender = payload["sender"]["login"]
    comment_id = _field(payload, "comment.id", int, "issue_comment")
    author = _author(payload, "comment.user", "issue_comment")
    body = _field(payload, "comment.body", str, "issue_comment")
    details: dict[str, Any] = {
        "comment_id": str(comment_id),  # a string: ids may outgrow a JSON number
        "url": str(payload["comment"].get("html_url") or ""),
        "author": author.login,
    }
    if kind == "message":
        return f"{sender} commented on {thread.subject}:\n\n{body}".rstrip(), details
    if kind == "delete":
        text = f"{sender} deleted comment {comment_id} by {author.login} on {thread.subject}."
        return text, details
    before = _previous(payload, "body")
    if before is not None:
        details["previous_body"] = before
    text = (
        f"{sender} edited comment {comment_id} by {author.login} on {thread.subject}. "
        f"It now reads:\n\n{body}"
    )
    return text.rstrip(), details


class Recorder(Protocol):
    """What the endpoint hands deliveries to (a :class:`~.lanes.Producer`)."""

    def skips(self, delivery: Delivery) -> str: ...

    def submit(self, delivery: Delivery) -> Ack: ...


class GitHubEndpoint:
    """The receiver's endpoint for GitHub's webhooks: authenticate, parse, record, answer.

    202 once the delivery's INPUT is durable (the turn goes on after the answer), or at
    once for an event that is not a turn; 401 for a bad or missing signature, 400 for a
    malformed delivery, 503 when the engine refused the turn (nothing written: GitHub may
    redeliver). Never raises.
    """

    def __init__(self, producer: Recorder, secret: bytes, *, bots: Collection[str] = ()) -> None:
        if not secret:
            raise InvalidArgumentError("the webhook secret is empty: every delivery would fail")
        self.producer, self._secret, self.bots = producer, secret, tuple(bots)

    def handle(self, request: Request) -> Response:
        """The answer to one POSTed delivery."""
        headers = request.headers
        if not verify(request.body, self._secret, headers.get(SIGNATURE_HEADER)):
            return Response(401, {"error": f"missing or bad {SIGNATURE_HEADER} signature"})
        event, delivery_id = headers.get(EVENT_HEADER, ""), headers.get(DELIVERY_HEADER, "")
        if not event or not delivery_id:
            return Response(400, {"error": f"{EVENT_HEADER} and {DELIVERY_HEADER} are required"})
        if event == "ping":
            return Response(200, {"status": "pong"})
        try:
            payload = decode(request.body, headers.get("content-type", "application/json"))
            found = parse(event, delivery_id, payload, bots=self.bots)
        except (InvalidArgumentError, UnicodeDecodeError) as exc:
            return Response(400, {"error": str(exc)})
        reason = found.reason if isinstance(found, Skip) else self.producer.skips(found)
        if isinstance(found, Skip) or reason:
            return Response(202, {"status": "ignored", "reason": reason})
        try:
            ack = self.producer.submit(found)
        except AgentSessionsError as exc:
            return Response(503, {"error": exc.message, "delivery": delivery_id})
        return Response(202, {"status": "recorded", **ack.to_json()})
