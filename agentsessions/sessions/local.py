"""The local engine: :class:`~agentsessions.sessions.api.Sessions` over a store in this process.

The one home of session semantics: what a request needs before anything is written (a
known harness the runtime can place, a well-formed model spec, inputs that fit one commit,
a new session's metadata and defaults), waking suspended compute before a turn, waiting on
a busy session, and counting model calls for replay. Every front end calls these methods;
none of them reaches the controller or the journal itself.

:class:`LocalSessions` is split by job into collaborators it owns, each over one shared
:class:`~.core.EngineCore` (store, runtime, a controller per session, the locks): turns
(:class:`~.turning.TurnRunner`), suspend/cancel/fork (:class:`~.lifecycle.Lifecycle`),
approvals (:class:`~.approvals.Approvals`), resolutions (:class:`~.resolving.Resolver`),
creation and sessions by key (:class:`~.claims.SessionClaims`), master-key rotation
(:class:`~.keys.MasterKeys`) and tool stores (:func:`~.toolstores.tool_store`); what is
left here is reading, listing and deleting, and the offline tools (:mod:`.offline`). The
store-free checks live in :mod:`.checks`.

One home per policy: the engine is the home of a request's checks (:mod:`.checks`: fresh
start only on an existing session, the flags that only describe a new one), of a new
session's defaults (:mod:`.defaults`; ``DEFAULT_PROJECT`` in :mod:`agentsessions.v1.turn`)
and of ``expected_last_seq`` before anything is written; it asks the controller for
placement and to make a turn's session (the controller's homes: see its module
docstring) and repeats neither.

Invariants:
- nothing is written before a request is checked; a refused exec leaves no session behind;
- a turn never depends on its consumer: it runs on a worker thread that feeds an unbounded
  queue, so a consumer that stops iterating, raises or is slow cannot fail, block or
  truncate it. Closing the frame iterator (or leaving the engine) waits for the turn to
  end, so END is durable when ``close`` returns. Worker threads are daemons: a process
  that exits mid-turn (a second Ctrl-C) leaves an open turn that ``resume`` completes,
  exactly as a killed process does;
- thread safety: one lock per session serialises its writes within the engine (a busy
  session is waited for up to ``wait`` seconds, then LockHeldError, exit 6, as another
  process's writer would be); store calls that touch the shared catalog are serialised by
  an engine lock; different sessions' turns run in parallel. Each session has its own
  controller, so per-turn observers and model-call counts never mix between threads.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from agentsessions.errors import (
    AgentSessionsError,
    InvalidArgumentError,
)
from agentsessions.journal.stores.capabilities import (
    KEY_MANAGEMENT,
    REINDEXABLE,
    SESSION_FILES,
)
from agentsessions.journal.stores.store import SessionInfo, Store
from agentsessions.v1.ids import check_project, check_uid
from agentsessions.v1.turn import SessionOptions, TurnOptions, TurnRequest, check_durability

from . import checks, lifecycle
from .collaborators import Collaborators
from .core import EngineCore
from .defaults import DEFAULT_RUNTIME
from .home import require_home, resolve_home
from .lifecycle import Lifecycle
from .listing import list_page
from .values import (
    Approval,
    Frame,
    Input,
    Memory,
    ReplayReport,
    Resolution,
    Session,
    SessionFrame,
    SessionPage,
)
from .views import view
from .wiring import HARNESSES, build_controller

if TYPE_CHECKING:
    from agentsessions.controller.controller import Controller
    from agentsessions.controller.spi import Runtime
    from agentsessions.journal.crypto.keys import MasterKey
    from agentsessions.journal.format.records import Record
    from agentsessions.runtimes.compute import HostInfo
    from agentsessions.v1.results import ToolStoreEntry, VerifyReport

    from .keys import Rotation

DEFAULT_CANCEL_WAIT = lifecycle.DEFAULT_CANCEL_WAIT
_RELEASE_WAIT_SECONDS = 3600.0  # release waits for a running turn: turns end by themselves


class LocalSessions(Collaborators):
    """The local engine over ``store`` (see the module docstring); use :func:`open_local`."""

    _unindexed: tuple[AgentSessionsError, ...] = ()  # what the last list could not list

    def __init__(
        self,
        home: Path,
        store: Store,
        *,
        runtime: str = DEFAULT_RUNTIME,
        model: str | None = None,
        owns_store: bool = True,
        models: Mapping[str, str] | None = None,
        durability: str = "",
    ) -> None:
        self.core = EngineCore(home, store, runtime=runtime, model=model, models=models)
        self.core.durability = check_durability(durability)
        self.home, self.store, self.models = home, store, self.core.models
        self.runtime_name, self.default_model = self.core.runtime_name, self.core.default_model
        self._owns_store = owns_store
        self._lock = self.core.catalog_lock  # the store's catalog (create, list, delete ...)
        self.lifecycle = Lifecycle(self.core)
        self._start_collaborators()  # the others, made on first use (.collaborators)

    # -- plumbing ---------------------------------------------------------------------------
    def __enter__(self) -> LocalSessions:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Wait for running turns (their END is durable then), close the writers the engine
        held across turns (each leaves a fresh TAIL hint and frees its lock), then the store."""
        if self.core.close() and self._owns_store:
            self.store.close()

    def runtime(self) -> Runtime:
        """The engine's runtime, made on first use (an unknown name fails here, exit 2)."""
        return self.core.runtime()

    def controller(self, uid: str = "") -> Controller:
        """The controller of session ``uid`` ("" for checks that concern no session)."""
        return self.core.controller(uid)

    def release(self, uid: str) -> None:
        """Close the writer this engine holds for ``uid`` between turns (a long-lived engine
        keeps it, with the session's lock, until it idles out or the engine closes), so that
        another process can write the session now. Waits for a running turn of ``uid``."""
        lock = self.core.hold(check_uid(uid), _RELEASE_WAIT_SECONDS)
        try:
            self.core.release_writer(uid)
        finally:
            lock.release()

    def _info(self, uid: str) -> SessionInfo:
        return self.store.get(check_uid(uid))

    # -- metadata (creation and sessions by key: :class:`.SessionClaims`) -----------------
    def create(self, **options: Unpack[SessionOptions]) -> Session:
        """Create an empty session (:meth:`.SessionClaims.create`)."""
        return self.claims.create(**options)

    def ensure(
        self, key: str | None = None, **options: Unpack[SessionOptions]
    ) -> tuple[Session, bool]:
        """The live session ``key`` (or ``origin``) names, created if there is none
        (:meth:`.SessionClaims.ensure`)."""
        return self.claims.ensure(key, **options)

    def find(
        self, key: str | None = None, *, origin: Mapping[str, Any] | None = None,
        project: str = "default",
    ) -> Session | None:  # fmt: skip
        """The live session ``key`` (or ``origin``) names, or None (:meth:`.SessionClaims.find`)."""
        return self.claims.find(key, origin=origin, project=project)

    def claim(self, key: str, uid: str, *, project: str = "default") -> str:
        """Make ``key`` name session ``uid`` unless it names a live one
        (:meth:`.SessionClaims.claim`)."""
        return self.claims.claim(key, uid, project=project)

    def get(self, uid: str) -> Session:
        """The session, with where its harness memory lives (a bounded probe)."""
        from agentsessions.runtimes.compute import session_memory

        info = self._info(uid)
        status = session_memory(self.home, info, HARNESSES)
        memory = Memory(status.where, status.text, status.to_json())
        from . import approvals, resolving

        pending, unresolved = (
            approvals.pending_of(self.store, info),
            resolving.unresolved_of(self.store, info),
        )
        return view(info, memory, pending, unresolved)

    def list(
        self, *, project: str = "default", page_size: int = 50, cursor: str | None = None
    ) -> SessionPage:
        """One page of ``project``'s sessions, newest first (deleted hidden)."""
        with self._lock:
            page, self._unindexed = list_page(self.store, project, page_size, cursor)
        return page

    @property
    def unindexed(self) -> builtins.list[AgentSessionsError]:
        """Sessions the store found but could not index (their metadata is damaged)."""
        found = REINDEXABLE.of(self.store)  # its last rebuild's (on open too), else the list's
        return builtins.list(found.unindexed if found is not None else self._unindexed)

    def delete(self, uid: str) -> Session:
        """Soft-delete ``uid`` (hidden from list, never written again); the key ``ensure``
        created it for is released."""
        check_uid(uid)
        lock = self.core.hold(uid, 0.0)
        try:
            self.core.release_writer(uid)  # delete takes the session's lock itself
            with self._lock:
                info = self.store.delete(uid)
            from .claims import release_claim

            release_claim(self.store, info)  # after: a cut here is released lazily
            return view(info)
        finally:
            lock.release()

    def check_shreddable(self, uid: str) -> None:
        """InvalidArgumentError unless ``uid`` is an encrypted session (StoreCapabilityError
        for a store that keeps no keys)."""
        KEY_MANAGEMENT.need(self.store, "shred", session=uid).check_shreddable(check_uid(uid))

    def shred(self, uid: str) -> bool:
        """Destroy ``uid``'s data key for good: its content becomes unreadable with or without
        the master key, its structure still verifies (docs/FORMAT.md 15). False when it was
        already shredded; InvalidArgumentError for a plaintext session."""
        keys = KEY_MANAGEMENT.need(self.store, "shred", session=check_uid(uid))
        lock = self.core.hold(uid, 0.0)
        try:
            self.core.release_writer(uid)  # shred takes the session's lock itself
            with self._lock:
                return keys.shred(uid)
        finally:
            lock.release()

    @property
    def catalog_path(self) -> str:
        """Where the file store keeps its listing index (``catalog.sqlite3``)."""
        return REINDEXABLE.need(self.store, "reindex").index_path

    def reindex(self) -> int:
        """Rebuild the listing index from the session directories (a store without one: refused)."""
        from . import offline

        with self._lock:
            return offline.reindex(self.store).indexed

    # -- reading ----------------------------------------------------------------------------
    def read(self, uid: str, *, from_seq: int = 1, to_seq: int = 0) -> Iterator[Record]:
        """The stored records ``from_seq..to_seq`` (0 = head); NotFoundError first."""
        # the store's read, never the held writer's (no turn's lock is held here); it looks
        # the session up before it returns, as every store must (the store contract)
        return self.store.read(check_uid(uid), from_seq=from_seq, to_seq=to_seq)

    def follow(
        self, uid: str, *, from_seq: int = 1, idle_timeout: float | None = None
    ) -> Iterator[Record]:
        """Every record from ``from_seq``, then each new one as any process commits it."""
        if from_seq < 1:
            raise InvalidArgumentError(f"from_seq must be >= 1, got {from_seq}")
        if idle_timeout is not None and idle_timeout < 0:
            raise InvalidArgumentError(f"idle_timeout must be >= 0, got {idle_timeout}")
        self._info(uid)
        return self.store.follow(uid, from_seq, idle_timeout=idle_timeout)

    def replay(self, uid: str, *, from_seq: int = 1) -> Iterator[Record]:
        """Stored records from ``from_seq`` on (``read`` to the head)."""
        return self.read(uid, from_seq=from_seq)

    def rerun(self, uid: str, *, harness: str | None = None) -> ReplayReport:
        """Re-drive every completed turn with effects served from the journal (zero model
        calls) and report it."""
        check_uid(uid)
        from agentsessions.controller.replay import replay as replay_session

        # a controller of its own: its model-call counter sees only this replay
        counter = build_controller(
            self.store, self.home, runtime=self.runtime(), catalog=self.models
        )
        result = replay_session(
            self.store, uid, HARNESSES, harness=harness or "",
            model_calls=lambda: counter.models.calls, workloads=counter.workloads,
        )  # fmt: skip
        return result.report()

    def verify(self, uid: str, *, strict: bool = False, progress: Any = None) -> VerifyReport:
        """Walk ``uid``'s chain from ``prev_hash ""`` and check its metadata."""
        from . import offline

        return offline.verify(self.store, uid, strict=strict, progress=progress)

    def verify_all(
        self, *, strict: bool = False, progress: Any = None
    ) -> builtins.list[tuple[str, VerifyReport]]:
        """Verify every session (deleted ones too), one report each whatever fails: a
        session the OS refuses to read is a failed report, never hiding the others."""
        from . import offline

        return offline.verify_all(self.store, strict=strict, progress=progress)

    def tool_store(
        self, uid: str, tool: str, *, from_seq: int = 1
    ) -> builtins.list[ToolStoreEntry]:
        """The entries of tool ``tool``'s own store in session ``uid`` (:mod:`.toolstores`)."""
        from . import toolstores

        return toolstores.tool_store(self.store, uid, tool, from_seq=from_seq)

    def rotate_master_key(self, old: MasterKey, new: MasterKey) -> Rotation:
        """Rewrap every data key from ``old`` to ``new`` (:meth:`.MasterKeys.rotate`)."""
        return self.master_keys.rotate(old, new)

    # -- exchange ---------------------------------------------------------------------------
    def export(
        self,
        uid: str,
        path: Path,
        *,
        compress: bool = True,
        progress: Any = None,
        overwrite: bool = False,
        encryption: str = "",
    ) -> dict[str, Any]:
        """Write ``uid`` to one self-verifying file; refuse an existing file unless
        ``overwrite`` (a device or pipe such as /dev/stdout is written in place); an
        encrypted session's ``encryption`` is "decrypt" or "ciphertext" (:func:`offline.export`)."""
        from . import offline

        return offline.export(
            self.store, uid, path, compress=compress, progress=progress, overwrite=overwrite,
            encryption=encryption,
        )  # fmt: skip

    def import_(
        self,
        path: Path,
        *,
        project: str | None = None,
        name: str | None = None,
        progress: Any = None,
    ) -> Session:
        """Recreate a session from ``path`` (format detected) with identical seqs and hashes."""
        from agentsessions.journal.tools.exchange import import_file

        if project is not None:
            check_project(project)
        with self._lock:
            info = import_file(
                self.store, Path(path), project=project, name=name, progress=progress,
                adjust=self.claims.import_meta,
            )  # fmt: skip
        self.claims.claim_imported(info)  # its origin names it here from now on
        return view(info)

    # -- turns (see :mod:`.turning`) ------------------------------------------------------
    def check_turn(self, harness: str, model: str, chosen: str = "", project: str = "") -> None:
        """Fail before anything is written on an unknown or unplaceable harness, a bad model
        spec, or a model chosen for a harness calling none (:meth:`.TurnRunner.check_turn`)."""
        self.turns.check_turn(harness, model, chosen, project)

    check_request = staticmethod(checks.check_request)
    check_fork = staticmethod(checks.check_fork)

    def exec(
        self,
        uid: str | TurnRequest | None = None,
        inputs: Sequence[Input] = (),
        **options: Unpack[TurnOptions],
    ) -> Iterator[Frame]:
        """Run one turn (see :meth:`Sessions.exec`); every check is made in the caller's
        thread before anything is written, then the turn runs on its own thread."""
        return self.turns.exec(TurnRequest.of(uid, inputs, **options))

    def run(
        self,
        uid: str | TurnRequest | None = None,
        inputs: Sequence[Input] = (),
        **options: Unpack[TurnOptions],
    ) -> SessionFrame:
        """Run one turn to its end and return its last frame (see :meth:`Sessions.run`).

        The same checks and turn as :meth:`exec`, run on the caller's thread: nothing is
        streamed, so no frame crosses threads. An interrupt (Ctrl-C) in the caller stops
        the turn where it is, leaving it open for ``resume``, as a killed process does."""
        return self.turns.run(TurnRequest.of(uid, inputs, **options))

    def resume(self, uid: str, *, harness: str | None = None, wait: float = 0.0) -> Iterator[Frame]:
        """Wake suspended compute and complete an open turn, if any; frames as for exec.

        The last frame's ``turn`` is None when no turn was open."""
        return self.turns.resume(uid, harness, wait)

    # -- warm compute -----------------------------------------------------------------------
    def _known_dir(self, uid: str | None) -> None:
        """NotFoundError (exit 3) unless ``uid`` is a session of this home. Only its directory
        is needed: a session whose metadata or journal is damaged (exit 8 for every reader)
        must still be able to have its compute listed and stopped."""
        if uid is None:
            return
        files = SESSION_FILES.of(self.store)
        if files is not None:
            files.session_dir(check_uid(uid))
        else:
            self.store.get(check_uid(uid))

    def compute(self, uid: str | None = None) -> builtins.list[HostInfo]:
        """Every live warm host and frozen snapshot process of this home (``uid``'s only)."""
        from agentsessions.runtimes.compute import list_compute

        self._known_dir(uid)
        return list_compute(self.home, uid)

    def stop_compute(self, uid: str | None = None) -> builtins.list[HostInfo]:
        """End ``uid``'s warm host and snapshots (every one of the home when None);
        idempotent, and the journal is not touched. Returns what was stopped."""
        from agentsessions.runtimes.compute import stop_compute

        self._known_dir(uid)
        return stop_compute(self.home, uid)

    # -- lifecycle (see :mod:`.lifecycle`, :mod:`.approvals`, :mod:`.resolving`) -------
    def suspend(self, uid: str) -> Session:
        """Snapshot and free ``uid``'s compute (COLD) (:meth:`.Lifecycle.suspend`)."""
        return self.lifecycle.suspend(uid)

    def cancel(
        self,
        uid: str,
        *,
        wait: float = lifecycle.DEFAULT_CANCEL_WAIT,
        reason: str = "",
        execution_id: str = "",
    ) -> Session:
        """End ``uid``'s open execution as CANCELED (:meth:`.Lifecycle.cancel`)."""
        return self.lifecycle.cancel(uid, wait=wait, reason=reason, execution_id=execution_id)

    def fork(
        self,
        uid: str,
        *,
        at: int = 0,
        count: int = 1,
        names: Sequence[str] = (),
        labels: Mapping[str, str] | None = None,
    ) -> builtins.list[Session]:
        """Branch ``uid`` after seq ``at`` into ``count`` children (:meth:`.Lifecycle.fork`)."""
        return self.lifecycle.fork(uid, at=at, count=count, names=names, labels=labels)

    def approve(
        self,
        uid: str,
        *,
        approved: bool,
        reason: str = "",
        actor: str = "",
        execution_id: str | None = None,
        tool_call_id: str | None = None,
        request_seq: int | None = None,
    ) -> Approval:
        """Commit a decision on ``uid``'s approval request (:meth:`.Approvals.approve`)."""
        return self.approvals.approve(
            uid, approved=approved, reason=reason, actor=actor, execution_id=execution_id,
            tool_call_id=tool_call_id, request_seq=request_seq,
        )  # fmt: skip

    def resolve(
        self,
        uid: str,
        *,
        call_id: str,
        result: Mapping[str, Any] | None = None,
        failed: str | None = None,
        actor: str = "",
        resume: bool = True,
    ) -> Resolution:
        """Keep a person's answer for an unresolved call, then resume (:class:`.Resolver`)."""
        return self.resolver.resolve(
            uid, call_id=call_id, result=result, failed=failed, actor=actor, resume=resume
        )

    def compact(self, uid: str, *, keep_turns: int = 2, model: str | None = None) -> SessionFrame:
        """Summarise the turns before the last ``keep_turns`` (see :mod:`.compact`)."""
        from . import compact as compaction

        return compaction.compact(self, uid, keep_turns=keep_turns, model=model)


