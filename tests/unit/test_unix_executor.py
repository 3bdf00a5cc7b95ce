"""The ``unix:///path.sock`` executor against the shipped reference server and bad servers.

Before a call's intent is recorded the workload's bind asks the server to ``describe``
itself: a server that is down or answers garbage is refused there (ToolServerError, exit
12) with nothing written. After the intent, a failing exchange is an EXECUTOR_ERROR
result the model sees. A server that dedups by key makes the executor ``idempotent``, so
the host re-drives a call cut after its intent instead of leaving it unresolved.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentsessions.controller.controller import Controller
from agentsessions.controller.spi import ToolRequest
from agentsessions.errors import ToolServerError, UnknownToolError, WorkloadError
from agentsessions.journal.stores.memory.store import MemoryStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.runtimes import create_runtime
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.tools import UnixExecutor, create_executor
from agentsessions.tools.workload import Workload, parse_workload
from agentsessions.v1 import construct
from tests.tool_harness import ToolLineHarness, line_call, plan
from tests.toolservers import fake_server, unix_server

HARNESSES.register("tool-line", ToolLineHarness)


def _workload(sock: str, effects: Path, extra: str = "") -> Workload:
    return parse_workload(
        f'[tools.append]\nmediation = "mediated"\nexecutor = "unix://{sock}"\n'
        f'config = {{ path = "{effects}"{extra} }}\n'
    )


def _request(effects: Path, line: str = "x", key: str = "k", uid: str = "s1") -> ToolRequest:
    return ToolRequest(uid, "c-" + key, "append_line", {"line": line}, key, {"path": str(effects)})


def _controller(store: Any, workload: Workload, home: Path) -> Controller:
    from agentsessions.models import create_model

    return Controller(
        store,
        harnesses=HARNESSES,
        models=create_model,
        runtime=create_runtime("local", home=home),
        tools=workload.bind,
        keep_writers=0,
    )


def _kinds(store: Any, uid: str) -> list[str]:
    return [str(r.event["kind"]) for r in store.read(uid)]


def _say(text: str) -> list[dict[str, Any]]:
    return [dict(construct.text_message("user", text))]


@pytest.mark.parametrize(
    "spec",
    ["unix:relative.sock", "unix://relative.sock", "unix://", "unix:///" + "x" * 120],
)
def test_a_bad_socket_spec_is_refused_when_the_workload_loads(spec: str) -> None:
    with pytest.raises(UnknownToolError, match="unix") as info:
        create_executor(spec)
    assert info.value.exit_code == 2
    with pytest.raises(WorkloadError, match=r"\[tools.a\] executor"):
        parse_workload(f'[tools.a]\nmediation = "mediated"\nexecutor = "{spec}"\n')


def test_creating_the_executor_connects_nothing(tmp_path: Path) -> None:
    executor = create_executor(f"unix://{tmp_path}/nobody.sock")
    assert isinstance(executor, UnixExecutor) and executor.idempotent is False


def test_a_call_through_the_reference_server_has_its_effect(tmp_path: Path) -> None:
    effects = tmp_path / "effects.txt"
    with unix_server() as sock:
        executor = create_executor(f"unix://{sock}")
        assert isinstance(executor, UnixExecutor)
        executor.prepare("append_line", {})
        outcome = executor.call(_request(effects, "hello"))
        echo = executor.call(ToolRequest("s", "c", "echo", {"text": "hi"}, "k2", {}))
        refused = executor.call(_request(effects, "two\nlines", "k3"))
    assert outcome.output == {"path": str(effects), "bytes": 6} and not outcome.error
    assert echo.content == ({"text": {"text": "hi"}},)
    assert "line break" in refused.error
    assert effects.read_text() == "hello\n"


def test_a_dedup_server_makes_the_executor_idempotent_and_a_key_runs_once(tmp_path: Path) -> None:
    effects = tmp_path / "effects.txt"
    with unix_server("--dedup") as sock:
        executor = UnixExecutor(sock)
        executor.prepare("append_line", {})
        first = executor.call(_request(effects, "once", "k"))
        again = executor.call(_request(effects, "once", "k"))
        other_session = executor.call(_request(effects, "once", "k", uid="s2"))
    assert executor.idempotent is True and first == again
    # the namespace is (session uid, key): the same key in another session is another call
    assert not other_session.error and effects.read_text() == "once\nonce\n"


def test_a_server_that_is_down_is_refused_before_anything_is_recorded(tmp_path: Path) -> None:
    store = MemoryStore()
    effects = tmp_path / "effects.txt"
    ctl = _controller(store, _workload(f"{tmp_path}/down.sock", effects), tmp_path)
    uid = str(store.create(SessionMeta(uid=new_uid(), harness="tool-line")).uid)
    with pytest.raises(ToolServerError, match="not reachable") as info:
        ctl.exec(uid, _say("go"), config=plan(line_call("c1", "x")))
    assert info.value.exit_code == 12
    assert "EVENT_TOOL_CALL" not in _kinds(store, uid) and not effects.exists()
    # the turn is over, failed (retryable by resume), not left RUNNING to block new input
    assert _kinds(store, uid)[-1] == "EVENT_ERROR"
    assert store.get(uid).exec_state == "EXEC_FAILED"


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (b"hello there\n", "not a JSON line"),
        (b"[1, 2]\n", "not an object"),
        (b"", "no answer"),
        (b'{"protocol": 7}\n', "protocol 7"),
    ],
)
def test_a_server_answering_garbage_is_refused_before_anything_is_recorded(
    tmp_path: Path, answer: bytes, why: str
) -> None:
    store = MemoryStore()
    effects = tmp_path / "effects.txt"
    with fake_server(answer) as sock:
        ctl = _controller(store, _workload(sock, effects), tmp_path)
        uid = str(store.create(SessionMeta(uid=new_uid(), harness="tool-line")).uid)
        with pytest.raises(ToolServerError, match="garbage") as info:
            ctl.exec(uid, _say("go"), config=plan(line_call("c1", "x")))
    assert why in str(info.value) and info.value.exit_code == 12
    assert "EVENT_TOOL_CALL" not in _kinds(store, uid)


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (b"not json\n", "not a JSON line"),
        (b'{"output": 3}\n', "'output' is not an object"),
        (b'{"surprise": 1}\n', "unknown key 'surprise'"),
        (b"{}\n", "neither output"),
        (b'{"output": {"big": "' + b"x" * 200 + b'"}}\n', "over 64 bytes"),
    ],
)
def test_garbage_after_the_request_raises_a_clear_error(answer: bytes, why: str) -> None:
    with fake_server(answer) as sock:
        request = ToolRequest("s", "c", "t", {}, "k", {"max_response_bytes": 64})
        with pytest.raises(ToolServerError, match="garbage") as info:
            UnixExecutor(sock).call(request)
    assert why in str(info.value)


def test_a_server_that_never_answers_times_out() -> None:
    with fake_server(None) as sock:
        request = ToolRequest("s", "c", "t", {}, "k", {"timeout": 0.2})
        with pytest.raises(ToolServerError, match=r"no answer within 0.2s.*effect is unknown"):
            UnixExecutor(sock).call(request)


def test_an_oversized_request_is_not_sent(tmp_path: Path) -> None:
    request = ToolRequest("s", "c", "t", {"blob": "x" * (1 << 20)}, "k", {})
    with pytest.raises(ToolServerError, match="was not sent"):
        UnixExecutor(f"{tmp_path}/none.sock").call(request)


def test_a_bad_timeout_in_config_is_a_workload_error(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match=r"config.timeout: must be a positive number"):
        UnixExecutor(f"{tmp_path}/none.sock").prepare("append", {"timeout": "soon"})


def test_a_tool_the_server_does_not_serve_is_refused(tmp_path: Path) -> None:
    with unix_server() as sock, pytest.raises(UnknownToolError, match="does not serve"):
        UnixExecutor(sock).prepare("launch_rockets", {})


def test_a_turn_through_the_server_records_the_call_and_its_result(tmp_path: Path) -> None:
    store = MemoryStore()
    effects = tmp_path / "effects.txt"
    with unix_server() as sock:
        workload = parse_workload(
            f'[tools.append_line]\nmediation = "mediated"\nexecutor = "unix://{sock}"\n'
            f'config = {{ path = "{effects}" }}\n'
        )
        ctl = _controller(store, workload, tmp_path)
        uid = str(store.create(SessionMeta(uid=new_uid(), harness="tool-line")).uid)
        result = ctl.exec(
            uid, _say("go"), config=plan(line_call("c1", "via socket", tool="append_line"))
        )
    assert effects.read_text() == "via socket\n" and result.tool_calls == 1
    kinds = _kinds(store, uid)
    assert kinds.count("EVENT_TOOL_CALL") == 1 and kinds.count("EVENT_TOOL_RESULT") == 1
    results = [r.event for r in store.read(uid) if r.event["kind"] == "EVENT_TOOL_RESULT"]
    assert json.loads(json.dumps(results[0]["result"]))["output"]["bytes"] == 11


def test_a_failure_after_the_intent_is_an_executor_error_the_model_sees(tmp_path: Path) -> None:
    store = MemoryStore()
    with fake_server(b'{"protocol": 1, "dedup": false}\n') as sock:
        # describe passes (the same fake answers every exchange), the call's answer is garbage
        ctl = _controller(store, _workload(sock, tmp_path / "e.txt"), tmp_path)
        uid = str(store.create(SessionMeta(uid=new_uid(), harness="tool-line")).uid)
        result = ctl.exec(uid, _say("go"), config=plan(line_call("c1", "x")))
    records = [r.event for r in store.read(uid)]
    tool_result = next(e["result"] for e in records if e["kind"] == "EVENT_TOOL_RESULT")
    assert tool_result["is_error"] and tool_result["code"] == "EXECUTOR_ERROR"
    assert "answered garbage (unknown key 'dedup')" in tool_result["error"]
    assert "c1: error" in json.dumps(result.outputs)
