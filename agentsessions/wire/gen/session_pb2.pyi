from agentsessions.wire.gen import common_pb2 as _common_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ExecState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EXEC_STATE_UNSPECIFIED: _ClassVar[ExecState]
    EXEC_PENDING: _ClassVar[ExecState]
    EXEC_RUNNING: _ClassVar[ExecState]
    EXEC_AWAITING: _ClassVar[ExecState]
    EXEC_COMPLETED: _ClassVar[ExecState]
    EXEC_FAILED: _ClassVar[ExecState]
    EXEC_CANCELED: _ClassVar[ExecState]

class ComputeState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COMPUTE_STATE_UNSPECIFIED: _ClassVar[ComputeState]
    COMPUTE_NONE: _ClassVar[ComputeState]
    COMPUTE_LIVE: _ClassVar[ComputeState]
    COMPUTE_WARM: _ClassVar[ComputeState]
    COMPUTE_COLD: _ClassVar[ComputeState]
    COMPUTE_TERMINATED: _ClassVar[ComputeState]
EXEC_STATE_UNSPECIFIED: ExecState
EXEC_PENDING: ExecState
EXEC_RUNNING: ExecState
EXEC_AWAITING: ExecState
EXEC_COMPLETED: ExecState
EXEC_FAILED: ExecState
EXEC_CANCELED: ExecState
COMPUTE_STATE_UNSPECIFIED: ComputeState
COMPUTE_NONE: ComputeState
COMPUTE_LIVE: ComputeState
COMPUTE_WARM: ComputeState
COMPUTE_COLD: ComputeState
COMPUTE_TERMINATED: ComputeState

class SnapshotRef(_message.Message):
    __slots__ = ("local", "external_uri", "memory", "sealed")
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_URI_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    SEALED_FIELD_NUMBER: _ClassVar[int]
    local: str
    external_uri: str
    memory: bool
    sealed: bool
    def __init__(self, local: _Optional[str] = ..., external_uri: _Optional[str] = ..., memory: _Optional[bool] = ..., sealed: _Optional[bool] = ...) -> None: ...

class RuntimeCapabilities(_message.Message):
    __slots__ = ("memory_snapshot", "cow_fork", "attest", "gpu_state")
    MEMORY_SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    COW_FORK_FIELD_NUMBER: _ClassVar[int]
    ATTEST_FIELD_NUMBER: _ClassVar[int]
    GPU_STATE_FIELD_NUMBER: _ClassVar[int]
    memory_snapshot: bool
    cow_fork: bool
    attest: bool
    gpu_state: bool
    def __init__(self, memory_snapshot: _Optional[bool] = ..., cow_fork: _Optional[bool] = ..., attest: _Optional[bool] = ..., gpu_state: _Optional[bool] = ...) -> None: ...

class ComputeRef(_message.Message):
    __slots__ = ("runtime", "worker", "snapshot", "capabilities", "attributes", "fence_token")
    class AttributesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    FENCE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    runtime: str
    worker: str
    snapshot: SnapshotRef
    capabilities: RuntimeCapabilities
    attributes: _containers.ScalarMap[str, str]
    fence_token: int
    def __init__(self, runtime: _Optional[str] = ..., worker: _Optional[str] = ..., snapshot: _Optional[_Union[SnapshotRef, _Mapping]] = ..., capabilities: _Optional[_Union[RuntimeCapabilities, _Mapping]] = ..., attributes: _Optional[_Mapping[str, str]] = ..., fence_token: _Optional[int] = ...) -> None: ...

