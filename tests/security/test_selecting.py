"""A caller selects, the operator defines (issue 18): nothing a token holder sends names a
server-side path, a URL, a command, an executor or a credential.

Each test sends the attack through every field that carries it: a model spec through
Exec, the chat harness's ``config`` (its ``model`` key is read as a spec), CreateSession
(then a turn on that session) and Compact; paths in names, labels,
annotations, child names, tool and harness names and file URIs; workload TOML defining
executors; harness registration addresses. It asserts the refusal, and what must not have
happened: the file's contents nowhere in the answer, no connection to the listener the spec
or address names (:class:`hostile.Listener`, a real one), no marker file made, nothing
outside the daemon's home changed.
"""

from __future__ import annotations

import json
import secrets
import shlex
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from needs import need

grpc = need("grpc", "grpc")
need("grpc_health", "grpc")
need("grpc_reflection", "grpc")

import hostile
from hostile import API_KEY, REGISTRY, SESSIONS, Listener

from agentsessions.wire.gen import common_pb2, harness_registry_pb2
from agentsessions.wire.gen import session_pb2 as pb

CANARY = "MASTER-KEY-CANARY-" + secrets.token_hex(8)
BROKEN = (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN)  # an unhandled exception
PASSWD = Path("/etc/passwd")


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A server-readable file the caller must never see (a stand-in for the master key)."""
    path = tmp_path / "master.key"
    path.write_text(CANARY + "\n", encoding="utf-8")
    return path


def _turn(daemon: Any, tenant: Any, **fields: Any) -> Any:
    request = pb.ExecRequest(**{"harness": "chat", "inputs": [hostile.text("hi")], **fields})
    return daemon.send(SESSIONS["Exec"], request, tenant)


def _through_exec(daemon: Any, model: str) -> list[Any]:
    return [_turn(daemon, daemon.tenants["a"], model=model)]


def _through_create(daemon: Any, model: str) -> list[Any]:
    """CreateSession records the model; the attack lands on the first turn of it."""
    a = daemon.tenants["a"]
    made = daemon.send(
        SESSIONS["CreateSession"],
        pb.CreateSessionRequest(session=pb.Session(harness="chat", model=model)),
        a,
    )
    if made.code != grpc.StatusCode.OK:
        return [made]
    uid = pb.Session.FromString(made.replies[0]).metadata.uid
    return [made, _turn(daemon, a, session=uid)]


def _through_compact(daemon: Any, model: str) -> list[Any]:
    a = daemon.tenants["a"]
    first = _turn(daemon, a)
    uid = pb.ExecUpdate.FromString(first.replies[0]).session.metadata.uid
    _turn(daemon, a, session=uid)
    request = pb.CompactRequest(session=uid, keep_turns=1, model=model)
    return [daemon.send(SESSIONS["Compact"], request, a)]


def _through_config(daemon: Any, model: str) -> list[Any]:
    """The chat harness's config names a model too: a spec there is a spec all the same."""
    config = json.dumps({"model": model}).encode()
    return [_turn(daemon, daemon.tenants["a"], config=config)]


SITES: dict[str, Callable[[Any, str], list[Any]]] = {
    "exec": _through_exec,
    "config": _through_config,
    "create": _through_create,
    "compact": _through_compact,
}


def test_offline_models_stay_available_to_a_token(daemon: Any) -> None:
    """echo and scripted (no file) need no operator catalog: a token holder may use them."""
    for model in ("echo", "scripted", "scripted:seed=3"):
        got = _turn(daemon, daemon.tenants["a"], model=model)
        assert got.code == grpc.StatusCode.OK, (model, got)


@pytest.mark.parametrize("site", list(SITES))
def test_a_model_spec_cannot_read_a_server_file(daemon: Any, secret: Path, site: str) -> None:
    """``scripted:file=PATH`` from a token: PERMISSION_DENIED, the file's text nowhere."""
    answers = SITES[site](daemon, f"scripted:file={secret}")
    assert all(CANARY not in got.text() for got in answers), f"{site} read {secret}"
    assert answers[0].code == grpc.StatusCode.PERMISSION_DENIED, answers[0]


