"""The LangGraph checkpointer's semantics (issue 19, part 2) on the file store, the file store
encrypted at rest and JetStream: what LangGraph relies on, and what agentsessions adds
(nothing deleted, ``verify`` offline, an O(1) copy, one writer at a time across processes,
a journal that grows with what changed).

LangGraph's own tests run against the saver in ``test_langgraph_suites.py``; the
``delta_channel_history`` tests here assert what the conformance suite of LangGraph's
repository asserts (no registry serves that version: see that module's docstring).
"""

from __future__ import annotations

import asyncio
import json
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
from needs import need

need("langgraph.graph", "langgraph")

from langchain_core.messages import AIMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import Command, interrupt
from stores import STORES, adapter_where, cli, imports_no, refuses_a_down_store, run_writers

import agentsessions
from agentsessions.errors import InvalidArgumentError, NotFoundError, UnavailableError
from agentsessions.integrations.langgraph import AgentSessionsSaver
from agentsessions.integrations.langgraph_threads import bodies


@pytest.fixture(params=STORES)
def where(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """How to open the saver on each store: ``where`` and ``key_file``."""
    return adapter_where(request.param, tmp_path, request, tag="lg")


def _saver(where: dict[str, Any]) -> AgentSessionsSaver:
    return AgentSessionsSaver(where["where"], key_file=where.get("key_file"))


def _chat(saver: AgentSessionsSaver) -> Any:
    """A MessagesState graph whose one node answers with the count of messages so far."""

    def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"reply {len(state['messages'])} " + "x" * 200)]}

    graph = StateGraph(MessagesState)
    graph.add_node("reply", reply)
    graph.add_edge(START, "reply")
    return graph.compile(checkpointer=saver)


def _config(thread: str, cid: str | None = None, ns: str = "") -> Any:
    configurable = {"thread_id": thread, "checkpoint_ns": ns}
    if cid:
        configurable["checkpoint_id"] = cid
    return {"configurable": configurable}


def _checkpoint(values: dict[str, Any], versions: dict[str, Any]) -> Any:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = values
    checkpoint["channel_versions"] = versions
    return checkpoint


def test_a_chat_round_trips_time_travels_and_a_new_saver_sees_it(where: dict[str, Any]) -> None:
    saver = _saver(where)
    try:
        app, config = _chat(saver), _config("chat")
        for i in range(4):
            app.invoke({"messages": [("user", f"hello {i}")]}, config)
        state = app.get_state(config)
        assert [m.content[:7] for m in state.values["messages"][-2:]] == ["hello 3", "reply 7"]
        history = list(app.get_state_history(config))
        assert len(history) == 12  # input, loop, loop: three checkpoints a turn
        early = next(s for s in history if len(s.values.get("messages", ())) == 2)
        forked = app.invoke({"messages": [("user", "again")]}, early.config)  # a branch
        assert len(forked["messages"]) == 4
        assert len(list(app.get_state_history(config))) == 15  # every branch, one thread
        again = _saver(where)  # another process's view: the same thread
        try:
            assert len(_chat(again).get_state(config).values["messages"]) == 4
            uid = again.uid("chat")
            assert uid == saver.uid("chat") and saver._engine.verify(uid).ok
            report = again._engine.rerun(uid)  # the recording harness re-driven
            assert report.identical and report.model_calls == 0
        finally:
            again.close()
    finally:
        saver.close()


def test_writes_are_idempotent_and_special_channels_overwrite(where: dict[str, Any]) -> None:
    with _saver(where) as saver:
        stored = saver.put(_config("t"), _checkpoint({"a": 1}, {"a": "1"}), {}, {"a": "1"})
        saver.put_writes(stored, [("a", "first"), ("__error__", "e1")], "task")
        saver.put_writes(stored, [("a", "second"), ("__error__", "e2")], "task")
        uid = saver.uid("t")
        head = saver._engine.get(uid).last_seq
        saver.put_writes(stored, [("a", "third")], "task")  # already stored: nothing written
        assert saver._engine.get(uid).last_seq == head
        got = saver.get_tuple(stored)
        assert got is not None
        assert sorted(got.pending_writes or []) == [
            ("task", "__error__", "e2"),
            ("task", "a", "first"),
        ]


