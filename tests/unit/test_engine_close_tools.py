"""Closing the engine ends the tool servers its sessions' workloads started (an mcp:
server process), so an engine leaves no process behind (skipped without the mcp extra)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from needs import need

from agentsessions.sessions import open_local
from agentsessions.sessions.wiring import HARNESSES
from tests.tool_harness import ToolLineHarness, line_call, plan
from tests.toolservers import MCP_SERVER

need("mcp", "mcp")
HARNESSES.register("tool-line", ToolLineHarness)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_closing_the_engine_ends_the_mcp_server_process(tmp_path: Path) -> None:
    tools = tmp_path / "tools.toml"
    spec = f"mcp:{sys.executable} {MCP_SERVER} {tmp_path / 'effects.txt'}"
    tools.write_text(f'[tools.pid]\nmediation = "mediated"\nexecutor = "{spec}"\n')
    engine = open_local(tmp_path / "home")
    with engine:
        last = engine.run(
            inputs=["go"],
            harness="tool-line",
            config=plan(line_call("c1", "x", tool="pid")),
            tools=tools,
        )
        assert last.turn is not None
        (line,) = last.turn.outputs
        pid = int(json.loads(line.removeprefix("c1: ok "))["pid"])
        assert pid != os.getpid() and _alive(pid)  # the server runs while the engine is open
    assert not _alive(pid)  # the engine's close ended it (and reaped it)