def test_a_refused_path_does_not_say_whether_it_exists(daemon: Any, secret: Path) -> None:
    """The answer for a path that exists and for one that does not are the same."""
    missing = secret.with_name("no-such.key")
    there = _through_exec(daemon, f"scripted:file={secret}")[0]
    absent = _through_exec(daemon, f"scripted:file={missing}")[0]
    assert there.code == grpc.StatusCode.PERMISSION_DENIED, there
    assert there.shape() == absent.shape((str(missing), str(secret)))


@pytest.mark.parametrize("site", list(SITES))
@pytest.mark.parametrize("options", ["", ",auth_header=X-Api-Key", ",path=/v1/other"])
def test_a_model_spec_cannot_send_to_a_url(daemon: Any, site: str, options: str) -> None:
    """``openai:...,base_url=`` pointing at a listener of the caller's: PERMISSION_DENIED,
    and the listener sees no connection (so never the daemon's API key)."""
    with Listener() as listener:
        spec = f"openai:x,base_url=http://127.0.0.1:{listener.port}/v1{options}"
        answers = SITES[site](daemon, spec)
    assert API_KEY.encode() not in listener.received, "the daemon sent its API key"
    assert listener.connections == 0, f"{site} connected to the caller's URL"
    assert answers[0].code == grpc.StatusCode.PERMISSION_DENIED, answers[0]


def test_caller_text_in_an_error_is_clipped(daemon: Any) -> None:
    """A 100 KB model spec or a 10 KB page token is refused with its own status, quoting at
    most 200 bytes of it (never RESOURCE_EXHAUSTED for the error's own size)."""
    a = daemon.tenants["a"]
    long_spec = "scripted:" + "A" * 100_000
    long_token = "B" * 10_000
    answers = [
        _turn(daemon, a, model=long_spec),
        daemon.send(SESSIONS["ListSessions"], pb.ListSessionsRequest(page_token=long_token), a),
    ]
    for got, run in zip(answers, ("A" * 201, "B" * 201), strict=True):
        assert got.code not in (grpc.StatusCode.RESOURCE_EXHAUSTED, *BROKEN), got.code
        assert got.code != grpc.StatusCode.OK
        assert run not in got.text(), "more than 200 bytes of caller input echoed"


def _outside(root: Path, home: Path) -> dict[str, int]:
    """Every path under ``root`` but the daemon's home and log, with its size."""
    out: dict[str, int] = {}
    for path in root.rglob("*"):
        if home in path.parents or path == home or path.name == "serve.log":
            continue
        out[path.relative_to(root).as_posix()] = path.stat().st_size if path.is_file() else -1
    return out


def test_paths_in_names_labels_and_uris_name_no_file(daemon: Any, tmp_path: Path) -> None:
    """Path-like text in every name, label, annotation, tool, harness and URI field is data:
    whatever the answer (accepted or refused), no unhandled error, nothing read from the
    path, nothing written outside the home."""
    a = daemon.tenants["a"]
    root = daemon.home.parent
    escape = "../" * 12 + str(tmp_path / "pwned").lstrip("/")
    paths = [escape, str(PASSWD), "file:///etc/passwd", "/dev/zero", "..", "a/../../b", "\x00x"]
    before = _outside(root, daemon.home)
    passwd_head = PASSWD.read_text(encoding="utf-8").splitlines()[0] if PASSWD.exists() else "\0"
    made = _turn(daemon, a)
    uid = pb.ExecUpdate.FromString(made.replies[0]).session.metadata.uid
    for path in paths:
        meta = common_pb2.ResourceMetadata(project="a", name=path)
        uri_part = common_pb2.Part(file=common_pb2.FilePart(mime="text/plain", uri=path, name=path))
        requests: list[tuple[str, Any]] = [
            ("CreateSession", pb.CreateSessionRequest(session=pb.Session(
                metadata=meta, labels={path: path}, annotations={path: path}, harness=path))),
            ("Exec", pb.ExecRequest(name=path, labels={"k": path}, inputs=[hostile.text(path)])),
            ("Exec", pb.ExecRequest(session=uid, inputs=[common_pb2.Message(
                role="user", parts=[uri_part])])),
            ("Exec", pb.ExecRequest(session=uid, harness=path, inputs=[hostile.text("x")])),
            ("Fork", pb.ForkRequest(session=uid, count=1, child_names=[path], labels={path: path})),
            ("ReadToolStore", pb.ToolStoreRequest(session=uid, tool=path)),
            ("Rerun", pb.RerunRequest(session=uid, harness=path)),
            ("ResumeStream", pb.ResumeRequest(session=uid, harness=path)),
            ("GetSession", pb.GetSessionRequest(uid=path)),
            ("Import", [pb.ImportChunk(data=b"x", project="a", name=path)]),
            ("Cancel", pb.CancelRequest(session=uid, reason=path, wait_ms=0)),
        ]  # fmt: skip
        for name, request in requests:
            got = daemon.send(SESSIONS[name], request, a)
            assert got.code not in BROKEN, (name, path, got)
            assert passwd_head not in got.text(), f"{name} read {path}"
    assert not (tmp_path / "pwned").exists()
    assert _outside(root, daemon.home) == before


