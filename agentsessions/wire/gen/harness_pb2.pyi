from agentsessions.wire.gen import common_pb2 as _common_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Resumability(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RESUMABILITY_UNSPECIFIED: _ClassVar[Resumability]
    RESUMABILITY_STATELESS_REPLAY: _ClassVar[Resumability]
    RESUMABILITY_REQUIRES_MEMORY_SNAPSHOT: _ClassVar[Resumability]
RESUMABILITY_UNSPECIFIED: Resumability
RESUMABILITY_STATELESS_REPLAY: Resumability
RESUMABILITY_REQUIRES_MEMORY_SNAPSHOT: Resumability

class Capabilities(_message.Message):
    __slots__ = ("resumability", "fork_safe", "requires_gpu", "streaming", "reasoning_replay", "uses_session_model")
    RESUMABILITY_FIELD_NUMBER: _ClassVar[int]
    FORK_SAFE_FIELD_NUMBER: _ClassVar[int]
    REQUIRES_GPU_FIELD_NUMBER: _ClassVar[int]
    STREAMING_FIELD_NUMBER: _ClassVar[int]
    REASONING_REPLAY_FIELD_NUMBER: _ClassVar[int]
    USES_SESSION_MODEL_FIELD_NUMBER: _ClassVar[int]
    resumability: Resumability
    fork_safe: bool
    requires_gpu: bool
    streaming: bool
    reasoning_replay: bool
    uses_session_model: bool
    def __init__(self, resumability: _Optional[_Union[Resumability, str]] = ..., fork_safe: _Optional[bool] = ..., requires_gpu: _Optional[bool] = ..., streaming: _Optional[bool] = ..., reasoning_replay: _Optional[bool] = ..., uses_session_model: _Optional[bool] = ...) -> None: ...

class ToolSpec(_message.Message):
    __slots__ = ("name", "description", "mediation", "input_schema")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    MEDIATION_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    mediation: _common_pb2.Mediation
    input_schema: _struct_pb2.Struct
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., mediation: _Optional[_Union[_common_pb2.Mediation, str]] = ..., input_schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class HarnessDescriptor(_message.Message):
    __slots__ = ("id", "models", "tools", "capabilities", "version", "history_node", "executions", "json_events")
    ID_FIELD_NUMBER: _ClassVar[int]
    MODELS_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    HISTORY_NODE_FIELD_NUMBER: _ClassVar[int]
    EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    JSON_EVENTS_FIELD_NUMBER: _ClassVar[int]
    id: str
    models: _containers.RepeatedScalarFieldContainer[str]
    tools: _containers.RepeatedCompositeFieldContainer[ToolSpec]
    capabilities: Capabilities
    version: str
    history_node: str
    executions: bool
    json_events: bool
    def __init__(self, id: _Optional[str] = ..., models: _Optional[_Iterable[str]] = ..., tools: _Optional[_Iterable[_Union[ToolSpec, _Mapping]]] = ..., capabilities: _Optional[_Union[Capabilities, _Mapping]] = ..., version: _Optional[str] = ..., history_node: _Optional[str] = ..., executions: _Optional[bool] = ..., json_events: _Optional[bool] = ...) -> None: ...

class DescribeRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class IdentityContext(_message.Message):
    __slots__ = ("principal", "can_mint_tokens")
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    CAN_MINT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    principal: _common_pb2.IdentityRef
    can_mint_tokens: bool
    def __init__(self, principal: _Optional[_Union[_common_pb2.IdentityRef, _Mapping]] = ..., can_mint_tokens: _Optional[bool] = ...) -> None: ...

class Start(_message.Message):
    __slots__ = ("config", "history", "inputs", "identity", "resume_from_seq", "tools", "state", "memory_restored", "history_base", "history_head", "json_events", "history_refs")
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    RESUME_FROM_SEQ_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_RESTORED_FIELD_NUMBER: _ClassVar[int]
    HISTORY_BASE_FIELD_NUMBER: _ClassVar[int]
    HISTORY_HEAD_FIELD_NUMBER: _ClassVar[int]
    JSON_EVENTS_FIELD_NUMBER: _ClassVar[int]
    HISTORY_REFS_FIELD_NUMBER: _ClassVar[int]
    config: bytes
    history: _containers.RepeatedCompositeFieldContainer[_common_pb2.Event]
    inputs: _containers.RepeatedCompositeFieldContainer[_common_pb2.Message]
    identity: IdentityContext
    resume_from_seq: int
    tools: _containers.RepeatedCompositeFieldContainer[ToolSpec]
    state: WorkingState
    memory_restored: bool
    history_base: HistoryMark
    history_head: HistoryMark
    json_events: bool
    history_refs: bool
    def __init__(self, config: _Optional[bytes] = ..., history: _Optional[_Iterable[_Union[_common_pb2.Event, _Mapping]]] = ..., inputs: _Optional[_Iterable[_Union[_common_pb2.Message, _Mapping]]] = ..., identity: _Optional[_Union[IdentityContext, _Mapping]] = ..., resume_from_seq: _Optional[int] = ..., tools: _Optional[_Iterable[_Union[ToolSpec, _Mapping]]] = ..., state: _Optional[_Union[WorkingState, _Mapping]] = ..., memory_restored: _Optional[bool] = ..., history_base: _Optional[_Union[HistoryMark, _Mapping]] = ..., history_head: _Optional[_Union[HistoryMark, _Mapping]] = ..., json_events: _Optional[bool] = ..., history_refs: _Optional[bool] = ...) -> None: ...

class HistoryMark(_message.Message):
    __slots__ = ("fence", "seq", "hash")
    FENCE_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    HASH_FIELD_NUMBER: _ClassVar[int]
    fence: int
    seq: int
    hash: str
    def __init__(self, fence: _Optional[int] = ..., seq: _Optional[int] = ..., hash: _Optional[str] = ...) -> None: ...

class WorkingState(_message.Message):
    __slots__ = ("version", "data", "covers_from", "covers_to", "author", "time_ns")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    COVERS_FROM_FIELD_NUMBER: _ClassVar[int]
    COVERS_TO_FIELD_NUMBER: _ClassVar[int]
    AUTHOR_FIELD_NUMBER: _ClassVar[int]
    TIME_NS_FIELD_NUMBER: _ClassVar[int]
    version: int
    data: bytes
    covers_from: int
    covers_to: int
    author: str
    time_ns: int
    def __init__(self, version: _Optional[int] = ..., data: _Optional[bytes] = ..., covers_from: _Optional[int] = ..., covers_to: _Optional[int] = ..., author: _Optional[str] = ..., time_ns: _Optional[int] = ...) -> None: ...

class Cancel(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class ControllerFrame(_message.Message):
    __slots__ = ("session", "execution_id", "start", "cancel", "approval", "tool", "model", "park", "state")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    PARK_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    session: str
    execution_id: str
    start: Start
    cancel: Cancel
    approval: _common_pb2.ApprovalResult
    tool: _common_pb2.ToolResult
    model: ModelResult
    park: _common_pb2.ApprovalRef
    state: StateResult
    def __init__(self, session: _Optional[str] = ..., execution_id: _Optional[str] = ..., start: _Optional[_Union[Start, _Mapping]] = ..., cancel: _Optional[_Union[Cancel, _Mapping]] = ..., approval: _Optional[_Union[_common_pb2.ApprovalResult, _Mapping]] = ..., tool: _Optional[_Union[_common_pb2.ToolResult, _Mapping]] = ..., model: _Optional[_Union[ModelResult, _Mapping]] = ..., park: _Optional[_Union[_common_pb2.ApprovalRef, _Mapping]] = ..., state: _Optional[_Union[StateResult, _Mapping]] = ...) -> None: ...

class StateResult(_message.Message):
    __slots__ = ("version", "conflict", "message", "head_seq", "head_hash")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CONFLICT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    HEAD_SEQ_FIELD_NUMBER: _ClassVar[int]
    HEAD_HASH_FIELD_NUMBER: _ClassVar[int]
    version: int
    conflict: bool
    message: str
    head_seq: int
    head_hash: str
    def __init__(self, version: _Optional[int] = ..., conflict: _Optional[bool] = ..., message: _Optional[str] = ..., head_seq: _Optional[int] = ..., head_hash: _Optional[str] = ...) -> None: ...

class ModelResult(_message.Message):
    __slots__ = ("message", "usage", "model_call_id")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    MODEL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    message: _common_pb2.Message
    usage: _common_pb2.Usage
    model_call_id: str
    def __init__(self, message: _Optional[_Union[_common_pb2.Message, _Mapping]] = ..., usage: _Optional[_Union[_common_pb2.Usage, _Mapping]] = ..., model_call_id: _Optional[str] = ...) -> None: ...

class Events(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[_common_pb2.Event]
    def __init__(self, events: _Optional[_Iterable[_Union[_common_pb2.Event, _Mapping]]] = ...) -> None: ...
