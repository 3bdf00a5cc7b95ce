"""The cross-tenant matrix (issue 18): every RPC of every service the daemon serves, called
with project b's token against project a's session (by uid and by name) or a's harness,
answers exactly as the same call naming something that does not exist: the same code, the
same details and trailers with the name substituted. An answer that differs tells b that
a's session exists.

The methods come from the daemon's reflection and the generated descriptors, so an RPC
added later fails :func:`test_the_matrix_covers_every_served_rpc` until it has a case
here. A method that names a project (CreateSession, ListSessions, Import, EnsureSession,
FindSession, an Exec that creates) is asked with a's project and with one nobody has:
both PERMISSION_DENIED, the same text but the name (refusing a name the caller chose
leaks nothing). Harness registrations belong to a project the same way: b never reads,
retires or re-registers a's.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
from typing import Any

import pytest
from needs import need

grpc = need("grpc", "grpc")
need("grpc_health", "grpc")
need("grpc_reflection", "grpc")

import hostile
from hostile import REGISTRY, SESSIONS, Method

from agentsessions.wire.gen import harness_registry_pb2, session_pb2

PROJECT_ADDRESSED = (
    "Sessions.CreateSession",
    "Sessions.ListSessions",
    "Sessions.Import",
    "Sessions.EnsureSession",
    "Sessions.FindSession",
)
NAME_ADDRESSED = tuple(m.full for m in REGISTRY.values() if m.name != "ListHarnesses")
REST_ADDRESSED = ("Sessions.ExecRest",)
"""Addressed by a paused turn's id (ExecQuick's reply), not by a session: taken only by the
principal that was given it (tests/unit/test_wire_quick.py pins the owner check)."""
UID_ADDRESSED = tuple(
    m.full for m in SESSIONS.values() if m.full not in (*PROJECT_ADDRESSED, *REST_ADDRESSED)
)
LISTING = ("HarnessRegistry.ListHarnesses",)  # names nothing: b's list must not show a's
COVERED = {*PROJECT_ADDRESSED, *NAME_ADDRESSED, *UID_ADDRESSED, *REST_ADDRESSED, *LISTING}
BY_FULL = {m.full: m for m in (*SESSIONS.values(), *REGISTRY.values())}


def _unknown_uid() -> str:
    return "sess-" + secrets.token_hex(12)


def test_the_matrix_covers_every_served_rpc(daemon: Any) -> None:
    """Every method the daemon serves behind its tokens has a case in this matrix."""
    served = {m.full for m in hostile.attacked(daemon.channel)}
    assert "Sessions.GetSession" in served and "HarnessRegistry.GetHarness" in served
    missing = served - COVERED
    assert not missing, f"RPCs with no cross-tenant case (add them here): {sorted(missing)}"
    assert served >= COVERED, f"cases for RPCs the daemon does not serve: {COVERED - served}"


def test_every_served_rpc_refuses_a_call_without_a_valid_token(daemon: Any) -> None:
    """No token, a malformed one, a well-formed stranger: UNAUTHENTICATED on every method,
    before anything runs."""
    forged = hostile.Tenant("a", "agst_000000000000_" + "A" * 43, "forged")
    junk = hostile.Tenant("a", "hunter2", "junk")
    before = daemon.fingerprint()
    for method in hostile.attacked(daemon.channel):
        request = hostile.sample(method, _unknown_uid(), "a")
        for tenant in (None, forged, junk):
            got = daemon.send(method, request, tenant)
            assert got.code == grpc.StatusCode.UNAUTHENTICATED, (method.full, tenant, got)
    assert daemon.fingerprint() == before


def _pair(daemon: Any, method: Method, real: str, unknown: str) -> None:
    b = daemon.tenants["b"]
    hidden = daemon.send(method, hostile.sample(method, real), b)
    none = daemon.send(method, hostile.sample(method, unknown), b)
    assert hidden.shape() == none.shape((unknown, real)), (method.full, hidden, none)
    if method.name == "RegisterHarness" and hidden.code == grpc.StatusCode.OK:
        # OK both ways: the outcome must not tell "a has one" (UNCHANGED) from "new" (CREATED)
        outcomes = [
            harness_registry_pb2.RegisterHarnessResponse.FromString(got.replies[0]).outcome
            for got in (hidden, none)
        ]
        assert outcomes[0] == outcomes[1], outcomes


@pytest.mark.parametrize("form", ["uid", "name"])
@pytest.mark.parametrize("full", UID_ADDRESSED)
def test_another_projects_session_is_an_unknown_one(
    daemon: Any, victim: Any, full: str, form: str
) -> None:
    """b's call on a's session answers exactly as on one nobody has: by uid NOT_FOUND with
    the same text; by name (where a uid goes) as a name nobody has; a's session untouched."""
    method = BY_FULL[full]
    before = daemon.fingerprint()
    target = victim.uid if form == "uid" else victim.name
    unknown = _unknown_uid() if form == "uid" else "nobody-" + secrets.token_hex(4)
    b = daemon.tenants["b"]
    hidden = daemon.send(method, hostile.sample(method, target), b)
    none = daemon.send(method, hostile.sample(method, unknown), b)
    expected = grpc.StatusCode.NOT_FOUND if form == "uid" else grpc.StatusCode.INVALID_ARGUMENT
    assert hidden.code == expected, (full, hidden)
    assert hidden.shape() == none.shape((unknown, target)), (full, hidden, none)
    assert target in hidden.details and victim.uid not in none.text()
    assert daemon.fingerprint() == before, f"{full} by b wrote something"


