"""The ``Sessions`` gRPC service over one long-lived engine: each RPC is one call of the
:class:`~agentsessions.sessions.api.Sessions` API, so the server is one more veneer.

Every RPC of the reference's service is mapped, and our additions (docs/WIRE.md): Follow,
ResumeStream, Rerun, Compact, Resolve, Verify, ReadToolStore, Export, Import, EnsureSession,
FindSession and ClaimSession. Invariants:

- every RPC first asks ``scope(context)`` for the Sessions it acts on (default: the engine),
  so access control wraps the engine without the service knowing it;
- every request reaching a handler decoded and has its integer fields in range
  (:mod:`agentsessions.wire.wirecheck`, an interceptor of every server we build), so no handler
  repeats those checks;
- every error leaves through :func:`agentsessions.wire.status.abort`: the status the digest lists
  for its class, its message, and the trailers our client turns back into the same exception; a
  foreign exception is logged here and answered INTERNAL without its text;
- a turn never depends on its stream: the engine runs it on its own thread, so a client that
  disconnects mid-stream leaves a turn that ends (and commits) as it would have;
- a stream that waits (Follow) wakes at least every :data:`FOLLOW_SLICE` seconds to notice a
  caller that went away or a server that is stopping.
"""

from __future__ import annotations

import functools
import logging
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import grpc

from agentsessions.errors import InvalidArgumentError
from agentsessions.server import deadline, quick
from agentsessions.server.rests import Rests
from agentsessions.server.toolpolicy import WireWorkload
from agentsessions.server.toolpolicy import workload_file as _workload_file
from agentsessions.server.updates import updates
from agentsessions.sessions.api import Sessions
from agentsessions.sessions.values import SessionFrame
from agentsessions.v1.provenance import check_identity, check_origin
from agentsessions.v1.turn import DEFAULT_PROJECT, TurnRequest
from agentsessions.wire import convert, frames, status
from agentsessions.wire.gen import common_pb2, session_pb2, session_pb2_grpc

LOG = logging.getLogger("agentsessions.server")
CHUNK = 1 << 20  # export/import chunk: well under gRPC's 4 MiB default message size
FOLLOW_SLICE = 0.5
DEFAULT_CANCEL_WAIT_MS = 10_000

R = TypeVar("R")
Handler = Callable[[Any, Any, grpc.ServicerContext], R]
Scope = Callable[[grpc.ServicerContext], Sessions]


def _fail(name: str, context: grpc.ServicerContext, exc: Exception) -> None:
    if status.status_code(exc) == grpc.StatusCode.INTERNAL:
        LOG.exception("%s failed", name)
    status.abort(context, exc)


def _rpc(method: Handler[R]) -> Handler[R]:
    """Run a unary handler; map what it raises to the RPC's status."""

    @functools.wraps(method)
    def handler(self: Any, request: Any, context: grpc.ServicerContext) -> R:
        try:
            return method(self, request, context)
        except Exception as exc:
            _fail(method.__name__, context, exc)
            raise  # not reached: abort raises

    return handler


def _stream(method: Handler[Iterator[R]]) -> Handler[Iterator[R]]:
    """Run a server-streaming handler; map what it raises (before or mid-stream)."""

    @functools.wraps(method)
    def handler(self: Any, request: Any, context: grpc.ServicerContext) -> Iterator[R]:
        try:
            yield from method(self, request, context)
        except Exception as exc:
            _fail(method.__name__, context, exc)

    return handler


def _uid(value: str, what: str = "session") -> str:
    if not value:
        raise InvalidArgumentError(f"{what} must not be empty")
    return value


def _wait(ms: int) -> float:
    """A wait_ms in seconds (its range checked on the wire: .wirecheck)."""
    return ms / 1000.0


