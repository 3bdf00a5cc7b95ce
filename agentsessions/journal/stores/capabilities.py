"""What a store can do beyond the core :class:`~.store.Store`: named capabilities, each a
Protocol a backend declares by subclassing it, and the one lookup the engine asks with.

The core ``Store`` and ``Writer`` (``store.py``) are what every backend implements. Anything
more is a capability here. A backend *declares* one by naming its Protocol among its bases
(``class FileStore(Store, Reindexable, ...)``), so mypy checks its methods against the
Protocol (a missing one makes it abstract: it cannot be built). The engine asks with
:meth:`Capability.of` (the store typed as the capability, or None) or
:meth:`Capability.need` (the store, or a one-line :class:`~agentsessions.errors.
StoreCapabilityError` naming the capability and the command that needs it). The answer is
the declaration, never a guess from the methods an object happens to have: nothing probes
a store with ``getattr``/``hasattr`` (``tests/unit/test_store_probes.py`` keeps it so).

Which backend declares what (``tests/contract/test_capability_contract.py`` runs each
capability's suite on each backend that declares it, and checks this table):

    capability       file  memory  jetstream   what for
    CancelRequests    x      x        x        ``cancel`` of a turn another writer runs
    ToolReceipts      x      x        x        a mediated tool call's outcome, kept once
    Workloads         x      x        x        ``--tools``: the session's workload
    ProjectIndex      x      x        x        a scoped server's uid check
    Reindexable       x                        ``reindex``; damaged sessions reported
    SealedExport      x               x        ``export --ciphertext``
    KeyManagement     x               x        ``shred``, ``keys rotate``
    SessionFiles      x                        offline ``verify`` of the bytes on disk
    StoredRecords                     x        ``verify`` of sealed records by clear heads
    RemoteWriters                     x        ``cancel`` of a turn on another host
    HarnessBook                       x        harness registrations all hosts share
    KeyClaims         x      x        x        ``ensure``/``find``: a session by a key

A writer's capability: :class:`WriterTakeover` (JetStream's writers, which another host
may take over between turns).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, Protocol, TypeVar, cast

from agentsessions.errors import MetadataCorruptError, StoreCapabilityError
from agentsessions.journal.stores.claims import KeyClaims
from agentsessions.journal.stores.store import Store

if TYPE_CHECKING:
    from agentsessions.journal.crypto.keys import MasterKey, RewrapCount
    from agentsessions.journal.format.durable import FileSystem
    from agentsessions.journal.format.records import Record

C = TypeVar("C")


class Capability(Generic[C]):
    """A named capability: its Protocol and the lookup of it on a store (or a writer).

    Built once per Protocol below, as ``KEY_MANAGEMENT: Capability[KeyManagement]``: a
    Protocol cannot be passed where ``type[C]`` is expected (mypy: type-abstract), so the
    token carries the type the lookup returns."""

    def __init__(self, protocol: type[Any], name: str) -> None:
        self.protocol = protocol
        self.name = name  # as a refusal names it

    def declared_by(self, cls: type[Any]) -> bool:
        """Whether class ``cls`` declares this capability (names its Protocol as a base)."""
        return self.protocol in cls.__mro__

    def of(self, holder: object) -> C | None:
        """``holder`` as the capability if its class declares it, else None."""
        return cast(C, holder) if self.protocol in type(holder).__mro__ else None

    def need(self, holder: object, command: str, *, hint: str = "", **fields: Any) -> C:
        """``holder`` as the capability, or StoreCapabilityError: ``command`` needs it."""
        found = self.of(holder)
        if found is None:
            raise StoreCapabilityError(
                f"{command}: the {type(holder).__name__} has no {self.name}",
                hint=hint,
                capability=self.protocol.__name__,
                **fields,
            )
        return found

    def __repr__(self) -> str:
        return f"Capability({self.protocol.__name__})"


class CancelRequests(Protocol):
    """Cancel requests beside a session's journal, for a turn its writer runs (the canceller
    cannot append while that writer holds the session): ``docs/FORMAT.md`` CANCEL."""

    def request_cancel(self, uid: str, execution_id: str, reason: str = "") -> None:
        """Durably ask the running turn of ``execution_id`` to stop at its next effect."""
        ...

    def cancel_requested(self, uid: str) -> str | None:
        """The execution id the pending request names, or None; asked before every effect
        of a live turn, so it must be cheap."""
        ...

    def cancel_reason(self, uid: str) -> str:
        """The reason the pending request gives ("" when none or not said)."""
        ...

    def clear_cancel(self, uid: str) -> None:
        """Remove the pending request, if any (idempotent, durable)."""
        ...


class ToolReceipts(Protocol):
    """The host's receipts of mediated tool calls, by idempotency key (TOOLRECEIPTS)."""

    def tool_receipt(self, uid: str, key: str) -> dict[str, Any] | None:
        """The receipt kept for ``(uid, key)``, or None."""
        ...

    def record_tool_receipt(self, uid: str, key: str, receipt: Mapping[str, Any]) -> None:
        """Keep ``receipt`` for ``(uid, key)`` durably before returning."""
        ...


