"""ONE contract suite for the ``Sessions`` API, written against the Protocol only.

Every implementation passes it unchanged: today the local engine on the file store and on
the in-memory store, and the gRPC client (``agentsessions.client``) dialled to a real
server over the local engine on a loopback port and on a Unix socket. Each joins by adding
a fixture to ``ENGINES``. A fixture may register the test harness below wherever its harnesses run.

The ``gate`` harness makes timing deterministic without sleeps: its turn records its
EXECUTION_START, then waits for the test to open its gate before making its model call;
config ``fail`` makes it raise instead.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from needs import need

import agentsessions
from agentsessions.errors import (
    ConflictError,
    HarnessError,
    InvalidArgumentError,
    LockHeldError,
    NotFoundError,
    SessionDeletedError,
)
from agentsessions.sessions.api import Sessions
from agentsessions.sessions.values import DeltaFrame, Frame, RecordFrame, Session, SessionFrame
from agentsessions.v1.turn import TurnRequest

UNKNOWN = "sess-" + "0" * 24
GATES: dict[str, threading.Event] = {}
"""The gate of each gated turn, by its config text."""


class GateHarness:
    """Echo's turn, held at a gate named by the config; config ``fail`` raises."""

    def describe(self) -> Any:
        from agentsessions.controller.spi import HarnessDescriptor

        return HarnessDescriptor(id="contract-gate", version="1")

    def run(self, start: Any, sink: Any) -> None:
        from agentsessions.controller.spi import ModelRequest

        name = start.config.decode()
        if name == "fail":
            raise RuntimeError("the gate harness was told to fail")
        gate = GATES.get(name)
        if gate is not None:
            gate.wait()
        sink.model(ModelRequest(model="echo", messages=(start.inputs[-1],), params=None))


def _local(tmp: Path, store: Any = None) -> Sessions:
    from agentsessions.sessions.wiring import HARNESSES

    HARNESSES.register("contract-gate", GateHarness)
    return agentsessions.open(tmp / "home", store=store, runtime="auto")


def _local_memory(tmp: Path) -> Sessions:
    from agentsessions.journal.stores.memory.store import MemoryStore

    return _local(tmp, MemoryStore())


@contextmanager
def _client(tmp: Path, listen: str = "127.0.0.1:0") -> Iterator[Sessions]:
    """The gRPC client, dialled to a real server on ``listen`` over a local engine."""
    need("grpc", "grpc")
    from agentsessions.client import dial
    from agentsessions.server.app import build_server

    with _local(tmp) as engine:
        server = build_server(engine, listen)
        try:
            with dial(server.address) as client:
                yield client
        finally:
            server.stop(grace=None)


@contextmanager
def _client_unix(tmp: Path) -> Iterator[Sessions]:
    """The same over a Unix socket (in a short directory: a socket path has ~100 bytes)."""
    import tempfile

    with (
        tempfile.TemporaryDirectory(prefix="as-") as short,
        _client(tmp, f"unix://{short}/s.sock") as client,
    ):
        yield client


@contextmanager
def _client_rest(tmp: Path) -> Iterator[Sessions]:
    """The client whose every turn outlasts the server's quick window (0 s): ExecQuick's
    reply holds its first frames and ExecRest streams the rest."""
    from agentsessions.server import quick

    window, quick.QUICK_WINDOW = quick.QUICK_WINDOW, 0.0
    try:
        with _client(tmp) as client:
            yield client
    finally:
        quick.QUICK_WINDOW = window


@contextmanager
def _client_stream(tmp: Path) -> Iterator[Sessions]:
    """The client as it talks to a server without ExecQuick: every turn an Exec stream."""
    with _client(tmp) as client:
        client._quick_served = False  # type: ignore[attr-defined]
        yield client


ENGINES: dict[str, Callable[[Path], AbstractContextManager[Sessions]]] = {
    "local-file": _local,
    "local-memory": _local_memory,
    "client": _client,
    "client-unix": _client_unix,
    "client-rest": _client_rest,
    "client-stream": _client_stream,
}


