"""The engine as one caller may see it: a :class:`~agentsessions.sessions.api.Sessions`
bound to a principal's projects and to the server's request bounds.

:class:`ScopedSessions` implements the whole Protocol by delegation (a test enumerates the
Protocol so that a new method cannot be left unscoped):

- ``list``, ``create``, ``import_``, ``ensure``, ``find``, ``claim`` and an ``exec``/``run``
  that creates a session act only in the principal's projects (a key is per project, so a
  token never reaches another project's session by its key): another project is
  PERMISSION_DENIED (the caller named it, so saying no leaks nothing); ``"default"``
  (what a request naming no project arrives as) means the token's first project when the
  token does not cover ``default`` itself;
- every uid-addressed method looks up the session's project first, in the store's index
  before any session read, and answers a session of another project exactly as an unknown
  uid: NOT_FOUND with the engine's own message, by the same path (so in the same time), so
  a token cannot learn which uids exist elsewhere (PERMISSION_DENIED would confirm them);
  a fork's children are made by the engine in the parent's project, so they stay in it;
- ``approve``/``resolve`` record the principal's identity as the actor. A client-sent actor
  is ignored, not refused: clients fill one in by default (our CLI sends the login name), and
  the recorded decision, which the reply carries, shows whom it was recorded as. So with a
  turn's inputs (each INPUT's actor) and a new session's identity: the token's identity is
  recorded, unless the operator minted the token with ``name_authors`` (a producer relaying
  others' words), whose authors are recorded as it names them;
- ``tools`` (a workload as its text crossed the wire) is, for a token, made into the
  effective workload by the operator's offered tools (``serve --tools``,
  :func:`~.toolpolicy.caller_tools`): a caller selects, the operator defines; a path that is
  not the service's own file is refused. ``export``/``import_`` paths are the service's own
  (it streams the bytes), never a client's;
- page size and fork count are bounded (:class:`~agentsessions.wire.bounds.Limits`) before the
  engine is called;
- a model a token holder names is one the operator offers (:mod:`.modelpolicy`), checked
  before the engine is called, and every model its turns reach is checked again as they
  make it (the policy is the engine's model guard for the call).

The principal ``projects=None`` (a listener started without auth) keeps the bounds only.
The scope never closes the engine: it is the server's, shared by every call.
"""

from __future__ import annotations

import builtins
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, Unpack

from agentsessions.errors import (
    MetadataCorruptError,
    NotFoundError,
    PermissionDeniedError,
    UnauthenticatedError,
)
from agentsessions.server.admission import exhausted
from agentsessions.server.modelpolicy import ModelPolicy
from agentsessions.server.toolpolicy import caller_tools
from agentsessions.sessions.projects import project_lookup
from agentsessions.sessions.tokens import Principal
from agentsessions.sessions.turnstream import TURN_ENDED
from agentsessions.v1.turn import DEFAULT_PROJECT as DEFAULT_PROJECT  # (re-exported)
from agentsessions.v1.turn import TurnOptions, TurnRequest
from agentsessions.wire.bounds import Limits
from agentsessions.wire.intercept import note

if TYPE_CHECKING:
    import grpc

    from agentsessions.sessions.api import Sessions
    from agentsessions.sessions.values import (
        Approval,
        Frame,
        Input,
        LogRecord,
        Resolution,
        Session,
        SessionFrame,
        SessionPage,
        VerifyReport,
    )
    from agentsessions.tools.offered import OfferedTools
    from agentsessions.v1.results import ReplayReport, ToolStoreEntry

_P = ParamSpec("_P")
_T = TypeVar("_T")
_CHECKED_SIZE = 4096


