import datetime

from agentsessions.wire.gen import common_pb2 as _common_pb2
from agentsessions.wire.gen import harness_pb2 as _harness_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class HarnessState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    HARNESS_STATE_UNSPECIFIED: _ClassVar[HarnessState]
    HARNESS_STATE_ACTIVE: _ClassVar[HarnessState]
    HARNESS_STATE_RETIRED: _ClassVar[HarnessState]

class HarnessSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    HARNESS_SOURCE_UNSPECIFIED: _ClassVar[HarnessSource]
    HARNESS_SOURCE_STATIC: _ClassVar[HarnessSource]
    HARNESS_SOURCE_REGISTERED: _ClassVar[HarnessSource]

class RegisterOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REGISTER_OUTCOME_UNSPECIFIED: _ClassVar[RegisterOutcome]
    REGISTER_OUTCOME_CREATED: _ClassVar[RegisterOutcome]
    REGISTER_OUTCOME_UNCHANGED: _ClassVar[RegisterOutcome]
    REGISTER_OUTCOME_REACTIVATED: _ClassVar[RegisterOutcome]
HARNESS_STATE_UNSPECIFIED: HarnessState
HARNESS_STATE_ACTIVE: HarnessState
HARNESS_STATE_RETIRED: HarnessState
HARNESS_SOURCE_UNSPECIFIED: HarnessSource
HARNESS_SOURCE_STATIC: HarnessSource
HARNESS_SOURCE_REGISTERED: HarnessSource
REGISTER_OUTCOME_UNSPECIFIED: RegisterOutcome
REGISTER_OUTCOME_CREATED: RegisterOutcome
REGISTER_OUTCOME_UNCHANGED: RegisterOutcome
REGISTER_OUTCOME_REACTIVATED: RegisterOutcome

class RemotePlacement(_message.Message):
    __slots__ = ("address",)
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    address: str
    def __init__(self, address: _Optional[str] = ...) -> None: ...

class SubstratePlacement(_message.Message):
    __slots__ = ("atespace", "template")
    ATESPACE_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    atespace: str
    template: str
    def __init__(self, atespace: _Optional[str] = ..., template: _Optional[str] = ...) -> None: ...

class HarnessSpec(_message.Message):
    __slots__ = ("remote", "substrate", "capabilities", "descriptor_id")
    REMOTE_FIELD_NUMBER: _ClassVar[int]
    SUBSTRATE_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTOR_ID_FIELD_NUMBER: _ClassVar[int]
    remote: RemotePlacement
    substrate: SubstratePlacement
    capabilities: _harness_pb2.Capabilities
    descriptor_id: str
    def __init__(self, remote: _Optional[_Union[RemotePlacement, _Mapping]] = ..., substrate: _Optional[_Union[SubstratePlacement, _Mapping]] = ..., capabilities: _Optional[_Union[_harness_pb2.Capabilities, _Mapping]] = ..., descriptor_id: _Optional[str] = ...) -> None: ...

class HarnessRegistration(_message.Message):
    __slots__ = ("metadata", "spec", "spec_digest", "state", "source", "retire_time", "retire_reason", "observed", "observe_error", "unservable_reason")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    SPEC_DIGEST_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    RETIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    RETIRE_REASON_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_FIELD_NUMBER: _ClassVar[int]
    OBSERVE_ERROR_FIELD_NUMBER: _ClassVar[int]
    UNSERVABLE_REASON_FIELD_NUMBER: _ClassVar[int]
    metadata: _common_pb2.ResourceMetadata
    spec: HarnessSpec
    spec_digest: str
    state: HarnessState
    source: HarnessSource
    retire_time: _timestamp_pb2.Timestamp
    retire_reason: str
    observed: _harness_pb2.HarnessDescriptor
    observe_error: str
    unservable_reason: str
    def __init__(self, metadata: _Optional[_Union[_common_pb2.ResourceMetadata, _Mapping]] = ..., spec: _Optional[_Union[HarnessSpec, _Mapping]] = ..., spec_digest: _Optional[str] = ..., state: _Optional[_Union[HarnessState, str]] = ..., source: _Optional[_Union[HarnessSource, str]] = ..., retire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., retire_reason: _Optional[str] = ..., observed: _Optional[_Union[_harness_pb2.HarnessDescriptor, _Mapping]] = ..., observe_error: _Optional[str] = ..., unservable_reason: _Optional[str] = ...) -> None: ...

class RegisterHarnessRequest(_message.Message):
    __slots__ = ("name", "spec", "project")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    PROJECT_FIELD_NUMBER: _ClassVar[int]
    name: str
    spec: HarnessSpec
    project: str
    def __init__(self, name: _Optional[str] = ..., spec: _Optional[_Union[HarnessSpec, _Mapping]] = ..., project: _Optional[str] = ...) -> None: ...

class RegisterHarnessResponse(_message.Message):
    __slots__ = ("harness", "outcome")
    HARNESS_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    harness: HarnessRegistration
    outcome: RegisterOutcome
    def __init__(self, harness: _Optional[_Union[HarnessRegistration, _Mapping]] = ..., outcome: _Optional[_Union[RegisterOutcome, str]] = ...) -> None: ...

class GetHarnessRequest(_message.Message):
    __slots__ = ("name", "observe", "project")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OBSERVE_FIELD_NUMBER: _ClassVar[int]
    PROJECT_FIELD_NUMBER: _ClassVar[int]
    name: str
    observe: bool
    project: str
    def __init__(self, name: _Optional[str] = ..., observe: _Optional[bool] = ..., project: _Optional[str] = ...) -> None: ...

class ListHarnessesRequest(_message.Message):
    __slots__ = ("page_size", "page_token", "include_retired", "project")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_RETIRED_FIELD_NUMBER: _ClassVar[int]
    PROJECT_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    include_retired: bool
    project: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., include_retired: _Optional[bool] = ..., project: _Optional[str] = ...) -> None: ...

class ListHarnessesResponse(_message.Message):
    __slots__ = ("harnesses", "next_page_token")
    HARNESSES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    harnesses: _containers.RepeatedCompositeFieldContainer[HarnessRegistration]
    next_page_token: str
    def __init__(self, harnesses: _Optional[_Iterable[_Union[HarnessRegistration, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class RetireHarnessRequest(_message.Message):
    __slots__ = ("name", "reason", "project")
    NAME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    PROJECT_FIELD_NUMBER: _ClassVar[int]
    name: str
    reason: str
    project: str
    def __init__(self, name: _Optional[str] = ..., reason: _Optional[str] = ..., project: _Optional[str] = ...) -> None: ...
