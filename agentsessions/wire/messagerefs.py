"""A model call's messages named by the seq of the history event that holds them.

A chat harness sends the prompt window on every model call: the conversation of the last
events of its history, which the host sent the node and holds in its journal. Crossing whole,
it was the largest message of a turn (~1.4 KB for a 20-message window, encoded, checked and
sent by the node, then decoded and checked by the host). To a host whose Start says it reads
them (``Start.history_refs``), a node sends each message that *is* (the same object, so equal
by construction) the ``message`` of an event of the run's kept history as that event's seq
(``Event.message_seqs``), and the others in the call's ``Event.json``. The host puts each
named message back in its place before it relays the call, so the call it checks, records
and hashes is the one the whole message gives: the journal's bytes and hashes do not change.

Safety: the node names only events it holds under this Start's head (a kept history is a
list from seq 1, so seq ``i`` is its ``i``-th event, and a run's view ends at its head);
the host resolves a seq only within this Start's history (1 to its length), of an event
with a message, from its own journal; anything else is a protocol error. A named message
was checked when it was journaled, the rest of the call is checked here as every event is.
An old host never sets ``history_refs``, so it gets every message; an old node never sends
``message_seqs``, so a new host reads its calls as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from agentsessions.controller.spi import History
from agentsessions.errors import FormatError, HarnessProtocolError
from agentsessions.v1.schema import validate_event
from agentsessions.wire.gen import common_pb2
from agentsessions.wire.harnesswire import json_event_size

_ENCODE = msgspec.json.Encoder()
_DECODE = msgspec.json.Decoder()


def name(
    messages: Sequence[Mapping[str, Any]], seqs: Mapping[int, int], end: int
) -> tuple[list[dict[str, Any]], list[int]] | None:
    """The messages not named (copied) and the seq of each message in order (0: the next
    of those), or None when none is a message of the history's first ``end`` events."""
    inline: list[dict[str, Any]] = []
    order: list[int] = []
    named = False
    for message in messages:
        seq = seqs.get(id(message), 0)
        if 0 < seq <= end:
            named = True
        else:
            seq = 0
            inline.append(dict(message))
        order.append(seq)
    return (inline, order) if named else None


def named_event(event: Mapping[str, Any], order: list[int]) -> common_pb2.Event | None:
    """The ``Event`` of a model call whose messages ``order`` names (``event`` holds the
    rest), when ``event`` is canonical and plain by the schema's fast checker; None when it
    is not (the caller sends the call whole, field by field or refused as before)."""
    try:
        plain = validate_event(event)
    except FormatError:
        return None
    if not plain:
        return None
    return common_pb2.Event(json=_ENCODE.encode(event), message_seqs=order)


def resolve(msg: common_pb2.Event, history: History) -> dict[str, Any]:
    """The model call ``msg`` carries, each named message put back from ``history`` (the
    Start's, as this host sent it); HarnessProtocolError for anything but a canonical,
    plain EVENT_MODEL_CALL alone with its seqs, each naming a message of ``history``."""
    data, order = msg.json, list(msg.message_seqs)
    if not data or msg.ByteSize() != _size(len(data), order):
        raise HarnessProtocolError("a model call with named messages has other fields set")
    try:
        event: dict[str, Any] = _DECODE.decode(data)
        plain = validate_event(event)
    except (msgspec.DecodeError, FormatError) as exc:
        raise HarnessProtocolError(
            f"a model call with named messages is not valid: {exc}"
        ) from None
    model = event.get("model")
    if event.get("kind") != "EVENT_MODEL_CALL" or not plain or not isinstance(model, dict):
        raise HarnessProtocolError(
            "only a canonical, plain EVENT_MODEL_CALL may name messages of the history"
        )
    inline = model.get("messages") or []
    if order.count(0) != len(inline):
        raise HarnessProtocolError(
            f"a model call names {len(order)} messages but holds {len(inline)} of its "
            f"{order.count(0)} unnamed ones"
        )
    model["messages"] = _merged(inline, order, history)
    return event


def _merged(inline: list[Any], order: list[int], history: History) -> list[Any]:
    """The call's messages in order: each 0 the next of ``inline``, each seq that event's."""
    named = [seq for seq in order if seq]
    first, end = min(named), len(history)
    if first < 1 or max(named) > end:
        raise HarnessProtocolError(
            f"a model call names seq {first if first < 1 else max(named)}, outside the "
            f"history it was sent (1..{end})"
        )
    events = history.tail(end - first + 1)  # a held writer's: each decoded once, shared
    rest = iter(inline)
    out = [events[seq - first].get("message") if seq else next(rest) for seq in order]
    if None in out:  # an event of the journal's has a message (a dict) or none at all
        seq = order[out.index(None)]
        raise HarnessProtocolError(f"a model call names seq {seq}, an event with no message")
    return out


def _size(n: int, order: list[int]) -> int:
    """The wire size of an ``Event`` holding ``n`` bytes of ``json`` and the packed
    ``message_seqs`` ``order``, and nothing else (the seqs' size as protobuf counts it)."""
    return json_event_size(n) + common_pb2.Event(message_seqs=order).ByteSize()
