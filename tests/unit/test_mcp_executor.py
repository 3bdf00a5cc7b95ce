"""The ``mcp:COMMAND ARGS`` executor against tests/mcp_server.py (skipped without the extra).

A server that does not start, exits or writes garbage is refused when the tool is bound,
before the call's intent is recorded (ToolServerError, exit 12): nothing is written. A
tool the server does not list is UnknownToolError (exit 2). Results map MCP content to
parts, ``structuredContent`` to output and ``isError`` to an error outcome.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from needs import need

from agentsessions.controller.controller import Controller
from agentsessions.controller.spi import ToolRequest
from agentsessions.errors import ToolServerError, UnavailableError, UnknownToolError
from agentsessions.journal.stores.memory.store import MemoryStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.runtimes import create_runtime
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.tools import create_executor
from agentsessions.tools.workload import Workload, parse_workload
from agentsessions.v1 import construct
from tests.tool_harness import ToolLineHarness, line_call, plan
from tests.toolservers import MCP_SERVER

need("mcp", "mcp")
HARNESSES.register("tool-line", ToolLineHarness)


def _spec(effects: Path, *flags: str) -> str:
    return f"mcp:{sys.executable} {MCP_SERVER} {effects} {' '.join(flags)}".strip()


def _workload(spec: str, tool: str = "append") -> Workload:
    return parse_workload(
        f'[tools.append]\nmediation = "mediated"\nexecutor = "{spec}"\n'
        f'config = {{ tool = "{tool}" }}\n'
    )


def _run(workload: Workload, tmp_path: Path) -> tuple[MemoryStore, str, Any]:
    from agentsessions.models import create_model

    store = MemoryStore()
    ctl = Controller(
        store,
        harnesses=HARNESSES,
        models=create_model,
        runtime=create_runtime("local", home=tmp_path),
        tools=workload.bind,
        keep_writers=0,
    )
    uid = str(store.create(SessionMeta(uid=new_uid(), harness="tool-line")).uid)
    try:
        result = ctl.exec(
            uid,
            [dict(construct.text_message("user", "go"))],
            config=plan(line_call("c1", "via mcp")),
        )
    finally:
        workload.close()
    return store, uid, result


def _kinds(store: MemoryStore, uid: str) -> list[str]:
    return [str(r.event["kind"]) for r in store.read(uid)]


def test_a_turn_through_an_mcp_server_has_one_effect_and_records_it(tmp_path: Path) -> None:
    effects = tmp_path / "effects.txt"
    store, uid, result = _run(_workload(_spec(effects)), tmp_path)
    assert effects.read_text() == "via mcp\n" and result.tool_calls == 1
    event = next(r.event for r in store.read(uid) if r.event["kind"] == "EVENT_TOOL_RESULT")
    assert event["result"]["content"] == [{"text": {"text": "appended via mcp"}}]
    assert not event["result"].get("is_error")


@pytest.mark.parametrize(
    ("flags", "why"),
    [
        (("--exit",), "its stderr: mcp_server: cannot start: no database"),
        (("--garbage",), "answered garbage"),
    ],
)
def test_a_server_that_does_not_start_or_answers_garbage_changes_nothing(
    tmp_path: Path, flags: tuple[str, ...], why: str
) -> None:
    effects = tmp_path / "effects.txt"
    with pytest.raises(ToolServerError, match="did not start") as info:
        _run(_workload(_spec(effects, *flags)), tmp_path)
    assert why in str(info.value) and info.value.exit_code == 12
    assert "\n" not in str(info.value)  # one line


def test_no_such_command_is_refused_with_nothing_recorded(tmp_path: Path) -> None:
    workload = _workload("mcp:/nonexistent/mcp-server --stdio")
    store = MemoryStore()
    from agentsessions.models import create_model

    ctl = Controller(
        store,
        harnesses=HARNESSES,
        models=create_model,
        runtime=create_runtime("local", home=tmp_path),
        tools=workload.bind,
        keep_writers=0,
    )
    uid = str(store.create(SessionMeta(uid=new_uid(), harness="tool-line")).uid)
    with pytest.raises(ToolServerError, match="no such command"):
        ctl.exec(
            uid, [dict(construct.text_message("user", "go"))], config=plan(line_call("c", "x"))
        )
    assert "EVENT_TOOL_CALL" not in _kinds(store, uid)


def test_a_tool_the_server_does_not_list_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UnknownToolError, match=r"has no tool 'nope'.*append") as info:
        _run(_workload(_spec(tmp_path / "e.txt"), tool="nope"), tmp_path)
    assert info.value.exit_code == 2 and not (tmp_path / "e.txt").exists()


def test_results_map_content_structured_output_errors_and_meta(tmp_path: Path) -> None:
    executor = create_executor(_spec(tmp_path / "e.txt"))
    try:
        executor.prepare("shout", {})  # type: ignore[attr-defined]
        shout = executor.call(ToolRequest("s1", "c", "shout", {"text": "hi"}, "k1", {}))
        failed = executor.call(ToolRequest("s1", "c", "fail", {}, "k2", {}))
        meta = executor.call(ToolRequest("s1", "c", "meta", {}, "k3", {}))
    finally:
        executor.close()  # type: ignore[attr-defined]
    assert shout.output == {"loud": "HI"} and shout.content[0]["text"]["text"]
    assert failed.error.endswith("the tool failed on purpose") and failed.output is None
    sent = (meta.output or {})["meta"]
    assert sent["agentsessions/session_uid"] == "s1"
    assert sent["agentsessions/idempotency_key"] == "k3"


def test_one_server_serves_every_call_of_an_executor(tmp_path: Path) -> None:
    effects = tmp_path / "e.txt"
    executor = create_executor(_spec(effects))
    try:
        executor.prepare("append", {})  # type: ignore[attr-defined]
        first = executor._client  # type: ignore[attr-defined]
        for key in ("a", "b"):
            executor.call(ToolRequest("s", "c", "append", {"line": key}, key, {}))
        assert executor._client is first  # type: ignore[attr-defined]
    finally:
        executor.close()  # type: ignore[attr-defined]
    assert effects.read_text() == "a\nb\n"


@pytest.mark.parametrize("spec", ["mcp:", "mcp:   ", "mcp:python3 'unclosed"])
def test_a_bad_mcp_spec_is_refused(spec: str) -> None:
    with pytest.raises(UnknownToolError, match="mcp:"):
        create_executor(spec)


def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # import mcp now raises ImportError
    with pytest.raises(UnavailableError, match="'mcp' package") as info:
        create_executor("mcp:some-server")
    assert info.value.exit_code == 12 and "agentsessions[mcp]" in info.value.hint
