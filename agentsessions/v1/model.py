"""The ``agentsessions.v1`` messages as typed dicts, in canonical proto3-JSON shape.

An Event in memory IS its proto3-JSON object as the Go reference emits it (``protojson`` with
proto field names, enum names, unpopulated fields omitted), so the dict that is hashed needs no
conversion. Invariants every dict of these types keeps:

- keys are proto field names; int64 values are decimal strings, int32 values ints; bytes are
  padded standard base64; enums are value names; Timestamps are RFC 3339 UTC ``...Z`` strings
  with 0, 3, 6 or 9 fraction digits; Struct values are plain JSON under float64 semantics;
- a field at its default (``""``, ``0``, ``false``, empty list or map) is omitted, except an
  ``optional`` field (``ExecutionStart.input_count``), whose presence is explicit, and a set
  message (``{}``), which is kept;
- enum value ``N`` is ``EVENT_KINDS[N]`` (and so on: every enum is numbered densely from 0).

This module is the types and enum names only; :mod:`.construct` builds dicts that keep these
rules and ``schema.validate_event`` checks that a dict from anywhere else does.

The annotations are evaluated when the module loads (no ``from __future__ import
annotations``): a TypedDict turns each string annotation into a ForwardRef and compiles it,
114 compiles here, ~0.5 ms of every command that builds an event. Only the three names used
before their class is defined are strings.
"""

from typing import Any, Literal, TypedDict, get_args

# --------------------------------------------------------------------------- enums

MediationName = Literal[
    "MEDIATION_UNSPECIFIED",
    "MEDIATION_IN_HARNESS_REPORTED",
    "MEDIATION_CONTROLLER_MEDIATED",
    "MEDIATION_REQUIRES_APPROVAL",
]
EventKindName = Literal[
    "EVENT_KIND_UNSPECIFIED",
    "EVENT_INPUT",
    "EVENT_MODEL_CALL",
    "EVENT_OUTPUT",
    "EVENT_TOOL_CALL",
    "EVENT_TOOL_RESULT",
    "EVENT_APPROVAL_REQUEST",
    "EVENT_APPROVAL_RESULT",
    "EVENT_USAGE",
    "EVENT_LIFECYCLE",
    "EVENT_END",
    "EVENT_ERROR",
    "EVENT_EXECUTION_START",
    "EVENT_PARKED",
]
LifecycleKindName = Literal[
    "LIFECYCLE_UNSPECIFIED",
    "LIFECYCLE_SUSPEND",
    "LIFECYCLE_RESUME",
    "LIFECYCLE_FORK",
    "LIFECYCLE_BASELINE",
    "LIFECYCLE_CANCEL",
]
ToolChoiceModeName = Literal["MODE_UNSPECIFIED", "MODE_AUTO", "MODE_NONE", "MODE_REQUIRED"]
ToolResultCodeName = Literal["CODE_UNSPECIFIED", "APPROVAL_DENIED", "EXECUTOR_ERROR"]

MEDIATIONS: tuple[MediationName, ...] = get_args(MediationName)
"""``agentsessions.v1.Mediation`` value names, indexed by number."""
EVENT_KINDS: tuple[EventKindName, ...] = get_args(EventKindName)
"""``agentsessions.v1.EventKind`` value names, indexed by number."""
LIFECYCLE_KINDS: tuple[LifecycleKindName, ...] = get_args(LifecycleKindName)
"""``agentsessions.v1.Lifecycle.Kind`` value names, indexed by number."""
TOOL_CHOICE_MODES: tuple[ToolChoiceModeName, ...] = get_args(ToolChoiceModeName)
"""``agentsessions.v1.ToolChoice.Mode`` value names, indexed by number."""
TOOL_RESULT_CODES: tuple[ToolResultCodeName, ...] = get_args(ToolResultCodeName)
"""``agentsessions.v1.ToolResult.Code`` value names, indexed by number."""

BODY_FIELDS: tuple[str, ...] = (
    "message",
    "model",
    "tool",
    "result",
    "approval",
    "approval_result",
    "usage",
    "lifecycle",
    "end",
    "error",
    "execution_start",
    "parked",
)
"""The members of ``Event``'s oneof ``body``, in field-number order."""

# --------------------------------------------------------------------------- messages


class ResourceMetadata(TypedDict, total=False):
    """``ResourceMetadata``: identity and version of a resource."""

    project: str
    name: str
    uid: str
    version: str  # int64
    create_time: str  # Timestamp
    update_time: str  # Timestamp


class TextPart(TypedDict, total=False):
    """``TextPart``."""

    text: str


class FilePart(TypedDict, total=False):
    """``FilePart``; oneof ``source`` is ``bytes`` (base64) or ``uri``."""

    mime: str
    bytes: str  # bytes, oneof source
    uri: str  # oneof source
    name: str
    digest: str