class Session(_message.Message):
    __slots__ = ("metadata", "harness", "model", "last_seq", "parent_uid", "fork_seq", "identity", "compute", "origin", "labels", "annotations", "exec_state", "compute_state", "pending_approval", "last_hash", "fence", "deleted", "unresolved_call", "memory", "damaged", "working_state")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AnnotationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    METADATA_FIELD_NUMBER: _ClassVar[int]
    HARNESS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    PARENT_UID_FIELD_NUMBER: _ClassVar[int]
    FORK_SEQ_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    EXEC_STATE_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_STATE_FIELD_NUMBER: _ClassVar[int]
    PENDING_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    LAST_HASH_FIELD_NUMBER: _ClassVar[int]
    FENCE_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    UNRESOLVED_CALL_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    DAMAGED_FIELD_NUMBER: _ClassVar[int]
    WORKING_STATE_FIELD_NUMBER: _ClassVar[int]
    metadata: _common_pb2.ResourceMetadata
    harness: str
    model: str
    last_seq: int
    parent_uid: str
    fork_seq: int
    identity: _common_pb2.IdentityRef
    compute: ComputeRef
    origin: _common_pb2.Origin
    labels: _containers.ScalarMap[str, str]
    annotations: _containers.ScalarMap[str, str]
    exec_state: ExecState
    compute_state: ComputeState
    pending_approval: _common_pb2.ApprovalRef
    last_hash: str
    fence: int
    deleted: bool
    unresolved_call: UnresolvedCall
    memory: SessionMemory
    damaged: str
    working_state: WorkingStateSummary
    def __init__(self, metadata: _Optional[_Union[_common_pb2.ResourceMetadata, _Mapping]] = ..., harness: _Optional[str] = ..., model: _Optional[str] = ..., last_seq: _Optional[int] = ..., parent_uid: _Optional[str] = ..., fork_seq: _Optional[int] = ..., identity: _Optional[_Union[_common_pb2.IdentityRef, _Mapping]] = ..., compute: _Optional[_Union[ComputeRef, _Mapping]] = ..., origin: _Optional[_Union[_common_pb2.Origin, _Mapping]] = ..., labels: _Optional[_Mapping[str, str]] = ..., annotations: _Optional[_Mapping[str, str]] = ..., exec_state: _Optional[_Union[ExecState, str]] = ..., compute_state: _Optional[_Union[ComputeState, str]] = ..., pending_approval: _Optional[_Union[_common_pb2.ApprovalRef, _Mapping]] = ..., last_hash: _Optional[str] = ..., fence: _Optional[int] = ..., deleted: _Optional[bool] = ..., unresolved_call: _Optional[_Union[UnresolvedCall, _Mapping]] = ..., memory: _Optional[_Union[SessionMemory, _Mapping]] = ..., damaged: _Optional[str] = ..., working_state: _Optional[_Union[WorkingStateSummary, _Mapping]] = ...) -> None: ...

class WorkingStateSummary(_message.Message):
    __slots__ = ("version", "covers_from", "covers_to", "size")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    COVERS_FROM_FIELD_NUMBER: _ClassVar[int]
    COVERS_TO_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    version: int
    covers_from: int
    covers_to: int
    size: int
    def __init__(self, version: _Optional[int] = ..., covers_from: _Optional[int] = ..., covers_to: _Optional[int] = ..., size: _Optional[int] = ...) -> None: ...

class UnresolvedCall(_message.Message):
    __slots__ = ("execution_id", "tool_call_id", "tool", "idempotency_key", "call_seq")
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    CALL_SEQ_FIELD_NUMBER: _ClassVar[int]
    execution_id: str
    tool_call_id: str
    tool: str
    idempotency_key: str
    call_seq: int
    def __init__(self, execution_id: _Optional[str] = ..., tool_call_id: _Optional[str] = ..., tool: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., call_seq: _Optional[int] = ...) -> None: ...

class SessionMemory(_message.Message):
    __slots__ = ("where", "text", "detail", "detail_json")
    WHERE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    DETAIL_JSON_FIELD_NUMBER: _ClassVar[int]
    where: str
    text: str
    detail: _struct_pb2.Struct
    detail_json: str
    def __init__(self, where: _Optional[str] = ..., text: _Optional[str] = ..., detail: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., detail_json: _Optional[str] = ...) -> None: ...

class CreateSessionRequest(_message.Message):
    __slots__ = ("session", "tools")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    session: Session
    tools: str
    def __init__(self, session: _Optional[_Union[Session, _Mapping]] = ..., tools: _Optional[str] = ...) -> None: ...

class GetSessionRequest(_message.Message):
    __slots__ = ("uid",)
    UID_FIELD_NUMBER: _ClassVar[int]
    uid: str
    def __init__(self, uid: _Optional[str] = ...) -> None: ...

