"""Compaction in the journal: which executions are compactions, what each covers, what next.

(Vocabulary: stdlib only, so a harness may import it.)

A compaction (spec decision 7) is an ordinary execution whose ``ExecutionStart.config`` is a
JSON object with a ``"compact"`` key (``{"compact": {"keep_turns": N}}``). It makes one model
call asking for a summary; the completion is recorded as usual (an OUTPUT, role assistant:
model output, never instructions), and the harness then records a second OUTPUT of the same
execution, role assistant, holding only a DataPart ``{"compaction": {"from_seq", "to_seq",
"tokens_saved"}}``: the marker. The marker is a separate OUTPUT because the sink records a
completion exactly as the model gave it (replay compares it), and decision 1 forbids a new
field: a DataPart in an OUTPUT message is part of the v1 schema already.

Invariants: nothing here writes or deletes; the covered entries stay in the journal. A turn
is an execution that is not a compaction; the cut keeps the last ``keep_turns`` turns whole
(it falls just before the first kept turn's EXECUTION_START). A new compaction covers the
previous summary too, so its ``from_seq`` is the previous one's (for the first, the first seq
it was given: 1 for a whole history, the window's first for a compaction a turn triggers).
A turn may compact itself (``compact_over_bytes``): its summary OUTPUT and marker come
before its own model call, in the same execution; only those two leave the conversation.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from . import workloadref

Event = dict[str, Any]

KEY = "compaction"
"""The DataPart key of a compaction marker."""


@dataclass(frozen=True)
class Marker:
    """A recorded compaction: the range it covers, the tokens saved, and its summary."""

    execution_id: str
    from_seq: int
    to_seq: int
    tokens_saved: int
    summary: Mapping[str, Any] | None  # the compaction's model OUTPUT message, if seen


@dataclass(frozen=True)
class Plan:
    """What a new compaction covers: entries ``from_seq..to_seq``; the new ones start after
    ``previous.to_seq`` when an earlier compaction exists."""

    from_seq: int
    to_seq: int
    previous: Marker | None
    turns: int  # turns newly covered (at least 1)


def start_config(event: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON object in an EXECUTION_START's config, or ``{}`` (absent, not JSON)."""
    raw = (event.get("execution_start") or {}).get("config") or ""
    try:
        config = workloadref.split(base64.b64decode(raw, validate=True))[0] if raw else b""
        doc = json.loads(config.decode("utf-8")) if config else {}
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def is_compaction_start(event: Mapping[str, Any]) -> bool:
    """Whether ``event`` is the EXECUTION_START of a compaction."""
    return event.get("kind") == "EVENT_EXECUTION_START" and "compact" in start_config(event)


def marker_data(event: Mapping[str, Any]) -> dict[str, int] | None:
    """The ``compaction`` DataPart of an OUTPUT event, numbers as ints, or None."""
    if event.get("kind") != "EVENT_OUTPUT":
        return None
    for part in (event.get("message") or {}).get("parts") or ():
        if (type(part) is not dict and not isinstance(part, Mapping)) or "data" not in part:
            continue  # a text or tool part: nearly every part there is
        data = (part.get("data") or {}).get("data")
        if isinstance(data, Mapping) and isinstance(data.get(KEY), Mapping):
            body = data[KEY]
            try:
                return {k: int(body.get(k, 0)) for k in ("from_seq", "to_seq", "tokens_saved")}
            except (TypeError, ValueError):
                return None
    return None


def marker_message(from_seq: int, to_seq: int, tokens_saved: int) -> dict[str, Any]:
    """The marker OUTPUT's message: role assistant, one DataPart (see the module docstring)."""
    body = {"from_seq": from_seq, "to_seq": to_seq, "tokens_saved": tokens_saved}
    return {"role": "assistant", "parts": [{"data": {"data": {KEY: body}}}]}


def markers(events: Iterable[tuple[int, Event]]) -> tuple[set[int], Marker | None]:
    """The seqs among ``events`` (seq, event pairs in order) that are not conversation (each
    marker, its summary, every OUTPUT of a compaction execution) and the latest marker with
    its summary (the last OUTPUT of its execution before it)."""
    drop: set[int] = set()
    compacting: set[str] = set()
    last_output: dict[str, tuple[int, Mapping[str, Any]]] = {}
    latest: Marker | None = None
    # A chat turn asks this of its whole window every turn, so the common shapes are
    # skipped before any call: a START without config (no config, no "compact" key) and
    # an OUTPUT of text parts only (no DataPart, so no marker).
    for seq, event in events:
        kind = event.get("kind")  # only STARTs and OUTPUTs matter: the rest is skipped cheaply
        if kind == "EVENT_EXECUTION_START":
            if (event.get("execution_start") or {}).get("config") and "compact" in start_config(
                event
            ):
                compacting.add(str(event.get("execution_id", "")))
            continue
        if kind != "EVENT_OUTPUT":
            continue
        message = event.get("message")
        exec_id = str(event.get("execution_id", ""))
        data = marker_data(event) if may_mark(message) else None
        if data is not None:
            prior = last_output.get(exec_id)
            drop.update((seq, prior[0]) if prior else (seq,))
            latest = Marker(exec_id, **data, summary=prior[1] if prior else None)
        elif type(message) is dict or isinstance(message, Mapping):
            last_output[exec_id] = (seq, message)
            if exec_id in compacting:
                drop.add(seq)
    return drop, latest


def may_mark(message: object) -> bool:
    """False when ``message`` surely holds no marker (nor a tool call): a dict whose parts
    are all text; True for anything else (:func:`marker_data` decides)."""
    if type(message) is not dict:
        return True  # anything else: marker_data decides
    parts = message.get("parts")
    if type(parts) is not list:
        return True
    if len(parts) == 1:  # the common case, without a generator
        part = parts[0]
        return type(part) is not dict or len(part) != 1 or "text" not in part
    return any(type(part) is not dict or len(part) != 1 or "text" not in part for part in parts)


def plan(events: list[tuple[int, Event]], keep_turns: int) -> Plan | None:
    """What a compaction keeping the last ``keep_turns`` turns would cover, or None when
    there is nothing to compact (no turn before the kept ones, or none since the last one)."""
    _drop, previous = markers(events)
    starts = [
        seq
        for seq, e in events
        if e.get("kind") == "EVENT_EXECUTION_START" and not is_compaction_start(e)
    ]
    kept = starts[len(starts) - keep_turns :] if keep_turns > 0 else []
    to_seq = (kept[0] if kept else (events[-1][0] + 1 if events else 1)) - 1
    after = previous.to_seq if previous is not None else 0
    turns = sum(1 for s in starts if after < s <= to_seq)
    if turns == 0 or len(starts) <= keep_turns:
        return None
    from_seq = previous.from_seq if previous is not None else events[0][0]
    return Plan(from_seq, to_seq, previous, turns)


def size(messages: Iterable[Mapping[str, Any]]) -> int:
    """The bytes of the messages' compact JSON (what a threshold compares)."""
    return sum(len(json.dumps(m, separators=(",", ":"), sort_keys=True)) for m in messages)


def estimate_tokens(messages: Iterable[Mapping[str, Any]]) -> int:
    """A rough token count: the bytes of the messages' compact JSON over 4."""
    return size(messages) // 4
