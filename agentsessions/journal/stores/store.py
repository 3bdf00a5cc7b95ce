"""The store contract: what any journal store must do, whatever holds the bytes.

The five duties (``spec/README.md`` decision 4), as the methods below keep them:

1. conditional append: :meth:`Writer.append` lands a commit only if the journal end is
   ``expected_last_seq`` and the writer's fence is current; otherwise nothing is written and
   :class:`~agentsessions.errors.ConflictError` carries the current head;
2. idempotent commits: a commit may carry ``commit_id``; a retry with the same id returns the
   first :class:`CommitResult` (``duplicate=True``) and appends nothing; the latest
   :data:`COMMIT_IDS_REMEMBERED` ids per session are remembered across restarts. The window
   is a count, never a time: an id stays known however long ago it landed, until that many
   newer commits *carrying an id* were made in its session (commits without one do not
   count). Every store keeps it the same way: the ids travel with the records (a file
   segment's COMMIT frame, a JetStream message's head) and in the tail a writer persists
   (a sealed segment's carry, the TAIL hint, the JetStream checkpoint), so a writer opened
   after a crash or on another host knows them all;
3. numbers never reused: sequence numbers grow by one per event from 1 and are never reused
   (there is no operation that removes acknowledged entries);
4. followers: :meth:`Store.follow` yields records from a cursor and then each new record as
   it commits;
5. size limit: a commit whose payload exceeds ``max_commit_bytes`` is refused whole with
   :class:`~agentsessions.errors.CommitTooLargeError`.

Working state (decision 4 (a), issue 9 item 6): a commit may also carry the writer's
:class:`StateUpdate`; its entries and the new :class:`WorkingState` land together or not at
all, conditionally on the journal end *and* the state version the writer last saw
(``expected_state_version``). On a conflict nothing is written and
:class:`~agentsessions.errors.StateConflictError` carries the current :class:`Snapshot`. A
state-only commit (no events) is allowed, commit ids dedup it too, and the state's bytes
count toward ``max_commit_bytes``. Each state commit sets ``version + 1``; a journal that
never had one reads as version 0.

Every implementation (file, in-memory, JetStream) passes ONE contract suite in
``tests/contract``; the capabilities a backend declares beyond this core
(:mod:`.capabilities`) have a suite each.
"""

from __future__ import annotations

import builtins
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from agentsessions.errors import InvalidArgumentError, MetadataCorruptError, SessionDeletedError
from agentsessions.v1.ids import DEFAULT_PROJECT as DEFAULT_PROJECT  # (re-exported)
from agentsessions.valueclass import field, value

if TYPE_CHECKING:
    from agentsessions.journal.crypto.keys import MasterKey
    from agentsessions.journal.format.records import Record
    from agentsessions.journal.stores.projection import Projection
DEFAULT_MAX_COMMIT_BYTES = 4 * 1024 * 1024
COMMIT_IDS_REMEMBERED = 1024
"""Commit ids remembered per session (the newest; across restarts; no time limit)."""
MAX_COMMIT_ID_LEN = 128


def new_uid() -> str:
    """A fresh session uid: ``sess-`` and 24 hex digits (12 random bytes), as the reference."""
    return "sess-" + os.urandom(12).hex()  # secrets.token_hex's bytes, without its imports