def _workloads(marker: Path, sock: str) -> dict[str, str]:
    """Workload TOML documents that each define an executor (what only an operator may)."""
    tool = '[tools.t]\nmediation = "mediated"\ndescription = "d"\n'
    touch = shlex.join(["touch", str(marker)])
    return {
        "python": tool + 'executor = "python:os:system"\n',
        "unix": tool + f'executor = "unix://{sock}"\n',
        "mcp": tool + f"executor = {touch!r}\n".replace("'", '"').replace('"touch', '"mcp:touch'),
        "append_line": tool + f'executor = "append_line"\nconfig = {{ path = "{marker}" }}\n',
        "notes": tool + 'executor = "notes"\n',
    }


@pytest.mark.parametrize("kind", ["python", "unix", "mcp", "append_line", "notes"])
def test_a_callers_workload_cannot_define_an_executor(
    daemon: Any, tmp_path: Path, kind: str
) -> None:
    """``executor =`` of any kind in a caller's workload (CreateSession.tools,
    ExecRequest.tools): PERMISSION_DENIED; no process started, no socket dialed, no file."""
    marker = tmp_path / "marker"
    sock_path = str(tmp_path / "t.sock")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(sock_path)
        server.listen(4)
        server.setblocking(False)
        workload = _workloads(marker, sock_path)[kind]
        a = daemon.tenants["a"]
        before = daemon.fingerprint()
        answers = [
            daemon.send(
                SESSIONS["CreateSession"],
                pb.CreateSessionRequest(session=pb.Session(harness="chat"), tools=workload),
                a,
            ),
            _turn(daemon, a, tools=workload),
        ]
        try:
            server.accept()
            dialed = True
        except BlockingIOError:
            dialed = False
    for got in answers:
        assert got.code == grpc.StatusCode.PERMISSION_DENIED, (kind, got)
    assert not dialed, "the daemon dialed a caller's unix socket"
    assert not marker.exists(), "a caller's workload ran or wrote something"
    assert daemon.fingerprint() == before


@pytest.mark.parametrize(
    "address",
    ["10.1.2.3:80", "169.254.169.254:80", "metadata.google.internal:80", "[fe80::1]:80",
     "unix:///run/agentsessions/other.sock"],
)  # fmt: skip
def test_a_token_cannot_register_an_address_off_loopback(daemon: Any, address: str) -> None:
    """Registering an address this machine does not own (or a server-side socket path)
    needs the admin scope a plain token lacks: PERMISSION_DENIED, nothing registered."""
    b = daemon.tenants["b"]
    name = "off-" + secrets.token_hex(4)
    request = harness_registry_pb2.RegisterHarnessRequest(name=name, spec=hostile.spec(address))
    got = daemon.send(REGISTRY["RegisterHarness"], request, b)
    assert got.code == grpc.StatusCode.PERMISSION_DENIED, got
    assert name not in daemon.harness_names(b)


