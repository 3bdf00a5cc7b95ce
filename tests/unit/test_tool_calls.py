"""Mediated tool calls through the controller: record before effect, at most once, replayed.

A tests-only harness (``tests/tool_harness.py``) hands CONTROLLER_MEDIATED calls to
``sink.tool``; the ``append_line`` executor writes a line per effect, so a file's line count
is the effect count. The store is a FileStore (its receipts are the TOOLRECEIPTS file), a
MemoryStore or a JetStreamStore (``P.r`` subjects); the crash cases with a real killed
process are ``tests/crash/test_kill_tool_call.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentsessions.controller.controller import Controller
from agentsessions.controller.replay import replay
from agentsessions.controller.spi import BoundTool, ToolOutcome, ToolRequest
from agentsessions.errors import (
    InheritedToolIntentError,
    InvalidArgumentError,
    MissingIdempotencyKeyError,
    ToolOutcomeUnknownError,
    UnknownToolError,
    UnmediatedToolCallError,
)
from agentsessions.journal.format.durable import FileSystem
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.memory.store import MemoryStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.journal.tools.verify import check_chain, verify_session
from agentsessions.runtimes import create_runtime
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.tools import AppendLine, static_resolver
from agentsessions.v1 import construct
from agentsessions.v1.results import VerifyReport
from tests.tool_harness import ToolLineHarness, line_call, plan

HARNESSES.register("tool-line", ToolLineHarness)


class SyncCountingFileSystem(FileSystem):
    """Counts syncs, so a test can see the intent was durable before the effect."""

    def __init__(self) -> None:
        super().__init__()
        self.syncs = 0

    def sync(self, fd: int, *, full: bool = False) -> None:
        self.syncs += 1
        super().sync(fd, full=full)


class Counting:
    """An executor wrapper counting calls (and optionally failing or noting syncs)."""

    def __init__(self, inner: Any, fs: SyncCountingFileSystem | None = None) -> None:
        self.inner = inner
        self.calls = 0
        self.fs = fs
        self.syncs_seen: list[int] = []
        self.idempotent = bool(getattr(inner, "idempotent", False))

    def call(self, request: ToolRequest) -> ToolOutcome:
        self.calls += 1
        if self.fs is not None:
            self.syncs_seen.append(self.fs.syncs)
        outcome: ToolOutcome = self.inner.call(request)
        return outcome


def _controller(store: Any, tools: dict[str, BoundTool] | None, home: Path) -> Controller:
    return Controller(
        store,
        harnesses=HARNESSES,
        models=create_executor_model,
        runtime=create_runtime("local", home=home),
        tools=None if tools is None else static_resolver(tools),
        keep_writers=0,
    )


def create_executor_model(name: str) -> Any:
    from agentsessions.models import create_model

    return create_model(name)


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _kinds(store: Any, uid: str) -> list[str]:
    return [str(r.event["kind"]) for r in store.read(uid)]


def _chain_ok(store: Any, uid: str) -> bool:
    """The session's chain verifies (the file store's whole check, or the records' chain)."""
    if isinstance(store, FileStore):
        return verify_session(store, uid).ok
    return check_chain(store.read(uid), VerifyReport(source="memory", uid=uid)).ok


def _say(text: str) -> list[dict[str, Any]]:
    return [dict(construct.text_message("user", text))]


@pytest.fixture(params=["file", "memory", "jetstream"])
def setup(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, Counting, Path]]:
    if request.param == "jetstream":  # receipts on P.r subjects of a real durable server
        from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
        from agentsessions.journal.stores.jetstream.store import JetStreamStore

        token = new_uid()[5:17]
        url = request.getfixturevalue("nats_server").store_url(
            stream=f"T{token}", prefix=f"t{token}"
        )
        store: Any = JetStreamStore(JetStreamOptions.parse(url))
        try:
            yield store, Counting(AppendLine()), tmp_path / "effects.txt"
        finally:
            store.close()
        return
    store = FileStore(tmp_path / "home") if request.param == "file" else MemoryStore()
    yield store, Counting(AppendLine()), tmp_path / "effects.txt"


def _session(store: Any) -> str:
    return str(store.create(SessionMeta(uid=new_uid(), harness="tool-line")).uid)