def open_local(
    home: str | os.PathLike[str] | None = None,
    *,
    store: Store | None = None,
    runtime: str = DEFAULT_RUNTIME,
    model: str | None = None,
    store_url: str | None = None,
    allow_unsynced: bool = False,
    key_file: str | None = None,
    must_exist: bool = False,
    models: Mapping[str, str] | None = None,
    durability: str = "",
) -> LocalSessions:
    """A ready engine: on ``store``, else the store ``store_url`` names (``--store``, else
    ``AGENTSESSIONS_STORE``: see :mod:`.storeurl`), else the file store under ``home``
    (``--home``, else ``AGENTSESSIONS_HOME``, else the per-user data directory).

    The store's master key (encryption at rest, docs/FORMAT.md 15) is ``key_file``,
    else ``AGENTSESSIONS_KEY_FILE``, else ``AGENTSESSIONS_MASTER_KEY``; with one, new
    sessions are encrypted and encrypted ones readable. Each choice not given falls back to
    the configuration file (``$AGENTSESSIONS_CONFIG``, else ``<home>/config.toml``: :mod:`.config`).
    ``must_exist``: the file store's home must exist (:func:`.home.require_home`). ``models``:
    the model catalog (NAME -> SPEC) over the config file's ``[models.NAME]`` (:mod:`.config`).
    ``durability``: the turns' durability mode unless a turn names its own (see
    :data:`~agentsessions.v1.turn.DURABILITY_MODES`)."""
    check_durability(durability)  # before a store is opened
    resolved = resolve_home(home)
    if store is not None:
        return LocalSessions(
            resolved, store, runtime=runtime, model=model, owns_store=False, models=models,
            durability=durability,
        )  # fmt: skip
    from agentsessions.sessions.config import resolve_choices
    from agentsessions.sessions.storeurl import open_store

    url, unsynced, master, catalog = resolve_choices(
        resolved, store_url, allow_unsynced, key_file, models
    )
    if url:
        chosen = open_store(url, allow_unsynced=unsynced, master=master)
        return LocalSessions(
            resolved, chosen, runtime=runtime, model=model, models=catalog, durability=durability
        )
    from agentsessions.journal.stores.file.store import FileStore

    chosen = FileStore(require_home(resolved) if must_exist else resolved, master=master)
    return LocalSessions(
        resolved, chosen, runtime=runtime, model=model, models=catalog, durability=durability
    )