def test_deletions_are_records_and_reads_reflect_them(where: dict[str, Any]) -> None:
    with _saver(where) as saver:
        parent = None
        for step, run in enumerate(["r1", "r1", "r2", "r3"]):
            config = _config("t", parent)
            meta: Any = {"run_id": run, "step": step}
            parent = saver.put(config, _checkpoint({}, {}), meta, {})["configurable"][
                "checkpoint_id"
            ]
        saver.put(_config("t", ns="child:1"), _checkpoint({}, {}), {"run_id": "r9"}, {})
        saver.put(_config("other"), _checkpoint({}, {}), {"run_id": "r1"}, {})
        saver.delete_for_runs(["r1"])
        assert [t.metadata["run_id"] for t in saver.list(_config("t", ns=""))] == ["r3", "r2"]
        assert list(saver.list(_config("other"))) == []
        saver.prune(["t"], strategy="keep_latest")  # the latest of each namespace
        assert sorted(
            t.metadata["run_id"] for t in saver.list({"configurable": {"thread_id": "t"}})
        ) == [
            "r3",
            "r9",
        ]
        with pytest.raises(InvalidArgumentError, match="strategy"):
            saver.prune(["t"], strategy="everything")
        saver.copy_thread("t", "copy")  # the engine's O(1) fork
        copy_uid = saver.uid("copy")
        assert saver._engine.get(copy_uid).parent_uid == saver.uid("t")
        assert AgentSessionsSaver(saver._engine).uid("copy") == copy_uid  # found by its id
        assert len(list(saver.list({"configurable": {"thread_id": "copy"}}))) == 2
        uid = saver.uid("t")
        saver.delete_thread("t")
        assert saver.get_tuple(_config("t")) is None and saver.uid("t") == ""
        assert len(list(saver.list({"configurable": {"thread_id": "copy"}}))) == 2
        engine = saver._engine
        assert engine.get(uid).deleted and engine.verify(uid).ok  # nothing deleted
        bodies = [json.dumps(r.event.get("message", {})) for r in engine.read(uid)]
        assert sum('"drop_runs"' in b for b in bodies) == 1
        assert (
            sum('"prune"' in b for b in bodies) == 1 and sum('"delete"' in b for b in bodies) == 1
        )
        saver.put(_config("t"), _checkpoint({}, {}), {}, {})  # a new thread of the same id
        assert saver.uid("t") not in ("", uid) and len(list(saver.list(_config("t")))) == 1


def test_a_list_extending_its_parent_is_stored_as_its_tail(tmp_path: Path) -> None:
    with AgentSessionsSaver(str(tmp_path / "home")) as saver:
        first = saver.put(_config("t"), _checkpoint({"m": ["a", "b"]}, {"m": "1"}), {}, {"m": "1"})
        second = saver.put(first, _checkpoint({"m": ["a", "b", "c"]}, {"m": "2"}), {}, {"m": "2"})
        third = saver.put(second, _checkpoint({"m": ["x"]}, {"m": "3"}), {}, {"m": "3"})
        records = [r.event for r in saver._engine.read(saver.uid("t"))]
        puts = [
            json.loads(json.dumps(e))["message"]["parts"][0]["data"]["data"]["langgraph"]["put"]
            for e in records
            if e.get("kind") == "EVENT_INPUT"
        ]
        assert [p["v"] for p in puts] == ["1", "2", "3"]  # each put's one version, shared
        assert [len(p["blobs"]["m"]) for p in puts] == [1, 2, 1]  # whole, tail, whole
        assert puts[1]["blobs"]["m"][1] is None  # the tail is on the parent's version
        fresh = AgentSessionsSaver(saver._engine)  # decodes from the journal alone
        for config, want in ((first, ["a", "b"]), (second, ["a", "b", "c"]), (third, ["x"])):
            got = fresh.get_tuple(config)
            assert got is not None and got.checkpoint["channel_values"]["m"] == want


