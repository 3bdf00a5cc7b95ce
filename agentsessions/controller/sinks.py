"""The sinks a harness runs against: live, replayed, and resumed (recorded, then live).

Live and replay share this one code path (Temporal's lesson): a :class:`TurnSink` serves
each effect from the recorded stream while one remains, and only past its end does it go
live, recording the effect *before* the harness sees the result. Replay is a TurnSink
whose live side is forbidden; resume is one whose live side appends to the journal.

Syncs (spec decision 11): the fewest the invariants allow. The rule is that **everything
recorded is durable before anything leaves the process, and END is durable before the turn
returns**; between those points commits land unsynced and the next sync covers them.

- A model call's intent (MODEL_CALL) is committed together with its completion (OUTPUT),
  after the provider answered. A crash during the call leaves no MODEL_CALL, and resume
  makes the call again, exactly as it re-drives a MODEL_CALL recorded without its OUTPUT: a
  model call cut by a crash is made once more either way (``tests/crash/test_kill_model_call.py``).
  A failed call still records its MODEL_CALL alone, before the turn's ERROR (audit).
- A call the model refused as over its context window (ContextOverflowError, which the
  harness gets as itself and may handle by compacting) is recorded as its MODEL_CALL and a
  refusal ERROR (:mod:`agentsessions.v1.refusals`), an effect that replay and resume serve
  by raising the same error, with no model call. The two ride with the turn's next commit
  (the compaction's call and answer, or the turn's own ERROR or END), so a journal never
  ends on a refusal the harness was about to handle: cut there, the turn is interrupted
  (resume makes the refused call once more), not failed.
- The turn's first commit (START with its INPUT) is synced at once: the turn has begun,
  its caller is told so, and resume has the input. After it, the model call's commit, the
  harness's outputs, reported results and usage are not synced on their own: the next sync
  covers them, made before the next model call (what a call is sent is durable before it
  leaves the process), before a tool's executor runs, or with END. A plain chat turn
  therefore syncs twice: START+INPUT, then MODEL_CALL+OUTPUT with END. A crash (a killed
  process) loses nothing written; a power loss may take only the unsynced commits, which
  were never acknowledged, and resume then makes the model call once more, as above.
- A tool call's intent must be durable before its executor runs (a tool has effects outside
  the journal), so a TOOL_CALL is synced on its own, never deferred to its result. Its
  TOOL_RESULT rides with the next sync: the host's receipt already holds the outcome
  durably (:mod:`.toolcalls` has the whole protocol).

Replay of a CANCELED run (``stops_at_end``): past its record the sink goes neither live nor
diverges; it raises TurnCanceledError where the live turn met its cancel request, at the
same boundary (the next model call, output, usage, tool call or result, a recorded
MODEL_CALL's missing answer, a parked call's decision).
Usage (EVENT_USAGE) is the harness's to report (``sink.usage``, after the call it counts);
a completion served from the record carries the usage recorded right after its OUTPUT, as
the live completion carried the provider's, so a harness that reports what its completions
say replays as it ran.

Checks made while serving the record (digest 5.1): I0, the model input hash of each call
equals the recorded one; output text, usage and reported tool results equal the recorded
ones; I5 (checked by the caller via :meth:`TurnSink.unconsumed`) every recorded effect was
consumed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, cast

from agentsessions.errors import (
    AgentSessionsError,
    ApprovalParkedError,
    ApprovalUnavailableError,
    ContextOverflowError,
    HarnessError,
    InvalidArgumentError,
    ReplayDivergedError,
    ReplayInvokedModelError,
    TurnCanceledError,
)
from agentsessions.journal.format import canonical
from agentsessions.journal.format.records import Record
from agentsessions.v1 import construct, model, refusals
from agentsessions.valueclass import field, replace, value

from .approvals import Gate, denial_body, is_gated, with_seqs
from .inputhash import model_input_hash
from .live import Live
from .spi import Completion, Message, ModelRequest
from .toolcalls import ToolHost, check_call, same_call

Event = dict[str, Any]


@value
class TurnSink:
    """Serve ``recorded`` effects in order, then (if ``live`` is set) record new ones."""

    execution_id: str
    recorded: list[tuple[int, Event]]
    live: Live | None
    legacy: bool = False
    position: int = 0
    outputs: list[str] = field(default_factory=list)
    state_version: int = 0  # the working state's version at the run's start, then as committed
    state_commits: int = 0  # state commits made by this run so far (their ids' ordinal)
    last_state: bytes | None = None  # the bytes of the run's latest state commit
    call_ids: set[str] = field(default_factory=set)  # the turn's tool call ids so far
    deferred: list[Event] = field(default_factory=list)
    """Refused model calls not yet committed: they ride with the next commit."""
    stops_at_end: bool = False
    """A replay of a run that ended END CANCELED: where its record ends the harness is stopped
    as the live turn was (TurnCanceledError at that boundary), never driven live."""
    stopped: bool = False
    """Set when a :attr:`stops_at_end` replay reached its recorded cancel point."""

    # -- the Sink protocol ------------------------------------------------------------------
    def model(self, request: ModelRequest) -> Completion:
        recorded = self._next("EVENT_MODEL_CALL", "a model call")
        if recorded is None:
            return self._live_model(request)
        call = recorded.get("model", {})
        resolved = replace(request, model=request.model or str(call.get("model", "")))
        digest = model_input_hash(resolved)
        if call.get("input_hash") and call["input_hash"] != digest:
            raise ReplayDivergedError(
                f"execution {self.execution_id}: model input differs from the recorded call "
                f"(I0: input hash {digest[:12]} != recorded {call['input_hash'][:12]})"
            )
        if self.replaying and refusals.is_refusal(self.recorded[self.position][1]):
            refusal = self.recorded[self.position][1]
            self.position += 1  # the model refused this call: the harness sees it again
            raise ContextOverflowError(refusals.description(refusal))
        answer = self._next("EVENT_OUTPUT", "the recorded completion")
        if answer is None:
            return self._redrive(resolved, call)
        return self._served(Completion(answer.get("message", {}), self._recorded_usage()))

    def _recorded_usage(self) -> dict[str, Any] | None:
        """The usage recorded right after a served completion, if any: the completion
        carries it (as the live one did), and the harness's ``usage`` then consumes it."""
        if self.position < len(self.recorded):
            event = self.recorded[self.position][1]
            if event.get("kind") == "EVENT_USAGE" and isinstance(event.get("usage"), dict):
                return dict(event["usage"])
        return None

    def output(self, message: Message) -> None:
        recorded = self._next("EVENT_OUTPUT", "an output")
        if recorded is None:
            event = construct.output_event(
                cast(model.Message, message), execution_id=self.execution_id
            )
            self._boundary()
            self._defer([event])
        elif not _same(recorded.get("message"), message):
            raise self._diverged("output differs from the recorded OUTPUT")
        self.outputs.append(_text(message))

    def report(self, result: dict[str, Any]) -> None:
        recorded = self._next("EVENT_TOOL_RESULT", "a reported tool result")
        if recorded is None:
            self._boundary()
            event = {**_event("EVENT_TOOL_RESULT", self.execution_id), "result": result}
            self._defer([event])
        elif not _same(recorded.get("result"), result):
            raise self._diverged("reported tool result differs from the recorded TOOL_RESULT")

    def usage(self, usage: dict[str, Any]) -> None:
        if self.legacy:
            return  # v0.1.2 runs did not journal usage as part of the stream
        recorded = self._next("EVENT_USAGE", "usage")
        if recorded is None:
            self._boundary()
            self._defer([{**_event("EVENT_USAGE", self.execution_id), "usage": usage}])
        elif not _same(recorded.get("usage"), usage):
            raise self._diverged("usage differs from the recorded USAGE")

    def tool(self, call: Mapping[str, Any]) -> dict[str, Any]:
        checked = check_call(call)  # a refusal records nothing
        gated = is_gated(checked)
        if gated and checked["id"] in self.call_ids:
            raise InvalidArgumentError(
                f"approval-gated tool call id {checked['id']!r} was already used in this turn; "
                "nothing was recorded",
                hint="each tool call of a turn needs its own id",
            )
        self.call_ids.add(str(checked["id"]))
        recorded = self._next("EVENT_TOOL_CALL", f"tool call {checked['id']}")
        if recorded is None:
            return self._park(checked) if gated else self._live_tool(checked)
        if not same_call(recorded.get("tool"), checked):
            raise self._diverged(
                f"tool call {checked['id']} ({checked['tool']}) differs from the recorded "
                f"TOOL_CALL {recorded.get('tool', {}).get('id', '')} (id, tool, mediation, "
                "key or arguments)"
            )
        if gated:
            return self._gated(Gate(self.execution_id, self._seq(), checked))
        result = self._next("EVENT_TOOL_RESULT", f"the recorded result of {checked['id']}")
        if result is not None:
            return dict(result.get("result", {}))
        # an intent without its result (a crash in between): its outcome, at most once
        live = self._require_live(f"re-drive tool call {checked['id']}")
        body = self._host(live).redrive(checked)
        self._defer([self._result_event(body)])
        return body

    # -- approval-gated calls (the protocol is in .approvals) ------------------------------
    def _park(self, call: dict[str, Any]) -> dict[str, Any]:
        """The gate: TOOL_CALL and APPROVAL_REQUEST in one synced commit, then park."""
        live = self._require_live(f"ask approval for tool call {call['id']}")
        if not live.approvals:
            raise ApprovalUnavailableError(
                f"tool call {call['id']} ({call['tool']}) needs approval, but this harness is "
                "not resumable by replay (STATELESS_REPLAY), so its turn cannot park; nothing "
                "was recorded",
                hint="use mediation MEDIATION_CONTROLLER_MEDIATED for this harness",
            )
        host = self._host(live)
        host.bind(str(call["tool"]))  # an unknown tool records nothing
        host.receipt(call)  # a key already used by another call is refused here
        live.boundary()
        events = [
            {**_event("EVENT_TOOL_CALL", self.execution_id), "tool": call},
            construct.approval_request_event(str(call["id"]), execution_id=self.execution_id),
        ]
        request = self._append(events)
        raise self._parked(call, request.seq)

    def _gated(self, gate: Gate) -> dict[str, Any]:
        """A recorded gated call: serve its request, decision and receipt in order; park
        where the record ends before a decision; write the receipt once decided."""
        call_id = gate.call_id
        if not self.replaying:  # a cut between the intent and its request
            live = self._require_live(f"ask approval for tool call {call_id}")
            event = construct.approval_request_event(call_id, execution_id=self.execution_id)
            raise self._parked(gate.call, self._append([event]).seq)
        request = self._next("EVENT_APPROVAL_REQUEST", f"the approval request of {call_id}")
        assert request is not None
        if str(request.get("approval", {}).get("tool_call_id", "")) != call_id:
            raise self._diverged(f"seq {self._seq()} is the approval request of another call")
        gate.request_seq = self._seq()
        if not self.replaying:  # requested, not decided: park again, writing nothing
            if self.live is None and self.stops_at_end:  # parked, then canceled
                raise self._stop()
            raise self._parked(gate.call, gate.request_seq)
        decision = self._next("EVENT_APPROVAL_RESULT", f"the decision on {call_id}")
        assert decision is not None
        body = decision.get("approval_result", {})
        if str(body.get("tool_call_id", "")) != call_id or int(
            body.get("request_seq", 0) or 0
        ) != int(gate.request_seq):
            raise self._diverged(f"seq {self._seq()} decides another approval request")
        gate.decision_seq, gate.decision = self._seq(), decision
        if self.replaying:
            receipt = self._next("EVENT_TOOL_RESULT", f"the receipt of {call_id}")
            assert receipt is not None
            return dict(receipt.get("result", {}))
        live = self._require_live(f"write the receipt of tool call {call_id}")
        result = self._receipt(live, gate)
        self._defer([self._result_event(result)])
        return result

    def _receipt(self, live: Live, gate: Gate) -> dict[str, Any]:
        """The receipt of a decided call: a denial, or the executor's outcome (at most one
        run: a durable "started" mark precedes it, see :mod:`.approvals`)."""
        if not gate.approved:
            return denial_body(gate)
        host = self._host(live)
        kept = host.receipt(gate.call)
        if kept is None and host.started(gate.call):
            kept = host.redrive(gate.call)  # cut while it ran: by key, or refused
        if kept is None:
            bound = host.bind(str(gate.call["tool"]))
            live.boundary()  # no executor starts after a recorded cancel
            live.journal.flush()
            host.mark_started(gate.call)
            kept = host.execute(bound, gate.call)
        return with_seqs(kept, gate)

    def _parked(self, call: Mapping[str, Any], request_seq: int) -> ApprovalParkedError:
        tools = self.live.tools if self.live is not None else None
        return ApprovalParkedError(
            f"execution {self.execution_id} waits for approval of tool call {call['id']} "
            f"({call['tool']}, request seq {request_seq})",
            execution_id=self.execution_id,
            tool_call_id=str(call["id"]),
            request_seq=request_seq,
            tool=str(call["tool"]),
            session=tools.session_uid if tools is not None and tools.session_uid else None,
        )

    def _seq(self) -> int:
        """The seq of the recorded effect served last."""
        return self.recorded[self.position - 1][0]

    def _live_tool(self, call: dict[str, Any]) -> dict[str, Any]:
        live = self._require_live(f"run tool call {call['id']}")
        host = self._host(live)
        bound = host.bind(str(call["tool"]))  # an unknown tool records nothing
        kept = host.receipt(call)  # the key already ran in this session: no second effect
        live.boundary()  # no executor starts after a recorded cancel
        event = {**_event("EVENT_TOOL_CALL", self.execution_id), "tool": call}
        self._append([event])  # the intent is durable before any effect
        body = kept if kept is not None else host.execute(bound, call)
        self._defer([self._result_event(body)])
        return body

    def _host(self, live: Live) -> ToolHost:
        if live.tools is None:
            return ToolHost("", None, None)  # bind() refuses: no tools in this turn
        return live.tools

    def _result_event(self, body: Mapping[str, Any]) -> Event:
        return {**_event("EVENT_TOOL_RESULT", self.execution_id), "result": dict(body)}

    def delta(self, text: str) -> None:
        if self.live is not None and self.live.on_delta is not None and not self.replaying:
            self.live.on_delta(text)

    def state(self, data: bytes, *, covers_to: int = 0, expected_version: int | None = None) -> int:
        """Commit the working state (see :meth:`Sink.state <.spi.Sink.state>`).

        The commit id is the execution id and this commit's ordinal in the run, so a resumed
        run that repeats it gets the first result back. A replay (no live side) writes
        nothing: the live run was the only writer during its execution, so its n-th state
        commit made version ``start + n``; a stale ``expected_version`` is refused as live."""
        if not isinstance(data, bytes):
            raise InvalidArgumentError("working state must be bytes; nothing was recorded")
        self.state_commits += 1
        self.last_state = data
        if self.live is None:
            if expected_version is not None and expected_version != self.state_version:
                raise self._diverged(
                    f"state commit {self.state_commits} expects version {expected_version}, "
                    f"but the run's state is at version {self.state_version}"
                )
            self.state_version += 1
            return self.state_version
        commit_id = f"state:{self.execution_id}:{self.state_commits}"
        self.state_version = self.live.journal.commit_state(
            data,
            covers_to=covers_to,
            expected_version=expected_version,
            commit_id=commit_id,
            author=self.live.author,
        )
        return self.state_version

    # -- bookkeeping -------------------------------------------------------------------------
    @property
    def replaying(self) -> bool:
        return self.position < len(self.recorded)

    def unconsumed(self) -> list[tuple[int, Event]]:
        """Recorded effects the harness did not ask for (I5 under-consumption)."""
        return self.recorded[self.position :]

    def _next(self, kind: str, what: str) -> Event | None:
        """The next recorded effect, which must be of ``kind``; None past the record."""
        if self.position >= len(self.recorded):
            return None
        seq, event = self.recorded[self.position]
        if event.get("kind") != kind:
            raise self._diverged(f"harness asked for {what} but seq {seq} is {event.get('kind')}")
        self.position += 1
        return event

    def _served(self, completion: Completion) -> Completion:
        self.outputs.append(_text(completion.message))
        return completion

    def _live_model(self, request: ModelRequest) -> Completion:
        live = self._require_live("call a model")
        resolved = replace(request, model=request.model or live.default_model)
        call_event = construct.model_call_event(
            resolved.model,
            input_hash=model_input_hash(resolved),
            call_id=os.urandom(8).hex(),
            params=dict(resolved.params or {}),
            execution_id=self.execution_id,
        )
        # the intent rides with the completion (one sync, see the module docstring)
        return self._complete(resolved, live, intent=call_event)

    def _redrive(self, request: ModelRequest, call: dict[str, Any]) -> Completion:
        """A recorded MODEL_CALL without its OUTPUT (crash mid-call): invoke it once more."""
        if self.legacy:
            raise HarnessError(
                f"resume: recorded completion missing for model call {call.get('id', '')} "
                "(a v0.1.2 journal cannot re-drive a model call)"
            )
        return self._complete(request, self._require_live("re-drive a model call"))

    def _complete(
        self, request: ModelRequest, live: Live, intent: Mapping[str, Any] | None = None
    ) -> Completion:
        """Call the model; commit ``intent`` (its MODEL_CALL, unless already recorded) and
        the OUTPUT as one durable commit before the harness sees the answer."""
        live.boundary()  # no model call starts after a recorded cancel
        live.journal.before_call()  # what the call is sent is durable first (step mode)
        provider = live.models(request.model)
        live.calls.append(request.model)
        try:
            try:
                completion = provider.complete(request, on_delta=live.streaming())
            except (HarnessError, TurnCanceledError):
                raise
            except Exception as exc:  # the provider's hint (401, 429, unreachable) is kept
                hint = exc.hint if isinstance(exc, AgentSessionsError) else ""
                raise HarnessError(f"model {request.model!r} failed: {exc}", hint=hint) from exc
        except ContextOverflowError as exc:  # refused: recorded with the next commit
            refusal = refusals.refusal_event(str(exc), execution_id=self.execution_id)
            self.deferred += [*([dict(intent)] if intent is not None else []), dict(refusal)]
            raise
        except (HarnessError, TurnCanceledError):
            # a failed call, or one a cancel abandoned mid-stream, stays in the audit trail
            if intent is not None:
                self._append([intent])
            raise
        message = {**completion.message, "role": completion.message.get("role") or "assistant"}
        output = construct.output_event(
            cast(model.Message, message), execution_id=self.execution_id
        )
        self._defer([intent, output] if intent is not None else [output])
        return self._served(Completion(message, completion.usage))

    def _boundary(self) -> None:
        if self.live is not None:
            self.live.boundary()

    def _append(self, events: Sequence[Mapping[str, Any]]) -> Record:
        """Commit ``events`` now, synced: durable before the turn goes on."""
        journal = self._require_live("record a new effect").journal
        return journal.record([*self.take_deferred(), *events])

    def _defer(self, events: Sequence[Mapping[str, Any]]) -> None:
        """Commit ``events`` with the turn's next sync (see :meth:`Journal.defer`)."""
        journal = self._require_live("record a new effect").journal
        journal.defer([*self.take_deferred(), *events])

    def take_deferred(self) -> list[Event]:
        """The refused model calls not yet committed (for the turn's last commit), cleared."""
        deferred, self.deferred = self.deferred, []
        return deferred

    def _require_live(self, what: str) -> Live:
        if self.live is None and self.stops_at_end:
            raise self._stop()
        if self.live is None:
            raise ReplayInvokedModelError(
                f"execution {self.execution_id}: replay would {what} past the recorded "
                "effects (I1/I5: replay never invokes a model or records anything)"
            )
        return self.live

    def _stop(self) -> TurnCanceledError:
        """The recorded cancel point of a replayed CANCELED run: every effect before it was
        served, and the live turn's next one (an unanswered MODEL_CALL's answer, a call, an
        output...) never happened, so the harness stops here as the live turn did."""
        self.stopped = True
        return TurnCanceledError(
            f"execution {self.execution_id} was canceled here (its record ends END CANCELED "
            f"after {self.position} effects)"
        )

    def _diverged(self, why: str) -> ReplayDivergedError:
        return ReplayDivergedError(f"execution {self.execution_id}: {why}")


def _event(kind: str, execution_id: str) -> Event:
    out: Event = {"kind": kind}
    if execution_id:
        out["execution_id"] = execution_id
    return out


def _same(a: Any, b: Any) -> bool:
    """Equal as canonical JSON (key order and int-vs-float do not matter)."""
    try:
        return canonical.canonical_json(a) == canonical.canonical_json(b)
    except Exception:
        return False


def _text(message: Message) -> str:
    return "".join(p.get("text", {}).get("text", "") for p in message.get("parts", []))