class DataPart(TypedDict, total=False):
    """``DataPart``: structured content (google.protobuf.Struct)."""

    data: dict[str, Any]


class ReasoningPart(TypedDict, total=False):
    """``ReasoningPart``; oneof ``opaque`` is ``opaque_bytes`` (base64) or ``opaque_uri``."""

    provider: str
    model_id: str
    opaque_bytes: str  # bytes, oneof opaque
    opaque_uri: str  # oneof opaque
    summary: list["Part"]
    item_id: str
    ordinal: int  # int32
    validity_scope: str
    opaque_digest: str


class Part(TypedDict, total=False):
    """``Part``: exactly one member of oneof ``part`` (or none: ``{}``)."""

    text: TextPart
    file: FilePart
    data: DataPart
    reasoning: ReasoningPart
    tool_call: "ToolCall"
    tool_result: "ToolResult"


class Message(TypedDict, total=False):
    """``Message``: a role (system/user/assistant/tool) and its parts."""

    role: str
    parts: list[Part]


class IdentityRef(TypedDict, total=False):
    """``IdentityRef``: the emitting principal."""

    principal: str
    issuer: str
    subject: str


class Origin(TypedDict, total=False):
    """``Origin``: the external context a session is tied to."""

    source: str
    subject: str
    uri: str
    attributes: dict[str, str]


class ToolDefinition(TypedDict, total=False):
    """``ToolDefinition`` (wire-only, inside ModelCall)."""

    name: str
    description: str
    input_schema: dict[str, Any]  # Struct


class ToolChoice(TypedDict, total=False):
    """``ToolChoice`` (wire-only, inside ModelCall)."""

    mode: ToolChoiceModeName
    name: str


class ModelCall(TypedDict, total=False):
    """``ModelCall``; journaled with model/params/input_hash/id only."""

    model: str
    params: dict[str, str]
    input_hash: str
    id: str
    messages: list[Message]  # wire-only
    tools: list[ToolDefinition]  # wire-only
    tool_choice: ToolChoice  # wire-only


class Usage(TypedDict, total=False):
    """``Usage``: token accounting (int64 as strings)."""

    model: str
    input_tokens: str
    output_tokens: str
    reasoning_tokens: str


class ToolCall(TypedDict, total=False):
    """``ToolCall``."""

    id: str
    tool: str
    args: dict[str, Any]  # Struct
    mediation: MediationName
    idempotency_key: str


class ToolResult(TypedDict, total=False):
    """``ToolResult``."""

    id: str
    output: dict[str, Any]  # Struct
    output_uri: str
    is_error: bool
    error: str
    output_digest: str
    content: list[Part]
    code: ToolResultCodeName
    approval_request_seq: str  # int64
    approval_decision_seq: str  # int64


class ApprovalRequest(TypedDict, total=False):
    """``ApprovalRequest``."""

    tool_call_id: str
    reason: str


class ApprovalResult(TypedDict, total=False):
    """``ApprovalResult``."""

    tool_call_id: str
    approved: bool
    reason: str
    request_seq: str  # int64


class ApprovalRef(TypedDict, total=False):
    """``ApprovalRef`` (EVENT_PARKED body; transport only, never journaled)."""

    execution_id: str
    tool_call_id: str
    request_seq: str  # int64


class Error(TypedDict, total=False):
    """``Error``: a gRPC status code and description."""

    code: int  # int32
    description: str


class HarnessEnd(TypedDict, total=False):
    """``HarnessEnd``: state is "COMPLETED", "FAILED" or "CANCELED"."""

    state: str
    error: Error


class Lifecycle(TypedDict, total=False):
    """``Lifecycle``."""

    kind: LifecycleKindName
    detail: str
    snapshot_local: str
    snapshot_external_uri: str
    snapshot_memory: bool
    snapshot_sealed: bool


class ExecutionStart(TypedDict, total=False):
    """``ExecutionStart``; ``input_count`` is ``optional`` (present even when "0")."""

    config: str  # bytes
    resume_from_seq: str  # int64
    input_count: str  # optional int64
    harness: str
    harness_version: str


class Event(TypedDict, total=False):
    """``Event``: at most one ``body`` member (see BODY_FIELDS)."""

    execution_id: str
    ts: str  # Timestamp
    schema_version: int  # int32
    kind: EventKindName
    message: Message
    model: ModelCall
    tool: ToolCall
    result: ToolResult
    approval: ApprovalRequest
    approval_result: ApprovalResult
    usage: Usage
    lifecycle: Lifecycle
    end: HarnessEnd
    error: Error
    execution_start: ExecutionStart
    parked: ApprovalRef
    actor: IdentityRef


class LogRecord(TypedDict, total=False):
    """``LogRecord``: a committed event with its chain fields (fence is not hashed)."""

    seq: str  # int64
    prev_hash: str
    content_hash: str
    fence: str  # int64
    event: Event
