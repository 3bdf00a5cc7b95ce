"""A process that runs one chat turn whose scripted model calls ``notes``, and stops dead
right after the note's commit is durable in the tool store, before the host keeps its
receipt or writes TOOL_RESULT: the parent kills it there with SIGKILL (a real crash).

Usage: python notes_proc.py HOME SCRIPT TOOLS
Prints ``STOPPED <session uid>`` at the stop point.
"""

from __future__ import annotations

import sys
import time

from agentsessions.controller.spi import ToolOutcome, ToolRequest
from agentsessions.sessions.local import open_local
from agentsessions.tools import register_executor
from agentsessions.tools.notes import Notes


class StopAfterCommit(Notes):
    """``notes`` that stops once an added note is durable (its store commit returned)."""

    def call(self, request: ToolRequest) -> ToolOutcome:
        outcome = super().call(request)
        if request.args.get("op") == "add":
            print(f"STOPPED {request.session_uid}", flush=True)
            time.sleep(600)
        return outcome


def main() -> None:
    home, script, tools = sys.argv[1:4]
    register_executor("notes", StopAfterCommit)  # this process only: the workload says notes
    with open_local(home) as engine:
        engine.run(None, ["note: buy milk"], harness="chat", model=f"scripted:file={script}",
                   tools=tools)  # fmt: skip
    print("FINISHED", flush=True)  # never reached: the parent kills it first


if __name__ == "__main__":
    main()
