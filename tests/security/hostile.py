"""A real ``agentsessions serve`` with tokens for several projects, and a raw client of it.

What the security suite (issue 18) attacks: one daemon process on a loopback port with
auth on, its home on disk where a test can look, and one token per project made by
``agentsessions token create``. Calls go through :meth:`Daemon.call`: the method's full
name and the request as bytes, sent with identity serializers, so a test can send exactly
what a hostile client sends (a valid message, a mutated one, random bytes) and see the
status, the details and the trailers as they come back.

A module of its own (not ``conftest``) so that tests import it by a name no other test
directory shares. Nothing here waits on a clock: each call's ``timeout`` is a hang guard.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import descriptor, message_factory
from google.protobuf.message import Message

from agentsessions.wire.gen import (
    common_pb2,
    harness_registry_pb2,
    session_pb2,
)

ROOT = Path(__file__).resolve().parents[2]
WAIT = 60.0  # a hang guard for process start and stop, not an assertion
CALL_WAIT = 20.0  # a hang guard for one call
API_KEY = "sk-canary-0123456789abcdef"  # the daemon's model credential: must never leave it
PUBLIC = ("grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection")
"""Services every daemon serves without a token (no session, no project): not attacked by
the tenant matrix, only checked to answer."""

FILES = (common_pb2.DESCRIPTOR, session_pb2.DESCRIPTOR, harness_registry_pb2.DESCRIPTOR)


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A subprocess's environment: no AGENTSESSIONS_* or model settings of the developer's."""
    drop = ("AGENTSESSIONS_", "XDG_", "MODEL_", "OPENAI_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env["PYTHONPATH"] = str(ROOT)
    env["COLUMNS"] = "200"
    env.update(extra or {})
    return env


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``agentsessions --home HOME ARGS`` in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "agentsessions", "--home", str(home), *args],
        env=clean_env(), capture_output=True, text=True, timeout=WAIT, check=False,
    )  # fmt: skip


@dataclass(frozen=True)
class Method:
    """One RPC as the generated descriptors declare it."""

    service: str  # agentsessions.v1.Sessions
    name: str  # GetSession
    request: type[Message]
    client_streaming: bool
    server_streaming: bool

    @property
    def path(self) -> str:
        """The method's path on the wire: ``/agentsessions.v1.Sessions/GetSession``."""
        return f"/{self.service}/{self.name}"

    @property
    def full(self) -> str:
        """``Sessions.GetSession``: how the suite names it."""
        return f"{self.service.rsplit('.', 1)[-1]}.{self.name}"


def methods_of(service: str) -> list[Method]:
    """Every method of ``service`` (a full name), from the generated descriptor pool."""
    for file in FILES:
        for svc in file.services_by_name.values():
            if svc.full_name == service:
                return [_method(svc, m) for m in svc.methods]
    raise LookupError(f"no service {service} in the generated code")


def _method(svc: descriptor.ServiceDescriptor, m: descriptor.MethodDescriptor) -> Method:
    return Method(
        service=svc.full_name,
        name=m.name,
        request=message_factory.GetMessageClass(m.input_type),
        client_streaming=m.client_streaming,
        server_streaming=m.server_streaming,
    )


@dataclass
class Outcome:
    """How a call ended: its status, details, trailers, and the replies (raw bytes)."""

    code: grpc.StatusCode
    details: str
    trailers: dict[str, str]
    replies: list[bytes] = field(default_factory=list)

    @property
    def error(self) -> str:
        """Our error class's name (the ``agentsessions-error`` trailer), "" if none."""
        return self.trailers.get("agentsessions-error", "")

    def text(self) -> str:
        """Everything a caller reads (details, trailers but the request id, replies)."""
        meta = " ".join(f"{k}={v}" for k, v in sorted(self.trailers.items()) if k != "x-request-id")
        body = b" ".join(self.replies).decode("utf-8", "replace")
        return f"{self.code.name} {self.details} {meta} {body}"

    def shape(self, swap: tuple[str, str] = ("", "")) -> tuple[Any, ...]:
        """What two refusals must share: code, details and trailers (the request id aside),
        with ``swap``'s first text read as its second."""
        old, new = swap

        def norm(text: str) -> str:
            return text.replace(old, new) if old else text

        meta = {k: norm(v) for k, v in self.trailers.items() if k != "x-request-id"}
        return (self.code, norm(self.details), meta)


