"""One served daemon for the security suite (issue 18): auth on, tokens for projects
``a``, ``b``, ``fuzz`` and ``hog`` (the stream-limit test's own), and a victim session
in ``a`` that the other tokens attack.

Session-scoped: the suite's files share one daemon per test process (a run across workers
starts one per worker), so the whole directory costs one start. A test that changes what
others read (the fuzz, which writes in its own project) keeps to its own tenant.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from needs import need


@dataclass
class Victim:
    """Project a's session the others attack: its uid, name and committed records."""

    uid: str
    name: str
    last_seq: int
    harness: str  # a registration of project a's
    claimed: str  # another of a's, whose name b registers for itself (names are per project)


@pytest.fixture(scope="session")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The shared daemon (see the module docstring); stopped at the end of the run."""
    need("grpc", "grpc")
    need("grpc_health", "grpc")
    need("grpc_reflection", "grpc")
    import hostile

    root = tmp_path_factory.mktemp("security")
    served = hostile.start(root / "home", ["a", "b", "fuzz", "hog"])
    try:
        yield served
    finally:
        hostile.stop(served)


@pytest.fixture(scope="session")
def victim(daemon: Any) -> Victim:
    """A session of project a with one completed turn, and a harness a registered."""
    import hostile

    from agentsessions.wire.gen import common_pb2, harness_pb2, harness_registry_pb2
    from agentsessions.wire.gen import session_pb2 as pb

    a = daemon.tenants["a"]
    made = daemon.send(
        hostile.SESSIONS["CreateSession"],
        pb.CreateSessionRequest(
            session=pb.Session(
                metadata=common_pb2.ResourceMetadata(project="a", name="victim"),
                labels={"team": "red"},
            )
        ),
        a,
    )
    assert made.code.name == "OK", made
    uid = pb.Session.FromString(made.replies[0]).metadata.uid
    ran = daemon.send(
        hostile.SESSIONS["Exec"], pb.ExecRequest(session=uid, inputs=[hostile.text("hi")]), a
    )
    assert ran.code.name == "OK", ran
    got = daemon.send(hostile.SESSIONS["GetSession"], pb.GetSessionRequest(uid=uid), a)
    last_seq = pb.Session.FromString(got.replies[0]).last_seq
    spec = harness_registry_pb2.HarnessSpec(
        remote=harness_registry_pb2.RemotePlacement(address="127.0.0.1:9"),
        capabilities=harness_pb2.Capabilities(
            resumability=harness_pb2.RESUMABILITY_STATELESS_REPLAY
        ),
    )
    reg = daemon.send(
        hostile.REGISTRY["RegisterHarness"],
        harness_registry_pb2.RegisterHarnessRequest(name="victim-harness", spec=spec),
        a,
    )
    assert reg.code.name == "OK", reg
    for name in ("victim-claimed",):
        again = harness_registry_pb2.RegisterHarnessRequest(name=name, spec=spec)
        assert daemon.send(hostile.REGISTRY["RegisterHarness"], again, a).code.name == "OK"
    return Victim(
        uid=uid, name="victim", last_seq=last_seq, harness="victim-harness",
        claimed="victim-claimed",
    )  # fmt: skip
