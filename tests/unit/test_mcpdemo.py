"""The shipped offline MCP server (agentsessions.tools.mcpdemo), as an MCP client sees it."""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from needs import need

from agentsessions.tools import mcpdemo


def _session(notes: Path, calls: list[tuple[str, dict[str, Any]]]) -> tuple[Any, list[Any]]:
    """List the server's tools and make ``calls``, over stdio as the executor does."""
    need("mcp", "mcp")
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "agentsessions.tools.mcpdemo", str(notes)]
    )

    async def go() -> tuple[Any, list[Any]]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            return listed, [await session.call_tool(name, args) for name, args in calls]

    return asyncio.run(asyncio.wait_for(go(), 60))


def test_the_server_lists_two_described_tools_with_schemas(tmp_path: Path) -> None:
    listed, _ = _session(tmp_path / "notes.txt", [])
    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == {"add_note", "clock"}
    assert all(tool.description for tool in tools.values())
    schema = tools["add_note"].inputSchema
    assert schema["properties"]["text"]["type"] == "string" and schema["required"] == ["text"]
    assert tools["clock"].inputSchema.get("properties", {}) == {}


def test_add_note_appends_durably_and_clock_tells_the_time(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    before = datetime.now(UTC).replace(microsecond=0)
    _, (one, two, bad, now) = _session(
        notes,
        [("add_note", {"text": "buy milk"}), ("add_note", {"text": "eggs"}),
         ("add_note", {"text": "two\nlines"}), ("clock", {})],
    )  # fmt: skip
    assert notes.read_text() == "buy milk\neggs\n"  # the refused note left no effect
    assert [one.content[0].text, two.content[0].text] == [
        "noted (1 note in notes.txt)",
        "noted (2 notes in notes.txt)",
    ]
    assert bad.isError and "line break" in bad.content[0].text
    told = datetime.fromisoformat(now.content[0].text)
    assert told.tzinfo is not None and before <= told <= datetime.now(UTC) + timedelta(seconds=1)


def test_without_the_mcp_package_it_exits_12_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # importing mcp now raises ImportError
    monkeypatch.setitem(sys.modules, "mcp.server", None)
    monkeypatch.setitem(sys.modules, "mcp.server.fastmcp", None)
    assert mcpdemo.main([str(tmp_path / "notes.txt")]) == 12
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (
        "agentsessions: error: the demo MCP server needs the 'mcp' package, which is not installed"
    )
    assert err[1:] == ["  hint: install the extra: pip install 'agentsessions[mcp]'"]
    assert not (tmp_path / "notes.txt").exists()


def test_a_notes_file_in_a_missing_directory_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert mcpdemo.main([str(tmp_path / "nowhere" / "notes.txt")]) == 2
    assert capsys.readouterr().err.startswith("agentsessions: error: ")


def test_an_empty_note_is_refused_without_an_effect(tmp_path: Path) -> None:
    notes = mcpdemo.Notes(tmp_path / "notes.txt")
    with pytest.raises(ValueError, match="non-empty"):
        notes.add("  ")
    assert not notes.path.exists()
