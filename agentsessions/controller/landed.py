"""A turn request carrying a commit id lands once: what a retry finds, and how it is answered.

A turn with ``TurnRequest.commit_id`` X carries the store commit id ``turn:X`` on its first
commit (EXECUTION_START and its INPUTs), so X is in the journal exactly when the turn's
input is. A request carrying X is then answered by what the journal says, never by a
second INPUT (:func:`find`, asked by the engine before its other checks and by the
controller before it writes):

- the turn ended (END, or END CANCELED): the retry writes nothing and calls no model; its
  answer is the landed turn (its execution, seqs and outputs; ``model_calls`` 0,
  ``duplicate`` True), whatever the session did since, and an ``expected_last_seq`` the
  retry still carries is not checked against the head (the turn it names landed);
- the turn's input landed but the turn did not end (a crash cut it, or it failed with
  ERROR), and it is still the session's open turn: the retry finishes it, as ``resume``
  does (recorded effects served, the cut model call made once more), then answers with it
  (``resumed`` and ``duplicate`` True). A turn that failed and was followed by later turns
  cannot be finished any more: the retry raises HarnessError and writes nothing.

The window (:data:`~agentsessions.journal.stores.store.COMMIT_IDS_REMEMBERED`): a session's
store remembers the newest 1,024 commit ids, across restarts and hosts, with no time limit.
A turn with a commit id uses one; so does each working-state commit a harness makes (a plain
chat turn makes none). A retry arriving after 1,024 newer id-carrying commits in its session
is not recognised and runs as a new turn: a webhook redelivered hours later is caught, one
redelivered after a thousand newer turns of the same session is not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentsessions.errors import HarnessError
from agentsessions.journal.stores.store import SessionInfo
from agentsessions.v1.turn import TurnRequest

from . import executions
from .driving import TurnResult
from .held import HeldWriter

if TYPE_CHECKING:
    from .controller import Controller


def find(writer: HeldWriter, request: TurnRequest) -> executions.Execution | None:
    """The execution whose first commit carries ``request``'s commit id (None: the request
    has no id, or its id has not landed in the window)."""
    cid = request.store_commit_id
    first = writer.landed(cid) if cid is not None else None
    if first is None:
        return None
    return _execution_at(writer, first.first_seq)


def _execution_at(writer: HeldWriter, first_seq: int) -> executions.Execution:
    """The execution whose EXECUTION_START is at ``first_seq``, read to its last record
    (the recent ones from the held writer's memory, older ones from the store)."""
    records = writer.read(first_seq)
    head = next(records)
    exec_id = str(head.event.get("execution_id", ""))
    pairs = [(head.seq, head.event)]
    for record in records:
        event = record.event
        if event.get("kind") == "EVENT_LIFECYCLE":
            continue
        if str(event.get("execution_id", "")) != exec_id:
            break  # the next turn began: this one's records are all read
        pairs.append((record.seq, event))
    return executions.group(pairs)[0]


def answer(
    controller: Controller,
    writer: HeldWriter,
    run: executions.Execution,
    session: tuple[SessionInfo, str],  # the session, and the harness the request names
) -> TurnResult:
    """The answer to a request whose id landed as ``run``: the ended turn (nothing written,
    no model called), or the open one finished now, as resume finishes it."""
    info, name = session
    if run.completed:
        outputs = [_text(e) for _seq, e in run.effects if e.get("kind") == "EVENT_OUTPUT"]
        result = TurnResult(info.uid, run.id, run.first_seq, run.last_seq, outputs, 0)
        result.canceled = executions.canceled(run)
    else:
        _check_open(info.uid, run, controller._pending(writer))
        turn_model = info.meta.model or controller.default_model
        instance, descriptor = controller._instance(info, name)
        result = controller._resume_with(
            writer, info.uid, name, instance, descriptor, turn_model, run
        )
    result.duplicate = True
    return result


def _check_open(uid: str, run: executions.Execution, pending: executions.Execution | None) -> None:
    """Refuse to finish ``run`` (not ended) unless it is still the session's open turn."""
    if pending is not None and pending.id == run.id:
        return
    raise HarnessError(
        f"session {uid}: the turn of this commit id (execution {run.id}, seq {run.first_seq}) "
        "failed and later turns followed it; nothing was written",
        hint=f"agentsessions log {uid} --from {run.first_seq}",
        session=uid,
    )


def _text(event: dict[str, object]) -> str:
    message = event.get("message")
    parts = message.get("parts", []) if isinstance(message, dict) else []
    return "".join(p.get("text", {}).get("text", "") for p in parts if isinstance(p, dict))
