"""The exception tree of agentsessions: every error the library raises on purpose.

The package is a leaf: it imports nothing else of agentsessions, so every layer may use it,
and every class is importable from here (``from agentsessions.errors import ConflictError``)
whichever module defines it. Each class carries an ``exit_code`` (the CLI's stable exit
status) and a ``grpc_code`` (the status the server maps it to, as ``spec/reference-digest.md``
lists them); its docstring says when it is raised. The modules, one job each:
:mod:`.root` (the root and the generic refusals of a request), :mod:`.storage` (the journal
and its stores), :mod:`.turns` (harnesses, placement, replay, cancel), :mod:`.toolcalls`
(tool calls and approvals), :mod:`.access` (the server's tokens and bounds).

The whole tree: class, exit code, gRPC status, module (``tests/unit/test_error_tree.py``
holds this map to the classes):

    AgentSessionsError                         1  INTERNAL            root
    +-- UsageError                             2  INVALID_ARGUMENT    root
    |   +-- InvalidArgumentError               2  INVALID_ARGUMENT    root
    |   |   +-- MissingIdempotencyKeyError     2  INVALID_ARGUMENT    toolcalls
    |   |   +-- UnmediatedToolCallError        2  INVALID_ARGUMENT    toolcalls
    |   |   +-- UnknownToolError               2  INVALID_ARGUMENT    toolcalls
    |   |   +-- WorkloadError                  2  INVALID_ARGUMENT    toolcalls
    |   |   +-- ApprovalUnavailableError       2  INVALID_ARGUMENT    toolcalls
    |   |   +-- SessionExistsError             2  INVALID_ARGUMENT    storage
    |   |   +-- StoreCapabilityError           2  INVALID_ARGUMENT    storage
    |   +-- CommitTooLargeError                7  INVALID_ARGUMENT    storage
    +-- NotFoundError                          3  NOT_FOUND           root
    |   +-- TokenNotFoundError                 3  NOT_FOUND           access
    +-- ConflictError                          4  ABORTED             storage
    |   +-- StateConflictError                 4  ABORTED             storage
    +-- FencedError                            5  ABORTED             storage
    +-- LockHeldError                          6  ABORTED             storage
    +-- JournalError                           8  DATA_LOSS           storage
    |   +-- JournalCorruptError                8  DATA_LOSS           storage
    |   |   +-- AcknowledgedDataMissingError   8  DATA_LOSS           storage
    |   |   |   +-- StreamReplacedError        8  DATA_LOSS           storage
    |   |   +-- MetadataCorruptError           8  DATA_LOSS           storage
    |   |   +-- TokensCorruptError             8  DATA_LOSS           access
    |   +-- ChainBrokenError                   9  DATA_LOSS           storage
    +-- FormatError                           10  INVALID_ARGUMENT    root
    +-- SessionDeletedError                   11  FAILED_PRECONDITION storage
    +-- UnavailableError                      12  UNAVAILABLE         root
    |   +-- ToolServerError                   12  UNAVAILABLE         toolcalls
    |   +-- DeadlineExceededError             12  DEADLINE_EXCEEDED   root
    +-- StorageError                          13  UNAVAILABLE         root
    +-- HarnessError                          14  INTERNAL            turns
    |   +-- ContextOverflowError              14  INTERNAL            turns
    |   +-- HarnessProtocolError              14  INTERNAL            turns
    +-- PlacementError                        15  FAILED_PRECONDITION turns
    +-- ReplayError                           16  FAILED_PRECONDITION turns
    |   +-- ReplayDivergedError               16  FAILED_PRECONDITION turns
    |   +-- ReplayInvokedModelError           16  FAILED_PRECONDITION turns
    |   +-- HarnessMismatchError              16  FAILED_PRECONDITION turns
    +-- InvalidExecutionLogError              17  FAILED_PRECONDITION turns
    |   +-- NothingToCompactError             17  FAILED_PRECONDITION turns
    |   +-- InheritedToolIntentError          17  FAILED_PRECONDITION turns
    +-- TurnCanceledError                     18  CANCELLED           turns
    +-- ToolOutcomeUnknownError               19  FAILED_PRECONDITION toolcalls
    +-- ApprovalParkedError                   20  FAILED_PRECONDITION toolcalls
    +-- ApprovalError                         21  FAILED_PRECONDITION toolcalls
    |   +-- ApprovalNotPendingError           21  FAILED_PRECONDITION toolcalls
    |   +-- ApprovalDecidedError              21  FAILED_PRECONDITION toolcalls
    |   +-- ApprovalInheritedError            21  FAILED_PRECONDITION toolcalls
    |   +-- ApprovalBlockedError              21  FAILED_PRECONDITION toolcalls
    +-- ToolNotUnresolvedError                22  FAILED_PRECONDITION toolcalls
    +-- HarnessAckError                       23  INTERNAL            turns
    +-- HarnessRegistryError                  24  FAILED_PRECONDITION turns
    |   +-- HarnessExistsError                24  ALREADY_EXISTS      turns
    +-- SessionKeyError                       26  FAILED_PRECONDITION storage
    |   +-- MasterKeyError                    26  FAILED_PRECONDITION storage
    |   +-- KeyShreddedError                  26  FAILED_PRECONDITION storage
    +-- UnauthenticatedError                  30  UNAUTHENTICATED     access
    +-- PermissionDeniedError                 31  PERMISSION_DENIED   access
    +-- ResourceExhaustedError                32  RESOURCE_EXHAUSTED  access

Exit codes 30-32 (access control) are a block apart from 1-26, to grow without renumbering.
"""