@value(frozen=True)
class SessionMeta:
    """The metadata row written when a session is created, before any event."""

    uid: str
    project: str = DEFAULT_PROJECT
    name: str = ""
    harness: str = ""
    model: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    origin: Mapping[str, Any] | None = None
    identity: Mapping[str, str] | None = None
    parent_uid: str = ""
    fork_seq: int = 0
    create_time_ns: int = 0
    encrypted: bool = False  # its events are sealed under its data key (FORMAT.md 15)

    def to_json(self) -> dict[str, Any]:
        """The metadata as a JSON object (the ``session.json`` file and export header)."""
        # ``encrypted`` only when set: a plaintext session.json keeps its exact bytes
        extra: dict[str, Any] = {"encrypted": True} if self.encrypted else {}
        return {
            "uid": self.uid,
            "project": self.project,
            "name": self.name,
            "harness": self.harness,
            "model": self.model,
            "labels": dict(self.labels),
            "annotations": dict(self.annotations),
            "origin": dict(self.origin) if self.origin is not None else None,
            "identity": dict(self.identity) if self.identity is not None else None,
            "parent_uid": self.parent_uid,
            "fork_seq": self.fork_seq,
            "create_time_ns": self.create_time_ns,
            **extra,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> SessionMeta:
        """Inverse of :meth:`to_json`; unknown keys are ignored so the file can grow."""
        return cls(
            uid=str(obj["uid"]),
            project=str(obj.get("project") or DEFAULT_PROJECT),
            name=str(obj.get("name", "")),
            harness=str(obj.get("harness", "")),
            model=str(obj.get("model", "")),
            labels={str(k): str(v) for k, v in (obj.get("labels") or {}).items()},
            annotations={str(k): str(v) for k, v in (obj.get("annotations") or {}).items()},
            origin=obj.get("origin"),
            identity=obj.get("identity"),
            parent_uid=str(obj.get("parent_uid", "")),
            fork_seq=int(obj.get("fork_seq", 0)),
            create_time_ns=int(obj.get("create_time_ns", 0)),
            encrypted=obj.get("encrypted") is True,
        )


@value(frozen=True)
class SessionInfo:
    """Metadata plus the projections kept at append time (never by re-reading the log)."""

    meta: SessionMeta
    last_seq: int = 0
    last_hash: str = ""
    compute_state: str = "COMPUTE_NONE"
    exec_state: str = "EXEC_PENDING"
    update_time_ns: int = 0
    fence: int = 0
    deleted: bool = False
    exec_seq: int = 0  # where the latest execution began (0: none yet)
    exec_id: str = ""  # its execution id ("" for a legacy ID-less run)
    snapshot: Mapping[str, Any] | None = None  # the latest SUSPEND's snapshot fields
    damaged: str = ""  # why a listed session cannot be read ("" when it can); list only
    state_version: int = 0  # the working state's version (0: none), its range and size
    state_covers: tuple[int, int] = (0, 0)
    state_size: int = 0

    @property
    def uid(self) -> str:
        return self.meta.uid

    def to_json(self) -> dict[str, Any]:
        """The session as the CLI's ``--json`` object: metadata plus projections."""
        out = self.meta.to_json()
        out.update(
            last_seq=self.last_seq,
            last_hash=self.last_hash,
            compute_state=self.compute_state,
            exec_state=self.exec_state,
            update_time_ns=self.update_time_ns,
            fence=self.fence,
            deleted=self.deleted,
            working_state=state_json(self.state_version, self.state_covers, self.state_size),
        )
        if self.damaged:  # only on a damaged listing row: the key's presence is the signal
            out["damaged"] = self.damaged
        return out


def state_json(version: int, covers: tuple[int, int], size: int) -> dict[str, int]:
    """The ``working_state`` object of ``get --json`` (no bytes: the version, the journal
    range it covers and its size)."""
    return {"version": version, "covers_from": covers[0], "covers_to": covers[1], "size": size}


@value(frozen=True)
class Page:
    """One page of a listing; ``next_cursor`` is empty on the last page.

    ``unindexed``: the sessions the store found but could not list (their metadata is
    damaged, so their project is unknown), as a value of this listing: the ones JetStream's
    listing met, the ones the file store's last index rebuild met."""

    sessions: list[SessionInfo]
    next_cursor: str = ""
    unindexed: tuple[MetadataCorruptError, ...] = ()


@value(frozen=True)
class CommitResult:
    """What a commit produced; a retried commit id returns the first result with ``duplicate``.

    A state-only commit appends no record: ``first_seq`` is then ``last_seq + 1``.
    """

    first_seq: int
    last_seq: int
    last_hash: str
    fence: int
    duplicate: bool = False
    records: tuple[Record, ...] = ()  # what this commit appended (empty for a duplicate)
    state_version: int = 0  # the working state's version after this commit


@value(frozen=True)
class WorkingState:
    """A writer's working state as the store keeps it (version 0 = none yet)."""

    version: int = 0  # each state commit sets version + 1
    data: bytes = b""  # opaque to the host
    covers_from: int = 0  # the journal range it covers, inclusive (0, 0 = none)
    covers_to: int = 0
    author: str = ""  # stamped by the host, never taken from the harness
    time_ns: int = 0  # stamped by the host

    def to_json(self) -> dict[str, Any]:
        """What ``get --json`` shows of it: everything but the bytes, and their size."""
        return {
            "version": self.version,
            "covers_from": self.covers_from,
            "covers_to": self.covers_to,
            "size": len(self.data),
            "author": self.author,
            "time_ns": self.time_ns,
        }


@value(frozen=True)
class StateUpdate:
    """The working state a commit replaces the current one with."""

    data: bytes
    covers_from: int = 1
    covers_to: int = 0  # 0 = the commit's last seq (the head after it)
    author: str = ""


@value(frozen=True)
class Snapshot:
    """The head and working state a writer merges with after a conflict."""

    last_seq: int
    last_hash: str
    state: WorkingState


class Writer(Protocol):
    """The single writer of one session: holds its lock and a freshly minted fence."""

    @property
    def uid(self) -> str: ...

    @property
    def fence(self) -> int: ...

    @property
    def head(self) -> tuple[int, str]:
        """``(last_seq, last_hash)``; ``(0, "")`` for an empty journal."""
        ...

    def append(
        self,
        events: Sequence[Mapping[str, Any]],
        *,
        expected_last_seq: int | None = None,
        fence: int | None = None,
        commit_id: str | None = None,
        sync: bool = True,
        state: StateUpdate | None = None,
        expected_state_version: int | None = None,
    ) -> CommitResult:
        """Append ``events`` (proto3-JSON ``Event`` dicts) as one durable, atomic commit.

        ``state`` replaces the working state in the same commit (``events`` may then be
        empty); ``expected_state_version`` (None: not checked) is the state version the
        writer last saw. With either, a lost CAS raises StateConflictError (its
        ``snapshot`` is the current head and state) and nothing is written.

        ``expected_last_seq`` None appends at the current head; ``fence`` None uses the
        writer's own fence. Acknowledged (returned) only after the bytes are synced.

        ``sync=False`` lands the commit (the head moves past it, readers may see it) without
        making it durable: it is *not* acknowledged until a later sync covers it (the next
        append with ``sync=True``, or :meth:`sync`). Until then a power loss may take it,
        and only it and the commits after it: never an earlier, acknowledged one. If that
        covering sync fails the writer is broken and must be reopened. A store whose every
        commit is durable anyway treats it as ``sync=True``.
        """
        ...

    def sync(self) -> None:
        """Make every commit landed with ``sync=False`` durable (a no-op when none is)."""
        ...

    def landed(self, commit_id: str) -> CommitResult | None:
        """The first result of ``commit_id`` if it landed in this journal and is still
        remembered (:data:`COMMIT_IDS_REMEMBERED`), marked duplicate; None otherwise.
        Nothing is written: a caller asks before it builds a commit it may not need."""
        ...

    @property
    def state(self) -> WorkingState:
        """The working state as of this writer's last commit (what it holds: no read)."""
        ...

    @property
    def projection(self) -> Projection:
        """The projections folded from every commit through the head (what it holds: no
        read). Read-only to callers: the writer folds each commit into it as it lands."""
        ...

    def append_records(self, records: Sequence[Record]) -> CommitResult:
        """Append already-hashed records verbatim (import); each must link and verify."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Writer: ...

    def __exit__(self, *exc: object) -> None: ...


class Store(Protocol):
    """A place that keeps sessions: metadata, journals, and the projections over them.

    What a store can do beyond these methods is a capability it declares
    (:mod:`.capabilities`), never a method the engine guesses at."""

    max_commit_bytes: int
    master: MasterKey | None  # sessions created are sealed under it (None: plaintext)

    def create(self, meta: SessionMeta) -> SessionInfo:
        """Write the metadata row of a new session (uid fresh, project valid), no events."""
        ...

    def get(self, uid: str) -> SessionInfo:
        """The session's metadata and projections; deleted sessions are still returned."""
        ...

    def list(self, project: str, page_size: int = 0, cursor: str = "") -> Page:
        """Newest first (create time desc, uid asc), keyset paged, deleted sessions hidden."""
        ...

    def uids(self) -> tuple[str, ...]:
        """Every session uid in the store, deleted ones included, sorted (for ``verify --all``)."""
        ...

    def delete(self, uid: str) -> SessionInfo:
        """Permanently soft-delete: hidden from list, every later write refused."""
        ...

    def fork(
        self, parent: str, at_seq: int, children: Sequence[SessionMeta]
    ) -> builtins.list[SessionInfo]:
        """Create ``children`` whose chains are ``parent``'s up to ``at_seq`` plus a
        LIFECYCLE_FORK marker ``parent@N``; all or nothing.

        The prefix is referred to, not copied: a fork costs the same for a 10-event and a
        1,000,000-event parent, and each child's chain still verifies from ``prev_hash ""``.
        """
        ...

    def writer(self, uid: str) -> Writer:
        """Become the session's single writer (fails fast with LockHeldError if busy)."""
        ...

    def read(self, uid: str, from_seq: int = 1, to_seq: int = 0) -> Iterator[Record]:
        """Committed records with ``from_seq <= seq <= to_seq`` (0 = head), in order."""
        ...

    def state(self, uid: str, before_seq: int = 0) -> WorkingState:
        """The session's working state, read without becoming its writer.

        ``before_seq`` > 0: the latest state committed at a head below ``before_seq`` (one
        committed together with entries counts at the head before them), e.g. the state
        an execution started with, so a replay hands a harness what its live run had.
        """
        ...

    def states(self, uid: str) -> Iterator[tuple[int, WorkingState]]:
        """Every working-state version in commit order, each with the head it was committed
        at (the ``before_seq`` rule of :meth:`state`); one pass, for replay."""
        ...

    def follow(
        self, uid: str, from_seq: int = 1, *, idle_timeout: float | None = None
    ) -> Iterator[Record]:
        """Records from ``from_seq`` on, then each new one as it commits.

        Stops after ``idle_timeout`` seconds without a new record (None = never).
        """
        ...

    def component(self, uid: str, name: str) -> ComponentStore:
        """The store of component ``name`` (a tool) in session ``uid``: bound to the pair,
        so its holder reaches that one journal and nothing else (see :class:`ComponentStore`).

        NotFoundError for an unknown session; InvalidArgumentError for a bad name."""
        ...

    def components(self, uid: str) -> tuple[str, ...]:
        """The names of the component stores session ``uid`` has (created on first write),
        sorted."""
        ...

    def close(self) -> None: ...


class ComponentStore(Protocol):
    """A component's (a tool's) own journal inside one session, beside the conversation.

    The same contract as a session's journal (fences, CAS, commit ids, numbers never reused,
    ``max_commit_bytes``, hash chain, verify), kept apart from it: a holder cannot reach the
    conversation, another component's store or another session. Created on the first
    :meth:`writer`; reading one that was never written yields nothing. Deleted with the
    session (reads go on, writes are refused); a fork's children start with none.
    """

    @property
    def uid(self) -> str:
        """The session this store belongs to."""
        ...

    @property
    def name(self) -> str:
        """The component's name (its tool's name in the workload)."""
        ...

    def writer(self) -> Writer:
        """Become the component store's single writer (LockHeldError if busy)."""
        ...

    def read(self, from_seq: int = 1, to_seq: int = 0) -> Iterator[Record]:
        """Committed records with ``from_seq <= seq <= to_seq`` (0 = head), in order."""
        ...

    def follow(self, from_seq: int = 1, *, idle_timeout: float | None = None) -> Iterator[Record]:
        """Records from ``from_seq`` on, then each new one as it commits (see
        :meth:`Store.follow`)."""
        ...

    def state(self) -> WorkingState:
        """The component's working state, read-only (version 0: none yet, or never written)."""
        ...


_COMPONENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")


def check_component(name: str) -> str:
    """Return ``name`` if it can name a component store (a workload's tool name: letters,
    digits, ``_ . -``, 1-64, not starting with a digit, dot or dash), else
    InvalidArgumentError. It becomes a directory name, so nothing else is allowed."""
    if not isinstance(name, str) or not _COMPONENT.fullmatch(name):
        raise InvalidArgumentError(
            f"invalid component name {name!r}: letters, digits, '_', '.', '-' (1-64), "
            "starting with a letter or '_'"
        )
    return name


def deleted_error(uid: str, tool_store: str = "") -> SessionDeletedError:
    """The one refusal of a write to deleted session ``uid`` (or to its tool store
    ``tool_store``), whichever store refuses it."""
    what = f"its tool store {tool_store!r}" if tool_store else "it"
    return SessionDeletedError(
        f"session {uid} was deleted; {what} can still be read and verified, never written",
        session=uid,
    )


def check_commit_id(commit_id: str | None) -> str | None:
    """Commit ids are opaque printable strings of at most 128 characters."""
    if commit_id is None:
        return None
    if not commit_id or len(commit_id) > MAX_COMMIT_ID_LEN or not commit_id.isprintable():
        raise InvalidArgumentError(
            f"invalid commit id {commit_id!r}: 1-{MAX_COMMIT_ID_LEN} printable characters"
        )
    return commit_id