@dataclass
class Tenant:
    """A project and the token that acts in it."""

    project: str
    token: str
    name: str

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.token}"),)


@dataclass
class Daemon:
    """A running ``serve`` (auth on) over ``home``: its address, tenants and log."""

    proc: subprocess.Popen[str]
    address: str
    home: Path
    log: Path
    tenants: dict[str, Tenant]
    channel: grpc.Channel

    def call(
        self,
        method: Method,
        payload: bytes | Sequence[bytes],
        tenant: Tenant | None,
        timeout: float = CALL_WAIT,
    ) -> Outcome:
        """Send ``payload`` (bytes; for a client stream, a sequence of messages) to
        ``method`` as ``tenant`` (None: no token) and read the whole answer."""
        meta = tenant.metadata if tenant is not None else ()
        path = method.path
        if method.client_streaming:
            chunks = [payload] if isinstance(payload, bytes) else list(payload)
            request: Any = iter(chunks)
        else:
            assert isinstance(payload, bytes)
            request = payload
        kind = {
            (False, False): self.channel.unary_unary,
            (False, True): self.channel.unary_stream,
            (True, False): self.channel.stream_unary,
            (True, True): self.channel.stream_stream,
        }[(method.client_streaming, method.server_streaming)]
        stub: Any = kind(path, request_serializer=None, response_deserializer=None)
        replies: list[bytes] = []
        try:
            if method.server_streaming:
                call = stub(request, metadata=meta, timeout=timeout)
                for reply in call:
                    replies.append(reply)
                return Outcome(
                    call.code(), call.details() or "", dict(call.trailing_metadata() or ()),
                    replies,
                )  # fmt: skip
            reply, call = stub.with_call(request, metadata=meta, timeout=timeout)
            return Outcome(
                call.code(), call.details() or "", dict(call.trailing_metadata() or ()), [reply]
            )
        except grpc.RpcError as err:
            rpc: Any = err
            trailers = dict(rpc.trailing_metadata() or ())
            return Outcome(rpc.code(), rpc.details() or "", trailers, replies)

    def send(
        self, method: Method, request: Message | Sequence[Message], tenant: Tenant | None
    ) -> Outcome:
        """:meth:`call` with messages (serialized here)."""
        if isinstance(request, Message):
            return self.call(method, request.SerializeToString(), tenant)
        return self.call(method, [m.SerializeToString() for m in request], tenant)

    def fingerprint(self) -> dict[str, tuple[int, int]]:
        """Size and mtime of every file under the home but the SQLite index (its checkpoint
        may land on any call): what "nothing written" compares (a write moves the mtime; a
        new file is a new key); :meth:`census` covers what the index says."""
        out: dict[str, tuple[int, int]] = {}
        stack = [str(self.home)]
        while stack:  # os.scandir, not Path.rglob: five times faster, and this runs per call
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    elif ".sqlite" not in entry.name and not entry.name.endswith(".lock"):
                        st = entry.stat(follow_symlinks=False)
                        out[entry.path] = (st.st_size, st.st_mtime_ns)
        return out

    def census(self, tenant: Tenant) -> list[tuple[str, int, bool]]:
        """Every session ``tenant``'s list shows (uid, last seq, deleted), every page."""
        out: list[tuple[str, int, bool]] = []
        token = ""
        while True:
            request = session_pb2.ListSessionsRequest(page_size=500, page_token=token)
            got = self.send(SESSIONS["ListSessions"], request, tenant)
            assert got.code == grpc.StatusCode.OK, got
            page = session_pb2.ListSessionsResponse.FromString(got.replies[0])
            out += [(s.metadata.uid, s.last_seq, s.deleted) for s in page.sessions]
            token = page.next_page_token
            if not token:
                return sorted(out)

    def harness_names(self, tenant: Tenant) -> list[str]:
        """Every harness ``tenant``'s ListHarnesses shows (retired ones too), every page."""
        names: list[str] = []
        token = ""
        while True:
            request = harness_registry_pb2.ListHarnessesRequest(
                include_retired=True, page_size=500, page_token=token
            )
            got = self.send(REGISTRY["ListHarnesses"], request, tenant)
            assert got.code == grpc.StatusCode.OK, got
            page = harness_registry_pb2.ListHarnessesResponse.FromString(got.replies[0])
            names += [h.metadata.name for h in page.harnesses]
            token = page.next_page_token
            if not token:
                return names

    def log_text(self) -> str:
        """What the daemon wrote to stderr so far."""
        return self.log.read_text(encoding="utf-8", errors="replace")

    def alive(self) -> bool:
        """The process runs and answers health and a tenant's list."""
        if self.proc.poll() is not None:
            return False
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        health = health_pb2_grpc.HealthStub(self.channel)
        answer = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=CALL_WAIT)
        if answer.status != health_pb2.HealthCheckResponse.SERVING:
            return False
        tenant = next(iter(self.tenants.values()))
        listed = self.send(SESSIONS["ListSessions"], session_pb2.ListSessionsRequest(), tenant)
        return listed.code == grpc.StatusCode.OK


