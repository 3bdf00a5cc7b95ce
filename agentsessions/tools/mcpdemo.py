"""A small offline MCP server (stdio) to try the ``mcp:`` executor with (the ``mcp`` extra).

    python3 -m agentsessions.tools.mcpdemo NOTES_FILE

Two tools, each with a description and an input schema the server lists:

- ``add_note`` (``{"text": string}``): appends ``text`` and a newline to NOTES_FILE,
  synced before it answers (through the journal's durable primitives), and answers how many
  notes the file holds; a text with a line break is an error result, with no effect;
- ``clock`` (no arguments): the server's time in UTC (ISO 8601), a call whose answer only
  the journal can repeat (replay serves the recorded one).

A workload names it as ``executor = "mcp:python3 -m agentsessions.tools.mcpdemo FILE"``
(docs/concepts/tools.md). The ``mcp`` package is imported only when the server runs, so the
module imports anywhere; without the package it exits 12 with one error line.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from agentsessions.errors import UnavailableError
from agentsessions.journal.format.durable import DEFAULT_FS, FileSystem

PROG = "python3 -m agentsessions.tools.mcpdemo"


class Notes:
    """The notes file: one note a line, each append synced before it is acknowledged."""

    def __init__(self, path: Path, fs: FileSystem = DEFAULT_FS) -> None:
        self.path = path
        self.fs = fs

    def add(self, text: str) -> str:
        """Append one note; ValueError (no effect) if it is empty or spans lines."""
        if not text.strip():
            raise ValueError("add_note needs a non-empty 'text'")
        if "\n" in text or "\r" in text:
            raise ValueError("add_note adds one line: 'text' has a line break")
        self.fs.append_durable(str(self.path), (text + "\n").encode("utf-8"))
        count = len(self.path.read_bytes().splitlines())
        return f"noted ({count} note{'s' if count != 1 else ''} in {self.path.name})"


def clock() -> str:
    """The time now in UTC, ISO 8601 to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def serve(notes: Notes) -> None:
    """Run the MCP server on stdin/stdout until the client closes stdin."""
    try:
        from mcp.server.fastmcp import FastMCP
    except ImportError:
        raise UnavailableError(
            "the demo MCP server needs the 'mcp' package, which is not installed",
            hint="install the extra: pip install 'agentsessions[mcp]'",
        ) from None
    server = FastMCP("agentsessions-demo")

    @server.tool(description="Append one line of text to the notes file; returns the count.")
    def add_note(text: str) -> str:
        return notes.add(text)

    @server.tool(name="clock", description="The current time in UTC (ISO 8601).")
    def now() -> str:
        return clock()

    server.run("stdio")


def main(argv: list[str] | None = None) -> int:
    """Serve NOTES_FILE's tools; exit 12 without the ``mcp`` package, 2 on a bad path."""
    parser = argparse.ArgumentParser(prog=PROG, description="An offline demo MCP server.")
    parser.add_argument("notes", type=Path, help="the file add_note appends to")
    options = parser.parse_args(argv)
    path: Path = options.notes
    if not path.parent.is_dir():
        print(f"agentsessions: error: {path.parent} is not a directory", file=sys.stderr)
        return 2
    try:
        serve(Notes(path))
    except UnavailableError as exc:
        print(f"agentsessions: error: {exc.message}\n  hint: {exc.hint}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
