"""Where a session comes from and who speaks in it: ``Origin``, ``IdentityRef``, ``Authored``.

A session's :class:`~.model.Origin` ties it to something outside (a GitHub issue, a Slack
thread): its ``source`` and ``subject`` say *which* thing, and are what a session is found
by (``Sessions.find(origin=...)``); ``uri`` and ``attributes`` only describe it. A session's
``identity`` (an :class:`~.model.IdentityRef`) is who created it. Both are set when the
session is created and never change (its metadata's per-field checksums cover them).

An input may carry its author: :class:`Authored` wraps a turn input with an ``IdentityRef``,
which the turn records as its INPUT event's ``actor`` (the reference's ``Event.actor``,
hashed like every other field).

Invariants: :func:`check_origin` and :func:`check_identity` return the proto3-JSON form
(empty fields omitted; an all-empty identity is None, as the reference drops an empty
actor), so the metadata stored and the event hashed are the same whoever built the value;
:func:`origin_key` is injective in ``(source, subject)`` (a JSON array, never a joined
string) and ignores ``uri`` and ``attributes``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agentsessions.errors import InvalidArgumentError
from agentsessions.valueclass import value

from .model import Origin

_ORIGIN_KEYS = frozenset(("source", "subject", "uri", "attributes"))
_IDENTITY_KEYS = frozenset(("principal", "issuer", "subject"))
ORIGIN_SPACE = "origin"
"""The claim key space of origins (``ClaimKey.of(..., space=ORIGIN_SPACE)``): apart from
callers' own keys, so no key of a caller's names an origin's session."""


def origin(
    source: str, subject: str, uri: str = "", attributes: Mapping[str, str] | None = None
) -> Origin:
    """A checked :class:`~.model.Origin` (``source`` and ``subject`` are required)."""
    return check_origin(
        {"source": source, "subject": subject, "uri": uri, "attributes": dict(attributes or {})}
    )


def check_origin(value: Mapping[str, Any]) -> Origin:
    """``value`` as an Origin in proto3-JSON form, or InvalidArgumentError: only its four
    fields, strings (``attributes`` an object of strings), ``source`` and ``subject`` set."""
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(f"an origin is a mapping, got {type(value).__name__}")
    unknown = sorted(set(value) - _ORIGIN_KEYS)
    if unknown:
        raise InvalidArgumentError(
            f"an origin's fields are source, subject, uri, attributes (not {unknown[0]!r})"
        )
    out: dict[str, Any] = {}
    for name in ("source", "subject", "uri"):
        text = value.get(name, "")
        if not isinstance(text, str):
            raise InvalidArgumentError(f"origin {name} must be a string, got {text!r}")
        if text:
            out[name] = text
    for name in ("source", "subject"):
        if name not in out:
            raise InvalidArgumentError(
                f"an origin needs a {name} (its source and subject name its session)"
            )
    attributes = value.get("attributes") or {}
    if not isinstance(attributes, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in attributes.items()
    ):
        raise InvalidArgumentError("origin attributes must map strings to strings")
    if attributes:
        out["attributes"] = dict(attributes)
    return out  # type: ignore[return-value]


def check_identity(
    value: Mapping[str, Any] | None, what: str = "identity"
) -> dict[str, str] | None:
    """``value`` as an IdentityRef in proto3-JSON form, None when unset or all empty;
    InvalidArgumentError for another key or a value that is not a string."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(f"an {what} is a mapping, got {type(value).__name__}")
    unknown = sorted(set(value) - _IDENTITY_KEYS)
    if unknown:
        raise InvalidArgumentError(
            f"an {what}'s fields are principal, issuer, subject (not {unknown[0]!r})"
        )
    out: dict[str, str] = {}
    for name in ("principal", "issuer", "subject"):
        text = value.get(name, "")
        if not isinstance(text, str):
            raise InvalidArgumentError(f"{what} {name} must be a string, got {text!r}")
        if text:
            out[name] = text
    return out or None


def origin_key(value: Mapping[str, Any]) -> str:
    """The key naming ``value``'s session: its ``source`` and ``subject``, as a JSON array
    (injective: no two different pairs share it). Claimed in :data:`ORIGIN_SPACE`."""
    checked = check_origin(value)
    return json.dumps([checked["source"], checked["subject"]], ensure_ascii=False)


def named_by(key: str | None, origin: Mapping[str, Any] | None) -> Origin | None:
    """Check that a session is named by a key or by an origin, exactly one of them; the
    origin checked (None when it is named by a key)."""
    if (key is None) == (origin is None):
        raise InvalidArgumentError("name the session by a key or by an origin (one of them)")
    return check_origin(origin) if origin is not None else None


def same_origin(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """Whether two origins name the same thing (``source`` and ``subject``); None is none."""
    if a is None or b is None:
        return a is None and b is None
    return (a.get("source"), a.get("subject")) == (b.get("source"), b.get("subject"))


def describe(value: Mapping[str, Any] | None) -> str:
    """An origin as a message names it: ``source subject`` ("(none)" for None)."""
    if not value:
        return "(none)"
    return f"{value.get('source', '')} {value.get('subject', '')}"


@value(frozen=True)
class Authored:
    """A turn input and its author: ``input`` is a text or a Message dict (as any input),
    ``actor`` the IdentityRef recorded as its INPUT event's ``actor``."""

    input: str | Mapping[str, Any]
    actor: Mapping[str, str]
