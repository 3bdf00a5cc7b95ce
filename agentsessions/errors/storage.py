"""What the journal and its stores refuse: a lost compare-and-swap, a fence, a held lock,
a deleted session, bytes that cannot be trusted, a content key that cannot be had.

Raised by the journal layer (and passed up unchanged); a store never writes anything when it
raises one of these, which is what the exit codes promise the CLI's caller.
"""

from __future__ import annotations

from typing import Any

from agentsessions.errors.root import AgentSessionsError, InvalidArgumentError, UsageError


class SessionExistsError(InvalidArgumentError):
    """A store was asked to create a session under a uid that one already has: nothing
    was written. Every store raises it for the same uid created twice (two processes
    completing one claimed key race to it: the loser's create is this, and it is harmless)."""


class StoreCapabilityError(InvalidArgumentError):
    """The store lacks a capability (``journal/stores/capabilities.py``) a command needs."""


class CommitTooLargeError(UsageError):
    """A commit exceeds the store's size limit; it was refused whole, nothing written."""

    exit_code = 7
    kind = "commit_too_large"


class ConflictError(AgentSessionsError):
    """Compare-and-swap lost: the journal end is not what the writer expected.

    ``head_seq`` and ``head_hash`` carry the current head so the writer can merge.
    """

    exit_code = 4
    grpc_code = "ABORTED"
    kind = "conflict"

    def __init__(self, message: str, *, head_seq: int, head_hash: str, **fields: Any) -> None:
        super().__init__(message, head_seq=head_seq, head_hash=head_hash, **fields)
        self.head_seq = head_seq
        self.head_hash = head_hash


class StateConflictError(ConflictError):
    """A commit with working state lost its compare-and-swap: the journal end or the state
    version is not what the writer last saw; nothing was written.

    ``snapshot`` is the store's current :class:`~agentsessions.journal.stores.store.Snapshot`
    (head and working state) for the writer to merge with; ``state_version`` its version.
    A ConflictError, so exit codes and gRPC mappings (ABORTED) stay those of a lost CAS.
    """

    def __init__(
        self, message: str, *, head_seq: int, head_hash: str, snapshot: Any, **fields: Any
    ) -> None:
        version = getattr(getattr(snapshot, "state", None), "version", 0)
        super().__init__(
            message, head_seq=head_seq, head_hash=head_hash, state_version=version, **fields
        )
        self.snapshot = snapshot
        self.state_version = version


class FencedError(AgentSessionsError):
    """The writer's fence is older than the session's current fence (a zombie writer)."""

    exit_code = 5
    grpc_code = "ABORTED"
    kind = "fenced"


class LockHeldError(AgentSessionsError):
    """Another writer holds the session's lock; ``holder`` says who."""

    exit_code = 6
    grpc_code = "ABORTED"
    kind = "busy"


class SessionDeletedError(AgentSessionsError):
    """The session was deleted; it can still be read and verified but never written."""

    exit_code = 11
    grpc_code = "FAILED_PRECONDITION"
    kind = "deleted"


class JournalError(AgentSessionsError):
    """Stored journal bytes that cannot be trusted."""

    exit_code = 8
    grpc_code = "DATA_LOSS"
    kind = "journal"


class JournalCorruptError(JournalError):
    """Acknowledged data is damaged or missing; nothing was changed on disk."""

    kind = "corrupt"


class AcknowledgedDataMissingError(JournalCorruptError):
    """The journal ends before, or differs at, a seq that durable evidence (the TAIL hint, a
    fork child's fork point) says was acknowledged; nothing was changed on disk.

    ``last_seq`` is where the journal ends, ``acked_seq`` the acknowledged seq, ``evidence``
    names the claim.
    """


class StreamReplacedError(AcknowledgedDataMissingError):
    """The JetStream stream no longer holds what was read from it: it was deleted and
    recreated (its genesis identity changed, or a session names another one), messages were
    removed from it (its first sequence is past 1, or some are deleted), or a journal subject
    ends before the head a writer, a follower or a tail checkpoint saw. Exit 8 like other
    missing acknowledged data; nothing is written (numbers would be reused).

    ``stream`` names the stream; ``expected`` and ``found`` its identities when they differ.
    """


class MetadataCorruptError(JournalCorruptError):
    """A session's stored metadata file (``session.json``, a fork's ``BASE``) is damaged.

    Exit 8 like other damaged store data, not 10: exit 10 means "the file you gave me is not
    a journal" (import/verify input); this is the store's own data. ``session`` and ``path``
    name the session and the file.
    """

    kind = "corrupt_metadata"


class ChainBrokenError(JournalError):
    """A record's content hash or its link to the previous record does not verify."""

    exit_code = 9
    kind = "chain_broken"


class SessionKeyError(AgentSessionsError):
    """An encrypted session's (or tool store's) data key cannot be had; nothing was read
    as plaintext and nothing was changed. ``session`` names it; ``verify`` without a key
    still checks the journal's structure."""

    exit_code = 26
    grpc_code = "FAILED_PRECONDITION"
    kind = "session_key"


class MasterKeyError(SessionKeyError):
    """No master key was given for an encrypted session, or the one given is malformed
    (wrong size, not base64, a key file others may read) or does not unwrap the data key."""

    kind = "master_key"


class KeyShreddedError(SessionKeyError):
    """The session's wrapped data key was destroyed (``shred``): its content is unreadable
    for good, with or without the master key."""

    kind = "key_shredded"
