"""What refuses or ends a turn: a failed or misbehaving harness, a placement the runtime
cannot host, a replay that did not reproduce the journal, a journal whose turns cannot be
driven as they are, a cancel request, and the harness registry's refusals.
"""

from __future__ import annotations

from agentsessions.errors.root import AgentSessionsError


class HarnessError(AgentSessionsError):
    """The harness failed its run; the controller records an ERROR event for it."""

    exit_code = 14
    grpc_code = "INTERNAL"
    kind = "harness"


class ContextOverflowError(HarnessError):
    """A model refused a request as longer than its context window (HTTP 400
    ``context_length_exceeded`` and its variants), a failed model call.

    Raised by the model provider and passed to the harness as itself, so the harness may
    compact and retry (the chat harness does, once); the journal keeps the call and the
    refusal (see ``agentsessions/controller/sinks.py``). Uncaught, it fails the turn."""

    kind = "context_overflow"


class PlacementError(AgentSessionsError):
    """The runtime cannot host this harness (e.g. it needs memory snapshots); nothing ran."""

    exit_code = 15
    grpc_code = "FAILED_PRECONDITION"
    kind = "placement"


class ReplayError(AgentSessionsError):
    """A replay did not reproduce the recorded journal."""

    exit_code = 16
    grpc_code = "FAILED_PRECONDITION"
    kind = "replay"


class ReplayDivergedError(ReplayError):
    """I0/I5: the harness asked for something other than what was recorded."""

    kind = "replay_diverged"


class ReplayInvokedModelError(ReplayError):
    """I1: a replay called a live model."""

    kind = "replay_invoked_model"


class HarnessMismatchError(ReplayError):
    """The journal was recorded by another harness name or version."""

    kind = "harness_mismatch"


class InvalidExecutionLogError(AgentSessionsError):
    """The journal's executions cannot be driven as they are (e.g. an incomplete invocation)."""

    exit_code = 17
    grpc_code = "FAILED_PRECONDITION"
    kind = "invalid_execution_log"


class NothingToCompactError(InvalidExecutionLogError):
    """A compaction was asked of a session with no turn before the kept ones (empty, fewer
    turns than kept, or none since the last compaction): nothing was written."""

    kind = "nothing_to_compact"


class TurnCanceledError(AgentSessionsError):
    """A cancel request named the running execution: the turn stops at this boundary.

    Raised by the live sink before an effect starts; the controller catches it, records
    LIFECYCLE_CANCEL and END CANCELED, and returns a normal (canceled) turn result.
    """

    exit_code = 18
    grpc_code = "CANCELLED"


class InheritedToolIntentError(InvalidExecutionLogError):
    """A forked child's open turn ends in a tool intent copied from its parent: the child
    never re-drives it (the effect, if any, happened in the parent's session)."""

    kind = "inherited_tool_intent"


class HarnessProtocolError(HarnessError):
    """A remote harness broke the Harness.Connect protocol (a frame out of order, another
    execution's id, an event the host writes, a second END): the host cancelled the stream
    and recorded the turn's ERROR, as for any failed harness; nothing committed is lost."""

    kind = "harness_protocol"


class HarnessAckError(AgentSessionsError):
    """A remote harness answered the host's approval park with a wrong or missing
    EVENT_PARKED acknowledgement. The host cancelled the stream; the approval request stays
    journaled and the turn stays parked (no END, no ERROR: nothing may follow an open
    approval intent). ``approve``/``deny`` then resume once the harness behaves."""

    exit_code = 23
    grpc_code = "INTERNAL"
    kind = "harness_ack"


class HarnessRegistryError(AgentSessionsError):
    """A harness registration cannot change so (a STATIC harness cannot be retired, or the
    host cannot serve that placement); nothing was changed."""

    exit_code = 24
    grpc_code = "FAILED_PRECONDITION"
    kind = "harness_registry"


class HarnessExistsError(HarnessRegistryError):
    """The name is registered with another spec, or is a static (built-in or
    command-line) harness; nothing was changed."""

    grpc_code = "ALREADY_EXISTS"
    kind = "harness_exists"