class SessionsService(session_pb2_grpc.SessionsServicer):
    """``agentsessions.v1.Sessions`` over ``engine`` (which the caller opens and closes)."""

    def __init__(self, engine: Sessions, scope: Scope | None = None) -> None:
        self.engine = engine
        self._scope = scope
        self.rests = Rests()  # turns ExecQuick paused, until their ExecRest
        self.busy = quick.Busy()  # ExecQuick calls waiting for their turns (the window)

    def sessions(self, context: grpc.ServicerContext) -> Sessions:
        """The Sessions this RPC acts on: the scope's for the caller, else the engine."""
        return self._scope(context) if self._scope is not None else self.engine

    # -- metadata -------------------------------------------------------------------------
    @_rpc
    def CreateSession(
        self, request: session_pb2.CreateSessionRequest, context: grpc.ServicerContext
    ) -> session_pb2.Session:
        """Create an empty session from the request's metadata, harness, model and labels."""
        s = _new_session(request.session, "CreateSession")
        with _workload_file(request.tools) as tools:
            created = self.sessions(context).create(
                project=s.metadata.project or DEFAULT_PROJECT,
                name=s.metadata.name,
                harness=s.harness,
                model=s.model,
                labels=dict(s.labels),
                annotations=dict(s.annotations),
                tools=tools,
                origin=_field(s, "origin", "Origin"),
                identity=_field(s, "identity", "IdentityRef"),
            )
        return convert.session_to_proto(created)

    @_rpc
    def EnsureSession(
        self, request: session_pb2.EnsureSessionRequest, context: grpc.ServicerContext
    ) -> session_pb2.EnsureSessionResponse:
        """The live session ``key`` names in the project, created from the request's
        metadata, harness, model and labels if there is none, atomically."""
        s = _new_session(request.session, "EnsureSession")
        with _workload_file(request.tools) as tools:
            session, created = self.sessions(context).ensure(
                request.key or None,
                origin=_field(s, "origin", "Origin"),
                identity=_field(s, "identity", "IdentityRef"),
                project=s.metadata.project or DEFAULT_PROJECT,
                name=s.metadata.name,
                harness=s.harness,
                model=s.model,
                labels=dict(s.labels),
                annotations=dict(s.annotations),
                tools=tools,
            )
        return session_pb2.EnsureSessionResponse(
            session=convert.session_to_proto(session), created=created
        )

    @_rpc
    def FindSession(
        self, request: session_pb2.FindSessionRequest, context: grpc.ServicerContext
    ) -> session_pb2.FindSessionResponse:
        """The live session ``key`` (or ``origin``) names in the project; no session when
        none does."""
        engine = self.sessions(context)
        found = engine.find(
            request.key or None,
            origin=_field(request, "origin", "Origin"),
            project=request.project or DEFAULT_PROJECT,
        )
        if found is None:
            return session_pb2.FindSessionResponse()
        return session_pb2.FindSessionResponse(session=convert.session_to_proto(found))

    @_rpc
    def ClaimSession(
        self, request: session_pb2.ClaimSessionRequest, context: grpc.ServicerContext
    ) -> session_pb2.ClaimSessionResponse:
        """Make ``key`` name session ``uid`` unless it names a live one: the uid it names."""
        uid = self.sessions(context).claim(
            request.key, _uid(request.uid, "uid"), project=request.project or DEFAULT_PROJECT
        )
        return session_pb2.ClaimSessionResponse(uid=uid)

    @_rpc
    def GetSession(
        self, request: session_pb2.GetSessionRequest, context: grpc.ServicerContext
    ) -> session_pb2.Session:
        """The session (deleted ones too): empty uid INVALID_ARGUMENT, unknown NOT_FOUND."""
        return convert.session_to_proto(self.sessions(context).get(_uid(request.uid, "uid")))

    @_rpc
    def ListSessions(
        self, request: session_pb2.ListSessionsRequest, context: grpc.ServicerContext
    ) -> session_pb2.ListSessionsResponse:
        """One page of a project's sessions, newest first (page_size 0 = the default)."""
        engine = self.sessions(context)  # page_size in range: .wirecheck
        page = engine.list(
            project=request.project or DEFAULT_PROJECT,
            page_size=request.page_size or 50,
            cursor=request.page_token or None,
        )
        # the sessions the store could not index (the scope shows them to the operator only:
        # their project is unknown)
        damaged = getattr(engine, "unindexed", None)
        return session_pb2.ListSessionsResponse(
            sessions=[convert.session_to_proto(s) for s in page.sessions],
            next_page_token=page.next_cursor,
            not_listed=[str(getattr(e, "message", e)) for e in damaged or ()],
        )

    @_rpc
    def DeleteSession(
        self, request: session_pb2.DeleteSessionRequest, context: grpc.ServicerContext
    ) -> session_pb2.Session:
        """Soft-delete: hidden from lists, never written again; reads still work."""
        return convert.session_to_proto(self.sessions(context).delete(_uid(request.uid, "uid")))

    # -- turns ----------------------------------------------------------------------------
    @_stream
    def Exec(
        self, request: session_pb2.ExecRequest, context: grpc.ServicerContext
    ) -> Iterator[session_pb2.ExecUpdate]:
        """One turn: the session frame first, then records and deltas as they commit, the
        session last (AWAITING with its pending approval when the turn parks)."""
        # every integer field is in range (.wirecheck); a past deadline runs nothing
        left = deadline.check_admission(request.deadline_unix)
        engine = self.sessions(context)
        with _workload_file(request.tools) as tools:  # expected_last_seq: the engine's CAS
            stream = engine.exec(_turn_request(request, tools))
        timer = deadline.Deadline(engine, left) if left is not None else None
        try:
            yield from updates(engine, stream, context, timer, batched=request.batched)
        finally:
            if timer is not None:
                timer.close()

    @_rpc
    def ExecQuick(
        self, request: session_pb2.ExecRequest, context: grpc.ServicerContext
    ) -> session_pb2.ExecQuickResponse:
        """One turn in one reply when it ends within the quick window, else its first
        frames and the id of its rest (ExecRest); records as committed bytes (:mod:`.quick`)."""
        left = deadline.check_admission(request.deadline_unix)
        engine = self.sessions(context)
        with _workload_file(request.tools) as tools:
            stream = engine.exec(_turn_request(request, tools))
        timer = deadline.Deadline(engine, left) if left is not None else None
        return quick.reply(engine, stream, context, timer, self.rests, self.busy)

    @_stream
    def ExecRest(
        self, request: session_pb2.ExecRestRequest, context: grpc.ServicerContext
    ) -> Iterator[session_pb2.ExecUpdate]:
        """The rest of a turn ExecQuick paused, as Exec would have streamed it."""
        yield from quick.rest(request, context, self.rests)

    @_stream
    def ResumeStream(
        self, request: session_pb2.ResumeRequest, context: grpc.ServicerContext
    ) -> Iterator[session_pb2.ExecUpdate]:
        """Resume with the turn's frames, as Exec streams them."""
        engine = self.sessions(context)
        stream = engine.resume(
            _uid(request.session), harness=request.harness or None, wait=_wait(request.wait_ms)
        )
        yield from updates(engine, stream, context, batched=request.batched)

    @_rpc
    def Resume(
        self, request: session_pb2.ResumeRequest, context: grpc.ServicerContext
    ) -> session_pb2.Session:
        """Wake suspended compute, complete an open turn; the session after it."""
        engine = self.sessions(context)
        stream = engine.resume(
            _uid(request.session), harness=request.harness or None, wait=_wait(request.wait_ms)
        )
        last = None
        for update in updates(engine, stream, context):
            last = update
        assert last is not None and last.HasField("session")  # a turn ends with its session
        return last.session

    @_rpc
    def Compact(
        self, request: session_pb2.CompactRequest, context: grpc.ServicerContext
    ) -> session_pb2.ExecUpdate:
        """Summarise the turns before the last ``keep_turns``: its last session frame."""
        frame = self.sessions(context).compact(
            _uid(request.session),
            keep_turns=request.keep_turns,
            model=request.model or None,
        )
        return frames.frame_to_update(frame)

    # -- reading --------------------------------------------------------------------------
    @_stream
    def Replay(
        self, request: session_pb2.ReplayRequest, context: grpc.ServicerContext
    ) -> Iterator[common_pb2.LogRecord]:
        """The stored records ``from_seq..to_seq`` (0 = 1 and the head), read only."""
        records = self.sessions(context).read(
            _uid(request.session), from_seq=request.from_seq or 1, to_seq=request.to_seq
        )
        for record in records:
            yield convert.record_to_proto(record)

    @_stream
    def Follow(
        self, request: session_pb2.FollowRequest, context: grpc.ServicerContext
    ) -> Iterator[common_pb2.LogRecord]:
        """Every record from ``from_seq``, then each new one, until the caller cancels or
        ``idle_timeout_ms`` passes without one."""
        engine, uid = self.sessions(context), _uid(request.session)
        idle = request.idle_timeout_ms / 1000.0 if request.idle_timeout_ms else None
        next_seq, last_record = request.from_seq or 1, time.monotonic()
        # followed in slices: between them the handler sees a caller gone or a server stopping
        while context.is_active():
            for record in engine.follow(uid, from_seq=next_seq, idle_timeout=FOLLOW_SLICE):
                yield convert.record_to_proto(record)
                next_seq, last_record = record.seq + 1, time.monotonic()
            if idle is not None and time.monotonic() - last_record >= idle:
                return

    @_rpc
    def Rerun(
        self, request: session_pb2.RerunRequest, context: grpc.ServicerContext
    ) -> session_pb2.ReplayReport:
        """Re-drive every turn from the journal (zero model calls) and report it."""
        report = self.sessions(context).rerun(
            _uid(request.session), harness=request.harness or None
        )
        return frames.replay_report_to_proto(report)

    @_rpc
    def Verify(
        self, request: session_pb2.VerifyRequest, context: grpc.ServicerContext
    ) -> session_pb2.VerifyReport:
        """Walk the session's chain and metadata; the report names the first bad seq."""
        report = self.sessions(context).verify(_uid(request.session), strict=request.strict)
        return frames.verify_to_proto(report)

    @_rpc
    def ReadToolStore(
        self, request: session_pb2.ToolStoreRequest, context: grpc.ServicerContext
    ) -> session_pb2.ToolStoreResponse:
        """The entries of a tool's own store in a session."""
        entries = self.sessions(context).tool_store(
            _uid(request.session), request.tool, from_seq=request.from_seq or 1
        )
        return session_pb2.ToolStoreResponse(entries=[frames.entry_to_proto(e) for e in entries])

    # -- decisions and lifecycle ----------------------------------------------------------
    @_rpc
    def Approve(
        self, request: session_pb2.ApproveRequest, context: grpc.ServicerContext
    ) -> session_pb2.ApproveResponse:
        """Commit the decision only (the reference's semantics); Resume runs the turn on."""
        if not request.HasField("approved"):
            raise InvalidArgumentError(
                "approved must be set: a decision must be explicit",
                hint="set approved to true (approve) or false (deny)",
            )
        done = self.sessions(context).approve(
            _uid(request.session),
            approved=request.approved,
            reason=request.reason,
            actor=request.identity.principal,
            execution_id=request.execution_id or None,
            tool_call_id=request.tool_call_id or None,
            request_seq=request.request_seq or None,
        )
        return session_pb2.ApproveResponse(
            session=convert.session_to_proto(done.session),
            decision=convert.record_to_proto(done.decision),
            request=frames.ref_to_proto(done.ref),
            existing=done.existing,
        )

    @_rpc
    def Resolve(
        self, request: session_pb2.ResolveRequest, context: grpc.ServicerContext
    ) -> session_pb2.ResolveResponse:
        """Settle an unresolved tool call, then resume (unless ``no_resume``)."""
        done = self.sessions(context).resolve(
            _uid(request.session),
            call_id=request.call_id,
            result=frames.unstruct(request.result) if request.HasField("result") else None,
            failed=request.failed if request.HasField("failed") else None,
            actor=request.actor,
            resume=not request.no_resume,
        )
        out = session_pb2.ResolveResponse(
            session=convert.session_to_proto(done.session),
            call=frames.call_to_proto(done.call),
            result=frames.struct(done.result),
        )
        if done.turn is not None:
            out.turn.CopyFrom(frames.frame_to_update(SessionFrame(done.session, done.turn)))
        return out

    @_rpc
    def Cancel(
        self, request: session_pb2.CancelRequest, context: grpc.ServicerContext
    ) -> session_pb2.Session:
        """End the open execution as CANCELED (implemented, unlike the reference): one
        that is not ``execution_id`` (when set) is FAILED_PRECONDITION, nothing written;
        ``reason`` is recorded in the LIFECYCLE_CANCEL detail."""
        wait_ms = request.wait_ms if request.HasField("wait_ms") else DEFAULT_CANCEL_WAIT_MS
        done = self.sessions(context).cancel(
            _uid(request.session),
            wait=_wait(wait_ms),
            reason=request.reason,
            execution_id=request.execution_id,
        )
        return convert.session_to_proto(done)

    @_rpc
    def Suspend(
        self, request: session_pb2.SuspendRequest, context: grpc.ServicerContext
    ) -> session_pb2.Session:
        """Snapshot and free the session's compute (COLD); idempotent."""
        return convert.session_to_proto(self.sessions(context).suspend(_uid(request.session)))

    @_rpc
    def Fork(
        self, request: session_pb2.ForkRequest, context: grpc.ServicerContext
    ) -> session_pb2.ForkResponse:
        """Branch after ``at_seq`` (0 = head) into ``count`` children, all or nothing."""
        if request.HasField("identity"):
            raise InvalidArgumentError("identity must be unset on ForkRequest")
        names = list(request.child_names)
        if names and len(names) != request.count:
            raise InvalidArgumentError(
                f"child_names has {len(names)} names for count {request.count}",
                hint="give no names or exactly one per child",
            )
        children = self.sessions(context).fork(
            _uid(request.session),
            at=request.at_seq,
            count=request.count,
            names=names,
            labels=dict(request.labels),
        )
        return session_pb2.ForkResponse(children=[convert.session_to_proto(c) for c in children])

    # -- exchange -------------------------------------------------------------------------
    @_stream
    def Export(
        self, request: session_pb2.ExportRequest, context: grpc.ServicerContext
    ) -> Iterator[session_pb2.ExportChunk]:
        """The session as one portable file, in chunks; the last carries the summary."""
        engine, uid = self.sessions(context), _uid(request.session)
        with tempfile.TemporaryDirectory(prefix="agentsessions-export-") as tmp:
            path = Path(tmp) / "session.agx"
            summary = engine.export(uid, path, compress=not request.uncompressed)
            with path.open("rb") as f:
                while chunk := f.read(CHUNK):
                    yield session_pb2.ExportChunk(data=chunk)
        yield session_pb2.ExportChunk(summary=frames.struct(_jsonable(summary)))

    @_rpc
    def Import(
        self, request_iterator: Iterator[session_pb2.ImportChunk], context: grpc.ServicerContext
    ) -> session_pb2.Session:
        """Recreate a session from the file streamed in, with identical seqs and hashes."""
        engine = self.sessions(context)
        project = name = None
        with tempfile.TemporaryDirectory(prefix="agentsessions-import-") as tmp:
            path = Path(tmp) / "session.agx"
            with path.open("wb") as f:
                for i, chunk in enumerate(request_iterator):
                    if i == 0:
                        project = chunk.project if chunk.HasField("project") else None
                        name = chunk.name if chunk.HasField("name") else None
                    f.write(chunk.data)
            return convert.session_to_proto(engine.import_(path, project=project, name=name))