class Workloads(Protocol):
    """A session's workload (its tools), now and by digest (WORKLOAD, WORKLOAD.<digest>)."""

    def workload(self, uid: str) -> str | None:
        """The session's workload TOML now, or None."""
        ...

    def set_workload(self, uid: str, text: str) -> None:
        """Record ``text`` as the session's workload (replaces any), kept by digest first."""
        ...

    def keep_workload(self, uid: str, text: str) -> str:
        """Keep ``text`` under its SHA-256 (written once); returns the digest."""
        ...

    def workload_at(self, uid: str, digest: str) -> str | None:
        """The workload kept under ``digest``, or None."""
        ...


class ProjectIndex(Protocol):
    """A session's project from the store's index, without reading the session: an unknown
    uid and another project's cost the same one lookup (``server/scoped.py``), so a caller
    cannot time its way to which uids exist."""

    def project_of(self, uid: str) -> str | None:
        """``uid``'s project as the index holds it; None when the index has no entry (or one
        that does not decode: a damaged session is nobody's to act on by its index)."""
        ...


class Reindexed(NamedTuple):
    """What a rebuild of the listing index did: the rows it holds, and the sessions it
    found but could not index (their metadata is damaged: their project is unknown)."""

    indexed: int
    unindexed: tuple[MetadataCorruptError, ...] = ()


class Reindexable(Protocol):
    """A store whose ``list`` reads an index it can rebuild from the sessions themselves
    (the file store's ``catalog.sqlite3``). A store whose ``list`` reads its sessions
    directly (JetStream, memory) keeps none: there is nothing to rebuild."""

    @property
    def index_path(self) -> str:
        """Where the index lives (``reindex`` names it)."""
        ...

    @property
    def unindexed(self) -> tuple[MetadataCorruptError, ...]:
        """The sessions the last rebuild (on open, or :meth:`reindex`) could not index."""
        ...

    def reindex(self) -> Reindexed:
        """Rebuild the listing index from the sessions."""
        ...


class SealedExport(Protocol):
    """``export --ciphertext``: an encrypted session as stored, no master key needed."""

    def sealed_export(self, uid: str) -> tuple[dict[str, object], Iterator[Record]]:
        """Encrypted session ``uid``'s ``{"scope", "key"}`` (its uid and its wrapped data
        key, the ``keys.wrap`` JSON) and its records as stored, each payload the sealed
        record (docs/FORMAT.md 15, "Export")."""
        ...


class KeyManagement(Protocol):
    """Wrapped data keys the store keeps per session: ``shred`` destroys one, ``keys
    rotate`` rewraps them all (docs/FORMAT.md 15)."""

    def check_shreddable(self, uid: str) -> None:
        """InvalidArgumentError unless ``uid`` is an encrypted session (it has a key)."""
        ...

    def shred(self, uid: str) -> bool:
        """Destroy ``uid``'s data keys (its own and its tool stores') for good: its content
        is unreadable with or without the master key, its structure still verifies. False
        when they were already gone; LockHeldError while a writer holds it."""
        ...

    def rewrap_keys(self, old: MasterKey, new: MasterKey) -> RewrapCount:
        """Rewrap every data key from ``old`` to ``new`` (no journal byte moves; a wrong
        ``old`` changes nothing; keys already under ``new`` and shredded ones counted)."""
        ...


class SessionFiles(Store, Protocol):
    """A store whose sessions are directories on a local disk (the file store), which
    offline tools (``verify``, compute listing, harness registrations) read directly."""

    # attributes, not properties: a property inherited from here could not be assigned
    home: Path  # the store's home directory
    sessions_dir: Path  # where the session directories are (``home/sessions``)
    fs: FileSystem  # the durability primitives the store writes through

    def session_dir(self, uid: str) -> Path:
        """The directory of session ``uid``, even when its metadata is damaged
        (NotFoundError when there is none)."""
        ...

    def component_dir(self, uid: str, name: str) -> Path:
        """The directory of session ``uid``'s tool store ``name``."""
        ...


