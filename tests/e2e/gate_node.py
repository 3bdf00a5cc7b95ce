"""A harness process for the remote-harness kill test: ``agentsessions harness serve gate``.

Usage: python gate_node.py ADDRESS

Registers the tests-only ``gate`` harness, then runs the real command line's ``harness serve
gate --listen ADDRESS``. A turn of ``gate`` makes one model call, then creates
``GATES/reached`` (GATES from its config, ``{"gates": DIR}``) and waits until
``GATES/go`` exists before it outputs ``after the gate``: the test knows, without timing
anything, that the turn is in flight past a recorded model call when it kills this process.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from agentsessions.cli.app import main
from agentsessions.controller.spi import HarnessDescriptor, ModelRequest, Sink, Start
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.v1.construct import text_message

GATE_SECONDS = 120.0  # a bound, not a timing: a test that never opens the gate fails


class GateHarness:
    """Model call, gate, output."""

    def describe(self) -> HarnessDescriptor:
        return HarnessDescriptor(id="gate", version="1")

    def run(self, start: Start, sink: Sink) -> None:
        gates = Path(json.loads(start.config or b"{}")["gates"])
        sink.model(ModelRequest(model="", messages=tuple(start.inputs)))
        (gates / "reached").touch()
        deadline = time.monotonic() + GATE_SECONDS
        while not (gates / "go").exists():
            if time.monotonic() > deadline:
                raise SystemExit("gate_node: the gate never opened")
            time.sleep(0.01)
        sink.output(dict(text_message("assistant", "after the gate")))


if __name__ == "__main__":
    HARNESSES.register("gate", GateHarness)
    main(["harness", "serve", "gate", "--listen", sys.argv[1]])
