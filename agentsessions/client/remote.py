"""The ``Sessions`` Protocol over gRPC (``agentsessions.v1.Sessions`` and our additions).

Invariants, the same as the local engine's so callers cannot tell them apart:
- every failed call raises the exception of our tree the server raised (its class, message,
  hint and fields ride in trailers, :mod:`agentsessions.wire.status`); a transport failure
  is UnavailableError naming the address;
- ``exec``/``resume`` start the turn when called (a refused request raises there, nothing
  written) and return its frames; closing the frames early waits for the turn's end, as
  the local engine's do: the rest of the stream is read, so END is durable when it returns;
- reads (``replay``, ``read``) raise NotFoundError when called; ``follow`` when iterated;
- a file argument (``tools``, ``export``'s path, ``import_``'s file) is read or written here,
  on the client's side; the server never sees a client path.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator, Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any, TypeVar, Unpack

import grpc

from agentsessions.client.bykey import ByKey, provenance, template
from agentsessions.client.turns import (
    LastSession,
    parking,
    patient,
    quick_turn,
    started,
    unbatched,
)
from agentsessions.client.workloads import tools_text
from agentsessions.errors import (
    AgentSessionsError,
    InvalidArgumentError,
    MetadataCorruptError,
    UnavailableError,
)
from agentsessions.sessions.values import (
    Approval,
    Frame,
    Input,
    LogRecord,
    Resolution,
    Session,
    SessionFrame,
    SessionPage,
)
from agentsessions.v1.results import ReplayReport, ToolStoreEntry, VerifyReport
from agentsessions.v1.turn import SessionOptions, TurnOptions, TurnRequest
from agentsessions.wire import convert, frames, status
from agentsessions.wire.gen import session_pb2, session_pb2_grpc

T = TypeVar("T")
CHUNK = 1 << 20
DEFAULT_CANCEL_WAIT = 10.0


def _unreachable_hint(message: str, secure: bool) -> str:
    """What to check when the server cannot be reached: a plain client whose connection
    was closed (not refused) most likely met a TLS server, so the hint names --tls-ca."""
    nobody = any(why in message for why in ("Connection refused", "No such file"))
    if secure or nobody:
        return "is `agentsessions serve` running there? (--server, $AGENTSESSIONS_SERVER)"
    return (
        "a server that serves TLS needs --tls-ca CA.pem (its CA; with --tls-cert and "
        "--tls-key if it asks for a client certificate); else is `agentsessions serve` "
        "running there?"
    )


class RemoteSessions:
    """The :class:`~agentsessions.sessions.api.Sessions` Protocol over one gRPC channel."""

    def __init__(
        self, channel: grpc.Channel, address: str, *, token: str | None = None, secure: bool = False
    ) -> None:
        self.channel = channel
        self.address = address
        self.secure = secure  # a TLS channel (a plain one to a TLS port is told --tls-ca)
        self._stub = session_pb2_grpc.SessionsStub(channel)  # type: ignore[no-untyped-call]
        self._metadata = (("authorization", f"Bearer {token}"),) if token else ()
        self.by_key = ByKey(self._stub, self.unary)  # ensure, find and claim
        self._quick_served = True  # ExecQuick, until a server answers UNIMPLEMENTED
        self._sessions = LastSession()  # a turn's first frame is the last turn's last
        self.unindexed: list[AgentSessionsError] = []
        """What the server's last ListSessions said it could not index (``list`` warns)."""

    # -- plumbing ---------------------------------------------------------------------------
    def __enter__(self) -> RemoteSessions:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the channel (the server's engine, and its running turns, stay)."""
        self.channel.close()

    def _error(self, err: grpc.RpcError, started: bool = False) -> AgentSessionsError:
        exc = status.from_rpc_error(err)
        code = err.code() if hasattr(err, "code") else None
        meta: Any = err.trailing_metadata() if hasattr(err, "trailing_metadata") else ()
        trailers = dict(meta or ())
        if status.ERROR_KEY in trailers:
            return exc
        if code == grpc.StatusCode.UNAVAILABLE and not started:
            return UnavailableError(
                f"cannot reach the server at {self.address}: {exc.message}",
                hint=_unreachable_hint(exc.message, self.secure),
            )
        if code in (grpc.StatusCode.CANCELLED, grpc.StatusCode.UNAVAILABLE):
            # the server stopped (or dropped) a call it had begun answering
            return UnavailableError(
                f"the server at {self.address} ended the call: {exc.message}",
                hint="a turn it was running goes on there; `agentsessions get` shows it",
            )
        return exc

    def _call(self, rpc: Callable[..., T], request: Any) -> T:
        try:
            return rpc(request, metadata=self._metadata)
        except grpc.RpcError as err:
            raise self._error(err) from None

    def unary(self, rpc: Callable[..., T], request: Any) -> T:
        """One unary call of another service on this channel (``rpc`` a stub's method): the
        token sent, a failure raised as our exception, as every call of this client."""
        return self._call(rpc, request)

    def _items(self, call: Any) -> Iterator[Any]:
        """The messages of a server stream, errors mapped; closing it cancels the call."""
        started = False
        try:
            for item in call:
                started = True
                yield item
        except grpc.RpcError as err:
            raise self._error(err, started) from None
        finally:
            call.cancel()

    def _eager(self, call: Any) -> Iterator[Any]:
        """A server stream whose first message (or error) is read now, as a local read
        fails at once on an unknown session."""
        items = self._items(call)
        try:
            first = next(items)
        except StopIteration:
            return iter(())

        def rest() -> Iterator[Any]:
            yield first
            yield from items

        return rest()

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
        origin: Mapping[str, Any] | None = None,
        identity: Mapping[str, str] | None = None,
    ) -> Session:
        """Create an empty session (CreateSession)."""
        msg = template(
            project=project, name=name, harness=harness, model=model, labels=labels,
            annotations=annotations, origin=origin, identity=identity,
        )  # fmt: skip
        request = session_pb2.CreateSessionRequest(session=msg, tools=tools_text(tools))
        return convert.session_from_proto(self._call(self._stub.CreateSession, request))

    def get(self, uid: str) -> Session:
        """The session (GetSession)."""
        request = session_pb2.GetSessionRequest(uid=uid)
        return convert.session_from_proto(self._call(self._stub.GetSession, request))

    def list(
        self, *, project: str = "default", page_size: int = 50, cursor: str | None = None
    ) -> SessionPage:
        """One page of a project's sessions, newest first (ListSessions)."""
        request = session_pb2.ListSessionsRequest(
            project=project, page_size=page_size, page_token=cursor or ""
        )
        page = self._call(self._stub.ListSessions, request)
        self.unindexed = [MetadataCorruptError(text) for text in page.not_listed]
        sessions = tuple(convert.session_from_proto(s) for s in page.sessions)
        return SessionPage(sessions, page.next_page_token)

    def delete(self, uid: str) -> Session:
        """Soft-delete (DeleteSession)."""
        request = session_pb2.DeleteSessionRequest(uid=uid)
        return convert.session_from_proto(self._call(self._stub.DeleteSession, request))

    # -- sessions by key (:class:`~.bykey.ByKey`) ----------------------------------------
    def ensure(
        self, key: str | None = None, **options: Unpack[SessionOptions]
    ) -> tuple[Session, bool]:
        """The session ``key`` (or ``origin``) names, created if there is none."""
        return self.by_key.ensure(key, **options)

    def find(
        self, key: str | None = None, *, origin: Mapping[str, Any] | None = None,
        project: str = "default",
    ) -> Session | None:  # fmt: skip
        """The live session ``key`` (or ``origin``) names, or None."""
        return self.by_key.find(key, origin=origin, project=project)

    def claim(self, key: str, uid: str, *, project: str = "default") -> str:
        """Make ``key`` name session ``uid`` unless it names a live one."""
        return self.by_key.claim(key, uid, project=project)

    # -- turns ------------------------------------------------------------------------------
    def exec(
        self,
        uid: str | TurnRequest | None = None,
        inputs: Sequence[Input] = (),
        **options: Unpack[TurnOptions],
    ) -> Iterator[Frame]:
        """Run one turn (Exec); its frames, the turn started (and checked) now."""
        turn = TurnRequest.of(uid, inputs, **options)
        if turn.uid == "":
            raise InvalidArgumentError("session uid must not be empty")
        request = session_pb2.ExecRequest(
            session=turn.uid or "",
            inputs=[convert.message_to_proto(m) for m in turn.inputs],
            harness=turn.harness,
            config=turn.config,
            model=turn.model,
            wait_ms=_ms(turn.wait),
            project=turn.project,
            name=turn.name,
            labels=dict(turn.labels),
            fresh_start=turn.fresh_start,
            tools=tools_text(turn.tools),
            commit_id=turn.commit_id,
            durability=turn.durability,
            batched=True,
        )
        if turn.expected_last_seq is not None:
            request.expected_last_seq = turn.expected_last_seq
        provenance(request, turn)
        if self._quick_served:
            return self._quick(request)
        return self._turn(self._stub.Exec, request)

    def run(
        self,
        uid: str | TurnRequest | None = None,
        inputs: Sequence[Input] = (),
        **options: Unpack[TurnOptions],
    ) -> SessionFrame:
        """Run one turn to its end (Exec, read through); its last frame."""
        last: Frame | None = None
        for frame in self.exec(TurnRequest.of(uid, inputs, **options)):
            last = frame
        assert isinstance(last, SessionFrame)  # a turn's stream ends with its session
        return last

    def resume(self, uid: str, *, harness: str | None = None, wait: float = 0.0) -> Iterator[Frame]:
        """Wake suspended compute and complete an open turn (ResumeStream); frames."""
        request = session_pb2.ResumeRequest(
            session=uid, harness=harness or "", wait_ms=_ms(wait), batched=True
        )
        return self._turn(self._stub.ResumeStream, request)

    def _turn(self, rpc: Any, request: Any) -> Iterator[Frame]:
        call = rpc(request, metadata=self._metadata)
        items = parking(call, unbatched(self._items(call)))
        return started(items, self.address, self._sessions)

    def _quick(self, request: session_pb2.ExecRequest) -> Iterator[Frame]:
        """A turn by ExecQuick (one unary call when it ends quickly; ExecRest streams the
        rest when it goes on); by Exec from a server without it (UNIMPLEMENTED, whose
        trailers name no error of ours: nothing ran)."""
        try:
            reply, call = self._stub.ExecQuick.with_call(request, metadata=self._metadata)
        except grpc.RpcError as err:
            meta: Any = err.trailing_metadata() if hasattr(err, "trailing_metadata") else ()
            ours = status.ERROR_KEY in dict(meta or ())
            if err.code() == grpc.StatusCode.UNIMPLEMENTED and not ours:
                self._quick_served = False
                return self._turn(self._stub.Exec, request)
            raise self._error(err) from None
        return quick_turn(reply, call, self._rest, self.address, self._sessions)

    def _rest(self, key: str) -> Iterator[Any]:
        """The updates ExecRest streams for the paused turn ``key`` (asked again while the
        server refuses it for its bounds: :func:`.turns.patient`)."""
        request = session_pb2.ExecRestRequest(rest=key)

        def open_rest() -> Iterator[Any]:
            call = self._stub.ExecRest(request, metadata=self._metadata)
            return parking(call, unbatched(self._items(call)))

        return patient(open_rest)

    def compact(self, uid: str, *, keep_turns: int = 2, model: str | None = None) -> SessionFrame:
        """Summarise the turns before the last ``keep_turns`` (Compact); its last frame."""
        request = session_pb2.CompactRequest(session=uid, keep_turns=keep_turns, model=model or "")
        frame = frames.update_to_frame(self._call(self._stub.Compact, request), uid)
        assert isinstance(frame, SessionFrame)
        return frame

    def suspend(self, uid: str) -> Session:
        """Snapshot and free the session's compute (Suspend)."""
        request = session_pb2.SuspendRequest(session=uid)
        return convert.session_from_proto(self._call(self._stub.Suspend, request))

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
        """Commit a decision on the approval request (Approve); never runs the tool."""
        request = session_pb2.ApproveRequest(
            session=uid,
            execution_id=execution_id or "",
            tool_call_id=tool_call_id or "",
            request_seq=request_seq or 0,
            approved=bool(approved),
            reason=reason,
        )
        if actor:
            request.identity.principal = actor
        done = self._call(self._stub.Approve, request)
        return Approval(
            convert.session_from_proto(done.session),
            convert.record_from_proto(done.decision),
            frames.ref_from_proto(done.request),
            done.existing,
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
        """Say what happened to an unresolved tool call (Resolve), then resume."""
        if result is not None and not isinstance(result, Mapping):
            raise InvalidArgumentError("a tool's result must be a JSON object")
        request = session_pb2.ResolveRequest(
            session=uid, call_id=call_id, actor=actor, no_resume=not resume
        )
        if result is not None:
            request.result.CopyFrom(frames.struct(result))
        if failed is not None:
            request.failed = failed
        done = self._call(self._stub.Resolve, request)
        turn = None
        if done.HasField("turn"):
            last = frames.update_to_frame(done.turn, uid)
            turn = last.turn if isinstance(last, SessionFrame) else None
        return Resolution(
            convert.session_from_proto(done.session),
            frames.call_from_proto(done.call),
            frames.unstruct(done.result),
            turn,
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
        """Branch after seq ``at`` (0 = head) into ``count`` children (Fork)."""
        request = session_pb2.ForkRequest(
            session=uid, at_seq=at, count=count, child_names=list(names),
            labels=dict(labels or {}),
        )  # fmt: skip
        done = self._call(self._stub.Fork, request)
        return [convert.session_from_proto(c) for c in done.children]

    def cancel(
        self,
        uid: str,
        *,
        wait: float = DEFAULT_CANCEL_WAIT,
        reason: str = "",
        execution_id: str = "",
    ) -> Session:
        """End the open execution as CANCELED (Cancel), waiting up to ``wait`` seconds."""
        request = session_pb2.CancelRequest(
            session=uid, wait_ms=_ms(wait), reason=reason, execution_id=execution_id
        )
        return convert.session_from_proto(self._call(self._stub.Cancel, request))

    # -- reading ----------------------------------------------------------------------------
    def replay(self, uid: str, *, from_seq: int = 1) -> Iterator[LogRecord]:
        """Stored records from ``from_seq`` (Replay)."""
        return self.read(uid, from_seq=from_seq)

    def rerun(self, uid: str, *, harness: str | None = None) -> ReplayReport:
        """Re-drive every turn from the journal and report it (Rerun)."""
        request = session_pb2.RerunRequest(session=uid, harness=harness or "")
        return frames.replay_report_from_proto(self._call(self._stub.Rerun, request))

    def read(self, uid: str, *, from_seq: int = 1, to_seq: int = 0) -> Iterator[LogRecord]:
        """The stored records ``from_seq..to_seq`` (Replay); NotFoundError now if unknown."""
        if from_seq < 1 or to_seq < 0:
            raise InvalidArgumentError(f"from_seq must be >= 1 and to_seq >= 0, got {from_seq}")
        request = session_pb2.ReplayRequest(session=uid, from_seq=from_seq, to_seq=to_seq)
        call = self._stub.Replay(request, metadata=self._metadata)
        return (convert.record_from_proto(m) for m in self._eager(call))

    def follow(
        self, uid: str, *, from_seq: int = 1, idle_timeout: float | None = None
    ) -> Iterator[LogRecord]:
        """Every record from ``from_seq``, then each new one (Follow); closing it ends it."""
        if from_seq < 1:
            raise InvalidArgumentError(f"from_seq must be >= 1, got {from_seq}")
        if idle_timeout is not None and idle_timeout < 0:
            raise InvalidArgumentError(f"idle_timeout must be >= 0, got {idle_timeout}")
        # 0 on the wire means "never"; an idle_timeout of 0 is the shortest wait there is
        idle_ms = 0 if idle_timeout is None else max(1, _ms(idle_timeout))
        request = session_pb2.FollowRequest(session=uid, from_seq=from_seq, idle_timeout_ms=idle_ms)
        call = self._stub.Follow(request, metadata=self._metadata)
        return (convert.record_from_proto(m) for m in self._items(call))

    def verify(self, uid: str, *, strict: bool = False, progress: Any = None) -> VerifyReport:
        """Walk the session's chain on the server (Verify); its report."""
        request = session_pb2.VerifyRequest(session=uid, strict=strict)
        report = frames.verify_from_proto(self._call(self._stub.Verify, request))
        if progress is not None:
            progress(report.records, report.records)
        return report

    def tool_store(
        self, uid: str, tool: str, *, from_seq: int = 1
    ) -> builtins.list[ToolStoreEntry]:
        """The entries of tool ``tool``'s own store in session ``uid`` (ReadToolStore)."""
        request = session_pb2.ToolStoreRequest(session=uid, tool=tool, from_seq=from_seq)
        done = self._call(self._stub.ReadToolStore, request)
        return [frames.entry_from_proto(e) for e in done.entries]

    # -- exchange ---------------------------------------------------------------------------
    def export(
        self,
        uid: str,
        path: Path,
        *,
        compress: bool = True,
        progress: Any = None,
        overwrite: bool = False,
    ) -> dict[str, Any]:
        """Write the session to ``path`` here, from the bytes the server streams (Export):
        replaced atomically and durably, as a local export is; an existing file is refused
        unless ``overwrite``."""
        from agentsessions.journal.format.durable import FileSystem
        from agentsessions.journal.tools.exchange import is_stream

        path = Path(path)
        if path.exists() and not overwrite and not is_stream(path):
            raise InvalidArgumentError(
                f"{path} already exists", hint="overwrite=True replaces it", param="overwrite"
            )
        request = session_pb2.ExportRequest(session=uid, uncompressed=not compress)
        chunks = self._eager(self._stub.Export(request, metadata=self._metadata))
        summary: dict[str, Any] = {}

        def write_all(write: Callable[[bytes], Any]) -> None:
            for chunk in chunks:
                if chunk.data:
                    write(chunk.data)
                if chunk.HasField("summary"):
                    summary.update(frames.unstruct(chunk.summary))

        if is_stream(path):
            with path.open("wb") as out:
                write_all(out.write)
        else:
            with FileSystem().atomic_stream(path) as emit:
                write_all(emit)
        summary["path"] = str(path)  # the server wrote a file of its own; this is ours
        if progress is not None:
            progress(summary.get("records", 0), summary.get("records", 0))
        return summary

    def import_(
        self,
        path: Path,
        *,
        project: str | None = None,
        name: str | None = None,
        progress: Any = None,
    ) -> Session:
        """Recreate a session on the server from the file ``path`` here (Import)."""
        try:
            f = Path(path).open("rb")  # noqa: SIM115  # closed by the chunks generator
        except OSError as exc:
            raise InvalidArgumentError(f"cannot read {path}: {exc.strerror}") from None

        def chunks() -> Iterator[session_pb2.ImportChunk]:
            with f:
                first = session_pb2.ImportChunk(data=f.read(CHUNK))
                if project is not None:
                    first.project = project
                if name is not None:
                    first.name = name
                yield first
                while data := f.read(CHUNK):
                    yield session_pb2.ImportChunk(data=data)

        return convert.session_from_proto(self._call(self._stub.Import, chunks()))


def _ms(seconds: float) -> int:
    if seconds < 0:
        return -1  # refused by the server with the engine's message
    return round(seconds * 1000)
