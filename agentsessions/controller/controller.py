"""The single-writer controller: live turns (exec) and crash recovery (resume).

Invariants (digest 5.1): one writer per session (the store's lock plus a fresh fence, and
CAS on every append); record before effect (a model's completion is durable before the
harness sees it); a harness never calls a provider itself; a turn is closed only by END
(success) or ERROR (failure). A turn killed part-way, or one that failed (ERROR, no END),
leaves an open execution (:mod:`.openturn`: which one is open, and how a new turn meets it),
which :meth:`Controller.resume` completes: recorded effects are served, a trailing
MODEL_CALL without its OUTPUT is re-invoked once, nothing recorded is ever repeated.
Observers (``on_record``, ``on_delta``) are isolated: whatever they raise is kept, never
journaled as the turn's.

The cost of a turn does not grow with the session, nor with the turns before it: the
controller keeps each session's writer open across turns (:mod:`.held`: one lock and one
fence per writer, not per turn; closed by :meth:`Controller.close`, after an idle limit, past
an LRU cap, or at interpreter exit), answers its state questions (head, projections, where
the latest execution began, metadata) from what that writer folded, and hands the harness a
lazy history whose recent records come from the writer's memory.

One home per policy. The engine (:mod:`agentsessions.sessions`) checks a request before
anything is written, and this controller trusts what it resolved: a fresh start only of an
existing session, a new session's defaults (project, harness, model: the engine builds its
``SessionMeta``), the request's ``expected_last_seq`` against the head. The controller is the
home of two, which the engine asks rather than repeats: placement (:meth:`Controller.
check_placement`: every turn passes it, resume included) and the making of a turn's session
(:meth:`Controller.create_session`: its harness started before the session exists).
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager

from agentsessions.errors import (
    AgentSessionsError,
    ApprovalParkedError,
    CommitTooLargeError,
    HarnessError,
    InvalidArgumentError,
    InvalidExecutionLogError,
    LockHeldError,
    PlacementError,
    StateConflictError,
    UnavailableError,
)
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.store import SessionInfo, SessionMeta, Store, new_uid
from agentsessions.v1.turn import TurnRequest
from agentsessions.v1.workloadref import wrap

from . import executions, landed, openturn
from .cancel import request_check, requests_of
from .checked import Checked
from .counting import CountingModels
from .driving import TurnDriver
from .driving import TurnResult as TurnResult  # re-exported: callers import it here
from .held import DEFAULT_IDLE_SECONDS, DEFAULT_KEEP, HeldWriter, WriterPool
from .heldlimit import HeldLimit
from .history import WriterHistory
from .live import Live, isolated
from .registry import Registry
from .rules import DEFAULT_HARNESS as DEFAULT_HARNESS  # re-exported: callers import it here
from .rules import check_config, check_inherited_intent
from .rules import check_harness as check_harness
from .rules import fresh_start_hint as fresh_start_hint
from .sinks import TurnSink
from .spi import (
    REQUIRES_MEMORY_SNAPSHOT,
    STATELESS_REPLAY,
    Harness,
    HarnessDescriptor,
    Message,
    ModelProvider,
    Runtime,
    Start,
    ToolOffer,
    ToolResolver,
    Workloads,
    can_place,
)
from .toolcalls import ToolHost, receipts_of
from .traced import turn_span
from .turnjournal import WriterJournal as _WriterJournal  # (moved out: the name stays)
from .turnjournal import as_user, durability_of, first_commit
from .workloads import StaticWorkloads, resolver_for

_TURN_ERRORS = (
    HarnessError,
    InvalidArgumentError,
    InvalidExecutionLogError,
    PlacementError,
    ApprovalParkedError,  # a parked turn's journal is in order: TOOL_CALL + REQUEST synced
    StateConflictError,  # a harness's stale state commit wrote nothing; its ERROR is recorded
)
"""Errors a turn raises with its journal in order: its held writer stays valid."""


class Controller:
    """Drives sessions of one store with harnesses, models and a runtime found by name."""

    def __init__(
        self,
        store: Store,
        *,
        harnesses: Registry[Harness],
        models: Callable[[str], ModelProvider],
        runtime: Runtime,
        default_model: str = "echo",
        on_record: Callable[[Record], None] | None = None,
        on_delta: Callable[[str], None] | None = None,
        keep_writers: int = DEFAULT_KEEP,
        idle_seconds: float = DEFAULT_IDLE_SECONDS,
        tools: ToolResolver | None = None,
        offers: ToolOffer | None = None,
        workloads: Workloads | None = None,
        model_guard: Callable[[str], None] | None = None,
        held_limit: HeldLimit | None = None,
    ) -> None:
        """``keep_writers``: how many sessions' writers stay open between turns (0: close
        each after its turn, as a short-lived caller wants); ``idle_seconds``: how long an
        unused one stays open (checked whenever the controller opens or reuses a writer);
        ``held_limit``: the engine's bound on writers held over all its controllers.
        ``tools`` finds a session's tools by name (its workload), as ``models`` finds model
        providers; None: no session has mediated tools. ``offers`` lists a session's tools
        for its harness (``Start.tools``); None: harnesses are offered none. ``workloads``
        (an engine's) replaces both: each execution records and keeps its own workload, and
        refuses a harness its workload does not let work in the session, before a write.
        ``model_guard`` runs on every model name before the model is made or called (an
        engine's check of what its current caller may use)."""
        self.store = store
        self.writers = WriterPool(store, keep_writers, idle_seconds, held_limit)
        self.harnesses = harnesses
        self.models = CountingModels(models, model_guard)
        self.runtime = runtime
        self.default_model = default_model
        self.tools = tools
        self.offers = offers
        self._workloads = workloads
        self.executor_calls: list[str] = []
        """Every live tool executor call this controller made, by tool name (evidence)."""
        self.observer_errors: list[Exception] = []
        """What the ``on_record``/``on_delta`` callbacks raised; never part of a turn."""
        self.on_record = on_record
        self.on_delta = on_delta
        self.durability = ""
        """The durability mode of a turn whose request names none ("": step); an engine
        sets its own (``open(durability=...)``), so a request is never copied to carry it."""

    @property
    def workloads(self) -> Workloads:
        """Each session's tools by the workload an execution names (the engine's), else the
        fixed ``tools`` and ``offers`` (read when asked: a caller may set them later)."""
        if self._workloads is not None and self.tools is None and self.offers is None:
            return self._workloads
        return StaticWorkloads(self.tools, self.offers, self._workloads)

    @property
    def on_record(self) -> Callable[[Record], None] | None:
        """Called with each record the controller commits (isolated: see :class:`Observer`)."""
        return self._on_record

    @on_record.setter
    def on_record(self, callback: Callable[[Record], None] | None) -> None:
        self._on_record = isolated(callback, self.observer_errors)

    @property
    def on_delta(self) -> Callable[[str], None] | None:
        """Called with each streamed model delta (isolated: see :class:`Observer`)."""
        return self._on_delta

    @on_delta.setter
    def on_delta(self, callback: Callable[[str], None] | None) -> None:
        self._on_delta = isolated(callback, self.observer_errors)

    # -- held writers --------------------------------------------------------------------
    def release(self, uid: str) -> None:
        """Close the writer held for ``uid`` (its lock is free afterwards), if any."""
        self.writers.release(uid)

    def close(self) -> None:
        """Close every held writer; each leaves a fresh TAIL hint. The controller stays
        usable (the next turn opens its writer again)."""
        self.writers.close()

    def __enter__(self) -> Controller:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def info(self, uid: str) -> SessionInfo:
        """The session's state: from its held writer when there is one (no store call),
        else the store. Call it where no turn of ``uid`` runs concurrently."""
        return self._info(uid)

    def _info(self, uid: str) -> SessionInfo:
        """The session's state: from its held writer when there is one, else the store."""
        held = self.writers.get(uid)
        return held.info() if held is not None else self.store.get(uid)

    # -- exec -------------------------------------------------------------------------------
    def exec(
        self,
        uid: str | None,
        inputs: Sequence[Message],
        *,
        harness: str = "",
        config: bytes = b"",
        expected_last_seq: int | None = None,
        meta: SessionMeta | None = None,
        wait_seconds: float = 0.0,
        model: str = "",
        fresh_start: bool = False,
    ) -> TurnResult:
        """:meth:`turn` for a caller without a :class:`TurnRequest` (tests, embedders)."""
        request = TurnRequest(
            uid, tuple(inputs), harness=harness, model=model, config=config, wait=wait_seconds,
            fresh_start=fresh_start, expected_last_seq=expected_last_seq,
        )  # fmt: skip
        return self.turn(request, meta=meta)

    @turn_span(resumed=False)
    def turn(
        self,
        request: TurnRequest,
        *,
        meta: SessionMeta | None = None,
        checked: Checked | None = None,
    ) -> TurnResult:
        """Run one turn: EXECUTION_START (the CAS point) and INPUTs, the harness, END/ERROR.

        ``request.uid`` None creates a session first (from ``meta``: :meth:`create_session`).
        If the first append fails, no harness or model runs. An inputless exec on a session
        with an interrupted turn continues that turn (as the reference's "inputless Exec
        means continue"), and so does an inputless exec on a session whose last turn failed
        (ERROR, no END): see :meth:`resume`. With inputs, a failed turn does not block: a
        new execution starts, and the failed one stays in the journal as audit (replay skips
        it). ``request.model`` overrides the session's model for this turn: its
        EXECUTION_START records it (:mod:`agentsessions.v1.workloadref`), and resume
        re-drives the turn on it. ``request.fresh_start`` first records that a memory
        harness whose memory is gone restarts empty
        (:func:`~agentsessions.controller.freshstart.fresh_start`); whether it may is the
        engine's check, as are the request's other checks (module docstring). ``checked``:
        what the engine's checks of this turn found, holding the session's lock (its state
        and harness), used instead of reading and describing them again.
        """
        early: tuple[Harness, HarnessDescriptor] | None = None
        uid = request.uid
        if uid is None:
            meta = meta or SessionMeta(uid=new_uid(), harness=request.harness)
            uid, early = self.create_session(meta, request)
        info = checked.info if checked is not None else self._info(uid)
        name = request.harness or info.meta.harness or DEFAULT_HARNESS
        self.workloads.check_harness(uid, name)
        if request.fresh_start:
            from .freshstart import fresh_start as start_fresh

            before = info.last_seq
            info = start_fresh(self, uid, name, request.wait)
            request = request.moved(info.last_seq - before)
        placed = checked.harness if checked is not None else None
        instance, descriptor = early or self._instance(info, name, placed)
        with self.session_writer(uid, request.wait) as writer:
            result = self._exec_on(writer, request, info, name, (instance, descriptor))
        result.created = early is not None
        return result

    def commit_landed(self, request: TurnRequest) -> bool:
        """True if ``request``'s commit id landed in its session (:mod:`.landed`)."""
        if not request.commit_id or request.uid is None:
            return False
        with self.session_writer(request.uid, request.wait) as writer:
            return landed.find(writer, request) is not None

    def _exec_on(
        self,
        writer: HeldWriter,
        request: TurnRequest,
        info: SessionInfo,
        name: str,
        harness: tuple[Harness, HarnessDescriptor],
    ) -> TurnResult:
        """The turn on ``writer``: a new execution, or the open one continued."""
        uid, inputs = writer.uid, request.inputs
        turn_model = request.model or info.meta.model or self.default_model
        run = landed.find(writer, request)
        if run is not None:  # its commit id landed: answered by that turn (:mod:`.landed`)
            finish = functools.partial(self._resume_with, writer, uid, name, *harness, turn_model)
            return landed.answer(uid, run, openturn.pending(writer), finish)
        open_run = openturn.to_continue(writer, inputs)  # the rules: :mod:`.openturn`
        if open_run is not None:
            return self._resume_with(writer, uid, name, *harness, turn_model, open_run)
        # a turn on another model than the session's records it (resume uses it)
        own = "" if turn_model == (info.meta.model or self.default_model) else turn_model
        return self._run_new(writer, name, *harness, request, (turn_model, own))

    def create_session(
        self,
        meta: SessionMeta,
        request: TurnRequest,
        *,
        tools: bool = False,
        guard: AbstractContextManager[object] | None = None,
    ) -> tuple[str, tuple[Harness, HarnessDescriptor]]:
        """Create the session of ``request``'s first turn, as ``meta`` describes it (its
        defaults are the caller's: the engine resolves them); the uid and its harness.

        The one place a turn's session is made. Its first commit is checked first
        (:meth:`check_exec`), then its harness is started (a memory harness's host): one
        that cannot start (a factory with no importable name) leaves no empty session. If
        the create fails, the compute started for it is stopped. ``guard``: a lock the
        store's create is made under (the engine's, over the shared catalog)."""
        name = request.harness or meta.harness or DEFAULT_HARNESS
        self.check_exec(
            request.inputs, harness=name, config=request.config, tools=tools,
            project=meta.project, actors=request.actors,
        )  # fmt: skip
        early = self._instance(SessionInfo(meta), name)
        try:
            with guard or contextlib.nullcontext():
                return self.store.create(meta).uid, early
        except Exception:
            with contextlib.suppress(AgentSessionsError):
                compute = self.runtime.find(meta.uid)
                if compute is not None:
                    self.runtime.stop(meta.uid, compute)
            raise

    def check_exec(
        self,
        inputs: Sequence[Message],
        *,
        harness: str = "",
        config: bytes = b"",
        tools: bool = False,
        project: str = "",
        actors: Sequence[Mapping[str, str]] = (),
    ) -> None:
        """Refuse, before anything is written or created, a turn whose first commit the store
        would refuse: an unknown harness (for a session of ``project``), inputs that are not
        valid Messages (text that is not UTF-8), a config in the workload envelope's reserved
        form, or EXECUTION_START plus the INPUTs over the store's commit limit.

        The commit is sealed as it would land first in a new session (seq 1, no previous
        hash; with ``tools``, its config naming a workload), so the size check is exact.
        """
        from agentsessions.journal.stores.tail import Tail

        check_config(config)
        name = harness or DEFAULT_HARNESS
        descriptor = self.describe_harness(name, project)[1]
        recorded = wrap(config, "0" * 64) if tools else config
        events = first_commit("0" * 16, name, descriptor, inputs, recorded, actors)
        limit = self.store.max_commit_bytes
        try:
            Tail().seal_events("(new)", events, fence=0, max_bytes=limit)
        except CommitTooLargeError:
            raise CommitTooLargeError(
                f"the turn's inputs do not fit in one commit (at most {limit} bytes); "
                "nothing was written",
                hint="send less text per turn",
                limit=limit,
            ) from None
        except InvalidArgumentError as exc:
            raise InvalidArgumentError(exc.message.removeprefix("session (new): ")) from None

    def _run_new(
        self,
        writer: HeldWriter,
        name: str,
        instance: Harness,
        descriptor: HarnessDescriptor,
        request: TurnRequest,
        models: tuple[str, str],  # the turn's model, and what its start records of it
    ) -> TurnResult:
        uid, inputs, config = writer.uid, request.inputs, request.config
        expected_last_seq = request.expected_last_seq
        check_config(config)
        turn_model, recorded_model = models
        chosen = request.durability or self.durability
        mode = durability_of(chosen, descriptor)  # :mod:`.turnjournal` decides
        journal = _WriterJournal(writer, self.on_record, mode)
        exec_id = os.urandom(8).hex()  # secrets.token_hex(8), less its three calls
        head = writer.head[0]
        digest = self.workloads.current(uid)  # the workload this turn runs with, for good
        events = first_commit(
            exec_id, name, descriptor, inputs, wrap(config, digest, recorded_model),
            request.actors,
        )  # fmt: skip
        at = head if expected_last_seq is None else expected_last_seq
        journal.begin(events, at, request.store_commit_id)  # synced at once in step mode
        history = WriterHistory(writer, head)
        tools = self.workloads.offers(uid, digest)
        inputs_ = tuple(as_user(m) for m in inputs)
        start = Start(exec_id, config, inputs_, history, tools=tools, state=writer.state,
                      lineage=writer)  # fmt: skip
        sink = TurnSink(exec_id, [], self._live(journal, turn_model, exec_id, descriptor, digest))
        sink.state_version = start.state.version
        return self._driver().drive(uid, instance, start, sink, journal, head + 1, legacy=False)

    # -- resume (crash recovery) -----------------------------------------------------------
    @turn_span(resumed=True)
    def resume(
        self, uid: str, *, harness: str = "", wait_seconds: float = 0.0
    ) -> TurnResult | None:
        """Complete the session's open turn, if it has one (None when it has not).

        The open turn is the trailing execution without END: cut off (a killed process) or
        failed (it ended in ERROR). Either is re-driven the same way (digest 5.4): its
        recorded effects are served in order, its ERROR events are skipped (audit only, they
        do not close an execution), a trailing MODEL_CALL without OUTPUT is invoked once
        more, and past the record everything is live. It ends with END, or with one more
        ERROR (HarnessError, exit 14) if it fails again; nothing else is appended then.
        """
        info = self._info(uid)
        turn_model = info.meta.model or self.default_model
        with self.session_writer(uid, wait_seconds) as writer:
            run = openturn.pending(writer)
            if run is None:
                return None
            name = harness or info.meta.harness or run.harness[0] or DEFAULT_HARNESS
            self.workloads.check_harness(uid, name)
            instance, descriptor = self._instance(info, name)
            return self._resume_with(writer, uid, name, instance, descriptor, turn_model, run)

    def _resume_with(
        self,
        writer: HeldWriter,
        uid: str,
        name: str,
        instance: Harness,
        descriptor: HarnessDescriptor,
        turn_model: str,
        run: executions.Execution | None = None,
    ) -> TurnResult:
        run = run or openturn.required(writer)
        run.check_complete_invocation()
        check_harness(run, name, descriptor)
        check_inherited_intent(self._info(uid), run)
        journal = _WriterJournal(writer, self.on_record)
        start = Start(
            run.id,
            run.config,
            tuple(run.messages),
            WriterHistory(writer, run.first_seq - 1),
            run.resume_from_seq,
            tools=self.workloads.offers(uid, run.workload),  # the tools it ran with
            state=openturn.state_at(self.store, writer, run.first_seq),
            lineage=writer,
        )
        sink = TurnSink(
            run.id,
            run.effects,
            self._live(journal, run.model or turn_model, run.id, descriptor, run.workload),
            legacy=run.legacy,
            state_version=start.state.version,
        )
        driver = self._driver()
        result = driver.drive(uid, instance, start, sink, journal, run.first_seq, legacy=run.legacy)
        result.resumed = True
        return result

    # -- helpers ---------------------------------------------------------------------------
    def _driver(self) -> TurnDriver:
        """The driver of one turn: its model and executor calls are counted as this
        controller's (replay's evidence)."""
        return TurnDriver(self.store, self.models, self.executor_calls)

    def describe_harness(self, name: str, project: str = "") -> tuple[Harness, HarnessDescriptor]:
        """A new instance of ``name`` as a session of ``project`` resolves it, described."""
        try:
            instance = self.harnesses.create(name, project=project)
            return instance, instance.describe()
        except AgentSessionsError:
            raise
        except Exception as exc:
            raise HarnessError(f"harness {name!r} could not be described: {exc}") from exc

    def _instance(
        self,
        info: SessionInfo,
        name: str,
        placed: tuple[Harness, HarnessDescriptor] | None = None,
    ) -> tuple[Harness, HarnessDescriptor]:
        """The harness to run: a fresh one (``placed``, when the caller made it with
        :meth:`placed`), or the runtime's live compute for a harness whose state is its
        memory (REQUIRES_MEMORY_SNAPSHOT)."""
        probe, descriptor = placed or self.placed(name, info.meta.project)
        if descriptor.capabilities.resumability != REQUIRES_MEMORY_SNAPSHOT:
            return probe, descriptor
        uid = info.uid
        if info.compute_state == "COMPUTE_COLD":
            from .lifecycle import resume_compute

            resume_compute(self, uid)
        compute = self.runtime.find(uid)
        if compute is None:
            # a harness that keeps all it needs in its working state continues on a fresh
            # compute once it has committed one: it survives losing its host
            restorable = descriptor.capabilities.working_state and info.state_version > 0
            if info.exec_seq and not restorable:
                raise UnavailableError(
                    f"session {uid}: the memory of harness {name!r} is gone (its live compute "
                    f"ended and no snapshot holds it); a {REQUIRES_MEMORY_SNAPSHOT} harness "
                    "cannot be rebuilt from the journal",
                    hint=fresh_start_hint(uid),
                    session=uid,
                )
            compute = self.runtime.create(
                uid, self.harnesses.factory(name, project=info.meta.project)
            )
        return compute.harness, descriptor

    def check_placement(self, name: str, project: str = "") -> HarnessDescriptor:
        """Refuse harness ``name`` (as a session of ``project`` resolves it) when the runtime
        cannot host it (a harness that needs memory snapshots on ``local``); its descriptor.

        The one home of the placement policy: every turn passes here (:meth:`_instance`),
        and the engine asks it before anything is written."""
        return self.placed(name, project)[1]

    def placed(self, name: str, project: str = "") -> tuple[Harness, HarnessDescriptor]:
        """A new instance of harness ``name`` (as a session of ``project`` resolves it),
        described, that this runtime can host (else PlacementError): what
        :meth:`check_placement` checks, kept for the turn it checks (:class:`Checked`)."""
        instance, descriptor = self.describe_harness(name, project)
        self.place(descriptor)
        return instance, descriptor

    def place(self, descriptor: HarnessDescriptor) -> None:
        """Refuse (PlacementError) a harness this runtime cannot host: the one home of the
        placement check (:meth:`check_placement` is it for a harness by name)."""
        if not can_place(descriptor, self.runtime.capabilities()):
            raise PlacementError(
                f"harness {descriptor.id!r} needs memory snapshots, which runtime "
                f"{self.runtime.name!r} cannot take; nothing was run",
                hint="use the warm runtime (or the default, auto)",
                param="runtime",
            )

    def _live(
        self,
        journal: _WriterJournal,
        turn_model: str,
        exec_id: str = "",
        descriptor: HarnessDescriptor | None = None,
        workload: str = "",
    ) -> Live:
        live = Live(journal, self.models, turn_model, self.on_delta)
        live.author = f"harness:{descriptor.id}" if descriptor is not None else "harness"
        # a parked turn is continued by replay: only such a harness may ask for approval
        live.approvals = descriptor is not None and (
            descriptor.capabilities.resumability == STATELESS_REPLAY
        )
        uid = journal.writer.uid
        tools = resolver_for(self.workloads, workload)
        live.tools = ToolHost(uid, tools, receipts_of(self.store), self.executor_calls)
        requests = requests_of(self.store) if exec_id else None
        if requests is not None:
            live.before_effect = request_check(requests, uid, exec_id)
        return live

    @contextmanager
    def session_writer(self, uid: str, wait_seconds: float) -> Iterator[HeldWriter]:
        """The session's writer: the held one, else a new one (waiting up to
        ``wait_seconds`` for a busy lock). It stays held after a turn that ended in order
        (END, or a failure the turn itself recorded); any other error closes it, so the
        next turn re-opens, recovers and re-validates."""
        pool = self.writers
        pool.use(uid)  # from the claim on: no other pool closes it
        try:
            writer = pool.get(uid, claim=True) or self._open_writer(uid, wait_seconds)
            try:
                yield writer
            except _TURN_ERRORS:
                pool.keep_open(writer)  # the journal is as the writer holds it
                raise
            except BaseException:
                pool.discard(writer)
                raise
            pool.keep_open(writer)
        finally:
            pool.done_using(uid)

    def _open_writer(self, uid: str, wait_seconds: float) -> HeldWriter:
        """A new writer of ``uid``, waiting up to ``wait_seconds`` for a busy lock."""
        deadline = time.monotonic() + wait_seconds
        delay = 0.01
        while True:
            try:
                return self.writers.open(uid)
            except LockHeldError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.5)
