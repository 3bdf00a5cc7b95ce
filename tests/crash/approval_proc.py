"""A process that runs one step of the approval protocol and stops dead at a chosen point.

Usage: python approval_proc.py HOME UID EFFECTS WHERE [deny]
WHERE = ``request``: exec a turn with one gated call; stop once TOOL_CALL + APPROVAL_REQUEST
are durable (before the park returns). ``decision``: approve (or deny) the pending request;
stop once APPROVAL_RESULT is durable (before any resume). ``effect``: resume the decided
turn; stop once the executor's line is written (its "started" mark kept, its outcome not).
``receipt``: resume; stop once the outcome is kept in the tool receipts (before TOOL_RESULT).
At that point the process prints ``STOPPED`` and sleeps; the parent kills it with SIGKILL.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from agentsessions.controller import approvals
from agentsessions.controller.controller import Controller
from agentsessions.controller.spi import BoundTool, ToolOutcome, ToolRequest
from agentsessions.journal.format.durable import FileSystem
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.receipts import RECEIPTS_NAME
from agentsessions.models import create_model
from agentsessions.runtimes import create_runtime
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.tools import AppendLine, static_resolver
from agentsessions.v1 import construct
from tests.tool_harness import ToolLineHarness, plan

GATED = {"id": "c1", "tool": "append", "key": "k-c1", "args": {"line": "the line"},
         "mediation": "MEDIATION_REQUIRES_APPROVAL"}  # fmt: skip


def _stop() -> None:
    print("STOPPED", flush=True)
    time.sleep(600)


class StopAfterOutcome(FileSystem):
    """Stops right after the second receipt line (the outcome; the first is the mark)."""

    def __init__(self) -> None:
        super().__init__()
        self.receipts = 0

    def append_durable(self, path: str | os.PathLike[str], data: bytes) -> None:
        super().append_durable(path, data)
        if os.path.basename(path) == RECEIPTS_NAME:
            self.receipts += 1
            if self.receipts == 2:
                _stop()


class StopAfterEffect:
    """append_line that stops once its line is durable (before its outcome is kept)."""

    idempotent = False

    def call(self, request: ToolRequest) -> ToolOutcome:
        outcome = AppendLine().call(request)
        _stop()
        return outcome


def _stop_at(kind: str) -> Any:
    def on_record(record: Record) -> None:
        if record.event.get("kind") == kind:
            _stop()

    return on_record


def controller(home: str, effects: str, where: str) -> Controller:
    """The controller of one step (its filesystem and executor stop where asked)."""
    store = FileStore(home, fs=StopAfterOutcome() if where == "receipt" else FileSystem())
    executor: Any = StopAfterEffect() if where == "effect" else AppendLine()
    HARNESSES.register("tool-line", ToolLineHarness)
    return Controller(
        store,
        harnesses=HARNESSES,
        models=create_model,
        runtime=create_runtime("local", home=store.home),
        tools=static_resolver({"append": BoundTool("append", executor, {"path": effects})}),
    )


def main() -> None:
    home, uid, effects, where = sys.argv[1:5]
    approved = sys.argv[5:6] != ["deny"]
    ctl = controller(home, effects, where)
    if where == "request":
        ctl.on_record = _stop_at("EVENT_APPROVAL_REQUEST")
        inputs = [dict(construct.text_message("user", "go"))]
        ctl.exec(uid, inputs, harness="tool-line", config=plan(GATED))
    elif where == "decision":
        ctl.on_record = _stop_at("EVENT_APPROVAL_RESULT")
        approvals.approve(ctl, uid, approvals.Decision(approved, actor="op"))
    else:
        ctl.resume(uid)
    print("FINISHED", flush=True)  # never reached: the parent kills it first


if __name__ == "__main__":
    main()
