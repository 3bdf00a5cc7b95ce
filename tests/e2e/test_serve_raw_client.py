"""A real ``agentsessions serve --no-auth`` process driven ONLY by the generated stubs.

This is what a client generated from the reference's protos does (issue 10's evidence):
``session_pb2_grpc.SessionsStub`` over a plain channel, no code of ours on the client side
but the generated messages. CreateSession, Exec (a stream: the session first, the records,
the session last), Replay, GetSession, ListSessions across page tokens, Fork, and the bad
inputs with their status codes (a deadline already past among them); the daemon stays up
through all of them and writes nothing for a refused request.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clirun import clean_env
from needs import need

grpc = need("grpc", "grpc")

from agentsessions.wire.gen import common_pb2, session_pb2, session_pb2_grpc

WAIT = 120  # a hang guard, not an assertion


@pytest.fixture
def stub(tmp_path: Path) -> Iterator[session_pb2_grpc.SessionsStub]:
    argv = [sys.executable, "-m", "agentsessions", "--home", str(tmp_path / "home"), "serve",
            "--listen", "127.0.0.1:0", "--no-auth"]  # fmt: skip
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env()
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    try:
        assert line.startswith("listening on 127.0.0.1:"), proc.stderr and proc.stderr.read()
        with grpc.insecure_channel(line.split()[-1]) as channel:
            yield session_pb2_grpc.SessionsStub(channel)
        proc.terminate()
        _, err = proc.communicate(timeout=WAIT)
        assert proc.returncode == 0 and "Traceback" not in err, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _text(text: str) -> common_pb2.Message:
    return common_pb2.Message(
        role="user", parts=[common_pb2.Part(text=common_pb2.TextPart(text=text))]
    )


def _code(call: Any) -> Any:
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value.code()


def test_a_generated_client_drives_the_daemon(stub: session_pb2_grpc.SessionsStub) -> None:
    made = stub.CreateSession(
        session_pb2.CreateSessionRequest(
            session=session_pb2.Session(
                metadata=common_pb2.ResourceMetadata(project="acme", name="first"),
                labels={"team": "ml"},
            )
        )
    )
    uid = made.metadata.uid
    assert uid.startswith("sess-") and made.last_seq == 0 and made.metadata.project == "acme"

    updates = list(stub.Exec(session_pb2.ExecRequest(session=uid, inputs=[_text("hello")])))
    kinds = [u.WhichOneof("update") for u in updates]
    assert kinds[0] == "session" and kinds[-1] == "session"
    records = [u.record for u in updates if u.WhichOneof("update") == "record"]
    assert [r.seq for r in records] == list(range(1, len(records) + 1))
    assert records[0].event.kind == common_pb2.EVENT_EXECUTION_START
    assert records[-1].event.kind == common_pb2.EVENT_END
    assert records[-1].event.end.state == "COMPLETED"
    assert updates[-1].session.last_seq == records[-1].seq
    assert updates[-1].session.exec_state == session_pb2.EXEC_COMPLETED

    replayed = list(stub.Replay(session_pb2.ReplayRequest(session=uid)))
    assert [(r.seq, r.content_hash) for r in replayed] == [(r.seq, r.content_hash) for r in records]
    assert all(b.prev_hash == a.content_hash for a, b in itertools.pairwise(replayed))
    middle = list(stub.Replay(session_pb2.ReplayRequest(session=uid, from_seq=2, to_seq=3)))
    assert [r.seq for r in middle] == [2, 3]

    got = stub.GetSession(session_pb2.GetSessionRequest(uid=uid))
    assert got.metadata.name == "first" and got.last_seq == records[-1].seq
    assert dict(got.labels) == {"team": "ml"}

    for name in ("second", "third"):
        stub.CreateSession(
            session_pb2.CreateSessionRequest(
                session=session_pb2.Session(
                    metadata=common_pb2.ResourceMetadata(project="acme", name=name)
                )
            )
        )
    seen: list[str] = []
    token = ""
    pages = 0
    while True:
        page = stub.ListSessions(
            session_pb2.ListSessionsRequest(project="acme", page_size=1, page_token=token)
        )
        assert len(page.sessions) <= 1
        seen += [s.metadata.name for s in page.sessions]
        pages += 1
        token = page.next_page_token
        if not token:
            break
        assert pages < 10, "the page tokens never ended"
    assert sorted(seen) == ["first", "second", "third"] and len(seen) == len(set(seen))
    other = stub.ListSessions(session_pb2.ListSessionsRequest(project="nobody"))
    assert list(other.sessions) == [] and other.next_page_token == ""

    forked = stub.Fork(
        session_pb2.ForkRequest(session=uid, at_seq=2, count=2, child_names=["a", "b"])
    )
    assert [c.metadata.name for c in forked.children] == ["a", "b"]
    for child in forked.children:
        assert child.parent_uid == uid and child.fork_seq == 2 and child.last_seq >= 2
        copied = list(stub.Replay(session_pb2.ReplayRequest(session=child.metadata.uid)))
        assert [(r.seq, r.content_hash) for r in copied[:2]] == [
            (r.seq, r.content_hash) for r in records[:2]
        ]


def test_bad_inputs_get_their_status_and_write_nothing(
    stub: session_pb2_grpc.SessionsStub,
) -> None:
    invalid = grpc.StatusCode.INVALID_ARGUMENT
    made = stub.CreateSession(session_pb2.CreateSessionRequest(session=session_pb2.Session()))
    uid = made.metadata.uid
    list(stub.Exec(session_pb2.ExecRequest(session=uid, inputs=[_text("hi")])))
    head = stub.GetSession(session_pb2.GetSessionRequest(uid=uid)).last_seq

    assert _code(lambda: stub.GetSession(session_pb2.GetSessionRequest(uid=""))) == invalid
    empty = session_pb2.ReplayRequest(session="")
    assert _code(lambda: list(stub.Replay(empty))) == invalid
    no_such = session_pb2.GetSessionRequest(uid="sess-000000000000000000000000")
    assert _code(lambda: stub.GetSession(no_such)) == grpc.StatusCode.NOT_FOUND
    negative = session_pb2.ListSessionsRequest(page_size=-1)
    assert _code(lambda: stub.ListSessions(negative)) == invalid
    garbage = session_pb2.ListSessionsRequest(page_token="not-a-token")
    assert _code(lambda: stub.ListSessions(garbage)) == invalid

    bad_forks: list[dict[str, Any]] = [
        {"count": 0},
        {"count": 129},
        {"count": 2, "child_names": ["only-one"]},
        {"count": 1, "identity": common_pb2.IdentityRef(principal="mallory")},
    ]
    for bad in bad_forks:
        request = session_pb2.ForkRequest(session=uid, **bad)
        assert _code(lambda: stub.Fork(request)) == invalid, bad  # noqa: B023
    unset = session_pb2.ApproveRequest(
        session=uid, execution_id="x", tool_call_id="c", request_seq=1
    )
    assert _code(lambda: stub.Approve(unset)) == invalid

    late = session_pb2.ExecRequest(session=uid, inputs=[_text("late")], deadline_unix=1)
    assert _code(lambda: list(stub.Exec(late))) == grpc.StatusCode.DEADLINE_EXCEEDED
    resumed = session_pb2.ExecRequest(session=uid, inputs=[_text("x")], resume_from_seq=2)
    assert _code(lambda: list(stub.Exec(resumed))) == invalid
    stale = session_pb2.ExecRequest(session=uid, inputs=[_text("x")], expected_last_seq=head - 1)
    assert _code(lambda: list(stub.Exec(stale))) == grpc.StatusCode.ABORTED

    listed = stub.ListSessions(session_pb2.ListSessionsRequest())
    assert [s.metadata.uid for s in listed.sessions] == [uid]  # no fork child was made
    assert stub.GetSession(session_pb2.GetSessionRequest(uid=uid)).last_seq == head
