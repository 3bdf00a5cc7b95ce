"""A turn process for the cancel tests: runs one turn whose harness and model stop at gates.

Usage: python gated_turn.py HOME GATES UID exec|resume|suspend|replay [STEPS_JSON]

The ``gated`` harness runs the steps its config lists (a JSON array), in order: ``model``
(one model call), ``output``, ``usage``, ``report`` (a tool result), and ``gate:NAME``, which
creates ``GATES/NAME.reached`` and waits until the test creates ``GATES/NAME.go``. So the
test knows, without timing anything, that the turn is parked exactly at one effect boundary.

The ``gated`` model records each call's start as ``GATES/model-N.started`` (the evidence of
how many calls started, and when). If the test created ``GATES/model-N.hold``, call N streams
one delta, creates ``GATES/model-N.streaming``, waits for ``GATES/model-N.go``, then streams
the rest of its answer with a pause longer than the engine's cancel check interval before
each delta: a call that is still in flight when a cancel lands.

The turn runs through the real engine (``agentsessions.open``) on the file store; the
process prints its last frame's outcome and exits 18 if the turn was canceled, 0 if it
completed (the CLI's codes), or the error's exit code. ``replay`` re-drives the session
(``replay --rerun`` with this harness; every gate it meets is open by then) and prints the
report with the model calls this process made (16 if it was not identical).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import agentsessions
from agentsessions.controller.cancel import STREAM_CHECK_SECONDS
from agentsessions.controller.spi import (
    STATELESS_REPLAY,
    Capabilities,
    Completion,
    HarnessDescriptor,
    ModelRequest,
    Sink,
    Start,
)
from agentsessions.errors import AgentSessionsError, TurnCanceledError
from agentsessions.models import MODELS
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.v1.construct import text_message

GATE_SECONDS = 120.0  # a bound, not a timing: a test that never opens a gate fails, not hangs
DESCRIPTOR = HarnessDescriptor(
    id="gated", version="1", capabilities=Capabilities(resumability=STATELESS_REPLAY)
)


def wait_for(path: Path) -> None:
    """Block until ``path`` exists (bounded by GATE_SECONDS)."""
    deadline = time.monotonic() + GATE_SECONDS
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"gated_turn: {path} never appeared")
        time.sleep(0.01)


class GatedHarness:
    """Runs the effect steps of its config, parking at each ``gate:NAME``."""

    def __init__(self, gates: Path) -> None:
        self.gates = gates

    def describe(self) -> HarnessDescriptor:
        return DESCRIPTOR

    def run(self, start: Start, sink: Sink) -> None:
        steps: list[str] = json.loads(start.config or b"[]")
        for step in steps:
            if step.startswith("gate:"):
                name = step.removeprefix("gate:")
                (self.gates / f"{name}.reached").touch()
                wait_for(self.gates / f"{name}.go")
            elif step == "model":
                sink.model(ModelRequest(model="", messages=tuple(start.inputs)))
            elif step == "output":
                sink.output(dict(text_message("assistant", "harness output")))
            elif step == "usage":
                sink.usage({"input_tokens": "3", "output_tokens": "1"})
            elif step == "report":
                sink.report({"call_id": "c1", "name": "probe", "output": "done"})
            else:
                raise ValueError(f"unknown step {step!r}")


class GatedModel:
    """A model whose calls are counted on disk and can be held mid-stream."""

    def __init__(self, gates: Path) -> None:
        self.gates = gates
        self.calls = 0

    def complete(
        self, request: ModelRequest, on_delta: Callable[[str], None] | None = None
    ) -> Completion:
        self.calls += 1
        n = self.calls
        (self.gates / f"model-{n}.started").touch()
        words = ["the ", "answer ", "of ", f"call {n}"]
        if (self.gates / f"model-{n}.hold").exists():
            if on_delta is not None:
                on_delta(words[0])
            (self.gates / f"model-{n}.streaming").touch()
            wait_for(self.gates / f"model-{n}.go")
            for word in words[1:]:
                time.sleep(STREAM_CHECK_SECONDS * 1.5)  # each delta gets its cancel check
                if on_delta is not None:
                    on_delta(word)
        return Completion(message=dict(text_message("assistant", "".join(words))))


def main() -> int:
    home, gates, uid, mode = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4]
    steps = sys.argv[5].encode() if len(sys.argv) > 5 else b""
    HARNESSES.register("gated", lambda: GatedHarness(gates))
    model = GatedModel(gates)
    MODELS.register("gated", lambda: model)
    try:
        with agentsessions.open(home, runtime="local", model="gated") as engine:
            if mode == "suspend":
                print(json.dumps({"compute": engine.suspend(uid).compute_state}), flush=True)
                return 0
            if mode == "replay":
                report = engine.rerun(uid, harness="gated")
                print(json.dumps({**report.to_json(), "made_calls": model.calls}), flush=True)
                return 0 if report.identical else 16
            if mode == "exec":
                frames = list(engine.exec(uid, ["hello"], harness="gated", config=steps))
            else:
                frames = list(engine.resume(uid, harness="gated"))
    except AgentSessionsError as exc:
        print(json.dumps({"error": str(exc), "code": exc.exit_code}), flush=True)
        return exc.exit_code
    turn = getattr(frames[-1], "turn", None)
    canceled = bool(turn is not None and turn.canceled)
    print(json.dumps({"canceled": canceled, "model_calls": model.calls}), flush=True)
    return TurnCanceledError.exit_code if canceled else 0


if __name__ == "__main__":
    sys.exit(main())
