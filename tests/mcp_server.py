"""A small stdio MCP server for the ``mcp:`` executor tests (run with the ``mcp`` extra).

    python3 tests/mcp_server.py EFFECTS_FILE [--garbage | --exit | --about FILE]

Tools: ``append`` (appends its ``line`` argument and a newline to EFFECTS_FILE, so the
file's line count is the effect count; a line break in ``line`` is refused with no
effect), ``shout`` (structured output and a text part), ``fail`` (always an isError
result), ``meta`` (returns the request's ``_meta`` the executor sent), ``pid`` (the server's process
id, so a test can see the process end). ``--garbage`` writes a
line that is not JSON-RPC to stdout on every request and never answers; ``--exit`` exits
at once with a message on stderr (a server that does not start). ``--about FILE``: the
``append`` tool's listed description is FILE's text, read at start (a listing that changes
between runs); without it, its docstring.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from mcp.server.fastmcp import Context, FastMCP


def main() -> None:
    effects = sys.argv[1]
    if "--exit" in sys.argv:
        print("mcp_server: cannot start: no database", file=sys.stderr)
        sys.exit(3)
    if "--garbage" in sys.argv:
        for _ in sys.stdin:
            sys.stdout.write("this is not json-rpc\n")
            sys.stdout.flush()
        return
    server = FastMCP("counting")
    about = sys.argv[sys.argv.index("--about") + 1] if "--about" in sys.argv else ""
    listed = Path(about).read_text(encoding="utf-8") if about else None

    @server.tool(description=listed)
    def append(line: str) -> str:
        """Append one line to the effects file."""
        if "\n" in line or "\r" in line:
            raise ValueError("append appends one line: 'line' has a line break")
        with open(effects, "a", encoding="utf-8") as out:
            out.write(line + "\n")
            out.flush()
            os.fsync(out.fileno())
        return f"appended {line}"

    @server.tool()
    def shout(text: str) -> dict[str, Any]:
        """Upper-case the text (structured output)."""
        return {"loud": text.upper()}

    @server.tool()
    def fail() -> str:
        """Always fails."""
        raise RuntimeError("the tool failed on purpose")

    @server.tool()
    def meta(ctx: Context) -> dict[str, Any]:
        """The _meta the client sent."""
        sent = ctx.request_context.meta
        return {"meta": sent.model_dump() if sent is not None else {}}

    @server.tool()
    def pid(line: str = "") -> dict[str, Any]:
        """This server's process id (``line`` is ignored)."""
        return {"pid": os.getpid()}

    server.run("stdio")


if __name__ == "__main__":
    main()
