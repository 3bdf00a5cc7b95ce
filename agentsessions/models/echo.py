"""The built-in echo model: answers ``"echo:" + <text of the last message>``.

It is what the reference's echo harness is paired with when no real model is configured
(the harness sends ``{"Model":"echo","Messages":[<last input>],"Params":null}`` and records
``echo:<input>``), so a session runs end to end with no key and no network.

Invariants: the answer depends only on the last message's text parts (concatenated in order,
non-text parts ignored); the role is ``assistant``; no usage is reported; a given ``on_delta``
receives the whole text once, so the concatenated deltas always equal the completion text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agentsessions.controller.spi import Completion, ModelRequest
from agentsessions.v1.construct import text_message

PREFIX = "echo:"


def message_text(message: Mapping[str, Any]) -> str:
    """The text parts of a proto3-JSON ``Message``, concatenated in order (others skipped)."""
    pieces: list[str] = []
    for part in message.get("parts") or ():
        text = part.get("text")
        if isinstance(text, Mapping):
            pieces.append(str(text.get("text", "")))
    return "".join(pieces)


def last_text(request: ModelRequest) -> str:
    """The text of the request's last message, or ``""`` if it has none."""
    return message_text(request.messages[-1]) if request.messages else ""


class EchoModel:
    """The echo model provider: deterministic, offline, instant."""

    def complete(
        self, request: ModelRequest, on_delta: Callable[[str], None] | None = None
    ) -> Completion:
        """Answer ``echo:`` followed by the last message's text."""
        text = PREFIX + last_text(request)
        if on_delta is not None:
            on_delta(text)
        return Completion(message=dict(text_message("assistant", text)))

    def __repr__(self) -> str:
        return "EchoModel()"