@pytest.fixture(params=[*sorted(ENGINES), "local-jetstream"])
def sessions(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Sessions]:
    if request.param == "local-jetstream":  # a real durable nats-server, once per run
        from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
        from agentsessions.journal.stores.jetstream.store import JetStreamStore
        from agentsessions.journal.stores.store import new_uid

        token = new_uid()[5:17]
        url = request.getfixturevalue("nats_server").store_url(
            stream=f"E{token}", prefix=f"e{token}"
        )
        store = JetStreamStore(JetStreamOptions.parse(url))
        try:
            with _local(tmp_path, store) as engine:
                yield engine
        finally:
            store.close()
        return
    with ENGINES[request.param](tmp_path) as engine:
        yield engine


def _run(frames: Iterator[Frame]) -> list[Frame]:
    return list(frames)


def _last(frames: list[Frame]) -> SessionFrame:
    frame = frames[-1]
    assert isinstance(frame, SessionFrame) and frame.last
    return frame


def _kinds(sessions: Sessions, uid: str) -> list[str]:
    return [r.event["kind"] for r in sessions.replay(uid)]


def _gate(name: str) -> threading.Event:
    GATES[name] = threading.Event()
    return GATES[name]


# --- create / get / list / delete -------------------------------------------------------------


def test_create_then_get_returns_the_metadata(sessions: Sessions) -> None:
    made = sessions.create(project="acme", name="triage", harness="echo", labels={"team": "ml"})
    got = sessions.get(made.uid)
    assert isinstance(got, Session) and got.uid == made.uid
    assert (got.project, got.name, got.harness, dict(got.labels)) == (
        "acme",
        "triage",
        "echo",
        {"team": "ml"},
    )
    assert got.last_seq == 0 and got.exec_state == "EXEC_PENDING" and not got.deleted
    assert got.memory is not None and got.memory.where == "none"


def test_unknown_and_malformed_uids_are_refused(sessions: Sessions) -> None:
    with pytest.raises(NotFoundError):
        sessions.get(UNKNOWN)
    for call in (
        lambda: sessions.get("nope"),
        lambda: sessions.delete("nope"),
        lambda: _run(sessions.exec("nope", ["hi"])),
        lambda: sessions.fork("nope"),
        lambda: list(sessions.read("nope")),
    ):
        with pytest.raises(InvalidArgumentError):
            call()
    for call in (
        lambda: _run(sessions.exec(UNKNOWN, ["hi"])),
        lambda: list(sessions.replay(UNKNOWN)),
        lambda: list(sessions.read(UNKNOWN)),
        lambda: sessions.rerun(UNKNOWN),
        lambda: sessions.suspend(UNKNOWN),
        lambda: list(sessions.follow(UNKNOWN)),
        lambda: sessions.fork(UNKNOWN),
        lambda: _run(sessions.resume(UNKNOWN)),
        lambda: sessions.verify(UNKNOWN),
    ):
        with pytest.raises(NotFoundError):
            call()


def test_list_pages_newest_first_and_hides_deleted(sessions: Sessions) -> None:
    uids = [sessions.create(project="p").uid for _ in range(5)]
    first = sessions.list(project="p", page_size=2)
    assert [s.uid for s in first.sessions] == uids[::-1][:2] and first.next_cursor
    rest = sessions.list(project="p", page_size=10, cursor=first.next_cursor)
    assert [s.uid for s in rest.sessions] == uids[::-1][2:] and rest.next_cursor == ""
    deleted = sessions.delete(uids[0])
    assert deleted.uid == uids[0] and deleted.deleted
    assert uids[0] not in [s.uid for s in sessions.list(project="p").sessions]
    assert sessions.get(uids[0]).deleted  # still readable
    with pytest.raises(InvalidArgumentError):
        sessions.list(project="a/b")
    with pytest.raises(InvalidArgumentError):
        sessions.list(project="p", cursor="garbage!")


def test_a_deleted_session_is_never_written(sessions: Sessions) -> None:
    uid = _last(_run(sessions.exec(None, ["hi"]))).uid
    sessions.delete(uid)
    with pytest.raises(SessionDeletedError):
        _run(sessions.exec(uid, ["again"]))
    assert sessions.get(uid).last_seq == 5


# --- exec -----------------------------------------------------------------------------------


