"""The HarnessRegistry service (spec digest 1.4) over a real gRPC server, and its storage.

RegisterHarness outcomes (CREATED, UNCHANGED, REACTIVATED), ALREADY_EXISTS for another spec
or a static name, FAILED_PRECONDITION for a placement this host cannot serve and for
retiring a static harness, NOT_FOUND, the paging rules (0 is 50, above 500 clamped,
negative INVALID_ARGUMENT, a foreign token refused), the spec digest recipe, observe; and
the registrations surviving a reopen of the file store, kept per store on the memory store.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from google.protobuf import json_format

import agentsessions
from agentsessions.journal.format import canonical
from agentsessions.journal.stores.memory.store import MemoryStore
from agentsessions.server import registry
from agentsessions.server.auth import LocalOperator
from agentsessions.sessions.harnessbook import HarnessBook, records_for, spec_digest, static_names
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.wire.gen import harness_pb2
from agentsessions.wire.gen import harness_registry_pb2 as pb
from agentsessions.wire.gen import harness_registry_pb2_grpc as pb_grpc
from agentsessions.wire.harnessnode import HarnessServer

STATELESS = harness_pb2.RESUMABILITY_STATELESS_REPLAY


def _spec(address: str = "unix:///tmp/h.sock", **caps: int) -> pb.HarnessSpec:
    return pb.HarnessSpec(
        remote=pb.RemotePlacement(address=address),
        capabilities=harness_pb2.Capabilities(resumability=caps.get("resumability", STATELESS)),
    )


@pytest.fixture
def stub(tmp_path: Path) -> Iterator[pb_grpc.HarnessRegistryStub]:
    engine = agentsessions.open(tmp_path / "home", runtime="local")
    # as `serve --no-auth` does: every call is the operator's (admin, every project)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2), interceptors=[LocalOperator()])
    for add in registry.harness_services(engine):
        add(server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    yield pb_grpc.HarnessRegistryStub(channel)  # type: ignore[no-untyped-call]
    channel.close()
    server.stop(0)
    engine.close()


def _code(call: object) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as info:
        call()  # type: ignore[operator]
    return info.value.code()  # type: ignore[no-any-return]


def test_register_outcomes_and_the_spec_digest(stub: pb_grpc.HarnessRegistryStub) -> None:
    first = stub.RegisterHarness(pb.RegisterHarnessRequest(name="remote-a", spec=_spec()))
    assert first.outcome == pb.REGISTER_OUTCOME_CREATED
    reg = first.harness
    assert reg.state == pb.HARNESS_STATE_ACTIVE and reg.source == pb.HARNESS_SOURCE_REGISTERED
    assert reg.metadata.name == "remote-a" and reg.metadata.version == 1 and reg.metadata.uid
    body = json_format.MessageToDict(_spec(), preserving_proto_field_name=True)
    want = "sha256:" + hashlib.sha256(canonical.canonical_json(body)).hexdigest()
    assert reg.spec_digest == want
    again = stub.RegisterHarness(pb.RegisterHarnessRequest(name="remote-a", spec=_spec()))
    assert again.outcome == pb.REGISTER_OUTCOME_UNCHANGED and again.harness == reg
    other = pb.RegisterHarnessRequest(name="remote-a", spec=_spec("unix:///tmp/other.sock"))
    assert _code(lambda: stub.RegisterHarness(other)) == grpc.StatusCode.ALREADY_EXISTS

    retired = stub.RetireHarness(pb.RetireHarnessRequest(name="remote-a", reason="first"))
    assert retired.state == pb.HARNESS_STATE_RETIRED and retired.retire_reason == "first"
    assert retired.retire_time.seconds > 0 and retired.metadata.version == 2
    twice = stub.RetireHarness(pb.RetireHarnessRequest(name="remote-a", reason="second"))
    assert twice == retired  # idempotent; only the first reason is kept
    back = stub.RegisterHarness(pb.RegisterHarnessRequest(name="remote-a", spec=_spec()))
    assert back.outcome == pb.REGISTER_OUTCOME_REACTIVATED
    assert back.harness.state == pb.HARNESS_STATE_ACTIVE
    assert stub.GetHarness(pb.GetHarnessRequest(name="remote-a")) == back.harness


def test_static_names_and_refusals(stub: pb_grpc.HarnessRegistryStub) -> None:
    chat = stub.GetHarness(pb.GetHarnessRequest(name="chat"))
    assert chat.source == pb.HARNESS_SOURCE_STATIC and chat.state == pb.HARNESS_STATE_ACTIVE
    retire = pb.RetireHarnessRequest(name="chat")
    assert _code(lambda: stub.RetireHarness(retire)) == grpc.StatusCode.FAILED_PRECONDITION
    for name in ("chat", "echo", "counter", "memory"):
        req = pb.RegisterHarnessRequest(name=name, spec=_spec())
        exists = _code(lambda r=req: stub.RegisterHarness(r))  # type: ignore[misc]
        assert exists == grpc.StatusCode.ALREADY_EXISTS
    substrate = pb.HarnessSpec(
        substrate=pb.SubstratePlacement(atespace="a", template="t"),
        capabilities=harness_pb2.Capabilities(resumability=STATELESS),
    )
    cases = {
        grpc.StatusCode.FAILED_PRECONDITION: [
            pb.RegisterHarnessRequest(name="sub", spec=substrate),
            pb.RegisterHarnessRequest(name="warm", spec=_spec(resumability=2)),
        ],
        grpc.StatusCode.INVALID_ARGUMENT: [
            pb.RegisterHarnessRequest(name="Bad_Name", spec=_spec()),
            pb.RegisterHarnessRequest(name="x" * 64, spec=_spec()),
            pb.RegisterHarnessRequest(
                name="nocaps",
                spec=pb.HarnessSpec(remote=pb.RemotePlacement(address="unix:///tmp/x.sock")),
            ),
            pb.RegisterHarnessRequest(name="noaddr", spec=_spec(address="nowhere")),
            pb.RegisterHarnessRequest(name="nospec"),
        ],
    }
    for code, requests in cases.items():
        for req in requests:
            assert _code(lambda r=req: stub.RegisterHarness(r)) == code, req  # type: ignore[misc]
    for call in (lambda: stub.GetHarness(pb.GetHarnessRequest(name="nope")),
                 lambda: stub.RetireHarness(pb.RetireHarnessRequest(name="nope"))):  # fmt: skip
        assert _code(call) == grpc.StatusCode.NOT_FOUND


def test_list_pages_in_name_order(stub: pb_grpc.HarnessRegistryStub) -> None:
    for i in range(7):
        stub.RegisterHarness(pb.RegisterHarnessRequest(name=f"r{i}", spec=_spec()))
    stub.RetireHarness(pb.RetireHarnessRequest(name="r3"))
    names, token = [], ""
    while True:
        page = stub.ListHarnesses(pb.ListHarnessesRequest(page_size=3, page_token=token))
        assert len(page.harnesses) <= 3
        names += [h.metadata.name for h in page.harnesses]
        token = page.next_page_token
        if not token:
            break
    # static: the built-ins and any NAME=ADDRESS this process was given (by other tests too)
    active = sorted([*static_names(), "r0", "r1", "r2", "r4", "r5", "r6"])
    assert names == active
    every = stub.ListHarnesses(pb.ListHarnessesRequest(include_retired=True))
    assert [h.metadata.name for h in every.harnesses] == sorted([*active, "r3"])
    assert every.next_page_token == ""  # page_size 0 is 50
    big = stub.ListHarnesses(pb.ListHarnessesRequest(page_size=10_000))
    assert len(big.harnesses) == len(active)  # clamped to 500
    negative = pb.ListHarnessesRequest(page_size=-1)
    assert _code(lambda: stub.ListHarnesses(negative)) == grpc.StatusCode.INVALID_ARGUMENT
    first = stub.ListHarnesses(pb.ListHarnessesRequest(page_size=2)).next_page_token
    for bad in ("garbage!", first):
        req = pb.ListHarnessesRequest(page_token=bad, include_retired=True)
        assert _code(lambda r=req: stub.ListHarnesses(r)) == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[misc]


def test_observe_asks_the_harness_to_describe_itself(stub: pb_grpc.HarnessRegistryStub) -> None:
    address = f"unix://{tempfile.mkdtemp(prefix='ash-', dir='/tmp')}/obs.sock"
    node = HarnessServer(HARNESSES.factory("chat"), address)
    try:
        spec = _spec(address)
        spec.descriptor_id = "not-chat"
        stub.RegisterHarness(pb.RegisterHarnessRequest(name="obs", spec=spec))
        seen = stub.GetHarness(pb.GetHarnessRequest(name="obs", observe=True))
        assert seen.observed.id == "chat" and "not 'not-chat'" in seen.unservable_reason
    finally:
        node.stop(0)
    stub.RegisterHarness(pb.RegisterHarnessRequest(name="down", spec=_spec(address)))
    down = stub.GetHarness(pb.GetHarnessRequest(name="down", observe=True))
    assert "unreachable" in down.observe_error and not down.HasField("observed")


def test_registrations_survive_a_reopen_and_are_kept_per_memory_store(tmp_path: Path) -> None:
    spec = {"remote": {"address": "unix:///tmp/h.sock"},
            "capabilities": {"resumability": "RESUMABILITY_STATELESS_REPLAY"}}  # fmt: skip
    with agentsessions.open(tmp_path / "home", runtime="local") as engine:
        HarnessBook(records_for(engine.store)).register("kept", spec)
    assert (tmp_path / "home" / "HARNESSES.json").is_file()
    with agentsessions.open(tmp_path / "home", runtime="local") as engine:
        book = HarnessBook(records_for(engine.store))
        assert book.get("kept")["state"] == "HARNESS_STATE_ACTIVE"
        assert book.register("kept", spec)[1] == "REGISTER_OUTCOME_UNCHANGED"
    one, two = MemoryStore(), MemoryStore()
    HarnessBook(records_for(one)).register("mem", spec)
    assert HarnessBook(records_for(one)).get("mem")["metadata"]["name"] == "mem"
    with pytest.raises(agentsessions.errors.NotFoundError):
        HarnessBook(records_for(two)).get("mem")


def test_the_operator_registers_any_address(stub: pb_grpc.HarnessRegistryStub) -> None:
    far = pb.RegisterHarnessRequest(name="far-op", spec=_spec("10.0.0.1:50051"))
    assert stub.RegisterHarness(far).outcome == pb.REGISTER_OUTCOME_CREATED
    assert stub.GetHarness(pb.GetHarnessRequest(name="far-op")).metadata.project == "default"


def test_names_are_per_project_in_the_book_and_old_registrations_are_defaults(
    tmp_path: Path,
) -> None:
    spec = {"remote": {"address": "unix:///tmp/h.sock"},
            "capabilities": {"resumability": "RESUMABILITY_STATELESS_REPLAY"}}  # fmt: skip
    other = {**spec, "remote": {"address": "unix:///tmp/other.sock"}}
    book = HarnessBook(records_for(MemoryStore()))
    book.register("same", spec, "proj-a")
    assert book.register("same", other, "proj-b")[1] == "REGISTER_OUTCOME_CREATED"
    assert book.get("same", "proj-a")["spec"] == spec
    assert book.get("same", "proj-b")["metadata"]["project"] == "proj-b"
    with pytest.raises(agentsessions.errors.NotFoundError) as unknown:
        book.get("never", "proj-c")
    with pytest.raises(agentsessions.errors.NotFoundError) as hidden:
        book.get("same", "proj-c")
    assert str(hidden.value).replace("same", "X") == str(unknown.value).replace("never", "X")
    book.retire("same", "", "proj-b")
    assert book.get("same", "proj-a")["state"] == "HARNESS_STATE_ACTIVE"
    # HARNESSES.json written before registrations had a project: they are default's
    home = tmp_path / "home"
    home.mkdir()
    old = {"metadata": {"name": "old", "uid": "u", "version": "1"}, "spec": spec,
           "spec_digest": spec_digest(spec), "state": "HARNESS_STATE_ACTIVE",
           "source": "HARNESS_SOURCE_REGISTERED"}  # fmt: skip
    (home / "HARNESSES.json").write_text(json.dumps({"harnesses": {"old": old}}))
    with agentsessions.open(home, runtime="local") as engine:
        book = HarnessBook(records_for(engine.store))
        assert book.get("old")["metadata"]["project"] == "default"
        with pytest.raises(agentsessions.errors.NotFoundError):
            book.get("old", "elsewhere")
        assert book.register("old", spec)[1] == "REGISTER_OUTCOME_UNCHANGED"
    stored = json.loads((home / "HARNESSES.json").read_text())["harnesses"]
    assert list(stored) == ["default/old"] and stored["default/old"]["metadata"]["project"]


def test_a_project_registration_resolves_only_for_that_project() -> None:
    from agentsessions.controller.registry import Registry
    from agentsessions.errors import InvalidArgumentError

    def mine() -> str:
        return "mine"

    def shared() -> str:
        return "shared"

    names: Registry[str] = Registry("harness", "agentsessions.no-such-group")
    fresh: Registry[str] = Registry("harness", "agentsessions.no-such-group")
    names.register("p", mine, project="a")
    assert names.create("p", project="a") == "mine" and "p" in names.names(project="a")
    with pytest.raises(InvalidArgumentError) as hidden:
        names.factory("p", project="b")
    with pytest.raises(InvalidArgumentError) as unknown:
        fresh.factory("p", project="b")
    assert str(hidden.value) == str(unknown.value)  # word for word: nobody registered it
    assert "p" not in names.names(project="b") and not names.shared("p")
    names.register("s", shared)
    names.register("s", mine, project="a")
    assert names.create("s", project="a") == "shared" and names.shared("s")  # the operator's
    names.unregister("p", retired="gone", project="a")
    with pytest.raises(InvalidArgumentError, match="retired"):
        names.factory("p", project="a")
    with pytest.raises(InvalidArgumentError, match="unknown"):
        names.factory("p", project="b")
