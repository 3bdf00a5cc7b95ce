"""The recording harnesses: a turn that only records its inputs.

The framework adapters write each of their operations as one turn of a recording harness,
whose inputs are the records: ``openai-agents`` (:mod:`.openai_agents`: each ``add_items``
batch, pop and clear) and ``langgraph`` (:mod:`.langgraph`: each checkpoint, each task's
writes, each deletion). The harness calls no model and no tool, so a replay
(``agentsessions replay UID --rerun``) re-drives it with nothing to compare but the inputs,
and reproduces the session. One name per framework, so ``agentsessions get`` says which
framework wrote a session. It lives apart from the adapters so the CLI finds it (entry
points ``agentsessions.harnesses``) without importing any framework.
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
"""The OpenAI Agents SDK adapter's harness."""
LANGGRAPH = "langgraph"
"""The LangGraph checkpointer's harness."""


def _descriptor(name: str) -> HarnessDescriptor:
    return HarnessDescriptor(
        id=name,
        version="1",
        capabilities=Capabilities(resumability=STATELESS_REPLAY, uses_session_model=False),
    )


DESCRIPTOR = _descriptor(NAME)


class RecordingHarness:
    """Records the turn's inputs (the engine does, before the harness runs); nothing else."""

    def __init__(self, descriptor: HarnessDescriptor = DESCRIPTOR) -> None:
        self._descriptor = descriptor

    def describe(self) -> HarnessDescriptor:
        """The recording harness's descriptor (STATELESS_REPLAY, calls no model)."""
        return self._descriptor

    def run(self, start: Start, sink: Sink) -> None:
        """Nothing to do: the inputs are the turn."""


def create() -> RecordingHarness:
    """A new ``openai-agents`` recording harness (the registry's factory)."""
    return RecordingHarness()


def create_langgraph() -> RecordingHarness:
    """A new ``langgraph`` recording harness (the registry's factory)."""
    return RecordingHarness(_descriptor(LANGGRAPH))
