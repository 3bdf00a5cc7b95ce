"""The engine through a token's eyes (``agentsessions.server.scoped``), over a real engine:
a token for project A can neither list, read nor write project B; every method of the
``Sessions`` Protocol is scoped (enumerated, so a new one cannot slip through); approvals
are recorded as the token's identity; page size and fork count are bounded."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agentsessions
from agentsessions.errors import (
    ApprovalParkedError,
    InvalidArgumentError,
    MetadataCorruptError,
    NotFoundError,
    PermissionDeniedError,
    UnauthenticatedError,
)
from agentsessions.server.scoped import Scope, ScopedSessions
from agentsessions.sessions.api import Sessions
from agentsessions.sessions.tokens import Principal
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.wire.bounds import Limits
from tests.tool_harness import ToolLineHarness, plan

HARNESSES.register("tool-line", ToolLineHarness)

ALICE = Principal(name="alice", projects=frozenset({"a"}), token_id="0123456789ab", primary="a")
UNKNOWN = "sess-000000000000000000000000"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Sessions]:
    with agentsessions.open(tmp_path / "home", runtime="local") as eng:
        yield eng


def _scoped(engine: Sessions, principal: Principal = ALICE, **limits: int) -> ScopedSessions:
    return Scope(engine, lambda: principal, Limits(**limits))()


def _protocol_methods() -> list[str]:
    """Every method the Sessions Protocol declares (dunder context methods included)."""
    own = {n for n, v in vars(Sessions).items() if inspect.isfunction(v)}
    return sorted(n for n in own if not n.startswith("_") or n in ("__enter__", "__exit__"))


def test_every_protocol_method_is_implemented_by_the_scope_itself() -> None:
    methods = _protocol_methods()
    assert {"create", "get", "list", "exec", "approve", "fork", "follow", "import_"} <= set(methods)
    missing = [m for m in methods if m not in vars(ScopedSessions)]
    assert missing == [], f"Sessions methods the scope does not scope: {missing}"
    for name in methods:  # same parameters, so delegation passes every option through
        want = list(inspect.signature(getattr(Sessions, name)).parameters)
        assert list(inspect.signature(getattr(ScopedSessions, name)).parameters) == want, name


def _uid_methods() -> list[str]:
    return [
        m for m in _protocol_methods()
        if list(inspect.signature(getattr(Sessions, m)).parameters)[1:2] == ["uid"]
    ]  # fmt: skip


def _call(scoped: ScopedSessions, name: str, uid: str, tmp_path: Path) -> Any:
    """Call method ``name`` on ``uid`` with its required arguments filled in."""
    required = {"tool": "notes", "path": tmp_path / "out.agx"}
    keywords = {"approved": True, "call_id": "c1"}
    args, kwargs = [uid], {}
    for p in list(inspect.signature(getattr(Sessions, name)).parameters.values())[2:]:
        if p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD:
            args.append(required[p.name])
        elif p.default is p.empty and p.kind is p.KEYWORD_ONLY:
            kwargs[p.name] = keywords[p.name]
    result = getattr(scoped, name)(*args, **kwargs)
    return next(iter(result)) if isinstance(result, Iterator) else result


@pytest.mark.parametrize("method", _uid_methods())
def test_another_projects_session_is_not_found_as_an_unknown_one(
    engine: Sessions, tmp_path: Path, method: str
) -> None:
    theirs = engine.run(None, ["hi"], harness="echo", project="b").session
    scoped = _scoped(engine)
    with pytest.raises(NotFoundError) as other:
        _call(scoped, method, theirs.uid, tmp_path)
    with pytest.raises(NotFoundError) as unknown:
        engine.get(UNKNOWN)
    # word for word what an unknown uid gets: nothing says the session exists
    assert other.value.message == unknown.value.message.replace(UNKNOWN, theirs.uid)
    assert other.value.hint == unknown.value.hint
    after = engine.get(theirs.uid)
    assert (after.last_seq, after.deleted) == (theirs.last_seq, False)  # nothing written
    assert not (tmp_path / "out.agx").exists()


def test_the_uid_methods_are_every_method_but_the_project_ones() -> None:
    uid_free = set(_protocol_methods()) - set(_uid_methods())
    assert uid_free == {
        "create", "list", "import_", "close", "__enter__", "__exit__", "ensure", "find", "claim"
    }  # fmt: skip


def test_list_and_create_stay_in_the_tokens_project(engine: Sessions) -> None:
    scoped = _scoped(engine)
    engine.create(project="b", name="theirs")
    mine = scoped.create(name="mine")  # no project named: the token's
    assert mine.project == "a"
    assert [s.uid for s in scoped.list().sessions] == [mine.uid]
    assert [s.uid for s in scoped.list(project="a").sessions] == [mine.uid]
    for call in (lambda: scoped.list(project="b"), lambda: scoped.create(project="b")):
        with pytest.raises(PermissionDeniedError) as info:
            call()
        assert info.value.grpc_code == "PERMISSION_DENIED" and "'b'" in info.value.message
    with pytest.raises(PermissionDeniedError):
        scoped.run(None, ["x"], harness="echo", project="b")
    assert [s.name for s in engine.list(project="b").sessions] == ["theirs"]  # nothing new


def test_a_turn_and_a_fork_in_the_tokens_project_stay_there(engine: Sessions) -> None:
    scoped = _scoped(engine)
    frame = scoped.run(None, ["hello"], harness="echo")
    assert frame.session.project == "a"
    children = scoped.fork(frame.session.uid, count=2)
    assert {c.project for c in children} == {"a"}
    assert scoped.get(children[0].uid).parent_uid == frame.session.uid
    assert len(list(scoped.read(children[1].uid))) == frame.session.last_seq + 1


def test_a_token_covering_default_uses_it(engine: Sessions) -> None:
    both = Principal(name="ops", projects=frozenset({"x", "default"}), primary="x")
    assert _scoped(engine, both).create().project == "default"


def test_fork_count_is_bounded_before_the_engine(engine: Sessions) -> None:
    scoped = _scoped(engine, max_fork_count=4)
    uid = scoped.run(None, ["hi"], harness="echo").session.uid
    for count in (0, 5, 129):
        with pytest.raises(InvalidArgumentError, match=r"fork count must be 1\.\.4"):
            scoped.fork(uid, count=count)
    with pytest.raises(InvalidArgumentError, match="child_names has 1 names for 2"):
        scoped.fork(uid, count=2, names=["one"])
    assert Limits().max_fork_count == 128
    assert scoped.get(uid).last_seq == engine.get(uid).last_seq  # nothing forked


def test_page_size_is_clamped_as_the_reference_and_negative_refused(engine: Sessions) -> None:
    scoped = _scoped(engine, max_page_size=2)
    for _ in range(3):
        scoped.create()
    assert len(scoped.list(page_size=1000).sessions) == 2  # clamped, not refused
    assert len(scoped.list(page_size=0).sessions) == 2
    with pytest.raises(InvalidArgumentError, match="page_size must be >= 0"):
        scoped.list(page_size=-1)


def test_a_workload_path_cannot_be_named_over_the_wire(engine: Sessions, tmp_path: Path) -> None:
    workload = tmp_path / "w.toml"
    workload.write_text("")
    with pytest.raises(PermissionDeniedError, match="workload file"):
        _scoped(engine).create(tools=workload)
    assert engine.list(project="a").sessions == ()


def test_import_lands_in_the_tokens_project(engine: Sessions, tmp_path: Path) -> None:
    theirs = engine.run(None, ["hi"], harness="echo", project="b").session
    engine.export(theirs.uid, tmp_path / "s.agx")
    scoped = _scoped(engine)
    assert scoped.import_(tmp_path / "s.agx").project == "a"  # not the file's "b"
    with pytest.raises(PermissionDeniedError):
        scoped.import_(tmp_path / "s.agx", project="b")


def _gated_workload(tmp_path: Path) -> Path:
    path = tmp_path / "w.toml"
    path.write_text(
        '[tools.append]\nmediation = "approval"\nexecutor = "append_line"\n'
        f'config = {{ path = "{tmp_path / "effects.txt"}" }}\n'
    )
    return path


def test_an_approval_is_recorded_as_the_tokens_identity(engine: Sessions, tmp_path: Path) -> None:
    uid = engine.create(project="a", harness="tool-line", tools=_gated_workload(tmp_path)).uid
    call = {"id": "c1", "tool": "append", "key": "k1", "args": {"line": "x"},
            "mediation": "MEDIATION_REQUIRES_APPROVAL"}  # fmt: skip
    with pytest.raises(ApprovalParkedError):
        engine.run(uid, ["go"], config=plan(call))
    decided = _scoped(engine).approve(uid, approved=True, actor="mallory")  # a claim: ignored
    assert decided.to_json()["actor"] == {"principal": "alice"}
    again = _scoped(engine).approve(uid, approved=True, actor="someone-else")
    assert again.existing  # the same identity: an identical retry, not a conflict


def test_without_auth_the_clients_actor_is_kept(engine: Sessions, tmp_path: Path) -> None:
    local = Principal(name="", projects=None)
    uid = engine.create(project="b", harness="tool-line", tools=_gated_workload(tmp_path)).uid
    call = {"id": "c1", "tool": "append", "key": "k1", "args": {"line": "x"},
            "mediation": "MEDIATION_REQUIRES_APPROVAL"}  # fmt: skip
    with pytest.raises(ApprovalParkedError):
        engine.run(uid, ["go"], config=plan(call))
    decided = _scoped(engine, local).approve(uid, approved=False, actor="bob")
    assert decided.to_json()["actor"] == {"principal": "bob"}


def test_a_scope_reached_without_a_principal_fails_closed(engine: Sessions) -> None:
    with pytest.raises(UnauthenticatedError):
        Scope(engine, lambda: None)()


def test_closing_a_scoped_view_leaves_the_engine_open(engine: Sessions) -> None:
    with _scoped(engine) as scoped:
        scoped.create()
    assert len(engine.list(project="a").sessions) == 1


def _damage_project(home: Path, uid: str, old: bytes, new: bytes) -> None:
    path = home / "sessions" / uid / "session.json"
    raw = path.read_bytes()
    assert old in raw
    path.write_bytes(raw.replace(old, new, 1))


@pytest.mark.parametrize("method", _uid_methods())
@pytest.mark.parametrize("whose", ["a", "b"])
def test_a_session_with_damaged_metadata_is_unknown_to_a_token(
    engine: Sessions, tmp_path: Path, method: str, whose: str
) -> None:
    """Issue 18: its project is unknown, so no token may act on it or learn it exists; "b"
    flipped to "a" used to move another project's session into this token's reach."""
    uid = engine.run(None, ["hi"], harness="echo", project=whose).session.uid
    _damage_project(tmp_path / "home", uid, f'"project":"{whose}"'.encode(), b'"project":"a"')
    if whose == "a":  # its own project's: damage another field
        _damage_project(tmp_path / "home", uid, b'"name":""', b'"name":"x"')
    with pytest.raises(NotFoundError) as info:
        _call(_scoped(engine), method, uid, tmp_path)
    assert info.value.message == f"session {uid} not found"
    assert [s.uid for s in _scoped(engine).list(project="a").sessions] == []
    operator = Principal(name="operator", projects=None)
    with pytest.raises(MetadataCorruptError):  # the operator is told what is wrong
        _scoped(engine, operator).get(uid)
    (row,) = _scoped(engine, operator).list(project=whose).sessions
    assert row.uid == uid and row.damaged and row.project == ""
    assert not (tmp_path / "out.agx").exists()