class ListSessionsRequest(_message.Message):
    __slots__ = ("project", "page_size", "page_token")
    PROJECT_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    project: str
    page_size: int
    page_token: str
    def __init__(self, project: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListSessionsResponse(_message.Message):
    __slots__ = ("sessions", "next_page_token", "not_listed")
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    NOT_LISTED_FIELD_NUMBER: _ClassVar[int]
    sessions: _containers.RepeatedCompositeFieldContainer[Session]
    next_page_token: str
    not_listed: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, sessions: _Optional[_Iterable[_Union[Session, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., not_listed: _Optional[_Iterable[str]] = ...) -> None: ...

class DeleteSessionRequest(_message.Message):
    __slots__ = ("uid",)
    UID_FIELD_NUMBER: _ClassVar[int]
    uid: str
    def __init__(self, uid: _Optional[str] = ...) -> None: ...

class ExecRequest(_message.Message):
    __slots__ = ("session", "inputs", "resume_from_seq", "harness", "config", "expected_last_seq", "deadline_unix", "model", "wait_ms", "project", "name", "labels", "fresh_start", "tools", "commit_id", "origin", "identity", "input_actors", "durability", "batched")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SESSION_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    RESUME_FROM_SEQ_FIELD_NUMBER: _ClassVar[int]
    HARNESS_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_UNIX_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    PROJECT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    FRESH_START_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    COMMIT_ID_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    INPUT_ACTORS_FIELD_NUMBER: _ClassVar[int]
    DURABILITY_FIELD_NUMBER: _ClassVar[int]
    BATCHED_FIELD_NUMBER: _ClassVar[int]
    session: str
    inputs: _containers.RepeatedCompositeFieldContainer[_common_pb2.Message]
    resume_from_seq: int
    harness: str
    config: bytes
    expected_last_seq: int
    deadline_unix: int
    model: str
    wait_ms: int
    project: str
    name: str
    labels: _containers.ScalarMap[str, str]
    fresh_start: bool
    tools: str
    commit_id: str
    origin: _common_pb2.Origin
    identity: _common_pb2.IdentityRef
    input_actors: _containers.RepeatedCompositeFieldContainer[_common_pb2.IdentityRef]
    durability: str
    batched: bool
    def __init__(self, session: _Optional[str] = ..., inputs: _Optional[_Iterable[_Union[_common_pb2.Message, _Mapping]]] = ..., resume_from_seq: _Optional[int] = ..., harness: _Optional[str] = ..., config: _Optional[bytes] = ..., expected_last_seq: _Optional[int] = ..., deadline_unix: _Optional[int] = ..., model: _Optional[str] = ..., wait_ms: _Optional[int] = ..., project: _Optional[str] = ..., name: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., fresh_start: _Optional[bool] = ..., tools: _Optional[str] = ..., commit_id: _Optional[str] = ..., origin: _Optional[_Union[_common_pb2.Origin, _Mapping]] = ..., identity: _Optional[_Union[_common_pb2.IdentityRef, _Mapping]] = ..., input_actors: _Optional[_Iterable[_Union[_common_pb2.IdentityRef, _Mapping]]] = ..., durability: _Optional[str] = ..., batched: _Optional[bool] = ...) -> None: ...

class ReplayRequest(_message.Message):
    __slots__ = ("session", "from_seq", "to_seq")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    FROM_SEQ_FIELD_NUMBER: _ClassVar[int]
    TO_SEQ_FIELD_NUMBER: _ClassVar[int]
    session: str
    from_seq: int
    to_seq: int
    def __init__(self, session: _Optional[str] = ..., from_seq: _Optional[int] = ..., to_seq: _Optional[int] = ...) -> None: ...

class ApproveRequest(_message.Message):
    __slots__ = ("session", "execution_id", "tool_call_id", "request_seq", "approved", "reason", "identity")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_SEQ_FIELD_NUMBER: _ClassVar[int]
    APPROVED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    session: str
    execution_id: str
    tool_call_id: str
    request_seq: int
    approved: bool
    reason: str
    identity: _common_pb2.IdentityRef
    def __init__(self, session: _Optional[str] = ..., execution_id: _Optional[str] = ..., tool_call_id: _Optional[str] = ..., request_seq: _Optional[int] = ..., approved: _Optional[bool] = ..., reason: _Optional[str] = ..., identity: _Optional[_Union[_common_pb2.IdentityRef, _Mapping]] = ...) -> None: ...

class ApproveResponse(_message.Message):
    __slots__ = ("session", "decision", "request", "existing")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    EXISTING_FIELD_NUMBER: _ClassVar[int]
    session: Session
    decision: _common_pb2.LogRecord
    request: _common_pb2.ApprovalRef
    existing: bool
    def __init__(self, session: _Optional[_Union[Session, _Mapping]] = ..., decision: _Optional[_Union[_common_pb2.LogRecord, _Mapping]] = ..., request: _Optional[_Union[_common_pb2.ApprovalRef, _Mapping]] = ..., existing: _Optional[bool] = ...) -> None: ...

class SuspendRequest(_message.Message):
    __slots__ = ("session",)
    SESSION_FIELD_NUMBER: _ClassVar[int]
    session: str
    def __init__(self, session: _Optional[str] = ...) -> None: ...

class ResumeRequest(_message.Message):
    __slots__ = ("session", "boot", "harness", "wait_ms", "batched")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    BOOT_FIELD_NUMBER: _ClassVar[int]
    HARNESS_FIELD_NUMBER: _ClassVar[int]
    WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    BATCHED_FIELD_NUMBER: _ClassVar[int]
    session: str
    boot: bool
    harness: str
    wait_ms: int
    batched: bool
    def __init__(self, session: _Optional[str] = ..., boot: _Optional[bool] = ..., harness: _Optional[str] = ..., wait_ms: _Optional[int] = ..., batched: _Optional[bool] = ...) -> None: ...

class ForkRequest(_message.Message):
    __slots__ = ("session", "at_seq", "count", "identity", "labels", "child_names")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SESSION_FIELD_NUMBER: _ClassVar[int]
    AT_SEQ_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    CHILD_NAMES_FIELD_NUMBER: _ClassVar[int]
    session: str
    at_seq: int
    count: int
    identity: _common_pb2.IdentityRef
    labels: _containers.ScalarMap[str, str]
    child_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, session: _Optional[str] = ..., at_seq: _Optional[int] = ..., count: _Optional[int] = ..., identity: _Optional[_Union[_common_pb2.IdentityRef, _Mapping]] = ..., labels: _Optional[_Mapping[str, str]] = ..., child_names: _Optional[_Iterable[str]] = ...) -> None: ...

class ForkResponse(_message.Message):
    __slots__ = ("children",)
    CHILDREN_FIELD_NUMBER: _ClassVar[int]
    children: _containers.RepeatedCompositeFieldContainer[Session]
    def __init__(self, children: _Optional[_Iterable[_Union[Session, _Mapping]]] = ...) -> None: ...

class CancelRequest(_message.Message):
    __slots__ = ("session", "execution_id", "reason", "wait_ms")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    session: str
    execution_id: str
    reason: str
    wait_ms: int
    def __init__(self, session: _Optional[str] = ..., execution_id: _Optional[str] = ..., reason: _Optional[str] = ..., wait_ms: _Optional[int] = ...) -> None: ...

class ExecUpdate(_message.Message):
    __slots__ = ("record", "delta", "session", "committed", "frame", "batch")
    RECORD_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_FIELD_NUMBER: _ClassVar[int]
    FRAME_FIELD_NUMBER: _ClassVar[int]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    record: _common_pb2.LogRecord
    delta: Delta
    session: Session
    committed: CommittedRecord
    frame: FrameInfo
    batch: _containers.RepeatedCompositeFieldContainer[ExecUpdate]
    def __init__(self, record: _Optional[_Union[_common_pb2.LogRecord, _Mapping]] = ..., delta: _Optional[_Union[Delta, _Mapping]] = ..., session: _Optional[_Union[Session, _Mapping]] = ..., committed: _Optional[_Union[CommittedRecord, _Mapping]] = ..., frame: _Optional[_Union[FrameInfo, _Mapping]] = ..., batch: _Optional[_Iterable[_Union[ExecUpdate, _Mapping]]] = ...) -> None: ...

class ExecQuickResponse(_message.Message):
    __slots__ = ("update", "rest")
    UPDATE_FIELD_NUMBER: _ClassVar[int]
    REST_FIELD_NUMBER: _ClassVar[int]
    update: ExecUpdate
    rest: str
    def __init__(self, update: _Optional[_Union[ExecUpdate, _Mapping]] = ..., rest: _Optional[str] = ...) -> None: ...

class ExecRestRequest(_message.Message):
    __slots__ = ("rest",)
    REST_FIELD_NUMBER: _ClassVar[int]
    rest: str
    def __init__(self, rest: _Optional[str] = ...) -> None: ...

class CommittedRecord(_message.Message):
    __slots__ = ("seq", "prev_hash", "content_hash", "fence", "event_json")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    PREV_HASH_FIELD_NUMBER: _ClassVar[int]
    CONTENT_HASH_FIELD_NUMBER: _ClassVar[int]
    FENCE_FIELD_NUMBER: _ClassVar[int]
    EVENT_JSON_FIELD_NUMBER: _ClassVar[int]
    seq: int
    prev_hash: str
    content_hash: str
    fence: int
    event_json: bytes
    def __init__(self, seq: _Optional[int] = ..., prev_hash: _Optional[str] = ..., content_hash: _Optional[str] = ..., fence: _Optional[int] = ..., event_json: _Optional[bytes] = ...) -> None: ...

class FrameInfo(_message.Message):
    __slots__ = ("created", "last", "compute_resumed", "turn", "parked")
    CREATED_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_RESUMED_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    PARKED_FIELD_NUMBER: _ClassVar[int]
    created: bool
    last: bool
    compute_resumed: bool
    turn: Turn
    parked: bool
    def __init__(self, created: _Optional[bool] = ..., last: _Optional[bool] = ..., compute_resumed: _Optional[bool] = ..., turn: _Optional[_Union[Turn, _Mapping]] = ..., parked: _Optional[bool] = ...) -> None: ...

class Turn(_message.Message):
    __slots__ = ("uid", "execution_id", "first_seq", "last_seq", "outputs", "model_calls", "created", "resumed", "canceled", "duplicate")
    UID_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEQ_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    MODEL_CALLS_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    RESUMED_FIELD_NUMBER: _ClassVar[int]
    CANCELED_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    uid: str
    execution_id: str
    first_seq: int
    last_seq: int
    outputs: _containers.RepeatedScalarFieldContainer[str]
    model_calls: int
    created: bool
    resumed: bool
    canceled: bool
    duplicate: bool
    def __init__(self, uid: _Optional[str] = ..., execution_id: _Optional[str] = ..., first_seq: _Optional[int] = ..., last_seq: _Optional[int] = ..., outputs: _Optional[_Iterable[str]] = ..., model_calls: _Optional[int] = ..., created: _Optional[bool] = ..., resumed: _Optional[bool] = ..., canceled: _Optional[bool] = ..., duplicate: _Optional[bool] = ...) -> None: ...

class Delta(_message.Message):
    __slots__ = ("execution_id", "part_index", "chunk", "done")
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    PART_INDEX_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    execution_id: str
    part_index: int
    chunk: str
    done: bool
    def __init__(self, execution_id: _Optional[str] = ..., part_index: _Optional[int] = ..., chunk: _Optional[str] = ..., done: _Optional[bool] = ...) -> None: ...

class FollowRequest(_message.Message):
    __slots__ = ("session", "from_seq", "idle_timeout_ms")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    FROM_SEQ_FIELD_NUMBER: _ClassVar[int]
    IDLE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    session: str
    from_seq: int
    idle_timeout_ms: int
    def __init__(self, session: _Optional[str] = ..., from_seq: _Optional[int] = ..., idle_timeout_ms: _Optional[int] = ...) -> None: ...

class RerunRequest(_message.Message):
    __slots__ = ("session", "harness")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    HARNESS_FIELD_NUMBER: _ClassVar[int]
    session: str
    harness: str
    def __init__(self, session: _Optional[str] = ..., harness: _Optional[str] = ...) -> None: ...

class ReplayReport(_message.Message):
    __slots__ = ("uid", "harness", "executions", "replayed", "model_calls", "identical", "outputs", "divergence", "diverged_execution", "last_seq")
    UID_FIELD_NUMBER: _ClassVar[int]
    HARNESS_FIELD_NUMBER: _ClassVar[int]
    EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    MODEL_CALLS_FIELD_NUMBER: _ClassVar[int]
    IDENTICAL_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    DIVERGENCE_FIELD_NUMBER: _ClassVar[int]
    DIVERGED_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    uid: str
    harness: str
    executions: int
    replayed: int
    model_calls: int
    identical: bool
    outputs: _containers.RepeatedScalarFieldContainer[str]
    divergence: str
    diverged_execution: str
    last_seq: int
    def __init__(self, uid: _Optional[str] = ..., harness: _Optional[str] = ..., executions: _Optional[int] = ..., replayed: _Optional[int] = ..., model_calls: _Optional[int] = ..., identical: _Optional[bool] = ..., outputs: _Optional[_Iterable[str]] = ..., divergence: _Optional[str] = ..., diverged_execution: _Optional[str] = ..., last_seq: _Optional[int] = ...) -> None: ...

class CompactRequest(_message.Message):
    __slots__ = ("session", "keep_turns", "model")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    KEEP_TURNS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    session: str
    keep_turns: int
    model: str
    def __init__(self, session: _Optional[str] = ..., keep_turns: _Optional[int] = ..., model: _Optional[str] = ...) -> None: ...

class ResolveRequest(_message.Message):
    __slots__ = ("session", "call_id", "result", "failed", "actor", "no_resume")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    NO_RESUME_FIELD_NUMBER: _ClassVar[int]
    session: str
    call_id: str
    result: _struct_pb2.Struct
    failed: str
    actor: str
    no_resume: bool
    def __init__(self, session: _Optional[str] = ..., call_id: _Optional[str] = ..., result: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., failed: _Optional[str] = ..., actor: _Optional[str] = ..., no_resume: _Optional[bool] = ...) -> None: ...

class ResolveResponse(_message.Message):
    __slots__ = ("session", "call", "result", "turn")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    CALL_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    session: Session
    call: UnresolvedCall
    result: _struct_pb2.Struct
    turn: ExecUpdate
    def __init__(self, session: _Optional[_Union[Session, _Mapping]] = ..., call: _Optional[_Union[UnresolvedCall, _Mapping]] = ..., result: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., turn: _Optional[_Union[ExecUpdate, _Mapping]] = ...) -> None: ...

class EnsureSessionRequest(_message.Message):
    __slots__ = ("key", "session", "tools")
    KEY_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    key: str
    session: Session
    tools: str
    def __init__(self, key: _Optional[str] = ..., session: _Optional[_Union[Session, _Mapping]] = ..., tools: _Optional[str] = ...) -> None: ...

class EnsureSessionResponse(_message.Message):
    __slots__ = ("session", "created")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    session: Session
    created: bool
    def __init__(self, session: _Optional[_Union[Session, _Mapping]] = ..., created: _Optional[bool] = ...) -> None: ...

class FindSessionRequest(_message.Message):
    __slots__ = ("key", "project", "origin")
    KEY_FIELD_NUMBER: _ClassVar[int]
    PROJECT_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    key: str
    project: str
    origin: _common_pb2.Origin
    def __init__(self, key: _Optional[str] = ..., project: _Optional[str] = ..., origin: _Optional[_Union[_common_pb2.Origin, _Mapping]] = ...) -> None: ...

class FindSessionResponse(_message.Message):
    __slots__ = ("session",)
    SESSION_FIELD_NUMBER: _ClassVar[int]
    session: Session
    def __init__(self, session: _Optional[_Union[Session, _Mapping]] = ...) -> None: ...

class ClaimSessionRequest(_message.Message):
    __slots__ = ("key", "uid", "project")
    KEY_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    PROJECT_FIELD_NUMBER: _ClassVar[int]
    key: str
    uid: str
    project: str
    def __init__(self, key: _Optional[str] = ..., uid: _Optional[str] = ..., project: _Optional[str] = ...) -> None: ...

class ClaimSessionResponse(_message.Message):
    __slots__ = ("uid",)
    UID_FIELD_NUMBER: _ClassVar[int]
    uid: str
    def __init__(self, uid: _Optional[str] = ...) -> None: ...

class VerifyRequest(_message.Message):
    __slots__ = ("session", "strict")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    STRICT_FIELD_NUMBER: _ClassVar[int]
    session: str
    strict: bool
    def __init__(self, session: _Optional[str] = ..., strict: _Optional[bool] = ...) -> None: ...

class VerifyReport(_message.Message):
    __slots__ = ("source", "uid", "records", "last_seq", "last_hash", "first_bad_seq", "reason", "torn_tail", "strict", "expected_last_seq", "expected_last_hash", "notes", "kind", "torn_detail", "components")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    LAST_HASH_FIELD_NUMBER: _ClassVar[int]
    FIRST_BAD_SEQ_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    TORN_TAIL_FIELD_NUMBER: _ClassVar[int]
    STRICT_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_LAST_HASH_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TORN_DETAIL_FIELD_NUMBER: _ClassVar[int]
    COMPONENTS_FIELD_NUMBER: _ClassVar[int]
    source: str
    uid: str
    records: int
    last_seq: int
    last_hash: str
    first_bad_seq: int
    reason: str
    torn_tail: bool
    strict: bool
    expected_last_seq: int
    expected_last_hash: str
    notes: _containers.RepeatedScalarFieldContainer[str]
    kind: str
    torn_detail: str
    components: _containers.RepeatedCompositeFieldContainer[VerifyComponent]
    def __init__(self, source: _Optional[str] = ..., uid: _Optional[str] = ..., records: _Optional[int] = ..., last_seq: _Optional[int] = ..., last_hash: _Optional[str] = ..., first_bad_seq: _Optional[int] = ..., reason: _Optional[str] = ..., torn_tail: _Optional[bool] = ..., strict: _Optional[bool] = ..., expected_last_seq: _Optional[int] = ..., expected_last_hash: _Optional[str] = ..., notes: _Optional[_Iterable[str]] = ..., kind: _Optional[str] = ..., torn_detail: _Optional[str] = ..., components: _Optional[_Iterable[_Union[VerifyComponent, _Mapping]]] = ...) -> None: ...

class VerifyComponent(_message.Message):
    __slots__ = ("name", "report")
    NAME_FIELD_NUMBER: _ClassVar[int]
    REPORT_FIELD_NUMBER: _ClassVar[int]
    name: str
    report: VerifyReport
    def __init__(self, name: _Optional[str] = ..., report: _Optional[_Union[VerifyReport, _Mapping]] = ...) -> None: ...

class ToolStoreRequest(_message.Message):
    __slots__ = ("session", "tool", "from_seq")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    FROM_SEQ_FIELD_NUMBER: _ClassVar[int]
    session: str
    tool: str
    from_seq: int
    def __init__(self, session: _Optional[str] = ..., tool: _Optional[str] = ..., from_seq: _Optional[int] = ...) -> None: ...

class ToolStoreEntry(_message.Message):
    __slots__ = ("seq", "author", "time_ns", "data")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    AUTHOR_FIELD_NUMBER: _ClassVar[int]
    TIME_NS_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    seq: int
    author: str
    time_ns: int
    data: _struct_pb2.Struct
    def __init__(self, seq: _Optional[int] = ..., author: _Optional[str] = ..., time_ns: _Optional[int] = ..., data: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class ToolStoreResponse(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[ToolStoreEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[ToolStoreEntry, _Mapping]]] = ...) -> None: ...

class ExportRequest(_message.Message):
    __slots__ = ("session", "uncompressed")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    UNCOMPRESSED_FIELD_NUMBER: _ClassVar[int]
    session: str
    uncompressed: bool
    def __init__(self, session: _Optional[str] = ..., uncompressed: _Optional[bool] = ...) -> None: ...

class ExportChunk(_message.Message):
    __slots__ = ("data", "summary")
    DATA_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    summary: _struct_pb2.Struct
    def __init__(self, data: _Optional[bytes] = ..., summary: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class ImportChunk(_message.Message):
    __slots__ = ("data", "project", "name")
    DATA_FIELD_NUMBER: _ClassVar[int]
    PROJECT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    project: str
    name: str
    def __init__(self, data: _Optional[bytes] = ..., project: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...