def test_delta_channel_history_walks_to_the_nearest_stored_value(tmp_path: Path) -> None:
    """What the repository's conformance ``delta_channel_history`` asserts: writes oldest
    first, the target's own writes left out, the walk ends at the nearest ancestor storing
    a value (the seed) whose own writes are replayed, no seed when it reaches the root."""
    with AgentSessionsSaver(str(tmp_path / "home")) as saver:
        configs = []
        parent: Any = _config("t")
        for step in range(5):
            values = {"ch": [step]} if step == 1 else {}
            versions = {"ch": str(step + 1)}
            parent = saver.put(parent, _checkpoint(values, versions), {"step": step}, versions)
            saver.put_writes(parent, [("ch", step), ("other", -step)], f"task{step}")
            configs.append(parent)
        got = saver.get_delta_channel_history(config=configs[-1], channels=["ch", "other"])
        assert got["ch"] == {
            "seed": [1],
            "writes": [("task1", "ch", 1), ("task2", "ch", 2), ("task3", "ch", 3)],
        }
        assert "seed" not in got["other"]
        assert [w[2] for w in got["other"]["writes"]] == [0, -1, -2, -3]
        assert saver.get_delta_channel_history(config=configs[0], channels=["ch"]) == {
            "ch": {"writes": []}
        }
        assert saver.get_delta_channel_history(config=configs[0], channels=[]) == {}
        async_got = asyncio.run(
            saver.aget_delta_channel_history(config=configs[-1], channels=["ch", "other"])
        )
        assert async_got == got


def test_an_interrupt_resumes_in_another_saver(tmp_path: Path) -> None:
    def ask(state: MessagesState) -> dict[str, Any]:
        answer = interrupt("name?")
        return {"messages": [AIMessage(f"hi {answer}")]}

    graph = StateGraph(MessagesState)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    config = _config("t")
    with AgentSessionsSaver(str(tmp_path / "home")) as saver:
        out = graph.compile(checkpointer=saver).invoke({"messages": [("user", "hello")]}, config)
        assert out["__interrupt__"][0].value == "name?"
    with AgentSessionsSaver(str(tmp_path / "home")) as saver:  # the interrupt write is durable
        out = graph.compile(checkpointer=saver).invoke(Command(resume="Ada"), config)
        assert out["messages"][-1].content == "hi Ada"


def test_bad_input_writes_nothing_and_says_so(tmp_path: Path) -> None:
    saver = AgentSessionsSaver(str(tmp_path / "home"))
    stored = saver.put(_config("t"), _checkpoint({"a": 1}, {"a": "1"}), {}, {"a": "1"})
    uid = saver.uid("t")
    head = saver._engine.get(uid).last_seq
    with pytest.raises(TypeError):  # LangGraph's serializer refuses it: nothing written
        saver.put(
            stored, _checkpoint({"a": 1, "b": object()}, {"b": "2"}), {}, {"a": "2", "b": "2"}
        )
    with pytest.raises(TypeError):
        saver.put_writes(stored, [("a", 1), ("b", object())], "task")
    assert saver._engine.get(uid).last_seq == head
    with pytest.raises(InvalidArgumentError, match="thread_id"):
        saver.get_tuple({"configurable": {}})
    assert saver.get_tuple(_config("unknown")) is None
    assert saver.get_tuple(_config("t", "no-such-checkpoint")) is None
    assert list(saver.list(_config("unknown"))) == []
    with pytest.raises(NotFoundError, match="unknown"):
        saver.copy_thread("unknown", "copy")
    saver.put(_config("copy"), _checkpoint({}, {}), {}, {})
    with pytest.raises(InvalidArgumentError, match="exists"):
        saver.copy_thread("t", "copy")
    saver.close()
    saver.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        saver.get_tuple(_config("t"))
    refuses_a_down_store(AgentSessionsSaver)


class _Xor:
    """A toy cipher: enough to see that the saver stores only what the serializer made."""

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
        return "xor", bytes(b ^ 0x5A for b in plaintext)

    def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
        return bytes(b ^ 0x5A for b in ciphertext)


def test_a_serializer_of_the_users_own_sees_everything_stored(tmp_path: Path) -> None:
    serde = EncryptedSerializer(_Xor())
    with AgentSessionsSaver(str(tmp_path / "home"), serde=serde) as saver:
        app, config = _chat(saver), _config("secret-thread")
        app.invoke({"messages": [("user", "the secret word")]}, config)
        assert app.get_state(config).values["messages"][0].content == "the secret word"
        wire = b"".join(r.to_wire_json() for r in saver._engine.read(saver.uid("secret-thread")))
        assert b"secret word" not in wire and b"channel_versions" not in wire  # values, cp
        assert b"reply 1" not in wire  # (channel and node names are the record's keys)