class Scope:
    """``scope(context)`` for ``build_server``: the engine bound to the call's principal.

    A uid's project comes from the engine's index (:func:`~agentsessions.sessions.projects.
    project_lookup`), asked afresh on every call: no cache, since a cache that remembers
    the sessions it saw would answer a known uid faster than an unknown one (the index
    lookup is one B-tree read, about as cheap as a cache miss would be anyway). A session a
    token may reach has its metadata read whole once (:meth:`checked`) before the token acts
    on it: a damaged one is then an unknown uid.
    """

    def __init__(
        self,
        engine: Sessions,
        principal: Callable[[], Principal | None],
        limits: Limits | None = None,
        offered: OfferedTools | None = None,
        models: ModelPolicy | None = None,
    ) -> None:
        self.engine = engine
        self.limits = limits or Limits()
        self.offered = offered  # the operator's tools (serve --tools): what a token may select
        self.models = models or ModelPolicy()  # what a token holder may name
        self._principal = principal
        self._lookup = project_lookup(engine)
        self._checked: OrderedDict[str, None] = OrderedDict()
        self._turns: dict[str, int] = {}  # a token's turns running on the engine
        self._mutex = threading.Lock()

    def __call__(self, context: grpc.ServicerContext | None = None) -> ScopedSessions:
        """The engine as the current call's principal sees it (UNAUTHENTICATED without one:
        a scope reached without its interceptor fails closed)."""
        principal = self._principal()
        if principal is None:
            raise UnauthenticatedError("no authenticated principal for this call")
        return ScopedSessions(self, principal)

    def turn_slot(self, principal: Principal) -> Callable[[], None]:
        """Count one turn of ``principal``'s token, or refuse it at ``max_turns_per_token``
        (:func:`~.admission.exhausted`); the function (idempotent) that gives it back. The admission
        interceptor counts a turn's RPC; this counts the turn itself, which goes on when
        its caller goes away (a cancelled Exec must not free its token a turn)."""
        key, limit = principal.token_id or principal.name, self.limits.max_turns_per_token
        with self._mutex:
            held = self._turns.get(key, 0)
            if held >= limit:
                raise exhausted(
                    f"too many turns in flight for this token ({held} of {limit})",
                    "max_turns_per_token",
                    limit,
                    "wait for a turn to end",
                )
            self._turns[key] = held + 1
        done = threading.Event()

        def release() -> None:
            with self._mutex:
                if done.is_set():
                    return
                done.set()
                left = self._turns[key] - 1
                if left:
                    self._turns[key] = left
                else:
                    del self._turns[key]

        return release

    def turns_in_flight(self, principal: Principal) -> int:
        """How many turns ``principal``'s token has running on the engine now."""
        with self._mutex:
            return self._turns.get(principal.token_id or principal.name, 0)

    def project_of(self, uid: str) -> str | None:
        """``uid``'s project from the index, None when no session has it (nothing read)."""
        return self._lookup(uid)

    def checked(self, uid: str) -> bool:
        """Whether ``uid``'s metadata was read whole since this server started (only the
        sessions a token may reach are noted: the refused path stays the same for a uid of
        another project and an unknown one)."""
        with self._mutex:
            if uid in self._checked:
                self._checked.move_to_end(uid)
                return True
            return False

    def note_checked(self, uid: str) -> None:
        """Note that ``uid``'s metadata read whole (a bounded memory of them)."""
        with self._mutex:
            self._checked[uid] = None
            while len(self._checked) > _CHECKED_SIZE:
                self._checked.popitem(last=False)


def _hidden(uid: str) -> NotFoundError:
    """What an unknown uid gets from the store, word for word: another project's session
    must be indistinguishable from none."""
    return NotFoundError(f"session {uid} not found", hint="agentsessions list", session=uid)


def choose_project(principal: Principal, project: str) -> str:
    """The project a request of ``principal`` naming ``project`` acts in: the one named if
    the principal covers it, the token's first for none (or ``default``), else
    PermissionDeniedError (the sessions' rule; the harness registry's too)."""
    p = principal
    if p.projects is None or project in p.projects:
        note(project=project)
        return project
    if project in ("", DEFAULT_PROJECT):
        note(project=p.primary)
        return p.primary
    raise PermissionDeniedError(
        f"{p.name} may not act in project {project!r}",
        hint=f"its token covers: {', '.join(sorted(p.projects))}",
        project=project,
    )


