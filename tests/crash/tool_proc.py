"""A process that runs one mediated-tool turn and stops dead at a chosen point, to be killed.

Usage: python tool_proc.py HOME UID EFFECTS WHERE [DURABILITY]
WHERE = ``receipt``: the host's receipt is durable, TOOL_RESULT not yet written; ``effect``:
the executor's line is written, the receipt not yet kept. At that point the process prints
``STOPPED`` and sleeps; the parent kills it with SIGKILL (a real crash, nothing cleaned up).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from agentsessions.controller.controller import Controller
from agentsessions.controller.spi import BoundTool, ToolOutcome, ToolRequest
from agentsessions.journal.format.durable import FileSystem
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.receipts import RECEIPTS_NAME
from agentsessions.models import create_model
from agentsessions.runtimes import create_runtime
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.tools import AppendLine, static_resolver
from agentsessions.v1 import construct
from agentsessions.v1.turn import TurnRequest
from tests.tool_harness import ToolLineHarness, line_call, plan


def _stop() -> None:
    print("STOPPED", flush=True)
    time.sleep(600)


class StopAfterReceipt(FileSystem):
    """Stops right after the receipt is appended and synced (before TOOL_RESULT)."""

    def append_durable(self, path: str | os.PathLike[str], data: bytes) -> None:
        super().append_durable(path, data)
        if os.path.basename(path) == RECEIPTS_NAME:
            _stop()


class StopAfterEffect:
    """append_line that stops once its line is durable (before the host keeps a receipt)."""

    def call(self, request: ToolRequest) -> ToolOutcome:
        outcome = AppendLine().call(request)
        _stop()
        return outcome


def main() -> None:
    home, uid, effects, where = sys.argv[1:5]
    fs = StopAfterReceipt() if where == "receipt" else FileSystem()
    executor: Any = AppendLine() if where == "receipt" else StopAfterEffect()
    store = FileStore(home, fs=fs)
    HARNESSES.register("tool-line", ToolLineHarness)
    ctl = Controller(
        store,
        harnesses=HARNESSES,
        models=create_model,
        runtime=create_runtime("local", home=store.home),
        tools=static_resolver({"append": BoundTool("append", executor, {"path": effects})}),
    )
    inputs = (dict(construct.text_message("user", "go")),)
    config = plan(line_call("c1", "the line"))
    durability = sys.argv[5] if len(sys.argv) > 5 else ""  # the turn's mode ("": step)
    ctl.turn(TurnRequest(uid, inputs, harness="tool-line", config=config, durability=durability))
    print("FINISHED", flush=True)  # never reached: the parent kills it first


if __name__ == "__main__":
    main()