def test_the_threads_session_verifies_offline_with_the_cli(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with AgentSessionsSaver(str(home)) as saver:
        _chat(saver).invoke({"messages": [("user", "hello")]}, _config("chat"))
        uid = saver.uid("chat")
    for args in (["verify", uid], ["log", uid], ["list", "--project", "langgraph"]):
        done = cli(home, *args)
    assert "chat" in done.stdout


_WRITER = textwrap.dedent(
    """
    import sys
    from langgraph.checkpoint.base import empty_checkpoint
    from agentsessions.integrations.langgraph import AgentSessionsSaver
    s = AgentSessionsSaver(sys.argv[1], key_file=sys.argv[3] or None)
    for i in range(12):
        cp = empty_checkpoint()
        cp["channel_values"] = {"w": [sys.argv[2], i, "shared text, stored once " * 3]}
        cp["channel_versions"] = {"w": s.get_next_version(None, None)}
        config = {"configurable": {"thread_id": "shared", "checkpoint_ns": ""}}
        stored = s.put(config, cp, {"who": sys.argv[2], "i": i}, cp["channel_versions"])
        s.put_writes(stored, [("w", [sys.argv[2], i, "write"])], "task")
    s.close()
    """
)


def test_two_processes_on_one_thread_are_serialised(where: dict[str, Any]) -> None:
    """Two processes write one thread at once: every checkpoint and its writes whole,
    nothing lost or doubled, one session, a journal that verifies. On JetStream (no
    cross-host lock) too, with no retry here: a writer opening while the other's is in
    use waits for it (LockHeldError inside the wait), never fences it mid-save."""
    seed = _saver(where)
    seed.put(_config("shared"), _checkpoint({}, {}), {"who": "seed"}, {})  # the session exists
    seed.close()
    run_writers(_WRITER, where, ("a", "b"))
    with _saver(where) as reader:
        tuples = list(reader.list(_config("shared")))
        assert len(tuples) == 25
        for t in tuples[:-1] if tuples[-1].metadata["who"] == "seed" else tuples:
            who, i = t.metadata["who"], t.metadata["i"]
            assert t.checkpoint["channel_values"]["w"] == [who, i, "shared text, stored once " * 3]
            assert t.pending_writes == [("task", "w", [who, i, "write"])]
        assert [s.name for s in reader._engine.list(project="langgraph").sessions] == ["shared"]
        assert reader._engine.verify(reader.uid("shared")).ok


def test_the_journal_grows_with_what_changed(tmp_path: Path) -> None:
    """A MessagesState chat's journal grows linearly (its second half costs what its first
    did), within a few times our own chat journal of the same conversation."""
    turns = 24
    with AgentSessionsSaver(str(tmp_path / "lg")) as saver:
        app, config = _chat(saver), _config("chat")
        sizes = []
        for i in range(turns):
            app.invoke({"messages": [("user", f"user {i} " + "y" * 200)]}, config)
            sizes.append(sum(len(r.to_wire_json()) for r in saver._engine.read(saver.uid("chat"))))
    first, second = sizes[turns // 2 - 1], sizes[-1] - sizes[turns // 2 - 1]
    assert second < 1.25 * first, sizes  # linear, not quadratic (a whole state per step)
    with agentsessions.open(tmp_path / "chat") as engine:
        uid = engine.run(None, ["user 0 " + "y" * 200], harness="chat", model="echo").session.uid
        for i in range(1, turns):
            engine.run(uid, [f"user {i} " + "y" * 200], harness="chat", model="echo")
        ours = sum(len(r.to_wire_json()) for r in engine.read(uid))
    ratio = sizes[-1] / ours
    print(f"langgraph journal / chat journal: {ratio:.2f}x ({sizes[-1]} / {ours} bytes)")
    assert ratio < 3, ratio  # 2.3x here: short messages, where the per-turn framing weighs most


def test_a_fresh_saver_reads_every_checkpoint_as_the_writer_does(tmp_path: Path) -> None:
    """Pieces, checkpoint numbers and patches fold to the same index in a new process: every
    checkpoint, its metadata, parent and pending writes read back alike."""
    with AgentSessionsSaver(str(tmp_path / "home")) as saver:
        app, config = _chat(saver), _config("chat")
        for i in range(8):
            app.invoke({"messages": [("user", f"question {i} " + "z" * 100)]}, config)
        mine = list(saver.list(config))
    with AgentSessionsSaver(str(tmp_path / "home")) as fresh:
        theirs = list(fresh.list(config))
    assert len(mine) == len(theirs) == 24
    for a, b in zip(mine, theirs, strict=True):
        assert (a.config, a.checkpoint, a.metadata) == (b.config, b.checkpoint, b.metadata)
        assert (a.parent_config, a.pending_writes) == (b.parent_config, b.pending_writes)
    assert len(mine[0].checkpoint["channel_values"]["messages"]) == 16


def _journaled_writes(saver: AgentSessionsSaver, thread: str, task_id: str) -> bool:
    """Whether the journal of ``thread`` holds a writes record of task ``task_id``."""
    uid = saver.uid(thread)
    records = saver._engine.read(uid) if uid else ()
    return any(
        body.get("writes", {}).get("task") == task_id
        for record in records
        for body in bodies(record.event)
    )


def test_a_graph_step_is_one_turn_and_each_call_returns_durable(tmp_path: Path) -> None:
    """LangGraph's async durability saves a checkpoint while the next task's writes are
    saved: they share turns (five calls a step, about three turns), yet every call's record
    is in the journal when it returns (a new engine on the same home reads it). The record
    itself is looked for: the checkpoint the writes belong to may still be on its way (its
    put runs in another thread), so ``get_tuple`` of it may rightly find nothing yet."""
    home = str(tmp_path / "home")
    seen: list[bool] = []
    with AgentSessionsSaver(home) as saver:
        original = saver.put_writes

        def put_writes(config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
            original(config, writes, task_id, task_path)
            with AgentSessionsSaver(home) as other:  # another engine: only what is durable
                seen.append(_journaled_writes(other, "chat", task_id))

        saver.put_writes = put_writes  # type: ignore[method-assign]
        app, config = _chat(saver), _config("chat")
        for i in range(6):
            app.invoke({"messages": [("user", f"hello {i}")]}, config)
        turns = sum(
            1 for r in saver._engine.read(saver.uid("chat")) if r.event["kind"] == "EVENT_END"
        )
    assert seen == [True] * 12
    assert turns < 5 * 6  # one turn per call would be 30


def test_a_reader_waits_for_a_commit_in_flight_and_a_failed_one_leaves_nothing(
    tmp_path: Path,
) -> None:
    with AgentSessionsSaver(str(tmp_path / "home")) as saver:
        first = saver.put(_config("t"), _checkpoint({"a": 1}, {"a": "1"}), {}, {"a": "1"})
        engine_run, entered, go = saver._engine.run, threading.Event(), threading.Event()

        def slow_run(*args: Any, **kwargs: Any) -> Any:
            entered.set()
            go.wait(10)
            return engine_run(*args, **kwargs)

        saver._engine.run = slow_run  # type: ignore[method-assign]
        second = _checkpoint({"a": 2}, {"a": "2"})
        writer = threading.Thread(target=saver.put, args=(first, second, {}, {"a": "2"}))
        writer.start()
        assert entered.wait(10)
        got: list[Any] = []
        reader = threading.Thread(target=lambda: got.append(saver.get_tuple(_config("t"))))
        reader.start()
        reader.join(0.3)
        assert reader.is_alive() and not got  # the record is folded, not yet durable
        go.set()
        writer.join(10)
        reader.join(10)
        assert got[0].checkpoint["id"] == second["id"]

        def failing_run(*args: Any, **kwargs: Any) -> Any:
            raise UnavailableError("the store is down")

        saver._engine.run = failing_run  # type: ignore[method-assign]
        third = _checkpoint({"a": 3}, {"a": "3"})
        with pytest.raises(UnavailableError):
            saver.put(_config("t", second["id"]), third, {}, {"a": "3"})
        saver._engine.run = engine_run  # type: ignore[method-assign]
        assert saver.get_tuple(_config("t")).checkpoint["id"] == second["id"]  # type: ignore[union-attr]
        assert saver.get_tuple(_config("t", third["id"])) is None


def test_the_base_install_imports_no_framework() -> None:
    imports_no("langgraph")
