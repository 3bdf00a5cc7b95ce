"""``Sessions.compact``: summarise a session's older turns in one ordinary recorded execution.

Invariants (spec decision 7): nothing is deleted or rewritten; the compaction is a turn of
the chat harness whose ``ExecutionStart.config`` is ``{"compact": {"keep_turns": N}}`` (see
:mod:`agentsessions.v1.compaction` for what it records). Every check is made before
anything is written: a session that is not a chat session, or that has nothing to compact
(empty, no more turns than kept, none since the last compaction), is refused with nothing
written. The harness makes the same check again under the session's lock, so a compaction
that lost a race fails its turn (exit 14) rather than summarising nothing.
"""

from __future__ import annotations

import json

from agentsessions.errors import InvalidArgumentError, NothingToCompactError
from agentsessions.v1 import compaction

from .api import Sessions
from .values import SessionFrame

DEFAULT_KEEP_TURNS = 2
HARNESS = "chat"


def compaction_config(keep_turns: int) -> bytes:
    """The ExecutionStart.config bytes that make a chat execution a compaction."""
    return json.dumps({"compact": {"keep_turns": keep_turns}}, separators=(",", ":")).encode()


def compact(
    engine: Sessions, uid: str, *, keep_turns: int = DEFAULT_KEEP_TURNS, model: str | None
) -> SessionFrame:
    """Run the compaction turn of ``uid`` keeping its last ``keep_turns`` turns; its frame."""
    if type(keep_turns) is not int or keep_turns < 0:
        raise InvalidArgumentError(f"keep_turns must be an integer >= 0, got {keep_turns!r}")
    session = engine.get(uid)
    if session.harness and session.harness != HARNESS:
        raise InvalidArgumentError(
            f"session {uid} runs the {session.harness!r} harness; only chat sessions compact",
            hint="create a chat session (harness 'chat') to compact it",
        )
    events = [(r.seq, r.event) for r in engine.read(uid)]
    if compaction.plan(events, keep_turns) is None:
        turns = sum(
            1
            for _s, e in events
            if e.get("kind") == "EVENT_EXECUTION_START" and not compaction.is_compaction_start(e)
        )
        raise NothingToCompactError(
            f"session {uid} has nothing to compact: {turns} turn(s), keeping {keep_turns}, "
            "and no older turn since the last compaction"
            if turns
            else f"session {uid} has nothing to compact: it has no turns",
            hint="run more turns first, or keep fewer turns",
            param="keep_turns",
        )
    return engine.run(uid, (), harness=HARNESS, model=model, config=compaction_config(keep_turns))
