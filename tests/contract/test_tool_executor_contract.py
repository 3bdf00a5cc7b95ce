"""The ToolExecutor contract, run on every executor shipped (``agentsessions.tools``).

Each executor (append_line, python:, unix: against the shipped reference server, mcp:
against tests/mcp_server.py, skipped without the mcp extra) is created by its spec through
the registry and gets a probe that counts
its effects. The contract: ``call`` returns a ToolOutcome whose output (if any) is a JSON
object the journal accepts; one call with valid arguments makes exactly one effect; a call
with bad arguments fails (an error outcome or an exception, which the host records as an
EXECUTOR_ERROR result) and makes no effect; an executor without its own dedup
(``idempotent`` false) makes one effect per call, so the host's receipts are what keep a key
at most once; an executor is usable from any session (the request carries the session).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest
from needs import need

from agentsessions.controller.spi import ToolExecutor, ToolOutcome, ToolRequest
from agentsessions.controller.toolcalls import result_body
from agentsessions.errors import UnknownToolError
from agentsessions.tools import create_executor, known_executors
from tests.toolservers import MCP_SERVER, unix_server


@dataclass
class Subject:
    executor: ToolExecutor
    config: dict[str, str]
    effects: Callable[[], int]
    good: dict[str, str]
    bad: dict[str, object]


def _append_line(tmp: Path, spec: str, **config: str) -> Subject:
    path = tmp / "effects.txt"
    return Subject(
        create_executor(spec),
        {"path": str(path), **config},
        lambda: len(path.read_text().splitlines()) if path.exists() else 0,
        {"line": "one line"},
        {"line": "two\nlines"},
    )


def _unix(tmp: Path, stack: ExitStack) -> Subject:
    """The reference unix server's append_line, through the socket executor."""
    sock = stack.enter_context(unix_server())
    return _append_line(tmp, f"unix://{sock}", tool="append_line")


def _mcp(tmp: Path, stack: ExitStack) -> Subject:
    """tests/mcp_server.py's counting ``append`` tool, through the mcp executor."""
    need("mcp", "mcp")
    path = tmp / "effects.txt"
    executor = create_executor(f"mcp:{sys.executable} {MCP_SERVER} {path}")
    stack.callback(executor.close)  # type: ignore[attr-defined]
    return Subject(
        executor,
        {"tool": "append"},
        lambda: len(path.read_text().splitlines()) if path.exists() else 0,
        {"line": "one line"},
        {"line": "two\nlines"},
    )


EXECUTORS: dict[str, Callable[[Path, ExitStack], Subject]] = {
    "append_line": lambda tmp, _: _append_line(tmp, "append_line"),
    "python": lambda tmp, _: _append_line(tmp, "python:tests.contract.tool_funcs:append"),
    "unix": _unix,
    "mcp": _mcp,
}


@pytest.fixture(params=sorted(EXECUTORS))
def subject(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Subject]:
    with ExitStack() as stack:
        yield EXECUTORS[request.param](tmp_path, stack)


def _request(subject: Subject, args: dict[str, object], key: str = "k1") -> ToolRequest:
    return ToolRequest("sess-1", "c-" + key, "t", args, key, subject.config)


def _fails(subject: Subject, request: ToolRequest) -> bool:
    try:
        outcome = subject.executor.call(request)
    except Exception:
        return True
    body = result_body(request.call_id, outcome)
    return bool(outcome.error) or bool((outcome.output or {}).get("error")) or body["is_error"]


def test_a_valid_call_returns_an_outcome_the_journal_accepts_and_makes_one_effect(
    subject: Subject,
) -> None:
    outcome = subject.executor.call(_request(subject, subject.good))
    assert isinstance(outcome, ToolOutcome) and not outcome.error
    body = result_body("c1", outcome)
    assert body["id"] == "c1" and not body.get("is_error")
    assert subject.effects() == 1


def test_bad_arguments_fail_without_an_effect(subject: Subject) -> None:
    assert _fails(subject, _request(subject, subject.bad))
    assert _fails(subject, _request(subject, {}))
    assert subject.effects() == 0


def test_without_its_own_dedup_each_call_is_an_effect(subject: Subject) -> None:
    assert getattr(subject.executor, "idempotent", False) is False
    subject.executor.call(_request(subject, subject.good, "k1"))
    subject.executor.call(_request(subject, subject.good, "k1"))
    assert subject.effects() == 2  # the host's receipts, not the executor, dedup a key


def test_the_executor_serves_any_session(subject: Subject) -> None:
    for uid in ("sess-a", "sess-b"):
        request = ToolRequest(uid, "c", "t", subject.good, "k", subject.config)
        assert not subject.executor.call(request).error
    assert subject.effects() == 2


@pytest.mark.parametrize(
    "spec",
    [
        "nope",
        "python:",
        "python:no_such_module_x:f",
        "python:tests.contract.tool_funcs:missing",
        "unix:relative.sock",
    ],
)
def test_a_bad_spec_is_refused_with_one_clear_error(spec: str) -> None:
    with pytest.raises(UnknownToolError) as info:
        create_executor(spec)
    assert info.value.exit_code == 2 and spec.split(":")[0] in str(info.value)


def test_the_known_forms_are_listed() -> None:
    known = known_executors()
    assert "append_line" in known and "python:module:function" in known
    assert "unix:///path.sock" in known and "mcp:COMMAND ARGS" in known


def test_python_return_forms(tmp_path: Path) -> None:
    request = ToolRequest("s", "c", "t", {"name": "ada"}, "k", {})
    greet = create_executor("python:tests.contract.tool_funcs:greet").call(request)
    assert greet.content == ({"text": {"text": "hello ada"}},)
    kept = create_executor("python:tests.contract.tool_funcs:outcome").call(request)
    assert kept.output == {"key": "k"}
    with pytest.raises(TypeError, match="returned int"):
        create_executor("python:tests.contract.tool_funcs:bad").call(request)