from __future__ import annotations

from agentsessions.errors.access import (
    PermissionDeniedError,
    ResourceExhaustedError,
    TokenNotFoundError,
    TokensCorruptError,
    UnauthenticatedError,
)
from agentsessions.errors.root import (
    AgentSessionsError,
    DeadlineExceededError,
    FormatError,
    InvalidArgumentError,
    NotFoundError,
    StorageError,
    UnavailableError,
    UsageError,
)
from agentsessions.errors.storage import (
    AcknowledgedDataMissingError,
    ChainBrokenError,
    CommitTooLargeError,
    ConflictError,
    FencedError,
    JournalCorruptError,
    JournalError,
    KeyShreddedError,
    LockHeldError,
    MasterKeyError,
    MetadataCorruptError,
    SessionDeletedError,
    SessionExistsError,
    SessionKeyError,
    StateConflictError,
    StoreCapabilityError,
    StreamReplacedError,
)
from agentsessions.errors.toolcalls import (
    ApprovalBlockedError,
    ApprovalDecidedError,
    ApprovalError,
    ApprovalInheritedError,
    ApprovalNotPendingError,
    ApprovalParkedError,
    ApprovalUnavailableError,
    MissingIdempotencyKeyError,
    ToolNotUnresolvedError,
    ToolOutcomeUnknownError,
    ToolServerError,
    UnknownToolError,
    UnmediatedToolCallError,
    WorkloadError,
)
from agentsessions.errors.turns import (
    ContextOverflowError,
    HarnessAckError,
    HarnessError,
    HarnessExistsError,
    HarnessMismatchError,
    HarnessProtocolError,
    HarnessRegistryError,
    InheritedToolIntentError,
    InvalidExecutionLogError,
    NothingToCompactError,
    PlacementError,
    ReplayDivergedError,
    ReplayError,
    ReplayInvokedModelError,
    TurnCanceledError,
)

__all__ = [
    "AcknowledgedDataMissingError",
    "AgentSessionsError",
    "ApprovalBlockedError",
    "ApprovalDecidedError",
    "ApprovalError",
    "ApprovalInheritedError",
    "ApprovalNotPendingError",
    "ApprovalParkedError",
    "ApprovalUnavailableError",
    "ChainBrokenError",
    "CommitTooLargeError",
    "ConflictError",
    "ContextOverflowError",
    "DeadlineExceededError",
    "FencedError",
    "FormatError",
    "HarnessAckError",
    "HarnessError",
    "HarnessExistsError",
    "HarnessMismatchError",
    "HarnessProtocolError",
    "HarnessRegistryError",
    "InheritedToolIntentError",
    "InvalidArgumentError",
    "InvalidExecutionLogError",
    "JournalCorruptError",
    "JournalError",
    "KeyShreddedError",
    "LockHeldError",
    "MasterKeyError",
    "MetadataCorruptError",
    "MissingIdempotencyKeyError",
    "NotFoundError",
    "NothingToCompactError",
    "PermissionDeniedError",
    "PlacementError",
    "ReplayDivergedError",
    "ReplayError",
    "ReplayInvokedModelError",
    "ResourceExhaustedError",
    "SessionDeletedError",
    "SessionExistsError",
    "SessionKeyError",
    "StateConflictError",
    "StorageError",
    "StoreCapabilityError",
    "StreamReplacedError",
    "TokenNotFoundError",
    "TokensCorruptError",
    "ToolNotUnresolvedError",
    "ToolOutcomeUnknownError",
    "ToolServerError",
    "TurnCanceledError",
    "UnauthenticatedError",
    "UnavailableError",
    "UnknownToolError",
    "UnmediatedToolCallError",
    "UsageError",
    "WorkloadError",
]