def test_a_mediated_call_runs_once_and_replay_serves_it(
    setup: tuple[Any, Counting, Path], tmp_path: Path
) -> None:
    store, executor, effects = setup
    bound = {"append": BoundTool("append", executor, {"path": str(effects)})}
    ctl = _controller(store, bound, tmp_path)
    uid = _session(store)
    result = ctl.exec(uid, _say("go"), config=plan(line_call("c1", "hello")))
    assert _lines(effects) == ["hello"] and executor.calls == 1 and result.tool_calls == 1
    assert result.outputs == [_answer(effects)]
    assert _kinds(store, uid)[2:] == [
        "EVENT_TOOL_CALL",
        "EVENT_TOOL_RESULT",
        "EVENT_OUTPUT",
        "EVENT_END",
    ]
    events = [r.event for r in store.read(uid)]
    call, res = events[2]["tool"], events[3]["result"]
    assert (
        call["idempotency_key"] == "k-c1" and call["mediation"] == "MEDIATION_CONTROLLER_MEDIATED"
    )
    assert res["id"] == "c1" and not res.get("is_error")
    # replay: every effect served from the record, the executor is never called (I1)
    report = replay(store, uid, HARNESSES)
    assert report.identical and report.replayed == 1
    assert executor.calls == 1 and ctl.executor_calls == ["append"] and _lines(effects) == ["hello"]
    assert _chain_ok(store, uid)


def test_the_intent_is_synced_before_the_executor_runs(tmp_path: Path) -> None:
    fs = SyncCountingFileSystem()
    store = FileStore(tmp_path / "home", fs=fs)
    effects = tmp_path / "effects.txt"
    executor = Counting(AppendLine(), fs)
    ctl = _controller(
        store, {"append": BoundTool("append", executor, {"path": str(effects)})}, tmp_path
    )
    uid = _session(store)
    seen: list[tuple[str, int]] = []

    class Watch(ToolLineHarness):
        def run(self, start: Any, sink: Any) -> None:
            seen.append(("before", fs.syncs))
            super().run(start, sink)

    HARNESSES.register("tool-watch", Watch)
    ctl.exec(uid, _say("go"), harness="tool-watch", config=plan(line_call("c1", "x")))
    # a sync happened after the harness started and before the executor ran: TOOL_CALL's
    assert executor.syncs_seen[0] > seen[0][1]
    # and the sync made TOOL_CALL durable: a fresh reader sees it (same bytes on disk)
    assert "EVENT_TOOL_CALL" in _kinds(FileStore(tmp_path / "home"), uid)


def test_an_executor_failure_is_an_error_result_the_harness_sees(tmp_path: Path) -> None:
    store = MemoryStore()

    def boom(request: ToolRequest) -> ToolOutcome:
        raise OSError("disk on fire")

    class Boom:
        def call(self, request: ToolRequest) -> ToolOutcome:
            return boom(request)

    class Refuse:
        def call(self, request: ToolRequest) -> ToolOutcome:
            return ToolOutcome(error="no such record")

    tools = {"boom": BoundTool("boom", Boom()), "refuse": BoundTool("refuse", Refuse())}
    ctl = _controller(store, tools, tmp_path)
    uid = _session(store)
    calls = plan(line_call("a", "x", tool="boom"), line_call("b", "y", tool="refuse"))
    result = ctl.exec(uid, _say("go"), config=calls)
    assert result.outputs == ["a: error OSError: disk on fire\nb: error no such record"]
    results = [r.event["result"] for r in store.read(uid) if r.event["kind"] == "EVENT_TOOL_RESULT"]
    assert [(r["is_error"], r["code"], r["id"]) for r in results] == [
        (True, "EXECUTOR_ERROR", "a"),
        (True, "EXECUTOR_ERROR", "b"),
    ]
    assert store.get(uid).exec_state == "EXEC_COMPLETED"


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (
            {
                "id": "c",
                "tool": "append",
                "args": {"line": "x"},
                "mediation": "MEDIATION_CONTROLLER_MEDIATED",
            },
            MissingIdempotencyKeyError,
        ),
        (
            {
                "id": "c",
                "tool": "append",
                "key": "k",
                "args": {"line": "x"},
                "mediation": "MEDIATION_IN_HARNESS_REPORTED",
            },
            UnmediatedToolCallError,
        ),
        (
            {
                "id": "c",
                "tool": "append",
                "key": "k",
                "args": {"line": "x"},
                "mediation": "MEDIATION_UNSPECIFIED",
            },
            UnmediatedToolCallError,
        ),
        ({"id": "c", "tool": "nope", "key": "k", "args": {"line": "x"}}, UnknownToolError),
    ],
    ids=["no-key", "reported-tier", "no-tier", "unknown-tool"],
)
def test_a_bad_call_is_refused_before_anything_is_recorded(
    tmp_path: Path, call: dict[str, Any], error: type[Exception]
) -> None:
    store = MemoryStore()
    effects = tmp_path / "effects.txt"
    executor = Counting(AppendLine())
    ctl = _controller(
        store, {"append": BoundTool("append", executor, {"path": str(effects)})}, tmp_path
    )
    uid = _session(store)
    with pytest.raises(error) as info:
        ctl.exec(uid, _say("go"), config=plan(call))
    assert info.value.exit_code == 2 and "nothing was recorded" in str(info.value)
    # the turn's failure is audited (ERROR), but no tool event was written and nothing ran
    assert _kinds(store, uid) == ["EVENT_EXECUTION_START", "EVENT_INPUT", "EVENT_ERROR"]
    assert executor.calls == 0 and not effects.exists()