def test_exec_streams_the_session_each_record_and_the_session_last(sessions: Sessions) -> None:
    frames = _run(sessions.exec(None, ["hello"], harness="echo"))
    first, last = frames[0], _last(frames)
    assert isinstance(first, SessionFrame) and first.created and not first.last
    assert all(f.uid == first.uid for f in frames)
    records = [f.record for f in frames if isinstance(f, RecordFrame)]
    assert [r.seq for r in records] == list(range(1, len(records) + 1))
    kinds = [r.event["kind"] for r in records]
    assert kinds[0] == "EVENT_EXECUTION_START" and kinds[-1] == "EVENT_END"
    assert any(isinstance(f, DeltaFrame) and f.text for f in frames)
    # the streamed text, whole and in order, between the INPUT and the MODEL_CALL's commit
    order = ["delta" if isinstance(f, DeltaFrame) else f.record.event["kind"] for f in frames[1:-1]]  # type: ignore[union-attr]
    assert order.index("delta") > order.index("EVENT_INPUT")
    assert max(i for i, k in enumerate(order) if k == "delta") < order.index("EVENT_MODEL_CALL")
    assert "".join(f.text for f in frames if isinstance(f, DeltaFrame)) == "echo:hello"
    assert last.turn is not None and last.turn.uid == first.uid and last.turn.created
    assert last.turn.outputs == ("echo:hello",) and last.turn.model_calls == 1
    assert last.session.last_seq == records[-1].seq == last.turn.last_seq
    assert last.session.exec_state == "EXEC_COMPLETED"
    assert sessions.verify(first.uid).ok


def test_exec_on_an_existing_session_appends_a_turn(sessions: Sessions) -> None:
    uid = _last(_run(sessions.exec(None, ["one"]))).uid
    last = _last(_run(sessions.exec(uid, ["two"])))
    assert last.turn is not None and not last.turn.created and last.turn.first_seq == 6
    assert last.turn.outputs == ("echo:two",)


def test_expected_last_seq_is_a_compare_and_swap(sessions: Sessions) -> None:
    with pytest.raises(ConflictError):  # a new session's head is 0
        sessions.exec(None, ["one"], expected_last_seq=3)
    frame = sessions.run(None, ["one"], expected_last_seq=0)
    uid, head = frame.session.uid, frame.session.last_seq
    with pytest.raises(ConflictError) as lost:
        _run(sessions.exec(uid, ["two"], expected_last_seq=head - 1))
    assert lost.value.head_seq == head
    assert sessions.get(uid).last_seq == head  # nothing was written
    sessions.suspend(uid)  # the wake's own records move the head, not the caller's view
    cold = sessions.get(uid).last_seq
    last = sessions.run(uid, ["two"], expected_last_seq=cold)
    assert last.turn is not None and last.turn.outputs == ("echo:two",)
    assert last.compute_resumed


def test_a_turn_request_is_the_keyword_call_as_one_value(sessions: Sessions) -> None:
    request = TurnRequest.of(None, ["one"], project="default", labels={"k": "v"})
    frame = sessions.run(request)
    assert frame.session.labels == {"k": "v"} and frame.turn is not None
    with pytest.raises(InvalidArgumentError):  # a request comes alone
        sessions.run(request, ["two"])
    with pytest.raises(TypeError):  # a misspelt option is refused, as by a signature
        sessions.run(None, ["one"], harnes="echo")  # type: ignore[call-arg]


def test_bad_requests_are_refused_before_anything_is_written(sessions: Sessions) -> None:
    for call in (
        lambda: sessions.exec(None, []),  # a new session needs an input
        lambda: sessions.exec(None, ["hi"], harness="no-such-harness"),
        lambda: sessions.exec(None, ["hi"], model="no-such-provider:x"),
        lambda: sessions.exec(None, ["hi"], project="a/b"),
        lambda: sessions.exec(None, ["hi"], fresh_start=True),
        lambda: sessions.exec(None, ["hi"], wait=-1),
    ):
        with pytest.raises(InvalidArgumentError):
            _run(call())
    assert sessions.list().sessions == ()
    uid = sessions.create().uid
    with pytest.raises(InvalidArgumentError):
        _run(sessions.exec(uid, ["hi"], name="only-for-new-sessions"))
    assert sessions.get(uid).last_seq == 0


