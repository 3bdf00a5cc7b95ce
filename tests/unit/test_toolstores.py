"""Tool stores (issue 9 item 6, second bullet) and the ``notes`` built-in (item 3).

A tool the workload names in ``[session] tool_components`` gets a store of its own, bound by
the host to (session, tool): the host stamps each entry's author and time, the tool cannot
reach the conversation, and a re-driven ``notes`` call (same idempotency key) lands once.
The ``[session]`` table keeps the conversation's components and the tool components apart.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest

from agentsessions.controller.spi import ToolRequest
from agentsessions.errors import (
    ConflictError,
    InvalidArgumentError,
    NotFoundError,
    StateConflictError,
    WorkloadError,
)
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.memory.store import MemoryStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.sessions.local import open_local
from agentsessions.tools import Notes, create_executor
from agentsessions.tools.notes import commit_id
from agentsessions.tools.recorded import RecordedWorkloads
from agentsessions.tools.toolstore import ToolStore
from agentsessions.tools.workload import parse_workload

NOTES_TABLE = '[tools.notes]\nmediation = "mediated"\nexecutor = "notes"\n'
SESSION = '[session]\ncomponents = ["chat"]\ntool_components = ["notes"]\n'


def _memory_session() -> tuple[MemoryStore, str]:
    store = MemoryStore()
    uid = store.create(SessionMeta(uid=new_uid())).uid
    return store, uid


def _request(store: ToolStore | None, args: dict[str, Any], key: str = "k1") -> ToolRequest:
    return ToolRequest("sess-x", "c1", "notes", args, key, store=store)


# --- the host-bound handle -------------------------------------------------------------------


def test_the_host_stamps_author_and_time_and_the_entry_is_an_ordinary_event() -> None:
    store, uid = _memory_session()
    handle = ToolStore(store.component(uid, "notes"), clock=lambda: 1_700_000_000_123_456_789)
    # an entry cannot carry its own author or time: whatever it holds is data
    result = handle.commit([{"cursor": 7, "author": "mallory", "ts": "1999-01-01T00:00:00Z"}])
    assert (result.first_seq, result.last_seq) == (1, 1)
    (entry,) = handle.read()
    assert (entry.seq, entry.author, entry.time_ns) == (1, "notes", 1_700_000_000_123_456_789)
    assert entry.data == {"cursor": 7, "author": "mallory", "ts": "1999-01-01T00:00:00Z"}
    event = next(iter(store.component(uid, "notes").read())).event
    assert event["kind"] == "EVENT_OUTPUT" and event["actor"] == {"principal": "notes"}
    assert event["ts"] == "2023-11-14T22:13:20.123456789Z"
    assert event["message"]["role"] == "tool" and len(event["message"]["parts"]) == 1
    assert list(store.read(uid)) == []  # the conversation got nothing


def test_the_handle_takes_no_session_uid_or_path() -> None:
    for name, member in inspect.getmembers(ToolStore, callable):
        if name.startswith("_"):
            continue
        params = set(inspect.signature(member).parameters)
        assert not params & {"uid", "session", "session_uid", "path", "name"}, name


def test_commit_keeps_the_store_contract() -> None:
    store, uid = _memory_session()
    handle = ToolStore(store.component(uid, "cache"))
    first = handle.commit([{"a": 1}, {"b": 2}], expected_end=0, commit_id="once")
    again = handle.commit([{"a": 1}, {"b": 2}], expected_end=0, commit_id="once")
    assert again.duplicate and again.last_seq == first.last_seq == 2
    with pytest.raises(ConflictError):
        handle.commit([{"c": 3}], expected_end=0)
    assert [e.seq for e in handle.read()] == [1, 2] and [e.seq for e in handle.read(2)] == [2]
    for bad in ([], ["text"], {"a": 1}):
        with pytest.raises(InvalidArgumentError):
            handle.commit(bad)  # type: ignore[arg-type]
    assert [e.seq for e in handle.follow(2, idle_timeout=0.01)] == [2]


@pytest.mark.parametrize("kind", ["memory", "file"])
def test_a_tool_store_keeps_working_state_with_its_entries(kind: str, tmp_path: Path) -> None:
    if kind == "memory":
        store: Any
        store, uid = _memory_session()
    else:
        store = FileStore(tmp_path / "home")
        uid = store.create(SessionMeta(uid=new_uid())).uid
    handle = ToolStore(store.component(uid, "cursor"))
    assert handle.state().version == 0  # never written: no state, nothing made
    first = handle.commit([{"page": 1}], state=b"cursor=1", expected_state_version=0)
    assert first.state_version == 1
    state = handle.state()
    assert (state.version, state.data, state.author) == (1, b"cursor=1", "cursor")
    assert state.covers_to == first.last_seq  # the host records the range it covers
    # a stale version: nothing written, the current snapshot comes back to merge with
    with pytest.raises(StateConflictError) as lost:
        handle.commit([{"page": 2}], state=b"cursor=2", expected_state_version=0)
    assert lost.value.snapshot.state.data == b"cursor=1"
    assert [e.seq for e in handle.read()] == [1] and handle.state().version == 1
    # a state-only commit, retried with its id: applied once
    again = handle.commit([], state=b"cursor=3", expected_state_version=1, commit_id="c3")
    dup = handle.commit([], state=b"cursor=3", expected_state_version=1, commit_id="c3")
    assert dup.duplicate and dup.state_version == again.state_version == 2
    assert handle.state().data == b"cursor=3"
    assert store.state(uid).version == 0  # the conversation's own state is untouched
    if kind == "file":  # a fresh process (a new store object) continues from the state
        reopened = ToolStore(FileStore(tmp_path / "home").component(uid, "cursor"))
        assert (reopened.state().version, reopened.state().data) == (2, b"cursor=3")


# --- notes -----------------------------------------------------------------------------------


def test_notes_adds_lists_and_clears_without_deleting_history() -> None:
    store, uid = _memory_session()
    handle, notes = ToolStore(store.component(uid, "notes")), Notes()
    assert notes.call(_request(handle, {"op": "add", "text": "milk"}, "k1")).output == {
        "op": "add", "text": "milk", "seq": 1}  # fmt: skip
    notes.call(_request(handle, {"op": "add", "text": "eggs"}, "k2"))
    assert notes.call(_request(handle, {"op": "list"}, "k3")).output == {"notes": ["milk", "eggs"]}
    notes.call(_request(handle, {"op": "clear"}, "k4"))
    notes.call(_request(handle, {"op": "add", "text": "bread"}, "k5"))
    assert notes.call(_request(handle, {"op": "list"}, "k6")).output == {"notes": ["bread"]}
    assert [e.data["op"] for e in handle.read()] == ["add", "add", "clear", "add"]


def test_a_redriven_notes_call_lands_once() -> None:
    store, uid = _memory_session()
    handle, notes = ToolStore(store.component(uid, "notes")), Notes()
    assert create_executor("notes").idempotent is True  # type: ignore[attr-defined]
    first = notes.call(_request(handle, {"op": "add", "text": "milk"}, "exec1/c1"))
    again = notes.call(_request(handle, {"op": "add", "text": "milk"}, "exec1/c1"))
    assert again == first and len(handle.read()) == 1
    long_key = "k" * 500  # over the commit id limit: a digest, the same one each time
    assert commit_id(long_key) == commit_id(long_key) != long_key
    notes.call(_request(handle, {"op": "add", "text": "x"}, long_key))
    notes.call(_request(handle, {"op": "add", "text": "x"}, long_key))
    assert len(handle.read()) == 2


@pytest.mark.parametrize(
    ("args", "why"),
    [({"op": "drop"}, "'op' must be one of"), ({"op": "add"}, "non-empty string 'text'"),
     ({"op": "add", "text": ""}, "non-empty"), ({}, "'op' must be")],
)  # fmt: skip
def test_notes_refuses_bad_arguments_with_no_effect(args: dict[str, Any], why: str) -> None:
    store, uid = _memory_session()
    handle = ToolStore(store.component(uid, "notes"))
    outcome = Notes().call(_request(handle, args))
    assert why in outcome.error and handle.read() == []


def test_notes_without_a_store_is_an_error_outcome() -> None:
    outcome = Notes().call(_request(None, {"op": "list"}))
    assert "tool_components" in outcome.error


# --- the workload's [session] table -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('[session]\ncomponents = ["notes"]\ntool_components = ["notes"]\n' + NOTES_TABLE,
         "'notes' is named in both components and tool_components"),
        (NOTES_TABLE, "[tools.notes] executor 'notes' keeps its state in a tool store"),
        ('[session]\ntool_components = ["ghost"]\n' + NOTES_TABLE, "'ghost' is not a [tools"),
        ('[session]\ncomponents = "chat"\n', "[session] components: must be a list of names"),
        ('[session]\ncomponents = ["../x"]\n', "'../x': a name is"),
        ('[session]\nharnesses = ["chat"]\n', "[session] harnesses: unknown key"),
        ("session = 3\n", "session: must be a table"),
    ],
)  # fmt: skip
def test_a_bad_session_table_is_refused_at_load(text: str, why: str) -> None:
    with pytest.raises(WorkloadError) as err:
        parse_workload(text, "w.toml")
    assert why in str(err.value) and err.value.exit_code == 2


def test_a_store_needing_builtin_left_out_gets_a_hint() -> None:
    with pytest.raises(WorkloadError) as err:
        parse_workload(NOTES_TABLE, "w.toml")
    assert err.value.hint == 'add: [session] tool_components = ["notes"]'


def test_without_a_session_table_every_harness_works_and_no_tool_gets_a_store(
    tmp_path: Path,
) -> None:
    text = f'[tools.log]\nmediation = "mediated"\nexecutor = "append_line"\n' \
        f'config = {{ path = {json.dumps(str(tmp_path / "x"))} }}\n'  # fmt: skip
    workload = parse_workload(text)
    assert workload.components is None and workload.tool_components == ()
    workload.check_harness("sess-x", "anything")  # no refusal
    store, uid = _memory_session()
    store.set_workload(uid, text)
    assert RecordedWorkloads(store).bind(uid, "", "log").store is None


def test_only_a_tool_component_is_bound_a_store_of_its_own(tmp_path: Path) -> None:
    text = SESSION + NOTES_TABLE + '[tools.log]\nmediation = "mediated"\nexecutor = "append_line"\n'
    text += f"config = {{ path = {json.dumps(str(tmp_path / 'log.txt'))} }}\n"
    store, uid = _memory_session()
    store.set_workload(uid, text)
    tools = RecordedWorkloads(store)
    bound = tools.bind(uid, "", "notes")
    assert isinstance(bound.store, ToolStore) and bound.store.name == "notes"
    assert tools.bind(uid, "", "log").store is None  # named in neither list: no session access
    bound.store.commit([{"op": "add", "text": "t"}])
    assert store.components(uid) == ("notes",) and list(store.read(uid)) == []
    tools.check_harness(uid, "chat")
    with pytest.raises(WorkloadError, match="does not let harness 'echo' work"):
        tools.check_harness(uid, "echo")


def test_a_harness_outside_components_is_refused_before_any_write(tmp_path: Path) -> None:
    workload = tmp_path / "tools.toml"
    workload.write_text(SESSION + NOTES_TABLE)
    with open_local(tmp_path / "home") as engine:
        with pytest.raises(WorkloadError) as new:  # a new session: none is created
            list(engine.exec(None, ["hi"], harness="echo", tools=workload))
        assert "[session] components: chat" in str(new.value)
        assert engine.list().sessions == ()
        uid = engine.create(harness="echo", tools=workload).uid
        for attempt in (
            lambda: list(engine.exec(uid, ["hi"])),
            lambda: list(engine.exec(uid, ["hi"], harness="echo")),
        ):
            with pytest.raises(WorkloadError):
                attempt()
            assert engine.get(uid).last_seq == 0  # nothing was written
        assert list(engine.resume(uid))[-1].turn is None  # nothing open: nothing refused


def test_the_engine_reads_a_tool_store_and_refuses_unknown_ones(tmp_path: Path) -> None:
    workload = tmp_path / "tools.toml"
    workload.write_text(SESSION + NOTES_TABLE)
    with open_local(tmp_path / "home") as engine:
        uid = engine.create(harness="chat", tools=workload).uid
        assert engine.tool_store(uid, "notes") == []  # named, not written yet: empty
        assert isinstance(engine.store, FileStore)
        ToolStore(engine.store.component(uid, "notes")).commit([{"op": "add", "text": "a"}])
        assert [e.data for e in engine.tool_store(uid, "notes")] == [{"op": "add", "text": "a"}]
        assert engine.tool_store(uid, "notes", from_seq=2) == []
        with pytest.raises(NotFoundError, match="has no tool store 'other'"):
            engine.tool_store(uid, "other")
        with pytest.raises(NotFoundError):
            engine.tool_store(new_uid(), "notes")
        with pytest.raises(InvalidArgumentError):
            engine.tool_store(uid, "../notes")
        with pytest.raises(InvalidArgumentError):
            engine.tool_store(uid, "notes", from_seq=0)
