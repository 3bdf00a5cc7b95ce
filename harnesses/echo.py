"""The echo harness: one model call per turn carrying the turn's last input.

Invariants: the request is exactly ``ModelRequest(model="echo", messages=(last_input,),
params=None)``, the request the Go reference's echo harness makes, so its model-input hash
(I0) matches Go-written journals byte for byte; the harness writes no OUTPUT itself (the sink
records MODEL_CALL and the completion's OUTPUT); it keeps no state between runs.

The last input is the last of ``Start.inputs``; a turn without inputs (a resumed or legacy
turn) uses the last INPUT event in the history (the reference's "last INPUT" rule).
"""

from __future__ import annotations

from agentsessions.controller.spi import (
    STATELESS_REPLAY,
    Capabilities,
    HarnessDescriptor,
    History,
    Message,
    ModelRequest,
    Sink,
    Start,
)
from agentsessions.errors import HarnessError

MODEL = "echo"
DESCRIPTOR = HarnessDescriptor(
    id="echo",
    version="1",
    models=(MODEL,),
    # it calls its own fixed "echo" model, never the session's: --model is refused
    capabilities=Capabilities(resumability=STATELESS_REPLAY, uses_session_model=False),
)
_FIRST_WINDOW = 16


class EchoHarness:
    """Asks the ``echo`` model to answer the turn's last input; stateless."""

    def describe(self) -> HarnessDescriptor:
        """The echo harness's descriptor (id "echo", version "1", STATELESS_REPLAY)."""
        return DESCRIPTOR

    def run(self, start: Start, sink: Sink) -> None:
        """Make the turn's single model call; the sink records MODEL_CALL and OUTPUT."""
        last = start.inputs[-1] if start.inputs else last_input(start.history)
        if last is None:
            raise HarnessError(
                "echo: nothing to echo: the turn has no input and the history holds no INPUT",
                execution_id=start.execution_id,
            )
        sink.model(ModelRequest(model=MODEL, messages=(last,), params=None))


def last_input(history: History) -> Message | None:
    """The message of the last INPUT event in ``history``, or None if there is none.

    Reads from the tail in growing windows, so the common case (an input a few events back)
    does not load the whole session.
    """
    total = len(history)
    seen = 0
    window = _FIRST_WINDOW
    while seen < total:
        events = history.tail(min(window, total))
        for event in reversed(events[: len(events) - seen]):
            msg: Message | None = event.get("message")
            if event.get("kind") == "EVENT_INPUT" and msg is not None:
                return msg
        if len(events) <= seen:  # a history that serves fewer events than it counts
            break
        seen = len(events)
        window *= 4
    return None


def create() -> EchoHarness:
    """A new echo harness (the registry's factory)."""
    return EchoHarness()