def test_a_failed_turn_yields_up_to_its_error_then_raises(sessions: Sessions) -> None:
    seen: list[Frame] = []
    with pytest.raises(HarnessError):
        for frame in sessions.exec(None, ["hi"], harness="contract-gate", config=b"fail"):
            seen.append(frame)
    kinds = [f.record.event["kind"] for f in seen if isinstance(f, RecordFrame)]
    assert kinds[-1] == "EVENT_ERROR"
    uid = seen[0].uid
    assert sessions.get(uid).exec_state == "EXEC_FAILED" and sessions.verify(uid).ok


def test_a_consumer_that_stops_iterating_does_not_cut_the_turn(sessions: Sessions) -> None:
    gate = _gate("stop")
    frames = sessions.exec(None, ["hi"], harness="contract-gate", config=b"stop")
    uid = next(frames).uid
    first = next(frames)
    assert isinstance(first, RecordFrame)  # EXECUTION_START is durable; the turn waits
    gate.set()
    frames.close()  # type: ignore[attr-defined]  # waits for the turn's END
    assert _kinds(sessions, uid)[-1] == "EVENT_END"
    assert sessions.get(uid).exec_state == "EXEC_COMPLETED" and sessions.verify(uid).ok


def test_a_consumer_that_raises_does_not_cut_the_turn(sessions: Sessions) -> None:
    gate = _gate("raise")
    uid = ""
    with pytest.raises(KeyError):
        for frame in sessions.exec(None, ["hi"], harness="contract-gate", config=b"raise"):
            uid = frame.uid
            if isinstance(frame, RecordFrame):
                gate.set()
                raise KeyError("the consumer's own bug")
    assert _kinds(sessions, uid)[-1] == "EVENT_END" and sessions.verify(uid).ok


def test_a_consumer_that_never_iterates_still_gets_a_durable_turn(tmp_path: Path) -> None:
    gate = _gate("dropped")
    with ENGINES["local-file"](tmp_path) as engine:
        engine.exec(None, ["hi"], harness="contract-gate", config=b"dropped")  # never iterated
        uid = engine.list().sessions[0].uid
        gate.set()
    # leaving the engine waited for the turn: a new engine over the same home sees its END
    with ENGINES["local-file"](tmp_path) as again:
        assert _kinds(again, uid)[-1] == "EVENT_END" and again.verify(uid).ok


def test_run_is_exec_without_the_stream(sessions: Sessions) -> None:
    """``run`` makes the same turn as ``exec`` and returns exec's last frame."""
    first = sessions.run(None, ["one"])
    assert isinstance(first, SessionFrame) and first.last and first.turn is not None
    uid = first.uid
    assert first.turn.created and first.turn.outputs == ("echo:one",)
    assert first.session.last_seq == first.turn.last_seq == 5
    second = sessions.run(uid, ["two"])
    assert second.turn is not None and not second.turn.created and second.turn.first_seq == 6
    streamed = _last(_run(sessions.exec(uid, ["three"])))
    assert streamed.turn is not None and streamed.turn.first_seq == 11
    assert _kinds(sessions, uid)[:5] == _kinds(sessions, uid)[5:10] == _kinds(sessions, uid)[10:]
    assert sessions.get(uid).exec_state == "EXEC_COMPLETED" and sessions.verify(uid).ok


def test_run_refuses_what_exec_refuses_and_raises_what_it_raises(sessions: Sessions) -> None:
    for call in (
        lambda: sessions.run(None, []),
        lambda: sessions.run(None, ["hi"], harness="no-such-harness"),
        lambda: sessions.run(None, ["hi"], wait=-1),
    ):
        with pytest.raises(InvalidArgumentError):
            call()
    assert sessions.list().sessions == ()
    with pytest.raises(HarnessError):
        sessions.run(None, ["hi"], harness="contract-gate", config=b"fail")
    (failed,) = sessions.list().sessions
    assert _kinds(sessions, failed.uid)[-1] == "EVENT_ERROR"
    assert sessions.get(failed.uid).exec_state == "EXEC_FAILED"
    gate = _gate("run-busy")
    frames = sessions.exec(None, ["hi"], harness="contract-gate", config=b"run-busy")
    uid = next(frames).uid
    assert isinstance(next(frames), RecordFrame)  # the turn holds the session now
    with pytest.raises(LockHeldError):
        sessions.run(uid, ["second"])
    gate.set()
    _run(frames)
    assert sessions.run(uid, ["second"]).session.exec_state == "EXEC_COMPLETED"