class ScopedSessions:
    """:class:`Sessions` through one principal's eyes (see the module docstring)."""

    def __init__(self, scope: Scope, principal: Principal) -> None:
        self._scope = scope
        self._engine = scope.engine
        self._limits = scope.limits
        self.principal = principal

    # -- the checks --------------------------------------------------------------------
    def _project(self, project: str) -> str:
        """The project a list or create acts in, or PermissionDeniedError."""
        return choose_project(self.principal, project)

    def _check(self, uid: str) -> str:
        """``uid`` if its session is in the principal's projects, else NOT_FOUND: an unknown
        uid and another project's take this same path (one index lookup, this test, this
        error), before any session is read."""
        note(session=uid)  # the operator's log line (.observe), an unknown uid's too
        project = self._unless_damaged(uid, lambda: self._scope.project_of(uid))
        if project is None or not self.principal.allows(project):
            raise _hidden(uid)
        if self.principal.projects is not None and not self._scope.checked(uid):
            # the index is a copy of its own; the session's metadata must agree and be whole
            # before a token acts on it (damage is an unknown uid, as the index cannot say)
            self._unless_damaged(uid, lambda: self._engine.get(uid))
            self._scope.note_checked(uid)
        note(project=project)
        return uid

    def _unless_damaged(self, uid: str, call: Callable[[], _T]) -> _T:
        """``call()``; for a token holder, a session whose metadata is damaged is an
        unknown uid: its project is unknown, so no token may learn that it exists."""
        try:
            return call()
        except MetadataCorruptError:
            if self.principal.projects is None:
                raise
            raise _hidden(uid) from None

    def _seen(self, session: Session) -> Session:
        note(session=session.uid, project=session.project)
        return session

    def _actor(self, actor: str) -> str:
        """The actor to record: the token's identity (a client's claim is ignored)."""
        return actor if self.principal.projects is None else self.principal.name

    def _identity(self, identity: Mapping[str, str] | None) -> Mapping[str, str] | None:
        """A new session's creator to record: the token's identity for a token holder that
        may not name authors (a client's claim is ignored, as for the actor), else the
        caller's."""
        if self.principal.projects is None or self.principal.names_authors:
            return identity
        return self.principal.identity

    def _actors(self, request: TurnRequest) -> tuple[Mapping[str, str], ...]:
        """The authors to record on a turn's inputs: for a token holder that may not name
        authors, the token's identity on every input (whatever the client sent)."""
        if self.principal.projects is None or self.principal.names_authors:
            return request.actors
        return (self.principal.identity,) * len(request.inputs)

    def _tools(self, tools: str | PathLike[str] | None) -> str | PathLike[str] | None:
        return caller_tools(self.principal, self._scope.offered, tools)

    def _model(self, model: str | None) -> str | None:
        """``model`` if this principal may name it (:mod:`.modelpolicy`)."""
        if self.principal.projects is not None:
            self._scope.models.check(model)
        return model

    def _guarded(self, call: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """``call(*args, **kwargs)``, a call that may start a turn, for a token holder: the
        engine checks every model its turn makes or calls (a turn's thread, started within,
        copies the check), and the turn counts against the token's turns in flight until
        it has ended on the engine (:meth:`Scope.turn_slot`), not until the call ends."""
        if self.principal.projects is None:
            return call(*args, **kwargs)
        release = self._scope.turn_slot(self.principal)
        mark = TURN_ENDED.set(release)
        try:
            with self._scope.models.guarding():
                return call(*args, **kwargs)
        finally:
            if TURN_ENDED.get() is release:  # no turn took it: the call started none
                release()
            TURN_ENDED.reset(mark)

    # -- the Protocol ------------------------------------------------------------------
    def create(
        self,
        *,
        project: str = DEFAULT_PROJECT,
        name: str = "",
        harness: str = "",
        model: str = "",
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        tools: str | PathLike[str] | None = None,
        origin: Mapping[str, Any] | None = None,
        identity: Mapping[str, str] | None = None,
    ) -> Session:
        """Create in one of the principal's projects."""
        return self._seen(
            self._engine.create(
                project=self._project(project),
                name=name,
                harness=harness,
                model=self._model(model) or "",
                labels=labels,
                annotations=annotations,
                tools=self._tools(tools),
                origin=origin,
                identity=self._identity(identity),
            )
        )

    def ensure(
        self,
        key: str | None = None,
        *,
        origin: Mapping[str, Any] | None = None,
        identity: Mapping[str, str] | None = None,
        project: str = DEFAULT_PROJECT,
        name: str = "",
        harness: str = "",
        model: str = "",
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        tools: str | PathLike[str] | None = None,
    ) -> tuple[Session, bool]:
        """Find or create by key in one of the principal's projects (a key is per project,
        so another project's session of the same key is never reached)."""
        session, created = self._engine.ensure(
            key,
            origin=origin,
            identity=self._identity(identity),
            project=self._project(project),
            name=name,
            harness=harness,
            model=self._model(model) or "",
            labels=labels,
            annotations=annotations,
            tools=self._tools(tools),
        )
        return self._seen(session), created

    def find(
        self,
        key: str | None = None,
        *,
        origin: Mapping[str, Any] | None = None,
        project: str = DEFAULT_PROJECT,
    ) -> Session | None:
        """Find by key (or origin) in one of the principal's projects."""
        found = self._engine.find(key, origin=origin, project=self._project(project))
        return self._seen(found) if found is not None else None

    def claim(self, key: str, uid: str, *, project: str = DEFAULT_PROJECT) -> str:
        """Bind a key of one of the principal's projects to a session it may reach."""
        return self._engine.claim(key, self._check(uid), project=self._project(project))

    @property
    def unindexed(self) -> builtins.list[Any]:
        """The sessions the store could not index, for the operator only: their project is
        unknown, so a project-scoped principal sees none."""
        if self.principal.projects is not None:
            return []
        return builtins.list(getattr(self._engine, "unindexed", ()))

    def get(self, uid: str) -> Session:
        """The session, if in the principal's projects (else NOT_FOUND)."""
        return self._seen(self._engine.get(self._check(uid)))

    def list(
        self, *, project: str = DEFAULT_PROJECT, page_size: int = 50, cursor: str | None = None
    ) -> SessionPage:
        """A page of one of the principal's projects; page size bounded. A token holder
        gets no row of damaged metadata (its project is unknown: listed as "")."""
        page = self._engine.list(
            project=self._project(project),
            page_size=self._limits.page_size(page_size),
            cursor=cursor,
        )
        if self.principal.projects is None:
            return page
        rows = tuple(s for s in page.sessions if self.principal.allows(s.project))
        return replace(page, sessions=rows)

    def delete(self, uid: str) -> Session:
        """Soft-delete a session of the principal's projects."""
        return self._engine.delete(self._check(uid))

    def _scoped(self, request: TurnRequest) -> TurnRequest:
        """``request`` as this principal may make it: a session of its projects (or a new
        one in one), a model it may name, the tools the operator offers it."""
        uid, project = request.uid, request.project
        if uid is None:
            project = self._project(project)
        else:
            uid = self._check(uid)
        model = self._model(request.model or None) or ""
        tools = self._tools(request.tools or None) or ""
        return replace(
            request, uid=uid, project=project, model=model, tools=tools,
            identity=self._identity(request.identity), actors=self._actors(request),
        )  # fmt: skip

    def exec(
        self,
        uid: str | TurnRequest | None = None,
        inputs: Sequence[Input] = (),
        **options: Unpack[TurnOptions],
    ) -> Iterator[Frame]:
        """A turn on a session of the principal's (or a new one in its project); checked
        before the first frame."""
        request = self._scoped(TurnRequest.of(uid, inputs, **options))
        return self._guarded(self._engine.exec, request)

    def run(
        self,
        uid: str | TurnRequest | None = None,
        inputs: Sequence[Input] = (),
        **options: Unpack[TurnOptions],
    ) -> SessionFrame:
        """:meth:`exec` without streaming, scoped the same way."""
        request = self._scoped(TurnRequest.of(uid, inputs, **options))
        frame = self._guarded(self._engine.run, request)
        self._seen(frame.session)
        return frame

    def resume(self, uid: str, *, harness: str | None = None, wait: float = 0.0) -> Iterator[Frame]:
        """Resume a session of the principal's projects."""
        return self._guarded(self._engine.resume, self._check(uid), harness=harness, wait=wait)

    def compact(self, uid: str, *, keep_turns: int = 2, model: str | None = None) -> SessionFrame:
        """Compact a session of the principal's projects."""
        return self._guarded(
            self._engine.compact, self._check(uid), keep_turns=keep_turns, model=self._model(model)
        )

    def suspend(self, uid: str) -> Session:
        """Suspend a session of the principal's projects."""
        return self._engine.suspend(self._check(uid))

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
        """Decide an approval, recorded as the principal's identity."""
        return self._guarded(  # an approval may let its turn go on
            self._engine.approve,
            self._check(uid),
            approved=approved,
            reason=reason,
            actor=self._actor(actor),
            execution_id=execution_id,
            tool_call_id=tool_call_id,
            request_seq=request_seq,
        )

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
        """Resolve an unresolved call, recorded as the principal's identity."""
        return self._guarded(  # a resolution may resume its turn
            self._engine.resolve,
            self._check(uid),
            call_id=call_id,
            result=result,
            failed=failed,
            actor=self._actor(actor),
            resume=resume,
        )

    def fork(
        self,
        uid: str,
        *,
        at: int = 0,
        count: int = 1,
        names: Sequence[str] = (),
        labels: Mapping[str, str] | None = None,
    ) -> builtins.list[Session]:
        """Fork a session of the principal's; the children are in its project."""
        self._limits.fork_count(count, names)
        children = self._engine.fork(
            self._check(uid), at=at, count=count, names=names, labels=labels
        )
        return [self._seen(child) for child in children]

    def replay(self, uid: str, *, from_seq: int = 1) -> Iterator[LogRecord]:
        """Replay a session of the principal's projects."""
        return self._engine.replay(self._check(uid), from_seq=from_seq)

    def rerun(self, uid: str, *, harness: str | None = None) -> ReplayReport:
        """Re-drive a session of the principal's projects from its journal."""
        return self._engine.rerun(self._check(uid), harness=harness)

    def cancel(
        self, uid: str, *, wait: float = 10.0, reason: str = "", execution_id: str = ""
    ) -> Session:
        """Cancel a turn of a session of the principal's projects."""
        return self._engine.cancel(
            self._check(uid), wait=wait, reason=reason, execution_id=execution_id
        )

    def follow(
        self, uid: str, *, from_seq: int = 1, idle_timeout: float | None = None
    ) -> Iterator[LogRecord]:
        """Follow a session of the principal's projects."""
        return self._engine.follow(self._check(uid), from_seq=from_seq, idle_timeout=idle_timeout)

    def read(self, uid: str, *, from_seq: int = 1, to_seq: int = 0) -> Iterator[LogRecord]:
        """Read a session of the principal's projects."""
        return self._engine.read(self._check(uid), from_seq=from_seq, to_seq=to_seq)

    def verify(self, uid: str, *, strict: bool = False, progress: Any = None) -> VerifyReport:
        """Verify a session of the principal's projects."""
        return self._engine.verify(self._check(uid), strict=strict, progress=progress)

    def tool_store(
        self, uid: str, tool: str, *, from_seq: int = 1
    ) -> builtins.list[ToolStoreEntry]:
        """A tool store of a session of the principal's projects."""
        return self._engine.tool_store(self._check(uid), tool, from_seq=from_seq)

    def export(
        self, uid: str, path: Path, *, compress: bool = True, progress: Any = None
    ) -> dict[str, Any]:
        """Export a session of the principal's projects (to a path the service chose)."""
        return self._engine.export(self._check(uid), path, compress=compress, progress=progress)

    def import_(
        self,
        path: Path,
        *,
        project: str | None = None,
        name: str | None = None,
        progress: Any = None,
    ) -> Session:
        """Import into one of the principal's projects (the file's own project only when
        the principal covers every project)."""
        if project is not None or self.principal.projects is not None:
            project = self._project(project or DEFAULT_PROJECT)
        return self._seen(self._engine.import_(path, project=project, name=name, progress=progress))

    def close(self) -> None:
        """Nothing: the engine is the server's, shared by every call."""

    def __enter__(self) -> ScopedSessions:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
