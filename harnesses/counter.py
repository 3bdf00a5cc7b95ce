"""The counter harness: counts inputs in process memory, the canonical snapshot-needing harness.

Invariants: the count lives only in this instance (``self.count``) and is never rebuilt from
history, not even when ``Start.history`` is non-empty or ``Start.memory_restored`` is set
(I4: memory restore is not replay). So a fresh instance starts at 0, and the count survives
from one turn to the next only on a runtime that keeps or snapshots the process memory; the
descriptor says REQUIRES_MEMORY_SNAPSHOT so the controller refuses to place it elsewhere.
Each input yields one OUTPUT ``count:<n>``; no model is called.
"""

from __future__ import annotations

from agentsessions.controller.spi import (
    REQUIRES_MEMORY_SNAPSHOT,
    Capabilities,
    HarnessDescriptor,
    Sink,
    Start,
)
from agentsessions.v1.construct import text_message

DESCRIPTOR = HarnessDescriptor(
    id="counter",
    version="1",
    capabilities=Capabilities(resumability=REQUIRES_MEMORY_SNAPSHOT, uses_session_model=False),
)


class CounterHarness:
    """Counts the inputs it has seen, in memory only."""

    def __init__(self) -> None:
        self.count = 0

    def describe(self) -> HarnessDescriptor:
        """The counter's descriptor (id "counter", version "1", REQUIRES_MEMORY_SNAPSHOT)."""
        return DESCRIPTOR

    def run(self, start: Start, sink: Sink) -> None:
        """Count each input and output ``count:<n>``; never reads ``start.history``."""
        for _ in start.inputs:
            n = self.count + 1
            sink.output(dict(text_message("assistant", f"count:{n}")))
            self.count = n  # only once recorded: memory never runs ahead of the journal


def create() -> CounterHarness:
    """A new counter starting at 0 (the registry's factory)."""
    return CounterHarness()
