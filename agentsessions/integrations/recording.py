"""The ``openai-agents`` harness: a turn that only records its inputs.

The OpenAI Agents SDK adapter (:mod:`.openai_agents`) writes each ``add_items`` batch, pop
and clear as one turn of this harness, whose inputs are the records. It calls no model and
no tool, so a replay (``agentsessions replay UID --rerun``) re-drives it with nothing to
compare but the inputs, and reproduces the session. It lives apart from the adapter so the
CLI finds it (entry point ``agentsessions.harnesses``) without importing the SDK.
"""

from __future__ import annotations

from agentsessions.controller.spi import (
    STATELESS_REPLAY,
    Capabilities,
    HarnessDescriptor,
    Sink,
    Start,
)

NAME = "openai-agents"
DESCRIPTOR = HarnessDescriptor(
    id=NAME,
    version="1",
    capabilities=Capabilities(resumability=STATELESS_REPLAY, uses_session_model=False),
)


class RecordingHarness:
    """Records the turn's inputs (the engine does, before the harness runs); nothing else."""

    def describe(self) -> HarnessDescriptor:
        """The recording harness's descriptor (STATELESS_REPLAY, calls no model)."""
        return DESCRIPTOR

    def run(self, start: Start, sink: Sink) -> None:
        """Nothing to do: the inputs are the turn."""


def create() -> RecordingHarness:
    """A new recording harness (the registry's factory)."""
    return RecordingHarness()
