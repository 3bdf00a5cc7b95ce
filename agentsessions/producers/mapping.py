"""The values every producer maps its platform's events to: a thread, an author, a delivery.

Invariants: the values are frozen and platform-neutral (a platform module fills them, the
lanes run them); a thread's :meth:`Thread.key` is injective (the JSON of ``[source,
subject]``, so ``"a:b" + "c"`` and ``"a" + "b:c"`` never share one); a delivery's input is an
``agentsessions.v1`` user Message whose first part is the text the model reads (it names the
author, since a model sees no actor) and whose second part is the platform's details as data.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agentsessions.v1.model import IdentityRef, Message, data_part, identity, message, text_part

Kind = Literal["message", "edit", "delete"]
"""What a delivery is: a new message, or an edit or a deletion of an earlier one."""

PRODUCER_LABEL = "agentsessions.producer"
"""The label a producer's sessions carry (its value: the thread's source), so that a
restarted producer finds the turns it was running in one listing."""
SUBJECT_ANNOTATION = "agentsessions.origin.subject"
URI_ANNOTATION = "agentsessions.origin.uri"
ADDRESS_PREFIX = "agentsessions.origin.address."


@dataclass(frozen=True)
class Thread:
    """The external conversation a session belongs to: its origin."""

    source: str  # the platform: "github", "slack"
    subject: str  # the conversation within it: "owner/repo#12"
    uri: str = ""  # where a person opens it
    address: Mapping[str, str] = field(default_factory=dict)  # what a reply sink needs

    def key(self) -> str:
        """The session key of this thread: the same for every delivery of it, and no other's."""
        return json.dumps([self.source, self.subject], ensure_ascii=False, separators=(",", ":"))

    def labels(self) -> dict[str, str]:
        """The labels of the thread's session."""
        return {PRODUCER_LABEL: self.source}

    def annotations(self) -> dict[str, str]:
        """The annotations of the thread's session: where it came from (``get`` shows
        them), and its address, so a restarted producer can still answer it."""
        out = {SUBJECT_ANNOTATION: self.subject, URI_ANNOTATION: self.uri}
        out.update({ADDRESS_PREFIX + k: v for k, v in self.address.items()})
        return out

    @classmethod
    def of_session(cls, source: str, annotations: Mapping[str, str]) -> Thread:
        """The thread whose :meth:`annotations` a session of ``source`` carries."""
        address = {
            k.removeprefix(ADDRESS_PREFIX): v
            for k, v in annotations.items()
            if k.startswith(ADDRESS_PREFIX)
        }
        subject, uri = annotations.get(SUBJECT_ANNOTATION, ""), annotations.get(URI_ANNOTATION, "")
        return cls(source, subject, uri, address)


@dataclass(frozen=True)
class Author:
    """Who wrote a delivery: the input's actor (an ``IdentityRef``)."""

    login: str  # the name people see ("octocat")
    issuer: str  # who vouches for it ("https://github.com")
    user_id: str = ""  # the platform's stable id (a login can be renamed)
    bot: bool = False  # the platform says this account is a bot

    def identity(self) -> IdentityRef:
        """The author as an ``agentsessions.v1.IdentityRef``."""
        return identity(principal=self.login, issuer=self.issuer, subject=self.user_id)


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
        """The INPUT's Message: the text, then the details (when any) as a data part."""
        if not self.details:
            return message("user", text_part(self.text))
        return message("user", text_part(self.text), data_part(self.details))


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
