"""The local engine: :class:`~agentsessions.sessions.api.Sessions` over a store in this process.

The one home of session semantics: what a request needs before anything is written (a
known harness the runtime can place, a well-formed model spec, inputs that fit one commit,
a new session's metadata and defaults), waking suspended compute before a turn, waiting on
a busy session, and counting model calls for replay. Every front end calls these methods;
none of them reaches the controller or the journal itself. The store-free checks live in
:mod:`.checks`, the turn plumbing (session locks, worker threads, frame queues) in
:mod:`.turnstream`, the offline tools (verify, export) in :mod:`.offline`, suspend, cancel
and fork in :mod:`.lifecycle`.

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
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentsessions.errors import (
    AgentSessionsError,
    InvalidArgumentError,
    LockHeldError,
    UnavailableError,
)
from agentsessions.journal.stores.store import SessionInfo, SessionMeta, Store, new_uid
from agentsessions.v1.ids import check_project, check_uid

from . import approvals, checks, lifecycle, offline, resolving, toolstores
from . import compact as compaction
from .api import Frame, Input, Memory, ReplayReport, Session, SessionFrame, SessionPage, Turn
from .home import require_home, resolve_home
from .turnstream import Turns
from .views import as_message, turn_view, view
from .wiring import HARNESSES, build_controller, close_tools

if TYPE_CHECKING:
    from agentsessions.controller.controller import Controller
    from agentsessions.controller.spi import Runtime
    from agentsessions.journal.crypto.keys import MasterKey
    from agentsessions.journal.format.records import Record
    from agentsessions.journal.tools.verify import VerifyReport
    from agentsessions.runtimes.compute import HostInfo
    from agentsessions.tools.workload import Workload

    from .keys import Rotation

DEFAULT_HARNESS = "echo"
DEFAULT_MODEL = "echo"
DEFAULT_RUNTIME = "auto"
DEFAULT_CANCEL_WAIT = lifecycle.DEFAULT_CANCEL_WAIT
_RETRY_SECONDS = 0.05
_RELEASE_WAIT_SECONDS = 3600.0  # release waits for a running turn: turns end by themselves


class LocalSessions:
    """The local engine over ``store`` (see the module docstring); use :func:`open_local`."""

    def __init__(
        self,
        home: Path,
        store: Store,
        *,
        runtime: str = DEFAULT_RUNTIME,
        model: str | None = None,
        owns_store: bool = True,
        models: Mapping[str, str] | None = None,
    ) -> None:
        self.home = home
        self.models = checks.catalog(models)  # the operator's model names (see open_local)
        self.store = store
        self.runtime_name = runtime or DEFAULT_RUNTIME
        self.default_model = model or DEFAULT_MODEL
        self._owns_store = owns_store
        self._lock = threading.Lock()  # guards the fields below and the store's catalog
        self._controllers: dict[str, Controller] = {}
        self._runtime: Runtime | None = None
        self._turns = Turns()  # the session locks, the running turns and their workers
        self._models = checks.ModelChecks(self.models)

    # -- plumbing ---------------------------------------------------------------------------
    def __enter__(self) -> LocalSessions:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Wait for running turns (their END is durable then), close the writers the engine
        held across turns (each leaves a fresh TAIL hint and frees its lock), then the store."""
        if not self._turns.drain():
            return  # closed already
        with self._lock:
            controllers = list(self._controllers.values())
            self._controllers.clear()
        for controller in controllers:
            controller.close()
            close_tools(controller)  # ends the mcp server processes its tools started
        self._turns.close()
        if self._owns_store:
            self.store.close()

    def runtime(self) -> Runtime:
        """The engine's runtime, made on first use (an unknown name fails here, exit 2)."""
        with self._lock:
            if self._runtime is None:
                from agentsessions.runtimes import create_runtime

                self._runtime = create_runtime(self.runtime_name, home=self.home)
                from .harnessbook import load_registered

                load_registered(self.store)  # registered remote harnesses resolve by name
            return self._runtime

    def controller(self, uid: str = "") -> Controller:
        """The controller of session ``uid`` ("" for checks that concern no session)."""
        runtime = self.runtime()
        with self._lock:
            found = self._controllers.get(uid)
            if found is None:
                # one controller per session, holding that session's writer across turns
                found = build_controller(
                    self.store,
                    self.home,
                    runtime=runtime,
                    default_model=self.default_model,
                    keep_writers=1,
                    catalog=self.models,
                )
                self._controllers[uid] = found
            return found

    def release(self, uid: str) -> None:
        """Close the writer this engine holds for ``uid`` between turns (a long-lived engine
        keeps it, with the session's lock, until it idles out or the engine closes), so that
        another process can write the session now. Waits for a running turn of ``uid``."""
        lock = self._hold(check_uid(uid), _RELEASE_WAIT_SECONDS)
        try:
            self._release_writer(uid)
        finally:
            lock.release()

    def _release_writer(self, uid: str) -> None:
        """Close the writer held for ``uid`` between turns, so a store operation that takes
        the session's lock itself (delete) or another process can have it."""
        with self._lock:
            controller = self._controllers.get(uid)
        if controller is not None:
            controller.release(uid)

    def _hold(self, uid: str, wait: float) -> threading.Lock:
        """Take ``uid``'s engine lock, waiting up to ``wait`` seconds; LockHeldError if busy."""
        return self._turns.hold(uid, wait)

    def _info(self, uid: str) -> SessionInfo:
        return self.store.get(check_uid(uid))

    def _state(self, uid: str) -> SessionInfo:
        """``uid``'s state around a turn of this engine: from the writer the engine holds,
        without asking the store, when there is one (its metadata never changes mid-turn;
        its head is current once the caller holds the session's lock)."""
        with self._lock:
            controller = self._controllers.get(uid)
        return controller.info(uid) if controller is not None else self.store.get(check_uid(uid))

    # -- metadata ---------------------------------------------------------------------------
    def create(
        self,
        *,
        project: str = "default",
        name: str = "",
        harness: str = "",
        model: str = "",
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        tools: str | PathLike[str] | None = None,
    ) -> Session:
        """Create an empty session; an unknown model provider or a bad workload is refused
        first; ``tools`` (a workload file) is recorded with the session."""
        self._models.check(model)  # an unknown provider is refused before the session exists
        checks.check_model_of(harness, model, project)  # a model for a harness calling none
        workload = checks.workload(tools)
        meta = SessionMeta(
            uid=new_uid(),
            project=check_project(project),
            name=name,
            harness=harness,
            model=model,
            labels=dict(labels or {}),
            annotations=dict(annotations or {}),
            create_time_ns=time.time_ns(),
        )
        with self._lock:
            info = self.store.create(meta)
            if workload is not None:
                self._record_workload(info.uid, workload)
            return view(info)

    def get(self, uid: str) -> Session:
        """The session, with where its harness memory lives (a bounded probe)."""
        from agentsessions.runtimes.compute import session_memory

        info = self._info(uid)
        status = session_memory(self.home, info, HARNESSES)
        memory = Memory(status.where, status.text, status.to_json())
        pending, unresolved = (
            approvals.pending_of(self.store, info),
            resolving.unresolved_of(self.store, info),
        )
        return view(info, memory, pending, unresolved)

    def list(
        self, *, project: str = "default", page_size: int = 50, cursor: str | None = None
    ) -> SessionPage:
        """One page of ``project``'s sessions, newest first (deleted hidden)."""
        check_project(project)
        if page_size < 0:
            raise InvalidArgumentError(f"page_size must be >= 0 (0 = 50), got {page_size}")
        with self._lock:
            page = self.store.list(project, page_size=page_size, cursor=cursor or "")
        return SessionPage(tuple(view(s) for s in page.sessions), page.next_cursor)

    @property
    def unindexed(self) -> builtins.list[AgentSessionsError]:
        """Sessions the store found but could not index (their metadata is damaged)."""
        return builtins.list(getattr(self.store, "unindexed", ()))

    def delete(self, uid: str) -> Session:
        """Soft-delete ``uid`` (hidden from list, never written again)."""
        check_uid(uid)
        lock = self._hold(uid, 0.0)
        try:
            self._release_writer(uid)  # delete takes the session's lock itself
            with self._lock:
                return view(self.store.delete(uid))
        finally:
            lock.release()

    def check_shreddable(self, uid: str) -> None:
        """InvalidArgumentError unless ``uid`` is an encrypted session (of a store that
        keeps keys: its own ``check_shreddable``, else the file store's)."""
        from agentsessions.journal.stores.file import crypt as filecrypt

        own = getattr(self.store, "check_shreddable", None)
        if own is not None:
            own(check_uid(uid))
        else:
            filecrypt.check_shreddable(self.store, check_uid(uid))

    def shred(self, uid: str) -> bool:
        """Destroy ``uid``'s data key for good: its content becomes unreadable with or without
        the master key, its structure still verifies (docs/FORMAT.md 15). False when it was
        already shredded; InvalidArgumentError for a plaintext session."""
        from agentsessions.journal.stores.file import crypt as filecrypt

        check_uid(uid)
        lock = self._hold(uid, 0.0)
        try:
            self._release_writer(uid)  # shred takes the session's lock itself
            own = getattr(self.store, "shred", None)  # a store's own (JetStream), else
            with self._lock:  # the file store's (file/crypt.py)
                return bool(own(uid)) if own is not None else filecrypt.shred(self.store, uid)
        finally:
            lock.release()

    @property
    def catalog_path(self) -> str:
        """Where the file store keeps its listing index (``catalog.sqlite3``)."""
        return str(self.store.catalog.path)  # type: ignore[attr-defined]

    def reindex(self) -> int:
        """Rebuild the listing index from the session directories (a store without one: refused)."""
        with self._lock:
            return offline.reindex(self.store)

    # -- reading ----------------------------------------------------------------------------
    def read(self, uid: str, *, from_seq: int = 1, to_seq: int = 0) -> Iterator[Record]:
        """The stored records ``from_seq..to_seq`` (0 = head); NotFoundError first."""
        self._info(uid)  # the store's, never the held writer's: no turn's lock is held here
        return self.store.read(uid, from_seq=from_seq, to_seq=to_seq)

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
        return ReplayReport(
            uid=result.uid,
            harness=result.harness,
            executions=result.executions,
            replayed=result.replayed,
            model_calls=result.model_calls,
            identical=result.identical,
            outputs=tuple(result.outputs),
            divergence=result.divergence,
            diverged_execution=result.diverged_execution,
            last_seq=result.head_after[0],
        )

    def verify(self, uid: str, *, strict: bool = False, progress: Any = None) -> VerifyReport:
        """Walk ``uid``'s chain from ``prev_hash ""`` and check its metadata."""
        return offline.verify(self.store, uid, strict=strict, progress=progress)

    def verify_all(
        self, *, strict: bool = False, progress: Any = None
    ) -> builtins.list[tuple[str, VerifyReport]]:
        """Verify every session (deleted ones too), one report each whatever fails: a
        session the OS refuses to read is a failed report, never hiding the others."""
        return offline.verify_all(self.store, strict=strict, progress=progress)

    tool_store = toolstores.tool_store  # a tool's own store, read (see the module)

    def rotate_master_key(self, old: MasterKey, new: MasterKey) -> Rotation:
        """Rewrap every data key from ``old`` to ``new`` (:mod:`.keys`, imported only here)."""
        from .keys import rotate_master_key

        return rotate_master_key(self, old, new)

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
                self.store, Path(path), project=project, name=name, progress=progress
            )
        return view(info)

    # -- turns ------------------------------------------------------------------------------
    def check_turn(self, harness: str, model: str, chosen: str = "", project: str = "") -> None:
        """Fail before anything is written on an unknown or unplaceable harness (``project``'s
        view), a bad model spec, or a model the request ``chosen`` for a harness calling none."""
        descriptor = checks.check_placement(self.runtime(), harness, project)
        self._models.check(model)  # once per engine and spec (:class:`.ModelChecks`)
        checks.check_model_use(harness, descriptor, chosen)

    check_request = staticmethod(checks.check_request)
    check_fork = staticmethod(checks.check_fork)

    def exec(
        self,
        uid: str | None = None,
        inputs: Sequence[Input] = (),
        *,
        harness: str | None = None,
        model: str | None = None,
        config: bytes = b"",
        wait: float = 0.0,
        project: str = "default",
        name: str = "",
        labels: Mapping[str, str] | None = None,
        fresh_start: bool = False,
        tools: str | PathLike[str] | None = None,
    ) -> Iterator[Frame]:
        """Run one turn (see :meth:`Sessions.exec`); every check is made in the caller's
        thread before anything is written, then the turn runs on its own thread."""
        uid, lock, work, created = self._begin(
            uid, inputs, harness, model, config, wait, project, name, labels, fresh_start, tools
        )
        return self._stream(uid, lock, work, created)

    def run(
        self,
        uid: str | None = None,
        inputs: Sequence[Input] = (),
        *,
        harness: str | None = None,
        model: str | None = None,
        config: bytes = b"",
        wait: float = 0.0,
        project: str = "default",
        name: str = "",
        labels: Mapping[str, str] | None = None,
        fresh_start: bool = False,
        tools: str | PathLike[str] | None = None,
    ) -> SessionFrame:
        """Run one turn to its end and return its last frame (see :meth:`Sessions.run`).

        The same checks and turn as :meth:`exec`, run on the caller's thread: nothing is
        streamed, so no frame crosses threads. An interrupt (Ctrl-C) in the caller stops
        the turn where it is, leaving it open for ``resume``, as a killed process does."""
        uid, lock, work, _created = self._begin(
            uid, inputs, harness, model, config, wait, project, name, labels, fresh_start, tools
        )
        try:
            controller = self.controller(uid)
        except BaseException:
            lock.release()
            raise
        return self._turns.run_here(uid, lock, controller, work)

    def _begin(
        self,
        uid: str | None,
        inputs: Sequence[Input],
        harness: str | None,
        model: str | None,
        config: bytes,
        wait: float,
        project: str,
        name: str,
        labels: Mapping[str, str] | None,
        fresh_start: bool,
        tools: str | PathLike[str] | None = None,
    ) -> tuple[str, threading.Lock, Callable[[Controller], tuple[Turn | None, bool]], bool]:
        """A turn's checks, its session (created when ``uid`` is None) and the session's
        lock, taken: the session, the lock, the turn's work for a controller, and created."""
        messages = [as_message(item) for item in inputs]
        self.check_request(uid, messages, wait, project, name, labels, fresh_start)
        workload = checks.workload(tools)  # a bad workload is refused before anything is written
        recorded, recorded_model = "", ""
        if uid is not None:  # its project's registered harnesses are the ones it may run on
            info = self._state(uid)
            recorded, recorded_model = info.meta.harness, info.meta.model
            project = info.meta.project
            if messages:  # new input waits for an open approval's receipt
                approvals.check_no_open_approval(self.store, info)
                resolving.check_not_unresolved(self.store, info)
        named = harness or recorded or DEFAULT_HARNESS
        self.check_turn(named, model or recorded_model, model or "", project)
        if workload is not None:  # a harness it keeps out of the conversation: nothing written
            workload.check_harness(uid or "(new)", named)
        if created := uid is None:
            meta = SessionMeta(
                uid=new_uid(),
                project=project,
                name=name,
                harness=harness or DEFAULT_HARNESS,
                model=model or self.default_model,
                labels=dict(labels or {}),
                create_time_ns=time.time_ns(),
            )
            self.controller().check_exec(  # all checked before the session exists
                messages,
                harness=meta.harness,
                config=config,
                tools=workload is not None,
                project=project,
            )
            with self._lock:
                uid = self.store.create(meta).uid
        lock = self._hold(uid, wait)
        session_uid = uid
        if workload is not None:
            self._record_workload(uid, workload)

        def work(controller: Controller) -> tuple[Turn | None, bool]:
            woke = False
            if not created and not fresh_start:  # a fresh start brings compute back, empty
                woke = self._wake(controller, session_uid, wait)
            result = controller.exec(
                session_uid,
                messages,
                harness=harness or "",
                config=config,
                wait_seconds=wait,
                model=model or "",
                fresh_start=fresh_start,
            )
            return turn_view(result, created), woke

        return session_uid, lock, work, created

    def _record_workload(self, uid: str, workload: Workload) -> None:
        """Keep the session's tools with it (a store without a place for them refuses)."""
        setter = getattr(self.store, "set_workload", None)
        if setter is None:
            raise UnavailableError("this store keeps no tools for its sessions")
        setter(uid, workload.source)

    def resume(self, uid: str, *, harness: str | None = None, wait: float = 0.0) -> Iterator[Frame]:
        """Wake suspended compute and complete an open turn, if any; frames as for exec.

        The last frame's ``turn`` is None when no turn was open."""
        check_uid(uid)
        checks.check_wait(wait)
        self.store.get(uid)
        self.runtime()  # an unknown runtime fails before the session is touched
        lock = self._hold(uid, wait)

        def work(controller: Controller) -> tuple[Turn | None, bool]:
            woke = self._wake(controller, uid, wait)
            result = controller.resume(uid, harness=harness or "", wait_seconds=wait)
            return (turn_view(result) if result is not None else None), woke

        return self._stream(uid, lock, work, False)

    @staticmethod
    def _wake(controller: Controller, uid: str, wait: float) -> bool:
        """Bring a suspended session's compute back (LIFECYCLE_RESUME); True if it was COLD.

        A busy session is retried until ``wait`` seconds have passed, as the turn itself is.
        """
        from agentsessions.controller.lifecycle import resume_compute

        if controller.info(uid).compute_state != "COMPUTE_COLD":
            return False
        deadline = time.monotonic() + wait
        while True:
            try:
                resume_compute(controller, uid)
                return True
            except LockHeldError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(_RETRY_SECONDS)

    def _stream(
        self,
        uid: str,
        lock: threading.Lock,
        work: Callable[[Controller], tuple[Turn | None, bool]],
        created: bool,
    ) -> Iterator[Frame]:
        """Start ``work`` on a worker thread holding ``lock``; the frames it produces."""
        try:
            controller = self.controller(uid)
            first = SessionFrame(view(self._state(uid)), created=created)
        except BaseException:
            lock.release()
            raise
        return self._turns.start(uid, lock, controller, first, work)

    # -- warm compute -----------------------------------------------------------------------
    def _known_dir(self, uid: str | None) -> None:
        """NotFoundError (exit 3) unless ``uid`` is a session of this home. Only its directory
        is needed: a session whose metadata or journal is damaged (exit 8 for every reader)
        must still be able to have its compute listed and stopped."""
        if uid is None:
            return
        session_dir = getattr(self.store, "session_dir", None)
        if session_dir is not None:
            session_dir(check_uid(uid))
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

    # -- lifecycle (see :mod:`.lifecycle`) -------------------------------------------------
    suspend = lifecycle.suspend
    cancel = lifecycle.cancel
    fork = lifecycle.fork
    approve = approvals.approve
    resolve = resolving.resolve

    def compact(self, uid: str, *, keep_turns: int = 2, model: str | None = None) -> SessionFrame:
        """Summarise the turns before the last ``keep_turns`` (see :mod:`.compact`)."""
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
) -> LocalSessions:
    """A ready engine: on ``store``, else the store ``store_url`` names (``--store``, else
    ``AGENTSESSIONS_STORE``: see :mod:`.storeurl`), else the file store under ``home``
    (``--home``, else ``AGENTSESSIONS_HOME``, else the per-user data directory).

    The store's master key (encryption at rest, docs/FORMAT.md 15) is ``key_file``,
    else ``AGENTSESSIONS_KEY_FILE``, else ``AGENTSESSIONS_MASTER_KEY``; with one, new
    sessions are encrypted and encrypted ones readable. Each choice not given falls back to
    the configuration file (``$AGENTSESSIONS_CONFIG``, else ``<home>/config.toml``: :mod:`.config`).
    ``must_exist``: the file store's home must exist (:func:`.home.require_home`). ``models``:
    the model catalog (NAME -> SPEC) over the config file's ``[models.NAME]`` (:mod:`.config`)."""
    resolved = resolve_home(home)
    if store is not None:
        return LocalSessions(
            resolved, store, runtime=runtime, model=model, owns_store=False, models=models
        )
    from agentsessions.sessions.config import resolve_choices
    from agentsessions.sessions.storeurl import open_store

    url, unsynced, master, catalog = resolve_choices(
        resolved, store_url, allow_unsynced, key_file, models
    )
    if url:
        chosen = open_store(url, allow_unsynced=unsynced, master=master)
        return LocalSessions(resolved, chosen, runtime=runtime, model=model, models=catalog)
    from agentsessions.journal.stores.file.store import FileStore

    chosen = FileStore(require_home(resolved) if must_exist else resolved, master=master)
    return LocalSessions(resolved, chosen, runtime=runtime, model=model, models=catalog)