SESSIONS = {m.name: m for m in methods_of("agentsessions.v1.Sessions")}
REGISTRY = {m.name: m for m in methods_of("agentsessions.v1.HarnessRegistry")}


def start(
    home: Path, projects: Sequence[str], *args: str, env: Mapping[str, str] | None = None
) -> Daemon:
    """Tokens for ``projects`` (one each, named ``tenant-P``) in ``home``, then ``serve``
    with auth on a free loopback port; stderr goes to ``home/../serve.log``."""
    home.mkdir(parents=True, exist_ok=True)
    tenants: dict[str, Tenant] = {}
    for project in projects:
        made = cli(home, "token", "create", "--project", project, "--name", f"tenant-{project}")
        assert made.returncode == 0, made.stderr
        tenants[project] = Tenant(project, made.stdout.strip(), f"tenant-{project}")
    log = home.parent / "serve.log"
    # the fuzz sends thousands of calls a second from one token: no rate limit in its way;
    # and it never reads the rest of a turn an ExecQuick mutant paused (as a hostile caller
    # would not), each of which keeps its turn slot up to a minute: no turn bound either
    argv = [sys.executable, "-m", "agentsessions", "--home", str(home), "serve",
            "--listen", "127.0.0.1:0", "--max-rps-per-token", "1000000",
            "--max-turns-per-token", "100000", *args]  # fmt: skip
    with log.open("w", encoding="utf-8") as err:
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=err, text=True,
            env=clean_env({"MODEL_API_KEY": API_KEY, **(env or {})}),
        )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the one line a caller parses: where it listens
    if not line.startswith("listening on 127.0.0.1:"):
        proc.kill()
        proc.communicate(timeout=WAIT)
        raise AssertionError(f"serve printed {line!r}: {log.read_text(encoding='utf-8')}")
    address = line.split()[-1]
    channel = grpc.insecure_channel(address)
    return Daemon(proc, address, home, log, tenants, channel)


def stop(daemon: Daemon) -> tuple[int | None, str]:
    """SIGTERM the daemon and wait; its exit status and log."""
    daemon.channel.close()
    if daemon.proc.poll() is None:
        daemon.proc.terminate()
        try:
            daemon.proc.communicate(timeout=WAIT)
        except subprocess.TimeoutExpired:
            daemon.proc.kill()
            daemon.proc.communicate(timeout=WAIT)
    return daemon.proc.returncode, daemon.log_text()


