"""Driving a turn's harness to its end: END, END CANCELED (a cancel request), or ERROR.

:class:`TurnDriver` runs the harness against its sink and closes the turn, for exec and
resume alike: a harness that stops before a recorded effect fails the turn (I5); an error
in :data:`FAILS_THE_TURN` is journaled as ERROR (resume retries it, new input is taken);
any other error leaves the turn open for resume. It counts the model and executor calls
the turn made (:class:`TurnResult`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

from agentsessions.errors import (
    AgentSessionsError,
    HarnessError,
    InvalidArgumentError,
    StateConflictError,
    ToolServerError,
    TurnCanceledError,
)
from agentsessions.journal.stores.store import Store
from agentsessions.v1 import construct
from agentsessions.valueclass import field, value

from .cancel import cancel_events, requested_detail, requests_of
from .counting import CountingModels
from .sinks import TurnSink
from .spi import Harness, Start
from .turnjournal import WriterJournal

ERROR_CODE_INTERNAL = 13  # gRPC INTERNAL, as the reference records a failed harness


@value
class TurnResult:
    """What one exec or resume did."""

    uid: str
    execution_id: str
    first_seq: int
    last_seq: int
    outputs: list[str] = field(default_factory=list)
    model_calls: int = 0
    created: bool = False
    resumed: bool = False
    canceled: bool = False  # a cancel request stopped it (it ended END CANCELED)
    tool_calls: int = 0  # executor calls made (0 when every tool result was served)
    duplicate: bool = False  # its commit id had landed: the landed turn (:mod:`.landed`)


FAILS_THE_TURN = (HarnessError, InvalidArgumentError, StateConflictError, ToolServerError)
"""The errors that end a turn with ERROR journaled (failed: resume retries it, new input is
taken). A tool server that did not start or answer (ToolServerError, raised before the call's
intent is recorded) is one: the journal is sound, so the turn must not stay RUNNING, which
would block new input behind a resume that fails the same way. Any other error (the journal
itself failed) leaves the turn open for resume."""


class TurnDriver:
    """Drives one turn (exec or resume) of a controller's: its ``store``, its counted
    ``models`` and its ``executor_calls`` (evidence of live tool calls)."""

    def __init__(self, store: Store, models: CountingModels, executor_calls: list[str]) -> None:
        self.store = store
        self.models = models
        self.executor_calls = executor_calls

    def drive(
        self,
        uid: str,
        instance: Harness,
        start: Start,
        sink: TurnSink,
        journal: WriterJournal,
        first_seq: int,
        *,
        legacy: bool,
    ) -> TurnResult:
        calls_before = self.models.calls
        tools_before = len(self.executor_calls)
        exec_id = "" if legacy else start.execution_id
        try:
            instance.run(start, sink)
            if sink.unconsumed():
                seq = sink.unconsumed()[0][0]
                raise HarnessError(
                    f"execution {start.execution_id or '(legacy)'}: the harness stopped before "
                    f"the recorded effect at seq {seq} (I5)"
                )
            if sink.live is not None:  # a cancel that came during the last effect: END here
                sink.live.boundary()
        except TurnCanceledError:
            return self._canceled(uid, start, sink, journal, first_seq, calls_before)
        except AgentSessionsError as exc:
            if not isinstance(exc, FAILS_THE_TURN):
                raise  # the journal itself failed: leave the turn open for resume
            self._record_error(journal, exec_id, str(exc), sink.take_deferred())
            if isinstance(exc, ToolServerError) and not exc.hint:  # what gets the turn done
                exc.hint = f"fix the tool server, then: agentsessions resume {uid}"
            raise
        except Exception as exc:
            why = f"{type(exc).__name__}: {exc}"
            self._record_error(journal, exec_id, why, sink.take_deferred())
            raise HarnessError(f"harness failed: {type(exc).__name__}: {exc}") from exc
        end = construct.end_event("COMPLETED", execution_id=exec_id)
        last = journal.record([*sink.take_deferred(), end])  # refusals ride with it
        result = TurnResult(
            uid,
            start.execution_id,
            first_seq,
            last.seq,
            sink.outputs,
            self.models.calls - calls_before,
        )
        result.tool_calls = len(self.executor_calls) - tools_before
        return result

    def _canceled(
        self,
        uid: str,
        start: Start,
        sink: TurnSink,
        journal: WriterJournal,
        first_seq: int,
        calls_before: int,
    ) -> TurnResult:
        """End the turn a cancel request stopped: LIFECYCLE_CANCEL + END CANCELED in one
        commit as its writer, then remove the request (it is answered)."""
        detail = requested_detail(self.store, uid)  # the request's reason, if it gives one
        last = journal.record([*sink.take_deferred(), *cancel_events(start.execution_id, detail)])
        requests = requests_of(self.store)
        if requests is not None:
            requests.clear_cancel(uid)
        result = TurnResult(
            uid,
            start.execution_id,
            first_seq,
            last.seq,
            sink.outputs,
            self.models.calls - calls_before,
        )
        result.canceled = True
        return result

    @staticmethod
    def _record_error(
        journal: WriterJournal, exec_id: str, why: str, before: Sequence[Mapping[str, Any]] = ()
    ) -> None:
        """Best effort, as the reference: if even this fails the turn stays open to resume.
        ``before``: the turn's refused model calls not yet committed (they come first)."""
        with contextlib.suppress(AgentSessionsError):
            event = construct.error_event(ERROR_CODE_INTERNAL, why[:4000], execution_id=exec_id)
            journal.record([*before, event])
