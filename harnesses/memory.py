"""The memory harness: remembers facts in its working state, so it survives losing its host.

Like ``counter`` it keeps its memory in process (REQUIRES_MEMORY_SNAPSHOT: it runs on a
warm host, and never rebuilds anything from history, I4), but it also serialises that
memory as its working state (``sink.state``) at the end of every turn, so the host keeps it
with the journal. When its warm host is gone, a fresh instance continues from the state the
session holds (``Start.state``): the descriptor says so with ``working_state``.

Inputs, one OUTPUT each (no model is called):

- ``remember <fact>``: keeps the fact; answers ``noted: <fact> (<n> facts)``;
- ``forget``: drops every fact; answers ``forgot <n> facts``;
- anything else: answers ``turn <t>: I remember <fact>; <fact>`` (or ``nothing``).

The state is ``{"facts": [...], "turns": t}`` as compact JSON. A run uses the memory it
holds only when that memory is the state this run starts from (same version); otherwise
(a fresh instance, a resumed or replayed run) it loads ``Start.state``. Its answers depend
only on that state and the inputs, so a replay reproduces them.
"""

from __future__ import annotations

import json
from typing import Any

from agentsessions.controller.spi import (
    REQUIRES_MEMORY_SNAPSHOT,
    Capabilities,
    HarnessDescriptor,
    Sink,
    Start,
)
from agentsessions.v1.construct import text_message

DESCRIPTOR = HarnessDescriptor(
    id="memory",
    version="1",
    capabilities=Capabilities(
        resumability=REQUIRES_MEMORY_SNAPSHOT, working_state=True, uses_session_model=False
    ),
)


class MemoryHarness:
    """Facts and a turn count, in memory and in the session's working state."""

    def __init__(self) -> None:
        self.facts: list[str] = []
        self.turns = 0
        self.version = 0  # the working-state version this memory equals
        self.loaded = 0  # how many times it had to load its state (a test's evidence)

    def describe(self) -> HarnessDescriptor:
        """The memory harness's descriptor (id "memory", version "1", working state)."""
        return DESCRIPTOR

    def run(self, start: Start, sink: Sink) -> None:
        """Answer each input from the facts, then commit the new state (never reads history)."""
        if start.state.version != self.version:
            self._load(start.state.data, start.state.version)
        facts, turns = list(self.facts), self.turns + 1
        for message in start.inputs:
            sink.output(dict(text_message("assistant", _answer(_text(message), facts, turns))))
        data = json.dumps({"facts": facts, "turns": turns}, separators=(",", ":")).encode()
        version = sink.state(data, expected_version=start.state.version)
        self.facts, self.turns, self.version = facts, turns, version  # once committed

    def _load(self, data: bytes, version: int) -> None:
        state: dict[str, Any] = json.loads(data) if version else {}
        self.facts = [str(f) for f in state.get("facts", [])]
        self.turns = int(state.get("turns", 0))
        self.version = version
        self.loaded += 1


def _answer(text: str, facts: list[str], turns: int) -> str:
    """What to say to ``text``; updates ``facts`` in place."""
    words = text.strip()
    if words.lower().startswith("remember "):
        fact = words[len("remember ") :].strip()
        facts.append(fact)
        return f"noted: {fact} ({len(facts)} facts)"
    if words.lower() == "forget":
        count = len(facts)
        facts.clear()
        return f"forgot {count} facts"
    return f"turn {turns}: I remember " + ("; ".join(facts) if facts else "nothing")


def _text(message: dict[str, Any]) -> str:
    return "".join(p.get("text", {}).get("text", "") for p in message.get("parts", []))


def create() -> MemoryHarness:
    """A new memory harness with nothing remembered (the registry's factory)."""
    return MemoryHarness()