def test_a_rest_id_nobody_was_given_is_an_unknown_one(daemon: Any, victim: Any) -> None:
    """b's ExecRest on ids it was never given (a's session uid among them) is NOT_FOUND,
    the same answer for each, and writes nothing."""
    method = BY_FULL["Sessions.ExecRest"]
    before = daemon.fingerprint()
    b = daemon.tenants["b"]
    answers = [
        daemon.send(method, hostile.sample(method, target), b)
        for target in (victim.uid, secrets.token_urlsafe(16))
    ]
    assert all(a.code == grpc.StatusCode.NOT_FOUND for a in answers), answers
    assert answers[0].details == answers[1].details
    assert daemon.fingerprint() == before


@pytest.mark.parametrize("full", PROJECT_ADDRESSED)
def test_another_projects_name_is_refused_as_a_project_nobody_has(
    daemon: Any, victim: Any, full: str
) -> None:
    """b naming project a is refused exactly as b naming a project nobody has."""
    method = BY_FULL[full]
    before = daemon.fingerprint()
    b = daemon.tenants["b"]
    hidden = daemon.send(method, hostile.sample(method, "a"), b)
    none = daemon.send(method, hostile.sample(method, "nobody-has-this"), b)
    assert hidden.code == grpc.StatusCode.PERMISSION_DENIED, (full, hidden)
    assert hidden.shape() == none.shape(("nobody-has-this", "a")), (full, hidden, none)
    assert victim.uid not in hidden.text()
    assert daemon.fingerprint() == before


def test_an_exec_creating_in_another_project_is_refused_and_writes_nothing(
    daemon: Any, victim: Any
) -> None:
    before = daemon.fingerprint()
    b = daemon.tenants["b"]
    exec_ = SESSIONS["Exec"]
    hidden = daemon.send(
        exec_, session_pb2.ExecRequest(project="a", inputs=[hostile.text("hi")]), b
    )
    none = daemon.send(
        exec_, session_pb2.ExecRequest(project="zz-none", inputs=[hostile.text("hi")]), b
    )
    assert hidden.code == grpc.StatusCode.PERMISSION_DENIED, hidden
    assert hidden.shape() == none.shape(("zz-none", "a"))
    assert daemon.fingerprint() == before


def test_b_lists_none_of_as_sessions_and_a_still_has_its_own(daemon: Any, victim: Any) -> None:
    """After every attack above, a's session is as a left it and b's lists never show it."""
    b, a = daemon.tenants["b"], daemon.tenants["a"]
    for project in ("", "b", "default"):
        got = daemon.send(
            SESSIONS["ListSessions"], session_pb2.ListSessionsRequest(project=project), b
        )
        assert got.code == grpc.StatusCode.OK and victim.uid not in got.text(), got
    own = daemon.send(SESSIONS["GetSession"], session_pb2.GetSessionRequest(uid=victim.uid), a)
    session = session_pb2.Session.FromString(own.replies[0])
    assert session.last_seq == victim.last_seq and not session.deleted
    assert session.exec_state == session_pb2.EXEC_COMPLETED


@pytest.mark.parametrize("full", NAME_ADDRESSED)
def test_another_projects_harness_is_an_unknown_one(daemon: Any, victim: Any, full: str) -> None:
    """b's Get, Retire or Register of a's harness name answers as for a name nobody has
    (Register: b gets a registration of its own; a's is unchanged)."""
    method = BY_FULL[full]
    # a Register by b makes a registration of b's own under that name: it gets a name of
    # a's that no other case asks b about
    real = victim.claimed if method.name == "RegisterHarness" else victim.harness
    _pair(daemon, method, real, "h" + secrets.token_hex(6))
    a = daemon.tenants["a"]
    mine = daemon.send(
        REGISTRY["GetHarness"], harness_registry_pb2.GetHarnessRequest(name=victim.harness), a
    )
    reg = harness_registry_pb2.HarnessRegistration.FromString(mine.replies[0])
    assert reg.state == harness_registry_pb2.HARNESS_STATE_ACTIVE
    assert reg.spec.remote.address == "127.0.0.1:9"


def test_b_lists_none_of_as_harnesses(daemon: Any, victim: Any) -> None:
    """Every page of b's ListHarnesses (retired ones too) leaves a's harness out."""
    assert victim.harness not in daemon.harness_names(daemon.tenants["b"])


@pytest.mark.parametrize(
    "args", [["harness", "list"], ["harness", "retire", "victim-harness"]], ids=["list", "retire"]
)
def test_the_harness_commands_over_server_answer_in_one_line(
    daemon: Any, victim: Any, args: list[str]
) -> None:
    """``agentsessions --server ADDR --token T harness ...`` works or refuses in one line
    (today an AttributeError traceback); b's retire of a's harness is a's name unknown."""
    b = daemon.tenants["b"]
    run = subprocess.run(
        [sys.executable, "-m", "agentsessions", "--server", daemon.address, "--token", b.token,
         *args],
        env=hostile.clean_env(), capture_output=True, text=True, timeout=hostile.WAIT,
        check=False,
    )  # fmt: skip
    assert "Traceback" not in run.stderr, run.stderr
    lines = run.stderr.splitlines()
    assert run.returncode == 0 or (lines and lines[0].startswith("agentsessions: error: "))
    assert len(lines) <= 2, run.stderr
    assert victim.harness not in run.stdout