class VerifyRecord(NamedTuple):
    """One stored record as ``verify`` walks it: ``sealed`` ones are checked by their clear
    head, and by ``check`` (a key holder's decrypt, returning the content hash) if given."""

    seq: int
    payload: bytes
    content_hash: str
    sealed: bool = False
    check: Callable[[int, bytes], str] | None = None


class StoredRecords(Protocol):
    """A store that may hold sealed records without frames of ours (JetStream): ``verify``
    walks them as stored, by their clear heads, decrypted when the master key is there."""

    def verify_items(
        self, uid: str, component: str = "", *, notes: list[str] | None = None
    ) -> Iterator[VerifyRecord]:
        """Every record of ``uid``'s journal (or tool store ``component``) from genesis;
        ``notes`` gets a line when a sealed journal's key was shredded."""
        ...


class RemoteWriters(Protocol):
    """A store other hosts write too (JetStream): ``cancel`` asks a turn running elsewhere
    to stop instead of taking its journal over (which would fence it)."""

    def writer_elsewhere(self, uid: str) -> bool:
        """True when another host holds ``uid``'s writer busy, or might (it did not answer)."""
        ...


class HarnessRegistrations(Protocol):
    """Harness registrations as a store keeps them: read all, or change them in one step
    (``sessions/harnessbook.py``'s ``HarnessRecords``)."""

    def read(self) -> dict[str, Any]:
        """Every registration, by name."""
        ...

    def update(self, change: Callable[[dict[str, Any]], bool]) -> None:
        """Apply ``change`` and keep the result if it says True, atomically, durably."""
        ...


class HarnessBook(Protocol):
    """A store that keeps the harness registrations every host using it shares."""

    def harness_records(self) -> HarnessRegistrations:
        """The registrations, in the store."""
        ...


class WriterTakeover(Protocol):
    """A writer another host may take over between turns (JetStream's): it says whether it
    was, and tells other hosts when a turn runs (busy refuses them, idle lets them)."""

    def superseded(self) -> bool:
        """True if another writer took the journal over since this one's last commit."""
        ...

    def set_busy(self, busy: bool) -> bool:
        """A turn starts (busy) or the writer is parked (idle); False when claiming it busy
        came after another host was let take it over (open a new writer)."""
        ...


CANCEL_REQUESTS: Capability[CancelRequests] = Capability(CancelRequests, "cancel requests")
TOOL_RECEIPTS: Capability[ToolReceipts] = Capability(ToolReceipts, "tool receipts")
WORKLOADS: Capability[Workloads] = Capability(Workloads, "place for a session's workload")
PROJECT_INDEX: Capability[ProjectIndex] = Capability(ProjectIndex, "project index")
REINDEXABLE: Capability[Reindexable] = Capability(Reindexable, "listing index to rebuild")
SEALED_EXPORT: Capability[SealedExport] = Capability(SealedExport, "sealed export")
KEY_MANAGEMENT: Capability[KeyManagement] = Capability(KeyManagement, "session keys to manage")
SESSION_FILES: Capability[SessionFiles] = Capability(SessionFiles, "session directories")
STORED_RECORDS: Capability[StoredRecords] = Capability(StoredRecords, "stored-record walk")
REMOTE_WRITERS: Capability[RemoteWriters] = Capability(RemoteWriters, "writers on other hosts")
HARNESS_BOOK: Capability[HarnessBook] = Capability(HarnessBook, "harness registrations")
WRITER_TAKEOVER: Capability[WriterTakeover] = Capability(WriterTakeover, "writer takeover")
KEY_CLAIMS: Capability[KeyClaims] = Capability(KeyClaims, "key claims")

STORE_CAPABILITIES: tuple[Capability[Any], ...] = (
    CANCEL_REQUESTS, TOOL_RECEIPTS, WORKLOADS, PROJECT_INDEX, REINDEXABLE, SEALED_EXPORT,
    KEY_MANAGEMENT, SESSION_FILES, STORED_RECORDS, REMOTE_WRITERS, HARNESS_BOOK, KEY_CLAIMS,
)  # fmt: skip
"""Every store capability (the contract suite checks each backend's declarations)."""
