"""The harness registry as token holders of two projects reach it (issue 18, item 3): a real
in-process server (``build_server`` with ``server_security``'s token check and the
HarnessRegistry ``serve`` adds), two project tokens and an admin one.

The cross-project matrix (register, list, get, get with observe, retire): another project's
registration is answered exactly as a name nobody registered (the same code, text and
trailers); names are per project; a session of one project runs only on its own project's
registration (the other's address is never dialled); an address off the server's machine
needs an admin token; and the CLI's ``harness`` commands work over ``--server``.
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest

import agentsessions
from agentsessions.client import RemoteSessions, dial
from agentsessions.controller.spi import Harness
from agentsessions.errors import AgentSessionsError
from agentsessions.server import auth
from agentsessions.server.app import RunningServer, build_server
from agentsessions.server.registry import harness_services
from agentsessions.sessions.tokens import TokenStore
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.wire.gen import harness_pb2
from agentsessions.wire.gen import harness_registry_pb2 as pb
from agentsessions.wire.gen import harness_registry_pb2_grpc as pb_grpc
from agentsessions.wire.harnessnode import HarnessServer
from tests.e2e.clirun import Cli

STATELESS = harness_pb2.RESUMABILITY_STATELESS_REPLAY
Answer = tuple[Any, str, dict[str, str]]


def _spec(address: str) -> pb.HarnessSpec:
    return pb.HarnessSpec(
        remote=pb.RemotePlacement(address=address),
        capabilities=harness_pb2.Capabilities(resumability=STATELESS),
    )


def _socket(name: str) -> str:
    return f"unix://{tempfile.mkdtemp(prefix='ash-', dir='/tmp')}/{name}.sock"


@dataclass
class Rig:
    address: str
    server: RunningServer
    tokens: TokenStore
    pa: str  # two projects of this test alone: HARNESSES is the process's
    pb_: str
    channels: list[grpc.Channel] = field(default_factory=list)

    def token(self, *projects: str, admin: bool = False) -> str:
        return self.tokens.create(projects=projects, admin=admin)[0]

    def stub(self, token: str) -> Callable[[str, Any], Any]:
        """``call(rpc_name, request)`` with ``token``, or the refusal as an :data:`Answer`."""
        channel = grpc.insecure_channel(self.address)
        self.channels.append(channel)
        stub = pb_grpc.HarnessRegistryStub(channel)  # type: ignore[no-untyped-call]
        metadata = (("authorization", f"Bearer {token}"),)

        def call(rpc: str, request: Any) -> Any:
            try:
                return getattr(stub, rpc)(request, metadata=metadata)
            except grpc.RpcError as err:
                trailers = {k: v for k, v in (err.trailing_metadata() or ()) if k != "x-request-id"}
                return (err.code(), err.details(), trailers)

        return call

    def client(self, token: str) -> RemoteSessions:
        return dial(self.address, token=token)


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    home = tmp_path / "server"
    engine = agentsessions.open(home, runtime="auto")
    _, interceptors, scope = auth.server_security(home, listen="127.0.0.1:0", engine=engine)
    server = build_server(
        engine,
        "127.0.0.1:0",
        interceptors=interceptors,
        scope=scope,
        extra_services=harness_services(engine),
    )
    tag = uuid.uuid4().hex[:8]
    rig = Rig(server.address, server, TokenStore(home), f"pa-{tag}", f"pb-{tag}")
    yield rig
    for channel in rig.channels:
        channel.close()
    server.stop(0)
    engine.close()


class Counted:
    """An echo harness served at an address, counting the executions it was asked to run."""

    def __init__(self, name: str) -> None:
        self.runs = 0
        self.node = HarnessServer(self._make, "127.0.0.1:0")  # a loopback port: no admin
        self.address = self.node.address
        self._described = False

    def _make(self) -> Harness:
        if self._described:  # the first call describes it (HarnessServer caches that)
            self.runs += 1
        self._described = True
        return HARNESSES.create("echo")


def _unknown_answers(call: Callable[[str, Any], Any], project: str = "") -> list[Answer]:
    return [
        call("GetHarness", pb.GetHarnessRequest(name="planner", project=project)),
        call("GetHarness", pb.GetHarnessRequest(name="planner", observe=True, project=project)),
        call("RetireHarness", pb.RetireHarnessRequest(name="planner", project=project)),
    ]


def _turn_refusal(client: RemoteSessions) -> str:
    with pytest.raises(AgentSessionsError) as info:
        client.run(None, ["hi"], harness="planner")
    return f"{type(info.value).__name__}: {info.value}"


def test_another_projects_harness_is_answered_as_an_unknown_name(rig: Rig) -> None:
    a, b = rig.stub(rig.token(rig.pa)), rig.stub(rig.token(rig.pb_))
    before = _unknown_answers(b)
    assert all(code == grpc.StatusCode.NOT_FOUND for code, _, _ in before)
    with rig.client(rig.token(rig.pb_)) as b_client:
        refused_before = _turn_refusal(b_client)
        assert "unknown harness 'planner'" in refused_before

        made = a("RegisterHarness", pb.RegisterHarnessRequest(name="planner", spec=_spec(
            "127.0.0.1:1")))  # fmt: skip
        assert made.outcome == pb.REGISTER_OUTCOME_CREATED
        assert made.harness.metadata.project == rig.pa
        # B: get, get with observe, retire: word for word what an unknown name gets
        assert _unknown_answers(b) == before
        assert _turn_refusal(b_client) == refused_before  # a session of B: unknown, no dial
    listed = b("ListHarnesses", pb.ListHarnessesRequest(include_retired=True))
    assert "planner" not in [h.metadata.name for h in listed.harnesses]
    assert "planner" in [
        h.metadata.name for h in a("ListHarnesses", pb.ListHarnessesRequest()).harnesses
    ]
    # A's registration is untouched by B's retire and still A's
    assert a("GetHarness", pb.GetHarnessRequest(name="planner")).state == pb.HARNESS_STATE_ACTIVE
    # naming a project the token does not cover is refused, as for sessions
    for rpc, request in [
        ("GetHarness", pb.GetHarnessRequest(name="planner", project=rig.pa)),
        ("ListHarnesses", pb.ListHarnessesRequest(project=rig.pa)),
        ("RetireHarness", pb.RetireHarnessRequest(name="planner", project=rig.pa)),
        ("RegisterHarness", pb.RegisterHarnessRequest(
            name="x", spec=_spec("127.0.0.1:1"), project=rig.pa)),
    ]:  # fmt: skip
        assert b(rpc, request)[0] == grpc.StatusCode.PERMISSION_DENIED, rpc


def test_names_are_per_project_and_each_session_runs_on_its_own(rig: Rig) -> None:
    ta, tb = rig.token(rig.pa), rig.token(rig.pb_)
    a, b = rig.stub(ta), rig.stub(tb)
    ha, hb = Counted("a"), Counted("b")
    try:
        for call, node in ((a, ha), (b, hb)):
            reg = call("RegisterHarness", pb.RegisterHarnessRequest(
                name="planner", spec=_spec(node.address)))  # fmt: skip
            assert reg.outcome == pb.REGISTER_OUTCOME_CREATED
        assert a("GetHarness", pb.GetHarnessRequest(name="planner")).spec.remote.address == (
            ha.address
        )
        assert b("GetHarness", pb.GetHarnessRequest(name="planner")).spec.remote.address == (
            hb.address
        )
        seen = a("GetHarness", pb.GetHarnessRequest(name="planner", observe=True))
        assert seen.observed.id == "echo" and not seen.observe_error
        with rig.client(ta) as client_a, rig.client(tb) as client_b:
            frame = client_a.run(None, ["from a"], harness="planner")
            assert frame.session.project == rig.pa and (ha.runs, hb.runs) == (1, 0)
            client_b.run(None, ["from b"], harness="planner")
            assert (ha.runs, hb.runs) == (1, 1)
            # an existing session of A resumes on A's, whatever B registered
            client_a.run(frame.session.uid, ["again"])
            assert (ha.runs, hb.runs) == (2, 1)
        retired = b("RetireHarness", pb.RetireHarnessRequest(name="planner", reason="done"))
        assert retired.state == pb.HARNESS_STATE_RETIRED
        assert a("GetHarness", pb.GetHarnessRequest(name="planner")).state == (
            pb.HARNESS_STATE_ACTIVE
        )
        # a static name is never registered, in any project, and the answer is the same
        for call in (a, b):
            refused = call("RegisterHarness", pb.RegisterHarnessRequest(
                name="echo", spec=_spec(ha.address)))  # fmt: skip
            assert refused[0] == grpc.StatusCode.ALREADY_EXISTS
    finally:
        ha.node.stop(0)
        hb.node.stop(0)


def test_an_address_off_the_machine_needs_an_admin_token(rig: Rig) -> None:
    plain, admin = rig.stub(rig.token(rig.pa)), rig.stub(rig.token(rig.pa, admin=True))
    for i, address in enumerate(("10.1.2.3:50051", "harness.example:443", "0.0.0.0:9")):
        request = pb.RegisterHarnessRequest(name=f"far{i}", spec=_spec(address))
        code, details, trailers = plain("RegisterHarness", request)
        assert code == grpc.StatusCode.PERMISSION_DENIED
        assert "token create --admin" in details and address in details
        assert "--admin" in trailers["agentsessions-hint"]
        assert admin("RegisterHarness", request).outcome == pb.REGISTER_OUTCOME_CREATED
    listed = plain("ListHarnesses", pb.ListHarnessesRequest())
    assert {"far0", "far1", "far2"} <= {h.metadata.name for h in listed.harnesses}
    for i, address in enumerate(("127.0.0.1:9", "localhost:9", "[::1]:9")):
        near = pb.RegisterHarnessRequest(name=f"near{i}", spec=_spec(address))
        assert plain("RegisterHarness", near).outcome == pb.REGISTER_OUTCOME_CREATED
    # a caller who is not admin learns no more of a loopback port than that nothing answered
    seen = plain("GetHarness", pb.GetHarnessRequest(name="near0", observe=True))
    assert seen.observe_error == "no harness answered at 127.0.0.1:9"
    # a unix socket is a path on the server's disk: a caller who is not admin never names one
    sock = pb.RegisterHarnessRequest(name="sock", spec=_spec(_socket("n")))
    assert plain("RegisterHarness", sock)[0] == grpc.StatusCode.PERMISSION_DENIED
    assert admin("RegisterHarness", sock).outcome == pb.REGISTER_OUTCOME_CREATED


def test_no_token_is_refused(rig: Rig) -> None:
    channel = grpc.insecure_channel(rig.address)
    rig.channels.append(channel)
    stub = pb_grpc.HarnessRegistryStub(channel)  # type: ignore[no-untyped-call]
    with pytest.raises(grpc.RpcError) as info:
        stub.ListHarnesses(pb.ListHarnessesRequest())
    assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_the_harness_commands_work_over_server(rig: Rig, cli: Cli) -> None:
    ta, tb = rig.token(rig.pa), rig.token(rig.pb_)

    def run(token: str, *args: str) -> Any:
        return cli.fast("--server", rig.address, "--token", token, "harness", *args)

    address = "127.0.0.1:1"
    made = run(ta, "register", "cli-h", "--address", address, "--json").ok().json()
    assert made["outcome"] == "REGISTER_OUTCOME_CREATED"
    assert made["harness"]["metadata"]["project"] == rig.pa
    table = run(ta, "list").ok().out
    assert "cli-h" in table and address in table and "echo" in table
    assert "cli-h" not in run(tb, "list", "--all").ok().out
    unknown = run(tb, "retire", "never-was").fails(3).err.replace("never-was", "NAME")
    assert run(tb, "retire", "cli-h").fails(3).err.replace("cli-h", "NAME") == unknown
    denied = run(ta, "register", "far", "--address", "10.9.9.9:1").fails(31).err
    assert "token create --admin" in denied
    run(tb, "list", "--project", rig.pa).fails(31)
    retired = run(ta, "retire", "cli-h", "--reason", "moved", "--json").ok().json()
    assert retired["harness"]["state"] == "HARNESS_STATE_RETIRED"
    listed = run(ta, "list", "--all", "--json").ok().json()["harnesses"]
    assert {"cli-h", "echo"} <= {h["metadata"]["name"] for h in listed}
