from agentsessions.server.gen import common_pb2 as _common_pb2
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
    __slots__ = ("metadata", "harness", "model", "last_seq", "parent_uid", "fork_seq", "identity", "compute", "origin", "labels", "annotations", "exec_state", "compute_state", "pending_approval", "last_hash", "fence", "deleted", "unresolved_call", "memory", "damaged")
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
    def __init__(self, metadata: _Optional[_Union[_common_pb2.ResourceMetadata, _Mapping]] = ..., harness: _Optional[str] = ..., model: _Optional[str] = ..., last_seq: _Optional[int] = ..., parent_uid: _Optional[str] = ..., fork_seq: _Optional[int] = ..., identity: _Optional[_Union[_common_pb2.IdentityRef, _Mapping]] = ..., compute: _Optional[_Union[ComputeRef, _Mapping]] = ..., origin: _Optional[_Union[_common_pb2.Origin, _Mapping]] = ..., labels: _Optional[_Mapping[str, str]] = ..., annotations: _Optional[_Mapping[str, str]] = ..., exec_state: _Optional[_Union[ExecState, str]] = ..., compute_state: _Optional[_Union[ComputeState, str]] = ..., pending_approval: _Optional[_Union[_common_pb2.ApprovalRef, _Mapping]] = ..., last_hash: _Optional[str] = ..., fence: _Optional[int] = ..., deleted: _Optional[bool] = ..., unresolved_call: _Optional[_Union[UnresolvedCall, _Mapping]] = ..., memory: _Optional[_Union[SessionMemory, _Mapping]] = ..., damaged: _Optional[str] = ...) -> None: ...

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
    __slots__ = ("where", "text", "detail")
    WHERE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    where: str
    text: str
    detail: _struct_pb2.Struct
    def __init__(self, where: _Optional[str] = ..., text: _Optional[str] = ..., detail: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class CreateSessionRequest(_message.Message):
    __slots__ = ("session",)
    SESSION_FIELD_NUMBER: _ClassVar[int]
    session: Session
    def __init__(self, session: _Optional[_Union[Session, _Mapping]] = ...) -> None: ...

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
    __slots__ = ("sessions", "next_page_token")
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    sessions: _containers.RepeatedCompositeFieldContainer[Session]
    next_page_token: str
    def __init__(self, sessions: _Optional[_Iterable[_Union[Session, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class DeleteSessionRequest(_message.Message):
    __slots__ = ("uid",)
    UID_FIELD_NUMBER: _ClassVar[int]
    uid: str
    def __init__(self, uid: _Optional[str] = ...) -> None: ...

class ExecRequest(_message.Message):
    __slots__ = ("session", "inputs", "resume_from_seq", "harness", "config", "expected_last_seq", "deadline_unix")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    RESUME_FROM_SEQ_FIELD_NUMBER: _ClassVar[int]
    HARNESS_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_UNIX_FIELD_NUMBER: _ClassVar[int]
    session: str
    inputs: _containers.RepeatedCompositeFieldContainer[_common_pb2.Message]
    resume_from_seq: int
    harness: str
    config: bytes
    expected_last_seq: int
    deadline_unix: int
    def __init__(self, session: _Optional[str] = ..., inputs: _Optional[_Iterable[_Union[_common_pb2.Message, _Mapping]]] = ..., resume_from_seq: _Optional[int] = ..., harness: _Optional[str] = ..., config: _Optional[bytes] = ..., expected_last_seq: _Optional[int] = ..., deadline_unix: _Optional[int] = ...) -> None: ...

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
    __slots__ = ("session", "decision")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    session: Session
    decision: _common_pb2.LogRecord
    def __init__(self, session: _Optional[_Union[Session, _Mapping]] = ..., decision: _Optional[_Union[_common_pb2.LogRecord, _Mapping]] = ...) -> None: ...

class SuspendRequest(_message.Message):
    __slots__ = ("session",)
    SESSION_FIELD_NUMBER: _ClassVar[int]
    session: str
    def __init__(self, session: _Optional[str] = ...) -> None: ...

class ResumeRequest(_message.Message):
    __slots__ = ("session", "boot")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    BOOT_FIELD_NUMBER: _ClassVar[int]
    session: str
    boot: bool
    def __init__(self, session: _Optional[str] = ..., boot: _Optional[bool] = ...) -> None: ...

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
    __slots__ = ("session", "execution_id", "reason")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    session: str
    execution_id: str
    reason: str
    def __init__(self, session: _Optional[str] = ..., execution_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ExecUpdate(_message.Message):
    __slots__ = ("record", "delta", "session")
    RECORD_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    record: _common_pb2.LogRecord
    delta: Delta
    session: Session
    def __init__(self, record: _Optional[_Union[_common_pb2.LogRecord, _Mapping]] = ..., delta: _Optional[_Union[Delta, _Mapping]] = ..., session: _Optional[_Union[Session, _Mapping]] = ...) -> None: ...

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