def test_a_session_without_tools_refuses_a_mediated_call(tmp_path: Path) -> None:
    store = MemoryStore()
    ctl = _controller(store, None, tmp_path)
    uid = _session(store)
    with pytest.raises(UnknownToolError, match="has no tools"):
        ctl.exec(uid, _say("go"), config=plan(line_call("c", "x")))
    assert "EVENT_TOOL_CALL" not in _kinds(store, uid)


def _cut_after_intent(store: Any, tmp_path: Path, *, keep_receipt: bool) -> tuple[str, Path]:
    """A turn whose process 'died' after its TOOL_CALL: the executor ran (its line is
    written) and, with ``keep_receipt``, the host kept its receipt; no TOOL_RESULT."""
    effects = tmp_path / "effects.txt"

    class Die(BaseException):
        pass

    class DieAfterEffect:
        def __init__(self) -> None:
            self.inner = AppendLine()

        def call(self, request: ToolRequest) -> ToolOutcome:
            outcome = self.inner.call(request)
            if not keep_receipt:
                raise Die()  # killed after the effect, before the host could keep a receipt
            return outcome

    class DieBeforeResult(ToolLineHarness):
        pass

    original = store.record_tool_receipt

    def record_then_die(uid: str, key: str, receipt: Any) -> None:
        original(uid, key, receipt)
        raise Die()  # killed after the receipt, before TOOL_RESULT

    store.record_tool_receipt = record_then_die
    tools = {"append": BoundTool("append", DieAfterEffect(), {"path": str(effects)})}
    ctl = _controller(store, tools, tmp_path)
    uid = _session(store)
    with pytest.raises(Die):
        ctl.exec(uid, _say("go"), config=plan(line_call("c1", "once")))
    del store.record_tool_receipt
    assert _kinds(store, uid)[-1] == "EVENT_TOOL_CALL" and _lines(effects) == ["once"]
    return uid, effects


def test_resume_after_the_receipt_serves_it_and_never_runs_the_effect_again(
    setup: tuple[Any, Counting, Path], tmp_path: Path
) -> None:
    store, executor, effects = setup
    uid, effects = _cut_after_intent(store, tmp_path, keep_receipt=True)
    ctl = _controller(
        store, {"append": BoundTool("append", executor, {"path": str(effects)})}, tmp_path
    )
    result = ctl.resume(uid)
    assert result is not None and result.tool_calls == 0 and executor.calls == 0
    assert _lines(effects) == ["once"]  # exactly one effect
    kinds = _kinds(store, uid)
    assert kinds.count("EVENT_TOOL_CALL") == 1 and kinds.count("EVENT_TOOL_RESULT") == 1
    assert kinds[-1] == "EVENT_END" and _chain_ok(store, uid)
    assert replay(store, uid, HARNESSES).identical and executor.calls == 0


def test_resume_with_an_unknown_outcome_refuses_and_writes_nothing(
    setup: tuple[Any, Counting, Path], tmp_path: Path
) -> None:
    store, executor, effects = setup
    uid, effects = _cut_after_intent(store, tmp_path, keep_receipt=False)
    before = store.get(uid).last_seq
    ctl = _controller(
        store, {"append": BoundTool("append", executor, {"path": str(effects)})}, tmp_path
    )
    with pytest.raises(ToolOutcomeUnknownError) as info:
        ctl.resume(uid)
    err = info.value
    assert err.exit_code == 19 and err.fields["call_id"] == "c1" and "c1" in str(err)
    assert store.get(uid).last_seq == before and executor.calls == 0 and _lines(effects) == ["once"]
    with pytest.raises(ToolOutcomeUnknownError):  # never repeated blindly, however often asked
        ctl.resume(uid)
    assert _lines(effects) == ["once"]