def test_a_busy_session_is_refused_or_waited_for(sessions: Sessions) -> None:
    gate = _gate("busy")
    frames = sessions.exec(None, ["hi"], harness="contract-gate", config=b"busy")
    uid = next(frames).uid
    assert isinstance(next(frames), RecordFrame)  # the turn holds the session now
    with pytest.raises(LockHeldError):
        _run(sessions.exec(uid, ["second"], harness="contract-gate"))
    results: list[list[Frame]] = []
    waiter = threading.Thread(
        target=lambda: results.append(_run(sessions.exec(uid, ["second"], wait=600)))
    )
    waiter.start()
    gate.set()
    _run(frames)
    waiter.join()
    second = _last(results[0])
    assert second.turn is not None and second.turn.outputs == ("echo:second",)
    assert sessions.verify(uid).ok


# --- threads --------------------------------------------------------------------------------


def test_threads_exec_different_sessions_in_parallel(sessions: Sessions) -> None:
    uids = [_last(_run(sessions.exec(None, [f"s{i}"]))).uid for i in range(4)]
    done: dict[str, list[Frame]] = {}
    errors: list[BaseException] = []

    def turns(uid: str) -> None:
        try:
            for n in range(3):
                done[f"{uid}/{n}"] = _run(sessions.exec(uid, [f"{uid}:{n}"]))
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)

    threads = [threading.Thread(target=turns, args=(uid,)) for uid in uids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for key, frames in done.items():
        uid, n = key.split("/")
        turn = _last(frames).turn
        assert turn is not None and turn.outputs == (f"echo:{uid}:{n}",) and turn.model_calls == 1
    for uid in uids:
        assert sessions.get(uid).last_seq == 4 * 5 and sessions.verify(uid).ok


def test_threads_exec_the_same_session_one_turn_at_a_time(sessions: Sessions) -> None:
    uid = _last(_run(sessions.exec(None, ["start"]))).uid
    errors: list[BaseException] = []

    def turn(i: int) -> None:
        try:
            _run(sessions.exec(uid, [f"t{i}"], wait=600))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=turn, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    kinds = _kinds(sessions, uid)
    assert kinds.count("EVENT_EXECUTION_START") == 5 and kinds.count("EVENT_END") == 5
    assert sessions.verify(uid).ok


def test_threads_create_sessions_at_once(sessions: Sessions) -> None:
    made: list[str] = []
    threads = [
        threading.Thread(target=lambda: made.append(sessions.create(project="t").uid))
        for _ in range(6)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(s.uid for s in sessions.list(project="t").sessions) == sorted(made)


# --- replay / follow ------------------------------------------------------------------------


def test_replay_streams_records_and_rerun_makes_zero_model_calls(sessions: Sessions) -> None:
    uid = _last(_run(sessions.exec(None, ["one"]))).uid
    _run(sessions.exec(uid, ["two"]))
    assert [r.seq for r in sessions.replay(uid, from_seq=7)] == [7, 8, 9, 10]
    report = sessions.rerun(uid)
    assert report.uid == uid and report.identical and report.model_calls == 0
    assert (report.executions, report.replayed) == (2, 2)
    assert report.outputs == ("echo:one", "echo:two") and report.divergence == ""
    with pytest.raises(InvalidArgumentError):
        sessions.rerun(uid, harness="no-such-harness")


def test_follow_yields_from_a_seq_then_each_new_record(sessions: Sessions) -> None:
    uid = _last(_run(sessions.exec(None, ["one"]))).uid
    follower = sessions.follow(uid, from_seq=4)
    assert [next(follower).seq for _ in range(2)] == [4, 5]
    _run(sessions.exec(uid, ["two"]))
    assert [next(follower).seq for _ in range(5)] == [6, 7, 8, 9, 10]
    with pytest.raises(InvalidArgumentError):
        sessions.follow(uid, from_seq=0)


# --- fork / suspend / resume ----------------------------------------------------------------


def test_fork_shares_the_prefix_and_each_child_runs_its_own_turn(sessions: Sessions) -> None:
    parent = _last(_run(sessions.exec(None, ["root"], project="f", name="parent"))).uid
    children = sessions.fork(parent, at=5, count=2, names=("left", "right"), labels={"try": "a"})
    assert [c.name for c in children] == ["left", "right"]
    for child in children:
        assert child.parent_uid == parent and child.fork_seq == 5 and child.project == "f"
        assert dict(child.labels) == {"try": "a"} and child.last_seq == 6
        assert [r.seq for r in sessions.replay(child.uid)][:5] == [1, 2, 3, 4, 5]
        turn = _last(_run(sessions.exec(child.uid, [child.name]))).turn
        assert turn is not None and turn.outputs == (f"echo:{child.name}",)
        assert sessions.verify(child.uid).ok
    assert sessions.get(parent).last_seq == 5
    for bad in (
        lambda: sessions.fork(parent, count=0),
        lambda: sessions.fork(parent, count=2, names=("only-one",)),
        lambda: sessions.fork(parent, at=99),
        lambda: sessions.fork(parent, at=-1),
    ):
        with pytest.raises(InvalidArgumentError):
            bad()


def test_suspend_then_exec_wakes_the_session_first(sessions: Sessions) -> None:
    uid = _last(_run(sessions.exec(None, ["one"]))).uid
    cold = sessions.suspend(uid)
    assert cold.uid == uid and cold.compute_state == "COMPUTE_COLD"
    assert sessions.suspend(uid).last_seq == cold.last_seq  # idempotent
    frames = _run(sessions.exec(uid, ["two"]))
    first, last = frames[0], _last(frames)
    assert isinstance(first, SessionFrame) and first.session.compute_state == "COMPUTE_COLD"
    kinds = [f.record.event["kind"] for f in frames if isinstance(f, RecordFrame)]
    assert kinds[0] == "EVENT_LIFECYCLE"  # the RESUME comes before the turn
    assert last.compute_resumed and last.session.compute_state != "COMPUTE_COLD"


def test_resume_wakes_compute_and_says_when_nothing_was_open(sessions: Sessions) -> None:
    uid = _last(_run(sessions.exec(None, ["one"]))).uid
    idle = _last(_run(sessions.resume(uid)))
    assert idle.turn is None and not idle.compute_resumed and idle.uid == uid
    sessions.suspend(uid)
    woke = _last(_run(sessions.resume(uid)))
    assert woke.turn is None and woke.compute_resumed
    assert woke.session.compute_state != "COMPUTE_COLD"


def test_resume_retries_a_failed_turn(sessions: Sessions) -> None:
    with pytest.raises(HarnessError):
        _run(sessions.exec(None, ["hi"], harness="contract-gate", config=b"fail"))
    uid = sessions.list().sessions[0].uid
    with pytest.raises(HarnessError):  # the same config fails the same way again
        _run(sessions.resume(uid))
    assert _kinds(sessions, uid).count("EVENT_ERROR") == 2 and sessions.verify(uid).ok


# --- exchange -------------------------------------------------------------------------------


def test_export_then_import_keeps_every_hash(sessions: Sessions, tmp_path: Path) -> None:
    uid = _last(_run(sessions.exec(None, ["one"]))).uid
    out = tmp_path / "s.agx"
    summary = sessions.export(uid, out)
    assert summary and out.stat().st_size > 0
    with pytest.raises(InvalidArgumentError):
        sessions.export(uid, out)  # an existing file is not overwritten
    copy = sessions.import_(out, project="copies", name="copy")
    assert copy.uid != uid and copy.project == "copies" and copy.name == "copy"
    original = [(r.seq, r.content_hash) for r in sessions.replay(uid)]
    assert [(r.seq, r.content_hash) for r in sessions.replay(copy.uid)] == original
    assert sessions.verify(copy.uid).ok


# --- cancel -----------------------------------------------------------------------------------


def test_cancel_of_a_running_turn_stops_it_before_its_model_call(sessions: Sessions) -> None:
    from agentsessions.errors import InvalidExecutionLogError, UnavailableError

    gate = _gate("cancel")
    frames = sessions.exec(None, ["hi"], harness="contract-gate", config=b"cancel")
    uid = next(frames).uid
    assert isinstance(next(frames), RecordFrame)  # EXECUTION_START is durable; the turn waits
    with pytest.raises(UnavailableError, match="did not stop"):
        sessions.cancel(uid, wait=0.0)  # the request is durable; the turn has not reached it
    gate.set()  # the turn goes on to its model call's boundary and finds the request
    last = _last(_run(frames))
    assert last.turn is not None and last.turn.canceled and last.turn.model_calls == 0
    records = list(sessions.replay(uid))
    assert [r.event["kind"] for r in records[-2:]] == ["EVENT_LIFECYCLE", "EVENT_END"]
    assert records[-2].event["lifecycle"]["kind"] == "LIFECYCLE_CANCEL"
    assert records[-1].event["end"]["state"] == "CANCELED"
    assert "EVENT_MODEL_CALL" not in [r.event["kind"] for r in records]  # nothing started
    assert sessions.get(uid).exec_state == "EXEC_CANCELED" and sessions.verify(uid).ok
    head = sessions.get(uid).last_seq
    assert sessions.cancel(uid).last_seq == head  # idempotent: nothing appended
    _run(sessions.exec(uid, ["again"]))  # the next exec runs (and the request is gone)
    assert sessions.get(uid).exec_state == "EXEC_COMPLETED"
    with pytest.raises(InvalidExecutionLogError, match="ended COMPLETED"):
        sessions.cancel(uid)  # nothing open: a clear error


def test_tool_store_reads_a_tool_components_own_entries(sessions: Sessions, tmp_path: Path) -> None:
    import json

    tools, script = tmp_path / "tools.toml", tmp_path / "notes-script.json"
    tools.write_text(
        '[session]\ntool_components = ["notes"]\n'
        '[tools.notes]\nmediation = "mediated"\nexecutor = "notes"\n'
    )
    call = {"name": "notes", "arguments": {"op": "add", "text": "buy milk"}}
    script.write_text(json.dumps([{"text": "", "tool_calls": [call]}, "Noted."]))
    done = sessions.run(None, ["note it"], harness="chat", model=f"scripted:file={script}",
                        tools=tools)  # fmt: skip
    uid = done.uid
    entries = sessions.tool_store(uid, "notes")
    assert [(e.seq, e.author, e.data) for e in entries] == [
        (1, "notes", {"op": "add", "text": "buy milk"})
    ]
    assert entries[0].time_ns > 0 and entries[0].to_json()["seq"] == 1
    assert sessions.tool_store(uid, "notes", from_seq=2) == []
    # the conversation holds the call and its result, never the store's entries
    kinds = [r.event["kind"] for r in sessions.read(uid)]
    assert kinds.count("EVENT_TOOL_RESULT") == 1 and len(kinds) == done.session.last_seq
    assert sessions.verify(uid).ok
    with pytest.raises(NotFoundError):
        sessions.tool_store(uid, "other")
    with pytest.raises(NotFoundError):
        sessions.tool_store(UNKNOWN, "notes")
    with pytest.raises(InvalidArgumentError):
        sessions.tool_store(uid, "../notes")


# -- sessions by key (Sessions.ensure, find, claim) ---------------------------------------------


def test_ensure_makes_one_session_per_key_and_find_finds_it(sessions: Sessions) -> None:
    assert sessions.find("thread-1", project="bykey") is None
    made, created = sessions.ensure("thread-1", project="bykey", name="t1", labels={"a": "b"})
    assert created and (made.project, made.name, dict(made.labels)) == ("bykey", "t1", {"a": "b"})
    again, created = sessions.ensure("thread-1", project="bykey", name="other")
    assert (again.uid, again.name, created) == (made.uid, "t1", False)
    found = sessions.find("thread-1", project="bykey")
    assert found is not None and found.uid == made.uid
    assert sessions.find("thread-1", project="elsewhere") is None  # a key is per project
    sessions.delete(made.uid)  # frees the key
    assert sessions.find("thread-1", project="bykey") is None
    fresh, created = sessions.ensure("thread-1", project="bykey")
    assert created and fresh.uid != made.uid


def test_claim_makes_a_key_name_an_existing_session(sessions: Sessions) -> None:
    first = sessions.create(project="bykey", name="a")
    second = sessions.create(project="bykey", name="b")
    assert sessions.claim("k", first.uid, project="bykey") == first.uid
    assert sessions.claim("k", second.uid, project="bykey") == first.uid  # taken
    found = sessions.find("k", project="bykey")
    assert found is not None and found.uid == first.uid
    with pytest.raises(InvalidArgumentError):
        sessions.claim("k2", first.uid, project="another")
    with pytest.raises(InvalidArgumentError):
        sessions.ensure("", project="bykey")
