import datetime

from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Mediation(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MEDIATION_UNSPECIFIED: _ClassVar[Mediation]
    MEDIATION_IN_HARNESS_REPORTED: _ClassVar[Mediation]
    MEDIATION_CONTROLLER_MEDIATED: _ClassVar[Mediation]
    MEDIATION_REQUIRES_APPROVAL: _ClassVar[Mediation]

class EventKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EVENT_KIND_UNSPECIFIED: _ClassVar[EventKind]
    EVENT_INPUT: _ClassVar[EventKind]
    EVENT_MODEL_CALL: _ClassVar[EventKind]
    EVENT_OUTPUT: _ClassVar[EventKind]
    EVENT_TOOL_CALL: _ClassVar[EventKind]
    EVENT_TOOL_RESULT: _ClassVar[EventKind]
    EVENT_APPROVAL_REQUEST: _ClassVar[EventKind]
    EVENT_APPROVAL_RESULT: _ClassVar[EventKind]
    EVENT_USAGE: _ClassVar[EventKind]
    EVENT_LIFECYCLE: _ClassVar[EventKind]
    EVENT_END: _ClassVar[EventKind]
    EVENT_ERROR: _ClassVar[EventKind]
    EVENT_EXECUTION_START: _ClassVar[EventKind]
    EVENT_PARKED: _ClassVar[EventKind]
MEDIATION_UNSPECIFIED: Mediation
MEDIATION_IN_HARNESS_REPORTED: Mediation
MEDIATION_CONTROLLER_MEDIATED: Mediation
MEDIATION_REQUIRES_APPROVAL: Mediation
EVENT_KIND_UNSPECIFIED: EventKind
EVENT_INPUT: EventKind
EVENT_MODEL_CALL: EventKind
EVENT_OUTPUT: EventKind
EVENT_TOOL_CALL: EventKind
EVENT_TOOL_RESULT: EventKind
EVENT_APPROVAL_REQUEST: EventKind
EVENT_APPROVAL_RESULT: EventKind
EVENT_USAGE: EventKind
EVENT_LIFECYCLE: EventKind
EVENT_END: EventKind
EVENT_ERROR: EventKind
EVENT_EXECUTION_START: EventKind
EVENT_PARKED: EventKind

class ResourceMetadata(_message.Message):
    __slots__ = ("project", "name", "uid", "version", "create_time", "update_time")
    PROJECT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    project: str
    name: str
    uid: str
    version: int
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, project: _Optional[str] = ..., name: _Optional[str] = ..., uid: _Optional[str] = ..., version: _Optional[int] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Part(_message.Message):
    __slots__ = ("text", "file", "data", "reasoning", "tool_call", "tool_result")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    REASONING_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    TOOL_RESULT_FIELD_NUMBER: _ClassVar[int]
    text: TextPart
    file: FilePart
    data: DataPart
    reasoning: ReasoningPart
    tool_call: ToolCall
    tool_result: ToolResult
    def __init__(self, text: _Optional[_Union[TextPart, _Mapping]] = ..., file: _Optional[_Union[FilePart, _Mapping]] = ..., data: _Optional[_Union[DataPart, _Mapping]] = ..., reasoning: _Optional[_Union[ReasoningPart, _Mapping]] = ..., tool_call: _Optional[_Union[ToolCall, _Mapping]] = ..., tool_result: _Optional[_Union[ToolResult, _Mapping]] = ...) -> None: ...

class TextPart(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class FilePart(_message.Message):
    __slots__ = ("mime", "bytes", "uri", "name", "digest")
    MIME_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    URI_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    mime: str
    bytes: bytes
    uri: str
    name: str
    digest: str
    def __init__(self, mime: _Optional[str] = ..., bytes: _Optional[bytes] = ..., uri: _Optional[str] = ..., name: _Optional[str] = ..., digest: _Optional[str] = ...) -> None: ...

class DataPart(_message.Message):
    __slots__ = ("data",)
    DATA_FIELD_NUMBER: _ClassVar[int]
    data: _struct_pb2.Struct
    def __init__(self, data: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class ReasoningPart(_message.Message):
    __slots__ = ("provider", "model_id", "opaque_bytes", "opaque_uri", "summary", "item_id", "ordinal", "validity_scope", "opaque_digest")
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    OPAQUE_BYTES_FIELD_NUMBER: _ClassVar[int]
    OPAQUE_URI_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    ORDINAL_FIELD_NUMBER: _ClassVar[int]
    VALIDITY_SCOPE_FIELD_NUMBER: _ClassVar[int]
    OPAQUE_DIGEST_FIELD_NUMBER: _ClassVar[int]
    provider: str
    model_id: str
    opaque_bytes: bytes
    opaque_uri: str
    summary: _containers.RepeatedCompositeFieldContainer[Part]
    item_id: str
    ordinal: int
    validity_scope: str
    opaque_digest: str
    def __init__(self, provider: _Optional[str] = ..., model_id: _Optional[str] = ..., opaque_bytes: _Optional[bytes] = ..., opaque_uri: _Optional[str] = ..., summary: _Optional[_Iterable[_Union[Part, _Mapping]]] = ..., item_id: _Optional[str] = ..., ordinal: _Optional[int] = ..., validity_scope: _Optional[str] = ..., opaque_digest: _Optional[str] = ...) -> None: ...

class Message(_message.Message):
    __slots__ = ("role", "parts")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    PARTS_FIELD_NUMBER: _ClassVar[int]
    role: str
    parts: _containers.RepeatedCompositeFieldContainer[Part]
    def __init__(self, role: _Optional[str] = ..., parts: _Optional[_Iterable[_Union[Part, _Mapping]]] = ...) -> None: ...

class IdentityRef(_message.Message):
    __slots__ = ("principal", "issuer", "subject")
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    ISSUER_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    principal: str
    issuer: str
    subject: str
    def __init__(self, principal: _Optional[str] = ..., issuer: _Optional[str] = ..., subject: _Optional[str] = ...) -> None: ...

class Origin(_message.Message):
    __slots__ = ("source", "subject", "uri", "attributes")
    class AttributesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    URI_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    source: str
    subject: str
    uri: str
    attributes: _containers.ScalarMap[str, str]
    def __init__(self, source: _Optional[str] = ..., subject: _Optional[str] = ..., uri: _Optional[str] = ..., attributes: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ModelCall(_message.Message):
    __slots__ = ("model", "params", "input_hash", "id", "messages", "tools", "tool_choice")
    class ParamsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    MODEL_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    INPUT_HASH_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CHOICE_FIELD_NUMBER: _ClassVar[int]
    model: str
    params: _containers.ScalarMap[str, str]
    input_hash: str
    id: str
    messages: _containers.RepeatedCompositeFieldContainer[Message]
    tools: _containers.RepeatedCompositeFieldContainer[ToolDefinition]
    tool_choice: ToolChoice
    def __init__(self, model: _Optional[str] = ..., params: _Optional[_Mapping[str, str]] = ..., input_hash: _Optional[str] = ..., id: _Optional[str] = ..., messages: _Optional[_Iterable[_Union[Message, _Mapping]]] = ..., tools: _Optional[_Iterable[_Union[ToolDefinition, _Mapping]]] = ..., tool_choice: _Optional[_Union[ToolChoice, _Mapping]] = ...) -> None: ...

class ToolDefinition(_message.Message):
    __slots__ = ("name", "description", "input_schema")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    input_schema: _struct_pb2.Struct
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., input_schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class ToolChoice(_message.Message):
    __slots__ = ("mode", "name")
    class Mode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        MODE_UNSPECIFIED: _ClassVar[ToolChoice.Mode]
        MODE_AUTO: _ClassVar[ToolChoice.Mode]
        MODE_NONE: _ClassVar[ToolChoice.Mode]
        MODE_REQUIRED: _ClassVar[ToolChoice.Mode]
    MODE_UNSPECIFIED: ToolChoice.Mode
    MODE_AUTO: ToolChoice.Mode
    MODE_NONE: ToolChoice.Mode
    MODE_REQUIRED: ToolChoice.Mode
    MODE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    mode: ToolChoice.Mode
    name: str
    def __init__(self, mode: _Optional[_Union[ToolChoice.Mode, str]] = ..., name: _Optional[str] = ...) -> None: ...

class Usage(_message.Message):
    __slots__ = ("model", "input_tokens", "output_tokens", "reasoning_tokens")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    REASONING_TOKENS_FIELD_NUMBER: _ClassVar[int]
    model: str
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    def __init__(self, model: _Optional[str] = ..., input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., reasoning_tokens: _Optional[int] = ...) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ("id", "tool", "args", "mediation", "idempotency_key")
    ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    MEDIATION_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    id: str
    tool: str
    args: _struct_pb2.Struct
    mediation: Mediation
    idempotency_key: str
    def __init__(self, id: _Optional[str] = ..., tool: _Optional[str] = ..., args: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., mediation: _Optional[_Union[Mediation, str]] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class ToolResult(_message.Message):
    __slots__ = ("id", "output", "output_uri", "is_error", "error", "output_digest", "content", "code", "approval_request_seq", "approval_decision_seq")
    class Code(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        CODE_UNSPECIFIED: _ClassVar[ToolResult.Code]
        APPROVAL_DENIED: _ClassVar[ToolResult.Code]
        EXECUTOR_ERROR: _ClassVar[ToolResult.Code]
    CODE_UNSPECIFIED: ToolResult.Code
    APPROVAL_DENIED: ToolResult.Code
    EXECUTOR_ERROR: ToolResult.Code
    ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_URI_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_DIGEST_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_REQUEST_SEQ_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_DECISION_SEQ_FIELD_NUMBER: _ClassVar[int]
    id: str
    output: _struct_pb2.Struct
    output_uri: str
    is_error: bool
    error: str
    output_digest: str
    content: _containers.RepeatedCompositeFieldContainer[Part]
    code: ToolResult.Code
    approval_request_seq: int
    approval_decision_seq: int
    def __init__(self, id: _Optional[str] = ..., output: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., output_uri: _Optional[str] = ..., is_error: _Optional[bool] = ..., error: _Optional[str] = ..., output_digest: _Optional[str] = ..., content: _Optional[_Iterable[_Union[Part, _Mapping]]] = ..., code: _Optional[_Union[ToolResult.Code, str]] = ..., approval_request_seq: _Optional[int] = ..., approval_decision_seq: _Optional[int] = ...) -> None: ...

class ApprovalRequest(_message.Message):
    __slots__ = ("tool_call_id", "reason")
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    tool_call_id: str
    reason: str
    def __init__(self, tool_call_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ApprovalResult(_message.Message):
    __slots__ = ("tool_call_id", "approved", "reason", "request_seq")
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    APPROVED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REQUEST_SEQ_FIELD_NUMBER: _ClassVar[int]
    tool_call_id: str
    approved: bool
    reason: str
    request_seq: int
    def __init__(self, tool_call_id: _Optional[str] = ..., approved: _Optional[bool] = ..., reason: _Optional[str] = ..., request_seq: _Optional[int] = ...) -> None: ...

class ApprovalRef(_message.Message):
    __slots__ = ("execution_id", "tool_call_id", "request_seq")
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_SEQ_FIELD_NUMBER: _ClassVar[int]
    execution_id: str
    tool_call_id: str
    request_seq: int
    def __init__(self, execution_id: _Optional[str] = ..., tool_call_id: _Optional[str] = ..., request_seq: _Optional[int] = ...) -> None: ...

class Error(_message.Message):
    __slots__ = ("code", "description")
    CODE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    code: int
    description: str
    def __init__(self, code: _Optional[int] = ..., description: _Optional[str] = ...) -> None: ...

class HarnessEnd(_message.Message):
    __slots__ = ("state", "error")
    STATE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    state: str
    error: Error
    def __init__(self, state: _Optional[str] = ..., error: _Optional[_Union[Error, _Mapping]] = ...) -> None: ...

class Lifecycle(_message.Message):
    __slots__ = ("kind", "detail", "snapshot_local", "snapshot_external_uri", "snapshot_memory", "snapshot_sealed")
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        LIFECYCLE_UNSPECIFIED: _ClassVar[Lifecycle.Kind]
        LIFECYCLE_SUSPEND: _ClassVar[Lifecycle.Kind]
        LIFECYCLE_RESUME: _ClassVar[Lifecycle.Kind]
        LIFECYCLE_FORK: _ClassVar[Lifecycle.Kind]
        LIFECYCLE_BASELINE: _ClassVar[Lifecycle.Kind]
        LIFECYCLE_CANCEL: _ClassVar[Lifecycle.Kind]
    LIFECYCLE_UNSPECIFIED: Lifecycle.Kind
    LIFECYCLE_SUSPEND: Lifecycle.Kind
    LIFECYCLE_RESUME: Lifecycle.Kind
    LIFECYCLE_FORK: Lifecycle.Kind
    LIFECYCLE_BASELINE: Lifecycle.Kind
    LIFECYCLE_CANCEL: Lifecycle.Kind
    KIND_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_LOCAL_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_EXTERNAL_URI_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_MEMORY_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_SEALED_FIELD_NUMBER: _ClassVar[int]
    kind: Lifecycle.Kind
    detail: str
    snapshot_local: str
    snapshot_external_uri: str
    snapshot_memory: bool
    snapshot_sealed: bool
    def __init__(self, kind: _Optional[_Union[Lifecycle.Kind, str]] = ..., detail: _Optional[str] = ..., snapshot_local: _Optional[str] = ..., snapshot_external_uri: _Optional[str] = ..., snapshot_memory: _Optional[bool] = ..., snapshot_sealed: _Optional[bool] = ...) -> None: ...

class ExecutionStart(_message.Message):
    __slots__ = ("config", "resume_from_seq", "input_count", "harness", "harness_version")
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    RESUME_FROM_SEQ_FIELD_NUMBER: _ClassVar[int]
    INPUT_COUNT_FIELD_NUMBER: _ClassVar[int]
    HARNESS_FIELD_NUMBER: _ClassVar[int]
    HARNESS_VERSION_FIELD_NUMBER: _ClassVar[int]
    config: bytes
    resume_from_seq: int
    input_count: int
    harness: str
    harness_version: str
    def __init__(self, config: _Optional[bytes] = ..., resume_from_seq: _Optional[int] = ..., input_count: _Optional[int] = ..., harness: _Optional[str] = ..., harness_version: _Optional[str] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("execution_id", "ts", "schema_version", "kind", "message", "model", "tool", "result", "approval", "approval_result", "usage", "lifecycle", "end", "error", "execution_start", "parked", "state_commit", "delta", "actor", "json", "message_seqs")
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    TS_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_RESULT_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    LIFECYCLE_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_START_FIELD_NUMBER: _ClassVar[int]
    PARKED_FIELD_NUMBER: _ClassVar[int]
    STATE_COMMIT_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    JSON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_SEQS_FIELD_NUMBER: _ClassVar[int]
    execution_id: str
    ts: _timestamp_pb2.Timestamp
    schema_version: int
    kind: EventKind
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
    state_commit: StateCommit
    delta: TextDelta
    actor: IdentityRef
    json: bytes
    message_seqs: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, execution_id: _Optional[str] = ..., ts: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., schema_version: _Optional[int] = ..., kind: _Optional[_Union[EventKind, str]] = ..., message: _Optional[_Union[Message, _Mapping]] = ..., model: _Optional[_Union[ModelCall, _Mapping]] = ..., tool: _Optional[_Union[ToolCall, _Mapping]] = ..., result: _Optional[_Union[ToolResult, _Mapping]] = ..., approval: _Optional[_Union[ApprovalRequest, _Mapping]] = ..., approval_result: _Optional[_Union[ApprovalResult, _Mapping]] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ..., lifecycle: _Optional[_Union[Lifecycle, _Mapping]] = ..., end: _Optional[_Union[HarnessEnd, _Mapping]] = ..., error: _Optional[_Union[Error, _Mapping]] = ..., execution_start: _Optional[_Union[ExecutionStart, _Mapping]] = ..., parked: _Optional[_Union[ApprovalRef, _Mapping]] = ..., state_commit: _Optional[_Union[StateCommit, _Mapping]] = ..., delta: _Optional[_Union[TextDelta, _Mapping]] = ..., actor: _Optional[_Union[IdentityRef, _Mapping]] = ..., json: _Optional[bytes] = ..., message_seqs: _Optional[_Iterable[int]] = ...) -> None: ...

class StateCommit(_message.Message):
    __slots__ = ("data", "covers_to", "expected_version")
    DATA_FIELD_NUMBER: _ClassVar[int]
    COVERS_TO_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    covers_to: int
    expected_version: int
    def __init__(self, data: _Optional[bytes] = ..., covers_to: _Optional[int] = ..., expected_version: _Optional[int] = ...) -> None: ...

class TextDelta(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class LogRecord(_message.Message):
    __slots__ = ("seq", "prev_hash", "content_hash", "fence", "event")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    PREV_HASH_FIELD_NUMBER: _ClassVar[int]
    CONTENT_HASH_FIELD_NUMBER: _ClassVar[int]
    FENCE_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    seq: int
    prev_hash: str
    content_hash: str
    fence: int
    event: Event
    def __init__(self, seq: _Optional[int] = ..., prev_hash: _Optional[str] = ..., content_hash: _Optional[str] = ..., fence: _Optional[int] = ..., event: _Optional[_Union[Event, _Mapping]] = ...) -> None: ...