def test_resume_re_drives_an_executor_that_dedups_by_key_itself(tmp_path: Path) -> None:
    store = MemoryStore()
    uid, effects = _cut_after_intent(store, tmp_path, keep_receipt=False)
    seen: list[tuple[str, str]] = []

    class Dedup:
        idempotent = True

        def call(self, request: ToolRequest) -> ToolOutcome:
            seen.append((request.session_uid, request.idempotency_key))
            return ToolOutcome(output={"deduped": True})  # it had run: no second effect

    ctl = _controller(store, {"append": BoundTool("append", Dedup())}, tmp_path)
    result = ctl.resume(uid)
    assert result is not None and result.tool_calls == 1
    assert seen == [(uid, "k-c1")]  # the same key, in the same session's namespace
    assert _lines(effects) == ["once"] and _kinds(store, uid)[-1] == "EVENT_END"


def test_replay_refuses_a_re_emitted_call_that_differs(tmp_path: Path) -> None:
    store = MemoryStore()
    effects = tmp_path / "effects.txt"
    ctl = _controller(
        store, {"append": BoundTool("append", AppendLine(), {"path": str(effects)})}, tmp_path
    )
    uid = _session(store)
    ctl.exec(uid, _say("go"), config=plan(line_call("c1", "hello")))

    class Reordered(ToolLineHarness):
        """The same call, built afresh by another harness class: served, not diverged."""

        def run(self, start: Any, sink: Any) -> None:
            call = {**_call("hello"), "args": {"line": "hello"}}
            sink.tool(call)
            sink.output(
                {
                    "role": "assistant",
                    "parts": [{"text": {"text": _answer(effects)}}],
                }
            )

    class Changed(ToolLineHarness):
        def run(self, start: Any, sink: Any) -> None:
            sink.tool(_call("other"))

    HARNESSES.register("tool-line-changed", Changed)
    HARNESSES.register("tool-line-reordered", Reordered)
    assert replay(store, uid, HARNESSES, harness="tool-line-reordered").divergence == ""
    report = replay(store, uid, HARNESSES, harness="tool-line-changed")
    assert "differs from the recorded TOOL_CALL" in report.divergence
    assert _lines(effects) == ["hello"]


def _answer(effects: Path) -> str:
    return 'c1: ok {"bytes": 6, "path": "' + str(effects) + '"}'


def _call(line: str) -> dict[str, Any]:
    return {
        "id": "c1",
        "tool": "append",
        "idempotency_key": "k-c1",
        "mediation": "MEDIATION_CONTROLLER_MEDIATED",
        "args": {"line": line},
    }


def test_args_compare_as_json_values() -> None:
    from agentsessions.controller.toolcalls import same_call

    a = {
        "id": "c",
        "tool": "t",
        "idempotency_key": "k",
        "mediation": "M",
        "args": {"n": 1, "b": {"x": [1, 2]}},
    }
    b = {**a, "args": {"b": {"x": [1.0, 2]}, "n": 1.0}}
    assert same_call(a, b)
    assert not same_call(a, {**a, "args": {"n": 2, "b": {"x": [1, 2]}}})
    assert not same_call(a, {**a, "idempotency_key": "other"})


def test_a_key_reused_for_another_call_is_refused_and_the_same_call_is_deduped(
    tmp_path: Path,
) -> None:
    store = MemoryStore()
    effects = tmp_path / "effects.txt"
    executor = Counting(AppendLine())
    ctl = _controller(
        store, {"append": BoundTool("append", executor, {"path": str(effects)})}, tmp_path
    )
    uid = _session(store)
    ctl.exec(uid, _say("one"), config=plan(line_call("c1", "hello", key="k")))
    result = ctl.exec(uid, _say("two"), config=plan(line_call("c2", "hello", key="k")))
    assert executor.calls == 1 and _lines(effects) == ["hello"]  # one key, one effect
    assert result.outputs[0].startswith("c2: ok")
    with pytest.raises(InvalidArgumentError, match="already used"):
        ctl.exec(uid, _say("three"), config=plan(line_call("c3", "bye", key="k")))
    assert _lines(effects) == ["hello"]


def test_a_fork_child_never_re_drives_an_inherited_intent(tmp_path: Path) -> None:
    store = MemoryStore()
    uid, effects = _cut_after_intent(store, tmp_path, keep_receipt=True)
    head = store.get(uid).last_seq
    child = store.fork(uid, head, [SessionMeta(uid=new_uid(), harness="tool-line")])[0]
    executor = Counting(AppendLine())
    ctl = _controller(
        store, {"append": BoundTool("append", executor, {"path": str(effects)})}, tmp_path
    )
    with pytest.raises(InheritedToolIntentError) as info:
        ctl.resume(child.uid)
    assert info.value.grpc_code == "FAILED_PRECONDITION" and info.value.exit_code == 17
    assert store.get(child.uid).last_seq == child.last_seq and executor.calls == 0
    assert json.dumps(_lines(effects)) == '["once"]'
