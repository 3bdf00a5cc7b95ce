"""The open turn: which trailing execution a session left open, and how a turn meets it.

An execution is open while no END closes it. It is *interrupted* when neither END nor ERROR
was recorded (a killed process: the writer's state is EXEC_RUNNING or EXEC_AWAITING), and
*failed* when it ended in ERROR without END (digest 5.4: ERRORs are audit only, they do not
close an execution). :meth:`Controller.resume
<agentsessions.controller.controller.Controller.resume>` re-drives either from its record.

Invariants:
- the open execution is read from where the latest execution began (the writer's
  ``exec_seq``), never from the session's start: finding it costs one execution, not the
  session;
- an interrupted turn blocks new inputs (they would interleave with its unfinished
  effects): a turn with inputs is refused before anything is written, naming ``resume``;
  an inputless turn continues it ("inputless Exec means continue");
- a failed turn blocks nothing: a turn with inputs starts a new execution past it (replay
  skips the failed one), and an inputless turn retries it;
- an open execution is re-driven on the working state it started with (:func:`state_at`),
  not on one a later commit left.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentsessions.errors import InvalidExecutionLogError
from agentsessions.journal.stores.store import Store, WorkingState

from . import executions
from .held import HeldWriter
from .spi import Message


def pending(writer: HeldWriter) -> executions.Execution | None:
    """The open trailing execution, reading the journal only from where it began."""
    since = max(1, writer.info().exec_seq)
    runs = executions.group((r.seq, r.event) for r in writer.read(since))
    return executions.pending(runs)


def required(writer: HeldWriter) -> executions.Execution:
    """The open trailing execution a resume was asked to finish (InvalidExecutionLogError
    when there is none)."""
    run = pending(writer)
    if run is None:
        raise InvalidExecutionLogError(f"session {writer.uid}: no interrupted turn found")
    return run


def interrupted(writer: HeldWriter) -> bool:
    """A turn was cut off (no END and no ERROR): new inputs must wait for resume."""
    return writer.info().exec_state in ("EXEC_RUNNING", "EXEC_AWAITING")


def failed(writer: HeldWriter) -> executions.Execution | None:
    """The trailing execution if it failed (ERROR recorded, no END), else None."""
    if writer.info().exec_state != "EXEC_FAILED":
        return None
    run = pending(writer)
    return run if run is not None and run.errors else None


def to_continue(writer: HeldWriter, inputs: Sequence[Message]) -> executions.Execution | None:
    """The open execution a turn with ``inputs`` continues instead of starting a new one,
    or None (a new execution starts); refuses inputs while a turn is interrupted."""
    if interrupted(writer):
        if inputs:
            raise InvalidExecutionLogError(
                f"session {writer.uid} has an interrupted turn; finish it first",
                hint=f"agentsessions resume {writer.uid}",
            )
        return required(writer)
    return None if inputs else failed(writer)


def state_at(store: Store, writer: HeldWriter, first_seq: int) -> WorkingState:
    """The working state an execution beginning at ``first_seq`` started with: what the
    writer holds unless a state was committed since (then found in the store)."""
    if not writer.state.version:
        return writer.state
    return store.state(writer.uid, first_seq)