def _jsonable(value: Any) -> Any:
    """A summary as a Struct can hold it (paths and tuples as strings and lists)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def add_to_server(
    server: grpc.Server, engine: Sessions, scope: Scope | None = None
) -> SessionsService:
    """Serve ``engine`` as ``agentsessions.v1.Sessions`` on ``server``."""
    service = SessionsService(engine, scope)
    session_pb2_grpc.add_SessionsServicer_to_server(service, server)  # type: ignore[no-untyped-call]
    return service


def _new_session(s: session_pb2.Session, rpc: str) -> session_pb2.Session:
    """``s``, the template of a session to create: INVALID_ARGUMENT when it sets what the
    server assigns (the uid) or what a create may not set (compute)."""
    if s.metadata.uid:
        raise InvalidArgumentError(
            "session.metadata.uid is assigned by the server", hint="leave it empty"
        )
    if s.HasField("compute"):
        raise InvalidArgumentError(f"session.compute cannot be set by {rpc}")
    return s


def _field(msg: Any, name: str, message: str) -> dict[str, Any] | None:
    """Message field ``name`` of ``msg`` (a ``message``) as proto3 JSON, None when unset."""
    return convert.from_proto(getattr(msg, name), message, name) if msg.HasField(name) else None


def _actors(request: session_pb2.ExecRequest) -> tuple[dict[str, Any], ...]:
    """The authors of an ExecRequest's inputs (``{}`` for none; empty when none has one)."""
    actors = tuple(convert.from_proto(a, "IdentityRef", "actor") for a in request.input_actors)
    return actors if any(actors) else ()


def _turn_request(request: session_pb2.ExecRequest, tools: WireWorkload | None) -> TurnRequest:
    """The turn an ExecRequest asks for (``tools``: its workload, written to a file)."""
    return TurnRequest(
        request.session or None,
        tuple(convert.message_from_proto(m) for m in request.inputs),
        harness=request.harness,
        model=request.model,
        config=request.config,
        wait=_wait(request.wait_ms),
        project=request.project or DEFAULT_PROJECT,
        name=request.name,
        labels=dict(request.labels),
        fresh_start=request.fresh_start,
        tools=tools or "",
        expected_last_seq=(
            request.expected_last_seq if request.HasField("expected_last_seq") else None
        ),
        commit_id=request.commit_id,
        durability=request.durability,
        actors=_actors(request),
        origin=check_origin(origin) if (origin := _field(request, "origin", "Origin")) else None,
        identity=check_identity(_field(request, "identity", "IdentityRef")),
    )