def test_another_projects_harness_is_never_dialed(daemon: Any) -> None:
    """a registers a harness at a listener; b's observe of it, and b's turn naming it, are
    answered as for a name nobody has and make no connection."""
    a, b = daemon.tenants["a"], daemon.tenants["b"]
    name = "probe-" + secrets.token_hex(4)
    with Listener() as listener:
        spec = hostile.spec(f"127.0.0.1:{listener.port}")
        request = harness_registry_pb2.RegisterHarnessRequest(name=name, spec=spec)
        assert daemon.send(REGISTRY["RegisterHarness"], request, a).code == grpc.StatusCode.OK
        observe = harness_registry_pb2.GetHarnessRequest(name=name, observe=True)
        got = daemon.send(REGISTRY["GetHarness"], observe, b)
        turn = _turn(daemon, b, harness=name)
        stranger = _turn(daemon, b, harness="nobody-" + secrets.token_hex(4))
    assert listener.connections == 0, "the daemon dialed a's harness for b"
    assert got.code == grpc.StatusCode.NOT_FOUND, got
    assert turn.code == stranger.code, (turn, stranger)


def test_server_set_fields_of_a_new_session_are_refused(daemon: Any) -> None:
    """A snapshot path or URI, a compute worker, a uid: the server sets them, so
    CreateSession refuses each (INVALID_ARGUMENT) and writes nothing; so is an origin that
    names nothing (a URI alone: an origin's source and subject name its session)."""
    a = daemon.tenants["a"]
    before = daemon.fingerprint()
    snapshot = pb.SnapshotRef(local="/etc", external_uri="http://169.254.169.254/latest")
    for session in (
        pb.Session(compute=pb.ComputeRef(snapshot=snapshot)),
        pb.Session(compute=pb.ComputeRef(runtime="local", worker="/bin/sh")),
        pb.Session(origin=common_pb2.Origin(uri="file:///etc/passwd")),
        pb.Session(metadata=common_pb2.ResourceMetadata(uid="sess-" + "0" * 24)),
    ):
        got = daemon.send(SESSIONS["CreateSession"], pb.CreateSessionRequest(session=session), a)
        assert got.code == grpc.StatusCode.INVALID_ARGUMENT, (session, got)
    assert daemon.fingerprint() == before


def test_a_tokens_claimed_identity_is_replaced_by_its_own(daemon: Any) -> None:
    """A token (not minted to name authors) that says it is another principal is recorded
    as itself: the identity it sends for a new session is not kept."""
    a = daemon.tenants["a"]
    claimed = pb.Session(identity=common_pb2.IdentityRef(principal="tenant-b", issuer="x"))
    got = daemon.send(SESSIONS["CreateSession"], pb.CreateSessionRequest(session=claimed), a)
    assert got.code == grpc.StatusCode.OK, got
    made = pb.Session.FromString(got.replies[0])
    assert made.identity.principal == a.name and made.identity.issuer == "agentsessions-token"


def test_a_callers_config_cannot_rename_the_operators_model(tmp_path: Path) -> None:
    """The operator's model (here ``serve --model openai:operator-model,base_url=...``) is
    asked for by its own name: the chat harness's ``config.model`` from a caller must not
    make the daemon ask the operator's endpoint, with the operator's key, for another
    model (a pricier one, one the operator never offered)."""
    with Listener() as endpoint:
        spec = f"openai:operator-model,base_url=http://127.0.0.1:{endpoint.port}/v1"
        served = hostile.start(tmp_path / "home", ["a"], "--model", spec)
        try:
            request = pb.ExecRequest(
                harness="chat", inputs=[hostile.text("hi")], config=b'{"model": "caller-pick"}'
            )
            got = served.send(SESSIONS["Exec"], request, served.tenants["a"])
        finally:
            hostile.stop(served)
    assert b"caller-pick" not in endpoint.received, "the caller renamed the operator's model"
    assert got.code != grpc.StatusCode.OK or b"operator-model" in endpoint.received, got
