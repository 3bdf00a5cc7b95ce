"""The values every producer maps its platform's events to: a thread, an author, a delivery.

Invariants: the values are frozen and platform-neutral (a platform module fills them, the
lanes run them); a thread's :meth:`Thread.key` is injective (the JSON of ``[source,
subject]``, so ``"a:b" + "c"`` and ``"a" + "b:c"`` never share one); a delivery's input is an
``agentsessions.v1`` user Message whose first part is the text the model reads (it names the
author, since a model sees no actor) and whose second part is the platform's details as
data, and its author is recorded as the INPUT's ``actor`` (:meth:`Delivery.input`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agentsessions.v1.construct import data_part, message, text_part
from agentsessions.v1.model import Message, Origin
from agentsessions.v1.provenance import Authored
from agentsessions.v1.provenance import origin as make_origin

Kind = Literal["message", "edit", "delete"]
"""What a delivery is: a new message, or an edit or a deletion of an earlier one."""

PRODUCER_LABEL = "agentsessions.producer"
"""The label a producer's sessions carry (its value: the thread's source), so that a
listing tells them apart at a glance."""


@dataclass(frozen=True)
class Thread:
    """The external conversation a session belongs to: its origin."""

    source: str  # the platform: "github", "slack"
    subject: str  # the conversation within it: "owner/repo#12"
    uri: str = ""  # where a person opens it
    address: Mapping[str, str] = field(default_factory=dict)  # what a reply sink needs

    def key(self) -> str:
        """The thread's key: the same for every delivery of it, and no other thread's (its
        lane's key; its session is found by the same pair, its origin's source and subject)."""
        return json.dumps([self.source, self.subject], ensure_ascii=False, separators=(",", ":"))

    def labels(self) -> dict[str, str]:
        """The labels of the thread's session."""
        return {PRODUCER_LABEL: self.source}

    def origin(self) -> Origin:
        """The thread as its session's ``Origin`` (its address in the attributes, so a
        restarted producer can still answer it)."""
        return make_origin(self.source, self.subject, self.uri, self.address)

    @classmethod
    def of_origin(cls, value: Mapping[str, Any]) -> Thread:
        """The thread a session's origin describes."""
        return cls(
            str(value.get("source", "")),
            str(value.get("subject", "")),
            str(value.get("uri", "")),
            dict(value.get("attributes") or {}),
        )


@dataclass(frozen=True)
class Author:
    """Who wrote a delivery: the input's actor (an ``IdentityRef``)."""

    login: str  # the name people see ("octocat")
    issuer: str  # who vouches for it ("https://github.com")
    user_id: str = ""  # the platform's stable id (a login can be renamed)
    bot: bool = False  # the platform says this account is a bot

    def identity(self) -> dict[str, str]:
        """The author as an ``agentsessions.v1.IdentityRef`` (empty fields left out)."""
        fields = {"principal": self.login, "issuer": self.issuer, "subject": self.user_id}
        return {name: value for name, value in fields.items() if value}


@dataclass(frozen=True)
class Delivery:
    """One event of a thread, to be recorded as one INPUT (and answered by one turn).

    ``delivery_id`` is the platform's id of this delivery (GitHub's ``X-GitHub-Delivery``):
    the turn's commit id, so that a redelivery lands once.
    """

    delivery_id: str
    thread: Thread
    author: Author
    kind: Kind
    text: str  # what the model reads: who did what, then the content
    details: Mapping[str, Any] = field(default_factory=dict)  # the platform's, as data

    def message(self) -> Message:
        """The INPUT's Message: the text, then the kind and the details as a data part (so
        a producer that resumes the turn later knows what it answers)."""
        details = {"kind": self.kind, **self.details}
        return message("user", text_part(self.text), data_part(details))

    def input(self) -> Authored:
        """The turn's input: :meth:`message`, its author recorded as the INPUT's actor."""
        return Authored(self.message(), self.author.identity())


@dataclass(frozen=True)
class Ack:
    """A delivery recorded: its session and the seq of its durable INPUT."""

    delivery_id: str
    uid: str
    seq: int
    duplicate: bool = False  # a redelivery: recorded by the first delivery, nothing now

    def to_json(self) -> dict[str, Any]:
        """The ack as the receiver's answer."""
        out = {"delivery": self.delivery_id, "session": self.uid, "seq": self.seq}
        return {**out, "duplicate": self.duplicate}


@dataclass(frozen=True)
class Skip:
    """An authenticated event that is not a turn (the bot's own comment, a label change)."""

    reason: str


def kind_of(event: Mapping[str, Any]) -> str:
    """The delivery kind an INPUT event records (:meth:`Delivery.message`; "message" when
    it records none: an input of another front end)."""
    for part in (event.get("message") or {}).get("parts") or ():
        kind = ((part.get("data") or {}).get("data") or {}).get("kind")
        if isinstance(kind, str):
            return kind
    return "message"