class Listener:
    """A TCP listener on loopback that counts connections and keeps what they sent: the
    target of an SSRF attempt, which must see nothing."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port: int = self.sock.getsockname()[1]
        self.connections = 0
        self.received = b""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            with conn:
                conn.settimeout(1.0)
                with contextlib.suppress(OSError):
                    self.received += conn.recv(65536)

    def close(self) -> None:
        """Stop accepting (what was counted stays)."""
        self._stop.set()
        self._thread.join(timeout=WAIT)
        self.sock.close()

    def __enter__(self) -> Listener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def text(value: str) -> common_pb2.Message:
    """A user message of one text part."""
    return common_pb2.Message(
        role="user", parts=[common_pb2.Part(text=common_pb2.TextPart(text=value))]
    )


def spec(address: str) -> harness_registry_pb2.HarnessSpec:
    """A remote harness placement at ``address`` this host could serve (stateless replay)."""
    from agentsessions.wire.gen import harness_pb2

    return harness_registry_pb2.HarnessSpec(
        remote=harness_registry_pb2.RemotePlacement(address=address),
        capabilities=harness_pb2.Capabilities(
            resumability=harness_pb2.RESUMABILITY_STATELESS_REPLAY
        ),
    )


def sample(method: Method, target: str, project: str = "") -> Message | list[Message]:
    """A well-formed request of ``method`` aimed at ``target``: a session uid for the
    uid-addressed methods, a harness name for the registry's, a project for those that name
    one (CreateSession, ListSessions, Import). Import's is one chunk of bytes that are not an
    export: the project is checked before the file is read."""
    pb, reg = session_pb2, harness_registry_pb2
    build: dict[str, Any] = {
        "Sessions.CreateSession": lambda t: pb.CreateSessionRequest(
            session=pb.Session(metadata=common_pb2.ResourceMetadata(project=t, name="x"))
        ),
        "Sessions.GetSession": lambda t: pb.GetSessionRequest(uid=t),
        "Sessions.ListSessions": lambda t: pb.ListSessionsRequest(project=t, page_size=5),
        "Sessions.DeleteSession": lambda t: pb.DeleteSessionRequest(uid=t),
        "Sessions.Exec": lambda t: pb.ExecRequest(session=t, inputs=[text("hi")]),
        "Sessions.ExecQuick": lambda t: pb.ExecRequest(session=t, inputs=[text("hi")]),
        "Sessions.ExecRest": lambda t: pb.ExecRestRequest(rest=t),
        "Sessions.Replay": lambda t: pb.ReplayRequest(session=t),
        "Sessions.Approve": lambda t: pb.ApproveRequest(
            session=t, execution_id="e", tool_call_id="c", request_seq=1, approved=True
        ),
        "Sessions.Cancel": lambda t: pb.CancelRequest(session=t, wait_ms=0),
        "Sessions.Suspend": lambda t: pb.SuspendRequest(session=t),
        "Sessions.Resume": lambda t: pb.ResumeRequest(session=t),
        "Sessions.Fork": lambda t: pb.ForkRequest(session=t, count=1),
        "Sessions.Follow": lambda t: pb.FollowRequest(session=t, idle_timeout_ms=50),
        "Sessions.ResumeStream": lambda t: pb.ResumeRequest(session=t),
        "Sessions.Rerun": lambda t: pb.RerunRequest(session=t),
        "Sessions.Compact": lambda t: pb.CompactRequest(session=t, keep_turns=1),
        "Sessions.Resolve": lambda t: pb.ResolveRequest(session=t, call_id="c", failed="no"),
        "Sessions.Verify": lambda t: pb.VerifyRequest(session=t),
        "Sessions.ReadToolStore": lambda t: pb.ToolStoreRequest(session=t, tool="notes"),
        "Sessions.Export": lambda t: pb.ExportRequest(session=t),
        "Sessions.Import": lambda t: [pb.ImportChunk(data=b"not an export", project=t)],
        "Sessions.EnsureSession": lambda t: pb.EnsureSessionRequest(
            key="k", session=pb.Session(metadata=common_pb2.ResourceMetadata(project=t))
        ),
        "Sessions.FindSession": lambda t: pb.FindSessionRequest(key="k", project=t),
        "Sessions.ClaimSession": lambda t: pb.ClaimSessionRequest(key="k", uid=t),
        "HarnessRegistry.RegisterHarness": lambda t: reg.RegisterHarnessRequest(
            name=t, spec=spec("127.0.0.1:9")
        ),
        "HarnessRegistry.GetHarness": lambda t: reg.GetHarnessRequest(name=t),
        "HarnessRegistry.ListHarnesses": lambda t: reg.ListHarnessesRequest(page_size=5),
        "HarnessRegistry.RetireHarness": lambda t: reg.RetireHarnessRequest(
            name=t, reason="mine now"
        ),
    }
    return build[method.full](target)  # type: ignore[no-any-return]


def served_services(channel: grpc.Channel) -> list[str]:
    """The services a live daemon registers, as its reflection service lists them."""
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    ask = reflection_pb2.ServerReflectionRequest(list_services="")
    answer = next(iter(stub.ServerReflectionInfo(iter([ask]), timeout=CALL_WAIT)))
    return sorted(s.name for s in answer.list_services_response.service)


def attacked(channel: grpc.Channel) -> list[Method]:
    """Every method of every service the daemon serves behind its tokens."""
    return [m for name in served_services(channel) if name not in PUBLIC for m in methods_of(name)]
